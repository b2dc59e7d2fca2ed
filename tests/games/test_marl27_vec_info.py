"""``VecStep.info`` holds, for each copy whose episode ended at a step, what the game reported
with its last transition (marl27: it was never filled, so nothing downstream could read a
tool task's ``success``, a PettingZoo game's infos or a VMAS scenario's info)."""

from __future__ import annotations

import numpy as np
import pytest

import games
from games.vector import episode_success


def _zeros(vg):
    out = {}
    for a in vg.spec.agent_ids:
        sp = vg.spec.action_spaces[a]
        out[a] = (np.zeros(vg.num_envs, np.int64) if sp.discrete
                  else np.zeros((vg.num_envs, *sp.shape), np.float32))
    return out


def test_a_tool_tasks_success_reaches_its_copies_info():
    vg = games.VectorGame("tool/relay", 3, seed=0)
    vs, seen = vg.reset(), {}
    assert vs.info == {}
    rng = np.random.default_rng(0)
    for _ in range(40):
        acts = {}
        for a in vg.spec.agent_ids:  # a legal action wherever the agent acts
            legal = vs.legal[a]
            acts[a] = np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0
                                for row in legal])
        vs = vg.step(acts)
        assert set(vs.info) == {int(b) for b in np.flatnonzero(vs.done)}
        for b, info in vs.info.items():
            seen[(len(seen), b)] = info
            # relay pays 1 exactly where it reports success, so the flag is the return
            ret = vs.episode_return[vg.spec.agent_ids[0]][b]
            assert episode_success(info) == (ret == 1.0)
    assert seen and all("success" in i for i in seen.values())


def test_a_pettingzoo_games_infos_and_no_success():
    vg = games.VectorGame("pettingzoo/mpe2.simple_spread_v3", 2, seed=0, max_cycles=3)
    vg.reset()
    for t in range(3):
        vs = vg.step(_zeros(vg))
        assert len(vs.info) == (2 if t == 2 else 0)
    assert set(vs.info[0]["agents"]) == set(vg.spec.agent_ids)
    assert episode_success(vs.info[1]) is None  # mpe2 reports no success: nothing said


@pytest.mark.parametrize("tensors", [False, True])
def test_a_vmas_batchs_info_per_ended_copy(tensors):
    vg = games.VectorGame("vmas/navigation", 3, seed=0, max_steps=2, tensors=tensors)
    vg.reset()
    vs = vg.step(_zeros(vg))
    assert len(vs.info) == 0
    vs = vg.step(_zeros(vg))
    assert len(vs.info) == 3 and list(vs.info) == [0, 1, 2]
    agents = vs.info[2]["agents"]
    assert set(agents) == set(vg.spec.agent_ids)
    assert {"pos_rew", "final_rew", "agent_collisions"} <= set(agents["agent_0"])
    assert isinstance(agents["agent_0"]["pos_rew"], float)
    assert episode_success(vs.info[0]) is None
    one = games.make("vmas/navigation", max_steps=2)
    ts = one.reset(0)
    for _ in range(2):
        ts = one.step(dict.fromkeys(ts.acting, 0))
    assert set(ts.info["agents"]) == set(one.spec.agent_ids)  # the stepped game's too


def test_episode_success_reads_the_game_or_its_agents():
    assert episode_success({"success": True}) is True
    assert episode_success({"is_success": 0}) is False
    assert episode_success({"agents": {"a": {"success": True}, "b": {"success": False}}}) is False
    assert episode_success({"agents": {"a": {"is_success": 1}, "b": {"pos_rew": 0.3}}}) is True
    assert episode_success({"agents": {"a": {}}}) is None
    assert episode_success({}) is None


def test_a_vmas_info_pickles_as_a_plain_dict():
    import pickle

    vg = games.VectorGame("vmas/navigation", 2, seed=0, max_steps=1, tensors=True)
    vg.reset()
    vs = vg.step(_zeros(vg))
    back = pickle.loads(pickle.dumps(vs.info))  # a Ray worker's VecStep: no device tensors
    assert type(back) is dict and back == dict(vs.info) and set(back) == {0, 1}
