"""Rollout workers' VecSteps stacked where one worker's copies ended an episode and another's
did not (math36): VectorGame leaves ``final_state`` None on a step with no ending, and
``stack_steps`` kept the first worker's None (the others' final states dropped, so MAPPO's
state critic could not bootstrap a time-limit cut) or crashed concatenating an array with
None. The copies with no ending now get zeros, as one VectorGame gives them."""

import dataclasses

import numpy as np
import pytest

import games
from marl.actor_critic import NetConfig
from marl.mappo import MAPPO, MAPPOConfig
from populations.rollouts import RolloutCollector, RolloutSpec, stack_steps, train_with_workers
from tests.marl.exits_game import Exits

EXITS = "test/math36_exits"


@games.register(EXITS)
class _Exits(Exits):
    def __init__(self, cut: bool = False) -> None:
        super().__init__(cut=cut)
        self.spec = dataclasses.replace(self.spec, name=EXITS)


def _step(seed: int, ended: bool) -> games.VecStep:
    vg = games.VectorGame(Exits, 2, seed=seed, with_state=True)
    vg.reset()
    for _ in range(10):  # action 0: nobody leaves; the time limit ends both copies together
        vs = vg.step({a: np.zeros(2, np.int64) for a in vg.spec.agent_ids})
        if bool(vs.done.any()) == ended:
            return vs
    raise AssertionError("no such step")


@pytest.mark.parametrize("ended_first", [False, True])
def test_final_state_of_a_worker_with_no_ending_is_zeros(ended_first):
    quiet, ended = _step(0, ended=False), _step(1, ended=True)
    assert quiet.final_state is None and ended.final_state is not None
    steps = [ended, quiet] if ended_first else [quiet, ended]
    stacked = stack_steps(steps)
    assert stacked.final_state is not None and stacked.final_state.shape == (4, 5)
    rows = slice(0, 2) if ended_first else slice(2, 4)
    zero = slice(2, 4) if ended_first else slice(0, 2)
    np.testing.assert_array_equal(stacked.final_state[rows], ended.final_state)
    assert not stacked.final_state[zero].any()
    assert stacked.final_state.dtype == ended.final_state.dtype
    # the final observations, always filled, stack as before
    np.testing.assert_array_equal(stacked.final_obs["agent_0"][rows], ended.final_obs["agent_0"])


def _workers(learner, cut=False):
    return RolloutCollector(
        RolloutSpec(EXITS, learner.agents, 1, seed=0, game_kwargs={"cut": cut},
                    vector_kwargs=learner.vector_game_kwargs), 2, "local")


def _learner():
    return MAPPO(games.make(EXITS).spec, MAPPOConfig(
        rollout_steps=8, epochs=1, minibatches=1, net=NetConfig(critic="state", hidden=(16,))),
        seed=0)


def test_mappo_state_critic_trains_on_two_workers_whose_episodes_end_apart():
    """Exits(cut=True): agent_0 is truncated alone at step 3 (bootstrapped from the final
    state) unless an episode ended first; two workers of one copy each cut it at different
    steps."""
    learner = _learner()
    collector = _workers(learner, cut=True)
    cut_alone = []  # steps where one worker's copy had a cut, the other's no final state
    orig = collector.collect

    def collect(policy, steps):  # the rounds as the learner gets them
        segments = orig(policy, steps)
        for x, y in (segments[0][0], segments[1][0]), (segments[1][0], segments[0][0]):
            cut_alone.extend(any(a.truncated[g][0] for g in a.truncated) and b.final_state is None
                             for a, b in zip(x[1:], y[1:], strict=True))
        return segments

    collector.collect = collect
    try:
        res = train_with_workers(learner, collector, 160, progress=False)
    finally:
        collector.close()
    assert res.updates == 10 and any(cut_alone)


def test_workers_sample_their_own_actions():
    """A MAPPO policy loaded from bytes samples from its own generator, seeded alike by every
    load: each worker's round reseeds it (math36: both workers played the same actions)."""
    learner = _learner()
    collector = _workers(learner)
    try:
        rounds = [collector.collect(learner.policy(), 8) for _ in range(2)]
    finally:
        collector.close()
    played = [[[int(a[x][0]) for x in sorted(a)] for a in seg[1]] for r in rounds for seg in r]
    assert played[0] != played[1] and played[2] != played[3]  # worker 0 vs 1, each round
    assert played[0] != played[2]  # worker 0: round 0 vs round 1
