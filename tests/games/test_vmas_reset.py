"""Resetting many ended VMAS copies at once (games.vmas._Sim.reset_at).

VMAS resets one copy (or all) per call; a MAPPO run on navigation at 4,096 copies, where
episodes end at different steps, spent its time resetting thousands of copies one call at
a time. From ``batched_reset_from(B)`` ended copies on, all copies are reset in one call
and the others are put back: the copies that did not end must go on exactly as under
VMAS's own loop, and the ended ones start as a reset of all copies would start them.
"""

import copy

import numpy as np
import pytest
import torch

import games
import games.vmas as gv
from games.vmas import RESET_ONE_BY_ONE, SCENARIOS

B = 12
ENDED = torch.tensor([1, 4, 5, 9])
KEEP = torch.ones(B, dtype=torch.bool)
KEEP[ENDED] = False
# ball_trajectory's own single reset rebinds pos_shaping to the one copy's value (a
# 0-d tensor for every copy); the one-call reset keeps it per copy
VMAS_SINGLE_RESET_BUG = {"vmas/ball_trajectory": {"sc.pos_shaping"}}
# Smaller settings of two scenarios whose resets are Python loops (both are reset one by one,
# RESET_ONE_BY_ONE, a path that does not depend on these sizes): road_traffic loops over its
# agents (~0.1-0.3 s a copy at its default 20, and random play ends most copies every step:
# ~100 resets), sampling's full reset over its grid's cells (1,600 at its default 0.05: ~4 s).
# pollock: 4 agents, 3 lines and 3 boxes (default 15 each: every collision pair of 45 bodies
# in 5 substeps per step, ~3 s of the suite); the same reset, spawning, and kinds of contact
SCENARIO_KWARGS = {"vmas/road_traffic": {"n_agents": 4}, "vmas/sampling": {"grid_spacing": 0.25},
                   "vmas/pollock": {"n_agents": 4, "n_lines": 3, "n_boxes": 3}}


def _state(scenario) -> dict[str, torch.Tensor]:
    """Every tensor with a leading copy dimension reachable from the scenario, by path."""
    seen, out = set(), {}

    def walk(obj, path):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, (list, tuple)):
            items = enumerate(obj)
        elif isinstance(obj, dict):
            items = obj.items()
        elif hasattr(obj, "__dict__") and gv.is_vmas_object(obj):
            items = vars(obj).items()
        else:
            return
        for key, value in items:
            where = f"{path}.{key if isinstance(key, str) else repr(key)[:30]}"
            if isinstance(value, torch.Tensor):
                if value.dim() and value.shape[0] == B:
                    out[where] = value
            else:
                walk(value, where)

    walk(scenario, "sc")
    return out


def _actions(spec, rng):
    out = {}
    for a in spec.agent_ids:
        sp = spec.action_spaces[a]
        out[a] = torch.as_tensor(
            rng.integers(0, sp.n, B) if sp.discrete
            else rng.uniform(sp.low, sp.high, (B, *sp.shape)).astype(np.float32))
    return out


def _reset(sim, monkeypatch, batched: bool) -> int:
    """Reset ENDED in ``sim`` one by one or in one call; return VMAS's reset calls."""
    calls = []
    scenario = sim.env.scenario
    original = scenario.env_reset_world_at
    monkeypatch.setattr(gv, "batched_reset_from", (lambda n: 1) if batched else (lambda n: 10**9))
    monkeypatch.setattr(scenario, "env_reset_world_at",
                        lambda i: (calls.append(i), original(i))[1])
    sim.reset_at(ENDED)
    monkeypatch.undo()
    return len(calls)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_one_call_reset_leaves_the_other_copies_as_vmas_own_loop_does(scenario, monkeypatch):
    _check_one_call_reset(f"vmas/{scenario}", 1, monkeypatch)


# MPE ports whose full reset draws one goal landmark for all copies (a Python attribute);
# seed 1 happens to draw the same goal again, these seeds do not
@pytest.mark.parametrize(("scenario", "seed"), [("simple_adversary", 2), ("simple_push", 0),
                                                ("simple_speaker_listener", 0)])
def test_a_full_reset_that_changes_shared_state_falls_back_to_one_by_one(scenario, seed,
                                                                         monkeypatch):
    """(review: a new goal for every copy mid-episode) The copies that did not end keep
    their goal: the reset of all copies is undone whole and the ended ones reset one by
    one; the simulation remembers and resets one by one from then on."""
    sim = games.VectorGame(f"vmas/{scenario}", B, seed=seed, tensors=True).native.sim
    sim.reset()
    goals = [getattr(a, "goal", None) or getattr(a, "goal_b", None)
             for a in sim.env.world.agents]
    _check_one_call_reset(f"vmas/{scenario}", seed, monkeypatch)
    for _ in range(6):  # a full reset draws the same goal again now and then
        sim.reset_at(ENDED)
        assert [getattr(a, "goal", None) or getattr(a, "goal_b", None)
                for a in sim.env.world.agents] == goals
    assert sim._one_by_one


def _check_one_call_reset(name, seed, monkeypatch):
    game = games.make(name, max_steps=1000, **SCENARIO_KWARGS.get(name, {}))
    # three batches of one game (each its own simulation): the game is built once
    loop, one, full = (games.VectorGame(lambda: game, B, seed=seed, tensors=True)
                       for _ in range(3))
    rng = np.random.default_rng(0)
    for vg in (loop, one, full):
        vg.reset()
    for _ in range(2):
        acts = _actions(loop.spec, rng)
        for vg in (loop, one, full):
            vg.step(acts)
    full.native.sim._state = copy.deepcopy(one.native.sim._state)

    assert _reset(loop.native.sim, monkeypatch, batched=False) == len(ENDED)
    calls = _reset(one.native.sim, monkeypatch, batched=True)
    # one call; or, where the full reset changed state shared by all copies (checked at run
    # time), everything put back and the ended copies reset one by one after it
    one_call = calls == 1
    # (a scenario whose reset of all copies draws part of the layout once for the batch,
    # each_copy, resets up to RESET_GROUPS ended copies one by one: each its own draw)
    by_one = name in RESET_ONE_BY_ONE or one.native.sim.each_copy
    assert calls == (len(ENDED) if by_one else 1 + len(ENDED) * (
        one.native.sim._one_by_one))
    full.native.sim.reset()

    a, b, c = (_state(vg.native.sim.env.scenario) for vg in (loop, one, full))
    skip = VMAS_SINGLE_RESET_BUG.get(name, set())
    assert set(a) - skip == set(b) - skip
    for path in set(a) - skip:
        torch.testing.assert_close(b[path][KEEP], a[path][KEEP], rtol=0, atol=0, msg=path)
        if one_call:  # the ended copies start as in a reset of all
            torch.testing.assert_close(b[path][~KEEP], c[path][~KEEP], rtol=0, atol=0,
                                       msg=path)

    # the same random state from here on: the copies that went on step alike
    one.native.sim._state = copy.deepcopy(loop.native.sim._state)
    for _ in range(2):
        acts = _actions(loop.spec, rng)
        sa, sb = loop.step(acts), one.step(acts)
        assert torch.equal(sa.done[KEEP], sb.done[KEEP])
        for agent in loop.spec.agent_ids:
            torch.testing.assert_close(sb.obs[agent][KEEP], sa.obs[agent][KEEP],
                                       rtol=0, atol=1e-6)
            if name not in VMAS_SINGLE_RESET_BUG:
                torch.testing.assert_close(sb.rewards[agent][KEEP], sa.rewards[agent][KEEP],
                                           rtol=0, atol=1e-6)


def test_ended_copies_cost_one_vmas_reset_from_the_threshold_on():
    """navigation at 64 copies: 3 ended copies are reset one by one, 40 in one call, and the
    40 come back with the step counters at 0 and the others' counters untouched."""
    vg = games.VectorGame("vmas/navigation", 64, seed=0, tensors=True)
    vg.reset()
    sim = vg.native.sim
    calls = []
    original = sim.env.scenario.env_reset_world_at
    sim.env.scenario.env_reset_world_at = lambda i: (calls.append(i), original(i))[1]
    assert gv.batched_reset_from(64) == 3 and gv.batched_reset_from(4096) == 7
    acts = {a: torch.zeros(64, dtype=torch.long) for a in vg.spec.agent_ids}
    vg.step(acts)
    sim.reset_at(torch.tensor([0, 1]))
    assert calls == [0, 1]
    vg.step(acts)
    calls.clear()
    ended = torch.arange(40)
    sim.reset_at(ended)
    assert calls == [None]
    assert (sim.env.steps[:40] == 0).all() and (sim.env.steps[40:] == 2).all()
