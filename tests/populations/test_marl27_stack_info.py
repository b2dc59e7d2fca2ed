"""Rollout workers' VecSteps stacked into one (``stack_steps``) keep each ended copy's info
under its copy in the stack (marl27: the first worker's info stood for all, with its own
copy numbers; harmless while ``VecStep.info`` was never filled)."""

import numpy as np

import games
from populations.rollouts import stack_steps


def test_stacked_info_is_renumbered_by_copy():
    steps = []
    for seed in (0, 1):
        vg = games.VectorGame("pettingzoo/mpe2.simple_spread_v3", 2, seed=seed, max_cycles=1)
        vg.reset()
        steps.append(vg.step({a: np.zeros(2, np.int64) for a in vg.spec.agent_ids}))
    assert all(set(s.info) == {0, 1} for s in steps)
    stacked = stack_steps(steps)
    assert set(stacked.info) == {0, 1, 2, 3} and stacked.done.all()
    assert stacked.info[3] is steps[1].info[1] and stacked.info[0] is steps[0].info[0]
