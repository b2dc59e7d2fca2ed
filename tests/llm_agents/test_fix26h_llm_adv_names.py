"""An LLM team's advantage diagnostics name its agents and roles (fix26h):
``adv/role_scout/...``, ``adv/agent_solver_0/...``, not ``adv/role_0/...``, as its
``losses/grad_norm/<role>`` do."""

from __future__ import annotations

import pytest

from llm_agents.credit import KeyIndex, turn_advantages
from llm_agents.records import Decision, Turn


def _turns(order):
    d = Decision(0, True, "", [1], [1], [0.0])
    return [Turn(ep, 0, 0, agent, role, "m", i, d, 0, float(ep + i))
            for ep in range(4) for i, (agent, role) in enumerate(order)]


def test_turn_advantages_diagnostics_are_named_by_the_key_index():
    index = KeyIndex()
    res = turn_advantages(_turns([("scout_0", "scout"), ("solver_0", "solver")]),
                          ["tool/relay"], "role", index)
    d = res.diagnostics
    assert {k.split("/")[1] for k in d} == {"global", "agent_scout_0", "agent_solver_0",
                                            "role_scout", "role_solver"}
    assert d["adv/role_solver/count"] == 4 and d["adv/role_solver/raw_mean"] == 2.5
    # ids stay the index's across updates: a later batch that meets solver first names it so
    later = turn_advantages(_turns([("solver_0", "solver"), ("scout_0", "scout")]),
                            ["tool/relay"], "role", index).diagnostics
    assert later["adv/role_solver/raw_mean"] == pytest.approx(1.5)
    assert later["adv/role_scout/raw_mean"] == pytest.approx(2.5)
