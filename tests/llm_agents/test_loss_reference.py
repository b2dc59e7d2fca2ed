"""The LLM trainer's loss pieces (``llm_agents.losses``) against slow per-token references:
PPO-clip aggregated per token (``token_mean``) or per turn (``turn_mean``) over turns of
different lengths, split into role chunks as the trainer back-propagates them; and the KL
estimators' values and gradients against exact sums over a small categorical policy."""

import math

import pytest
import torch

from llm_agents import losses

CLIP_LOW, CLIP_HIGH = 0.2, 0.28
LENGTHS = [3, 1, 7, 2, 5, 4]  # generated tokens of each turn of the minibatch


def _turns(seed: int):
    """Per-turn token lists: (logp, old_logp) floats, the turn's advantage."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in LENGTHS:
        old = (-torch.rand(n, generator=g) * 3).tolist()
        new = [o + (float(torch.rand((), generator=g)) - 0.5) * 1.2 for o in old]
        out.append((new, old, float(torch.randn((), generator=g))))
    return out


def _unit_loss(lp: float, old: float, adv: float) -> float:
    r = math.exp(lp - old)
    return -min(r * adv, min(max(r, 1 - CLIP_LOW), 1 + CLIP_HIGH) * adv)


def _reference(turns, agg: str) -> float:
    """token_mean: every token of the minibatch weighs the same (DAPO);
    turn_mean: mean over turns of each turn's token mean (GRPO as published)."""
    per_turn = [[_unit_loss(lp, o, a) for lp, o in zip(new, old, strict=True)]
                for new, old, a in turns]
    if agg == "token_mean":
        return sum(sum(t) for t in per_turn) / sum(len(t) for t in per_turn)
    return sum(sum(t) / len(t) for t in per_turn) / len(per_turn)


def _padded(turns, idx):
    """``[n, L]`` logp (leaf), old logp, mask and ``[n, 1]`` advantages of turns ``idx``,
    padding filled with junk the weights must ignore."""
    L = max(LENGTHS)
    logp = torch.full((len(idx), L), -7.0, dtype=torch.float64)
    old = torch.full((len(idx), L), 2.0, dtype=torch.float64)
    mask = torch.zeros(len(idx), L, dtype=torch.bool)
    adv = torch.zeros(len(idx), 1, dtype=torch.float64)
    for r, i in enumerate(idx):
        new, o, a = turns[i]
        logp[r, : len(new)] = torch.tensor(new, dtype=torch.float64)
        old[r, : len(o)] = torch.tensor(o, dtype=torch.float64)
        mask[r, : len(new)] = True
        adv[r] = a
    return logp.requires_grad_(), old, mask, adv


@pytest.mark.parametrize("agg", ["token_mean", "turn_mean"])
@pytest.mark.parametrize("seed", range(3))
def test_clipped_loss_split_by_role_matches_a_per_token_loop(agg, seed):
    turns = _turns(seed)
    want = _reference(turns, agg)
    units = sum(LENGTHS)
    fn = losses.resolve(losses.AGGREGATIONS, "loss aggregation", agg)
    total = 0.0
    for chunk in ([0, 2, 5], [1, 3, 4]):  # two roles, back-propagated one after the other
        logp, old, mask, adv = _padded(turns, chunk)
        w = fn(mask, units, len(turns))
        pg = losses.ppo_clip_loss(logp, old, adv, CLIP_LOW, CLIP_HIGH, weight=w)
        total += float(pg.loss)
        # each token's gradient: -r A / N where the unclipped branch is the smaller, else 0
        (grad,) = torch.autograd.grad(pg.loss, logp)
        for r, i in enumerate(chunk):
            new, o, a = turns[i]
            for k, (lp, ol) in enumerate(zip(new, o, strict=True)):
                ratio = math.exp(lp - ol)
                clipped = min(max(ratio, 1 - CLIP_LOW), 1 + CLIP_HIGH)
                n = units if agg == "token_mean" else len(new) * len(turns)
                g = -ratio * a / n if ratio * a <= clipped * a else 0.0
                assert float(grad[r, k]) == pytest.approx(g, rel=1e-6, abs=1e-12)  # float32 weights
            assert not grad[r, len(new):].any()  # padding gets no gradient
    assert total == pytest.approx(want, rel=1e-6)


def _categorical(seed: int, k: int = 6):
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(k, generator=g, dtype=torch.float64).requires_grad_()
    ref = torch.log_softmax(torch.randn(k, generator=g, dtype=torch.float64), -1)
    return theta, ref


@pytest.mark.parametrize("seed", range(3))
def test_kl_estimators_values_are_exact_in_expectation(seed):
    """Over x ~ pi: E[k1] = E[k3] = KL(pi || ref) exactly; k3 >= 0 for every sample;
    k2 = (log pi - log ref)^2 / 2 per sample."""
    theta, ref = _categorical(seed)
    logp = torch.log_softmax(theta, -1).detach()
    p = logp.exp()
    kl = float((p * (logp - ref)).sum())
    est = {name: losses.KL_ESTIMATORS[name](logp, ref) for name in ("k1", "k2", "k3")}
    assert float((p * est["k1"]).sum()) == pytest.approx(kl, rel=1e-12)
    assert float((p * est["k3"]).sum()) == pytest.approx(kl, rel=1e-12)
    assert (est["k3"] >= 0).all()
    for x in range(len(p)):
        d = float(logp[x] - ref[x])
        assert float(est["k1"][x]) == pytest.approx(d)
        assert float(est["k2"][x]) == pytest.approx(d * d / 2)
        assert float(est["k3"][x]) == pytest.approx(math.exp(-d) + d - 1)


@pytest.mark.parametrize("seed", range(3))
def test_kl_estimators_gradients_as_losses(seed):
    """What each estimator does as a loss term on sampled units (samples held fixed, the
    trainer's use): its expected gradient over x ~ pi is exactly ``grad KL(pi || ref)`` for
    k2, ``grad KL(ref || pi)`` for k3 (GRPO's term pulls toward covering ref), and 0 for k1
    (it regularizes nothing in expectation; documented in ``llm_agents.losses``)."""
    theta, ref = _categorical(seed)

    def expected_grad(name: str) -> torch.Tensor:
        logp = torch.log_softmax(theta, -1)
        p = logp.exp().detach()  # the sampling distribution is not differentiated
        return torch.autograd.grad((p * losses.KL_ESTIMATORS[name](logp, ref)).sum(), theta)[0]

    def grad_of(kl) -> torch.Tensor:
        return torch.autograd.grad(kl(torch.log_softmax(theta, -1)), theta)[0]

    reverse = grad_of(lambda logp: (logp.exp() * (logp - ref)).sum())
    forward = grad_of(lambda logp: (ref.exp() * (ref - logp)).sum())
    assert torch.allclose(expected_grad("k2"), reverse, rtol=1e-9, atol=1e-12)
    assert torch.allclose(expected_grad("k3"), forward, rtol=1e-9, atol=1e-12)
    assert torch.allclose(expected_grad("k1"), torch.zeros_like(theta), atol=1e-12)
    assert reverse.abs().max() > 1e-2 and (reverse - forward).abs().max() > 1e-3
