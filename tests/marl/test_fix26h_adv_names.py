"""Advantage diagnostics name their agents and roles (fix26h): ``adv/role_adversary/...``,
not ``adv/role_0/...``, which nothing in metrics.csv or the dashboard mapped back to a role.
Without names the keys stay numbered (API callers, runs from before)."""

from __future__ import annotations

import pytest
import torch

import games
from marl.adv_diagnostics import advantage_diagnostics, key_label
from marl.advantages import AdvantageKeys, normalize_advantages
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import train

X = torch.tensor([0.0, 2.0, 10.0, 10.0])
KEYS = AdvantageKeys(agent=torch.tensor([1, 1, 0, 0]), role=torch.tensor([0, 0, 1, 1]))


def test_named_keys_carry_the_numbered_values():
    numbered = advantage_diagnostics(X, X - 1, KEYS)
    named = advantage_diagnostics(X, X - 1, KEYS, names={"agent": ["scout_0", "solver_0"],
                                                         "role": ["solver", "scout"]})
    rename = {"agent_0": "agent_scout_0", "agent_1": "agent_solver_0",
              "role_0": "role_solver", "role_1": "role_scout", "global": "global"}
    assert named == {f"adv/{rename[k.split('/')[1]]}/{k.split('/')[2]}": v
                     for k, v in numbered.items()}
    assert named["adv/agent_solver_0/raw_mean"] == 1.0  # ids 1: the first two samples
    assert named["adv/role_scout/count"] == 2 and named["adv/role_scout/raw_std"] == 0.0


def test_a_kind_without_names_stays_numbered():
    d = advantage_diagnostics(X, X, KEYS, names={"role": ["a", "b"]})
    assert {k.split("/")[1] for k in d} == {"global", "agent_0", "agent_1", "role_a", "role_b"}


def test_names_are_escaped_into_one_key_segment_each():
    # a "/" would split the key (and the dashboard's per-role panels); "%" is escaped too, so
    # "a/b" and a role literally named "a%2Fb" stay two keys
    names = {"role": ["a/b", "a%2Fb"], "agent": ["", "x y"]}
    d = advantage_diagnostics(X, X, KEYS, names=names)
    assert {k.split("/")[1] for k in d} == {"global", "role_a%2Fb", "role_a%252Fb", "agent_",
                                            "agent_x y"}
    assert all(k.count("/") == 2 for k in d)
    assert key_label("scout_0") == "scout_0" and key_label("%/") == "%25%2F"


def test_bad_names_fail_in_one_line():
    with pytest.raises(ValueError, match=r"names\['seat'\]: unknown key kind; kinds are \["):
        normalize_advantages("agent", X, KEYS, names={"seat": ["a"]})
    with pytest.raises(ValueError, match=r"names\['role'\]='ab'; expected a list of strings"):
        normalize_advantages("agent", X, KEYS, names={"role": "ab"})
    with pytest.raises(ValueError, match=r"names\['role'\] repeats \['a'\]"):
        normalize_advantages("agent", X, KEYS, names={"role": ["a", "a"]})
    res = normalize_advantages("agent", X, KEYS, names={"role": ["only"]})  # checked on read
    with pytest.raises(ValueError, match=r"keys.role holds id 1, which names\['role'\] \(1 "
                       r"names, ids 0..0\) does not name"):
        _ = res.diagnostics


def test_normalize_advantages_names_its_lazy_diagnostics():
    roles = ["solver", "scout"]
    res = normalize_advantages("role", X, KEYS, names={"role": roles})
    roles[0] = "changed"  # the caller's list changing later does not rename the keys
    assert res.diagnostics["adv/role_solver/adv_mean"] == pytest.approx(0.0, abs=1e-6)
    assert "adv/role_scout/count" in res.diagnostics and "adv/agent_0/count" in res.diagnostics
    # the numbered call of before is unchanged
    assert "adv/role_0/count" in normalize_advantages("role", X, KEYS).diagnostics


def test_mappo_logs_its_roles_and_agents_by_name():
    game = "pettingzoo/mpe2.simple_adversary_v3"
    spec = games.make(game, max_cycles=25).spec
    cfg = MAPPOConfig(adv_norm="role", rollout_steps=25, epochs=1, minibatches=1)
    learner = MAPPO(spec, cfg, seed=0)
    vg = games.VectorGame(game, 4, seed=0, max_cycles=25, **learner.vector_game_kwargs)
    m = train(learner, vg, frames=4 * 25, progress=False).metrics[-1]
    kinds = {k.split("/")[1] for k in m if k.startswith("adv/")}
    # the agent agent_0 logs adv/agent_0/..., not adv/agent_agent_0/... (marl27)
    assert spec.agent_ids == ("adversary_0", "agent_0", "agent_1")
    assert kinds == {"global", "role_adversary", "role_agent", "agent_adversary_0", "agent_0",
                     "agent_1"}
    for role in ("adversary", "agent"):  # role-normalized: each role mean 0, std 1
        assert abs(m[f"adv/role_{role}/adv_mean"]) < 1e-4
        assert m[f"adv/role_{role}/adv_std"] == pytest.approx(1.0, abs=1e-3)
    assert m["adv/agent_adversary_0/count"] == m["adv/role_adversary/count"] == 4 * 25
