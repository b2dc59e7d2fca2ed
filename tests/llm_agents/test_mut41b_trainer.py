"""Mutation walk mut41b over the trainer's loss terms: the KL penalty and the entropy bonus
must pull the policy their way (mutations: either term's sign flipped survived every
existing test). Rewards are zeroed, so the policy-gradient term is 0 and the step follows
the term alone."""

import torch

from llm_agents.actions import ActionConfig
from llm_agents.team import Team
from llm_agents.trainer import GRPOConfig, MultiTurnGRPO

from .conftest import COMPACT, KUHN


def _two_updates(tok, model, **terms):
    cfg = GRPOConfig(group_size=2, groups_per_step=2, lr=1e-4, action=ActionConfig(mode="score"),
                     prompt=COMPACT, device="cpu", **terms)
    trainer = MultiTurnGRPO(Team.shared(model, tok), KUHN, cfg)
    with torch.no_grad():  # away from the frozen reference, so the KL has a gradient
        gen = torch.Generator().manual_seed(0)
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen))
    batch = trainer.collect()
    for t in batch.turns:
        t.reward = 0.0  # advantages 0: only the KL or entropy term moves the weights
    return trainer.update(batch), trainer.update(batch)


def test_the_kl_penalty_pulls_the_policy_back_to_the_reference(kuhn_tok, make_model):
    first, second = _two_updates(kuhn_tok, make_model(kuhn_tok), kl_coef=1.0, ent_coef=0.0)
    assert first["losses/kl"] > 0
    assert second["losses/kl"] < first["losses/kl"]


def test_the_entropy_bonus_raises_the_entropy(kuhn_tok, make_model):
    first, second = _two_updates(kuhn_tok, make_model(kuhn_tok), kl_coef=0.0, ent_coef=1.0)
    assert second["losses/entropy"] > first["losses/entropy"]
