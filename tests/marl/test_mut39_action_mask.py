"""MAPPO masks illegal actions when it samples and when it trains (mut39: uncovered). On
tic-tac-toe (an occupied cell is illegal): every sampled action is legal, its recorded
log-probability is that of the softmax over the legal actions only (computed here by hand
from the unmasked head), and the update's first minibatch sees the policy that sampled
(ratio 1: approx_kl and clipfrac 0), which needs the same mask at training time."""

import pytest
import torch

import games
from marl.mappo import MAPPO, MAPPOConfig


def test_mappo_samples_and_trains_on_legal_actions_only():
    spec = games.make("openspiel/tic_tac_toe").spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=24, epochs=1, minibatches=1), seed=0)
    vg = games.VectorGame("openspiel/tic_tac_toe", 6, seed=0, **learner.vector_game_kwargs)
    vs = vg.reset()
    actor, illegal_seen = learner.actors[0], 0
    while not learner.ready():
        x = learner._inputs(vs)
        xg = learner._group_batch(x, 0)
        with torch.no_grad():
            raw = actor.head(actor.encode(xg))  # [B*A, N] logits before the mask
        actions = learner.act(vs)
        t = learner.buf.row - 1  # the row act() just wrote
        for i, a in enumerate(learner.agents):
            for b in range(len(vs.done)):
                if not vs.acting[a][b]:
                    continue
                legal = torch.as_tensor(vs.legal[a][b], dtype=torch.bool)
                illegal_seen += int((~legal).sum())
                assert legal[int(actions[a][b])], "an illegal action was sampled"
                row = raw[b * len(learner.agents) + i]
                ref = torch.log_softmax(row.masked_fill(~legal, -torch.inf), -1)
                assert float(learner.buf.logp[t, b, i]) == pytest.approx(
                    float(ref[int(actions[a][b])]), abs=1e-5)
        vs = vg.step(actions)
        learner.observe(vs)
    assert illegal_seen > 100  # the mask mattered
    metrics = learner.update()
    assert metrics["losses/approx_kl"] == pytest.approx(0.0, abs=1e-6)
    assert metrics["losses/clipfrac"] == 0.0
