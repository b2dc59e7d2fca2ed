"""check_game asks a discrete agent's final legal mask where its episode ends, as VectorGame
does for ``final_legal`` (session 37): a game whose ``final_legal_mask`` has another shape
than ``[n]`` passed check_game, then stopped training at its first episode's end."""

import numpy as np
import pytest

import games
from games import GameCheckError
from games.matrix import CLIMBING, MatrixGame


class WideFinalMask(MatrixGame):
    """The climbing game whose final legal mask has one action too many."""

    def __init__(self) -> None:
        super().__init__("games37_wide_final_mask", CLIMBING, repeats=2)

    def final_legal_mask(self, agent: str) -> np.ndarray:
        return np.ones(self.spec.action_spaces[agent].n + 1, dtype=bool)


def test_check_game_refuses_a_final_legal_mask_of_another_shape():
    with pytest.raises(GameCheckError) as info:
        games.check_game(WideFinalMask(), episodes=2)
    assert str(info.value) == ("games37_wide_final_mask seed 0 step 2: final_legal_mask('agent_0') "
                               "has shape (4,), expected (3,)")


# VectorGame asks the mask only where an agent was cut by a time limit (9852305: a row that
# ended by the rules is never read): tests/test_fix37_final_legal_asked.py pins its refusal


@pytest.mark.parametrize("name", ["openspiel/kuhn_poker", "openspiel/tic_tac_toe",
                                  "matrix/climbing", "pettingzoo/mpe2.simple_spread_v3"])
def test_shipped_games_pass_with_their_final_legal_masks(name):
    kwargs = {"N": 2, "max_cycles": 5} if name.startswith("pettingzoo") else {}
    assert games.check_game(games.make(name, **kwargs), episodes=2).episodes == 2
