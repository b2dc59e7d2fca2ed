"""gymnasium's Box precision warnings (raw ANSI colour codes) printed at every make of
texas_holdem_no_limit_v6, before a one-line refusal too: the adapter silences those two and
nothing else."""

import warnings

import games


def test_no_box_precision_warning_when_the_env_is_built():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        game = games.make("pettingzoo/pettingzoo.classic.texas_holdem_no_limit_v6")
        game.reset(seed=0)
        warnings.warn("another warning still shows", UserWarning, stacklevel=1)
    texts = [str(w.message) for w in seen if issubclass(w.category, UserWarning)]
    assert not [t for t in texts if "precision lowered" in t], texts
    assert "another warning still shows" in texts
