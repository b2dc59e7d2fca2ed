"""``LLMPolicy``: a team as a marl Policy -- exact action probabilities, legal actions in any
VectorGame, and files that load with ``torch.load(weights_only=True)``."""

import numpy as np
import torch

import games
from llm_agents.actions import ActionConfig
from llm_agents.backends import SamplingConfig
from llm_agents.policy import LLMPolicy
from llm_agents.team import Team
from marl.core import load_policy
from marl.train import evaluate

from .conftest import COMPACT, KUHN, RELAY


def test_save_load_round_trip_gives_the_same_probabilities(tmp_path, multi_tok, make_model):
    team = Team.per_role({"scout": (make_model(multi_tok, 1), multi_tok),
                          "solver": (make_model(multi_tok, 2), multi_tok)},
                         {"scout": "send A", "solver": "compute A + B"})
    spec = games.make("tool/relay", **RELAY).spec
    action = ActionConfig(mode="generate", sampling=SamplingConfig(max_new_tokens=3, stop=()))
    policy = LLMPolicy.from_team(team, spec, action=action, prompt=COMPACT, step=7)
    path = policy.save(tmp_path / "llm.pt")
    data = torch.load(path, weights_only=True)  # only tensors and plain values inside
    assert data["meta"]["kind"] == "llm" and data["meta"]["inputs"] == ["text"]
    loaded = load_policy(path)
    assert isinstance(loaded, LLMPolicy) and loaded.meta.step == 7
    assert loaded.action == action and loaded.prompt == COMPACT
    assert loaded.team.binding("solver").prompt == "compute A + B"
    vg = games.VectorGame("tool/relay", 16, seed=0, with_text=True, **RELAY)
    vs = vg.reset()
    for _ in range(2):
        for agent in spec.agent_ids:
            if vs.acting[agent].any():
                np.testing.assert_allclose(loaded.action_probs(agent, vs),
                                           policy.action_probs(agent, vs), atol=1e-6)
        vs = vg.step({a: policy.act(a, vs) for a in spec.agent_ids})


def test_probabilities_are_distributions_over_legal_actions(kuhn_tok, make_model):
    policy = LLMPolicy.from_team(Team.shared(make_model(kuhn_tok), kuhn_tok),
                                 games.make(KUHN).spec, prompt=COMPACT)
    vs = games.VectorGame(KUHN, 32, seed=0, with_text=True).reset()
    probs = policy.action_probs("player_0", vs)
    np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-9)
    assert np.all(probs[~vs.legal["player_0"]] == 0)
    assert not policy.action_probs("player_1", vs).any()  # nobody waits for player_1 yet


def test_generating_policy_always_plays_legal_actions(multi_tok, make_model):
    action = ActionConfig(mode="generate", sampling=SamplingConfig(max_new_tokens=3))
    policy = LLMPolicy.from_team(Team.shared(make_model(multi_tok), multi_tok),
                                 games.make("tool/lookup").spec, action=action, prompt=COMPACT)
    vg = games.VectorGame("tool/lookup", 8, seed=0, with_text=True)
    result = evaluate(vg, {a: policy for a in vg.spec.agent_ids}, episodes=16)
    assert result.episodes == 16  # random-init output is mostly invalid: fallbacks keep it legal
