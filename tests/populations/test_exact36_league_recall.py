"""A league built through the Python API with ``nash_conv=True`` walked a game of imperfect
recall whole before refusing it (goofspiel with 4 cards: ~10^5 histories counted and then
walked, seconds, in ``League.__init__``): only selfplay-train's config check walked in
``exact_check``, which stops at the first sign. The league's own check walks in it too, and
says on a long walk's first line why it runs and what skips it."""

import pytest

from populations.league import NASH_CONV_WHY, League, LeagueConfig
from tests.populations import exact_helpers

steps = exact_helpers.steps  # the walk's and the counts' spies, trees forgotten


def _cfg(game: str, **kwargs) -> LeagueConfig:
    return LeagueConfig(game=game, game_kwargs=kwargs, generations=1, frames_per_generation=64,
                        num_envs=4, eval_episodes=1, nash_conv=True)


def test_a_forgetful_game_is_refused_without_walking_its_tree(tmp_path, steps):
    for run in ("a", "b"):  # the refusal remembered: the second league walks nothing either
        with pytest.raises(ValueError) as err:
            League(_cfg("openspiel/goofspiel", num_cards=4), tmp_path / run)
        assert str(err.value).startswith(
            "nash_conv=True (population.nash_conv): openspiel/goofspiel(num_cards=4) has "
            "imperfect recall ("), err.value
        assert str(err.value).endswith(
            "; set it false, or exploit.every=N (population.exploit.every) for an "
            "approximate NashConv"), err.value
        assert steps["walk"] == 0 and steps["counts"] == []  # the probe saw it


def test_a_perfect_recall_game_is_walked_whole_and_says_why(tmp_path, steps):
    assert NASH_CONV_WHY == ("for nash_conv=True (exact NashConv needs a small game of "
                             "perfect recall); nash_conv=False skips this walk")
    League(_cfg("openspiel/kuhn_poker"), tmp_path / "run").close()
    assert steps["walk"] > 0 and steps["counts"] == [f": {NASH_CONV_WHY}"]
