"""games.core.choice_index (OpenSpiel chance nodes, scored LLM actions) against numpy's own
``Generator.choice``."""

import numpy as np
import pytest

import games
from games.core import choice_index


def test_draw_gives_choices_index_from_the_same_stream():
    rs = np.random.default_rng(5)
    for _ in range(3000):
        p = rs.random(int(rs.integers(1, 12))) ** int(rs.integers(1, 6))
        p[rs.random(len(p)) < 0.2] = 0.0
        if p.sum() == 0:
            continue
        p = p / p.sum()
        seed = int(rs.integers(2**31))
        ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        assert choice_index(ours, p) == numpys.choice(len(p), p=p)
        assert ours.random() == numpys.random()  # one uniform each: the streams go on alike


@pytest.mark.parametrize("p", [[0.5, -0.1, 0.6], [np.nan, 0.5, 0.5]])
def test_draw_refuses_what_choice_refuses(p):
    with pytest.raises(ValueError) as numpys:
        np.random.default_rng(0).choice(len(p), p=np.asarray(p))
    with pytest.raises(ValueError) as ours:
        choice_index(np.random.default_rng(0), np.asarray(p))
    assert str(ours.value) == str(numpys.value)


def test_kuhn_deals_are_those_of_choice():
    """Deals of seed 3 as numpy's choice dealt them (before choice_index): the same episodes."""
    game = games.make("openspiel/kuhn_poker")
    rng = np.random.default_rng(3)
    for episode in range(20):
        game.reset(3 if episode == 0 else None)
        cards = []
        for left in ([0, 1, 2], None):
            left = left if left is not None else [c for c in [0, 1, 2] if c != cards[0]]
            p = np.full(len(left), 1 / len(left))
            cards.append(left[rng.choice(len(left), p=p / p.sum())])
        assert game.pyspiel_state.history() == cards


def test_draw_refuses_probabilities_that_do_not_sum_to_one_as_choice_does():
    """A user game's chance outcomes summing to 0.5 were normalized silently by the fast
    path (numpy's choice refuses them: 'probabilities do not sum to 1')."""
    p = np.array([0.25, 0.25])
    with pytest.raises(ValueError) as numpys:
        np.random.default_rng(0).choice(len(p), p=p)
    with pytest.raises(ValueError) as ours:
        choice_index(np.random.default_rng(0), p)
    assert str(ours.value) == str(numpys.value)


def test_float32_probabilities_give_choices_index():
    rs = np.random.default_rng(7)
    for _ in range(2000):
        p = rs.random(int(rs.integers(2, 9))).astype(np.float32)
        p = p / p.sum()
        seed = int(rs.integers(2**31))
        assert choice_index(np.random.default_rng(seed), p) == \
            np.random.default_rng(seed).choice(len(p), p=p)
