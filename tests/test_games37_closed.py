"""A closed game or VectorGame refuses to play on, in one line (session 37): before, a
VectorGame stepped on after ``close()`` and a Game reset, on whatever its closed resources
still held (a PettingZoo copy's renderer, a VMAS batch)."""

import numpy as np
import pytest

import games
from games import GameError, VectorGame
from games.matrix import CLIMBING, MatrixGame

KUHN = "openspiel/kuhn_poker"


@pytest.mark.parametrize("name", [KUHN, "matrix/climbing", "pettingzoo/mpe2.simple_spread_v3"])
def test_a_closed_game_refuses_reset_and_step(name):
    g = games.make(name)
    ts = g.reset(seed=0)
    g.close()
    with pytest.raises(GameError, match=rf"^{name}: reset\(\) after close\(\); make a new game$"):
        g.reset(seed=0)
    with pytest.raises(GameError, match=rf"^{name}: step\(\) after close\(\); make a new game$"):
        g.step({a: 0 for a in ts.acting})
    assert g.spec.name == name  # what a closed game still tells: its spec
    g.close()  # twice: no error


def test_a_subclass_close_that_forgets_super_still_closes():
    class Own(MatrixGame):
        def __init__(self) -> None:
            super().__init__("games37_own", CLIMBING)
            self.released = False

        def close(self) -> None:
            self.released = True

    g = Own()
    g.close()
    assert g.released
    with pytest.raises(GameError, match=r"^games37_own: reset\(\) after close\(\)"):
        g.reset(seed=0)


def test_a_closed_vector_game_refuses_reset_and_step():
    vg = VectorGame(KUHN, 2, seed=0)
    vg.reset()
    vg.close()
    for call in (vg.reset, lambda: vg.step({"player_0": np.zeros(2, dtype=np.int64)})):
        with pytest.raises(GameError, match=r"^VectorGame of openspiel/kuhn_poker is closed; "
                                            r"build a new one$"):
            call()
    vg.close()
