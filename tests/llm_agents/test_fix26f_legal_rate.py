"""An LLM policy counts the moves it chose and the fallbacks among them (fix 26f): a match or
an evaluation played an untrained model's fallback moves and reported their return as the
model's, with nothing saying every move was a fallback."""

import numpy as np

import games
from llm_agents.actions import ActionConfig
from llm_agents.backends import SamplingConfig
from llm_agents.policy import LegalStats, LLMPolicy
from llm_agents.team import Team

from .conftest import COMPACT


def test_act_counts_its_moves_and_the_fallbacks_the_mode_played(multi_tok, make_model):
    action = ActionConfig(mode="generate", sampling=SamplingConfig(max_new_tokens=3))
    policy = LLMPolicy.from_team(Team.shared(make_model(multi_tok), multi_tok),
                                 games.make("tool/lookup").spec, action=action, prompt=COMPACT)
    assert policy.legal_stats() == LegalStats(0, 0) and policy.legal_stats().rate is None
    vg = games.VectorGame("tool/lookup", 4, seed=0, with_text=True)
    vs = vg.reset()
    want = LegalStats(0, 0)
    for _ in range(3):
        agent = next(a for a in vg.spec.agent_ids if vs.acting[a].any())
        rows, reqs, _ = policy._requests(agent, vs)
        backend = policy.team.model_for(policy._role(agent)).backend
        # greedy decoding is deterministic: the mode's own verdicts on the same prompts
        valid = [d.valid for d in policy.mode.decide(backend, reqs, policy.rng, greedy=True)]
        want = LegalStats(want.decisions + len(rows), want.invalid + valid.count(False))
        acts = policy.act(agent, vs, greedy=True)
        assert policy.legal_stats() == want
        vs = vg.step({a: acts if a == agent else np.zeros(4, np.int64)
                      for a in vg.spec.agent_ids})
    assert want.invalid > 0  # an untrained model: mostly fallbacks
    assert policy.legal_stats().rate == 1.0 - want.invalid / want.decisions
    assert (policy.legal_stats() - LegalStats(1, 1)) == LegalStats(want.decisions - 1,
                                                                   want.invalid - 1)


def test_scored_moves_are_always_legal(kuhn_tok, make_model):
    policy = LLMPolicy.from_team(Team.shared(make_model(kuhn_tok), kuhn_tok),
                                 games.make("openspiel/kuhn_poker").spec, prompt=COMPACT)
    vs = games.VectorGame("openspiel/kuhn_poker", 8, seed=0, with_text=True).reset()
    policy.act("player_0", vs)
    assert policy.legal_stats() == LegalStats(8, 0) and policy.legal_stats().rate == 1.0
    policy.action_probs("player_0", vs)  # probabilities are no moves
    assert policy.legal_stats().decisions == 8
