"""MAPPO's entropy bonus raises the policy's entropy (mut39 m26: ``- ent_coef * H`` turned
into ``+ ent_coef * H`` passed every test). With a large ``ent_coef`` and no value loss, one
update of a peaked policy must make it less peaked on the rollout's own observations; with
the bonus's sign flipped it gets more peaked."""

import pytest
import torch

import games
from marl.mappo import MAPPO, MAPPOConfig


def _entropy(learner, vs):
    x = learner._inputs(vs)
    with torch.no_grad():
        logits = learner.actors[0](learner._group_batch(x, 0))
        _, ent = learner.actors[0].log_prob_entropy(logits, torch.zeros(len(logits),
                                                                        dtype=torch.long))
    return float(ent.mean())


@pytest.mark.parametrize("ent_coef", [0.0, 50.0])
def test_entropy_bonus_raises_entropy(ent_coef):
    spec = games.make("openspiel/kuhn_poker").spec
    cfg = MAPPOConfig(rollout_steps=16, epochs=4, minibatches=1, ent_coef=ent_coef,
                      vf_coef=0.0, adv_norm="none", lr=1e-2, max_grad_norm=1e6)
    learner = MAPPO(spec, cfg, seed=0)
    with torch.no_grad():  # a peaked start, away from the entropy's maximum
        learner.actors[0].head[-1].bias.copy_(torch.tensor([2.5, -2.5]))
    vg = games.VectorGame("openspiel/kuhn_poker", 8, seed=0, **learner.vector_game_kwargs)
    vs = vg.reset()
    seen = []
    while not learner.ready():
        seen.append(vs)
        vs = vg.step(learner.act(vs))
        learner.observe(vs)
    before = [_entropy(learner, s) for s in seen]
    learner.update()
    after = [_entropy(learner, s) for s in seen]
    gain = sum(after) / len(after) - sum(before) / len(before)
    if ent_coef:
        assert gain > 0.1  # 0.16 here; the bonus's sign flipped: negative
    else:  # the reference: without the bonus the policy gradient alone moves it little
        assert abs(gain) < 0.05
