"""VectorGame asks a game's final legal mask only of an agent truncated where its episode
ended (session 37): a terminated agent never bootstraps, and nothing reads its
``final_legal`` row (False, read as every action). Before, it was asked of every agent of
every ended copy: 81 µs a call on PettingZoo's tic-tac-toe (an AEC ``observe``), 5-10% of
a step on its board games."""

import numpy as np
import pytest

import games
from games import Transition, VectorGame
from games.matrix import CLIMBING, MatrixGame


class CountedMask(MatrixGame):
    """The climbing game played twice, ended by the rules or (``cut``) by a time limit; it
    counts the calls of its ``final_legal_mask``, which allows action 1 only."""

    def __init__(self, cut: bool = False, wide: bool = False) -> None:
        super().__init__("fix37_counted_mask", CLIMBING, repeats=2)
        self.cut, self.wide, self.asked = cut, wide, []

    def _step(self, actions: dict) -> Transition:
        tr = super()._step(actions)
        if not self.cut:
            return tr
        ids = self.spec.agent_ids
        return Transition(tr.rewards, {a: False for a in ids}, dict(tr.terminated))

    def final_legal_mask(self, agent: str) -> np.ndarray:
        self.asked.append(agent)
        return np.arange(self.spec.action_spaces[agent].n + self.wide) == 1


def _run(cut: bool, wide: bool = False):
    vg = VectorGame(lambda: CountedMask(cut, wide), 2, seed=0)
    vg.reset()
    acts = {a: np.zeros(2, dtype=np.int64) for a in vg.spec.agent_ids}
    first = vg.step(acts)
    assert not first.done.any() and all(not g.asked for g in vg.games)
    return vg, vg.step(acts)


def test_a_terminated_agent_s_mask_is_not_asked():
    vg, end = _run(cut=False)
    assert end.done.all() and all(end.terminated[a].all() for a in vg.spec.agent_ids)
    assert [g.asked for g in vg.games] == [[], []]
    assert not any(m.any() for m in end.final_legal.values())  # read as every action


def test_a_truncated_agent_s_mask_is_asked_and_kept():
    vg, end = _run(cut=True)
    assert end.done.all() and all(end.truncated[a].all() for a in vg.spec.agent_ids)
    assert [g.asked for g in vg.games] == [["agent_0", "agent_1"]] * 2
    for a in vg.spec.agent_ids:
        assert end.final_legal[a].tolist() == [[False, True, False]] * 2


def test_a_wrong_shape_is_still_refused_at_a_truncation():
    with pytest.raises(games.GameContractError, match=r"final_legal_mask\('agent_0'\) has shape"):
        _run(cut=True, wide=True)
