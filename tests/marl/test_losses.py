"""One PPO-clip loss (``marl.losses``) for MAPPO and the LLM trainer: it gives exactly the
numbers (loss, gradients, diagnostics) each of them computed with its own copy before."""

import pytest
import torch

import llm_agents.losses
import marl.mappo_update
from marl import losses
from marl.losses import ppo_clip_loss


def _inputs(seed: int, shape: tuple[int, ...], adv_shape: tuple[int, ...] | None = None):
    """``logp`` (a leaf needing grad), ``old_logp`` and advantages; ratios spread over
    ``[e^-0.6, e^0.6]`` so a good share of units falls outside a 0.2 clip range."""
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(shape, generator=g) * 3
    logp = (old + (torch.rand(shape, generator=g) - 0.5) * 1.2).requires_grad_()
    adv = torch.randn(adv_shape or shape, generator=g)
    return logp, old, adv


def _grad(loss: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.autograd.grad(loss, x)[0]


@pytest.mark.parametrize("seed", range(4))
def test_mappo_numbers_are_those_of_its_former_loss(seed):
    """MAPPO's former inline loss (CleanRL's): mean of ``max(-A r, -A clip(r))``, k3
    approx-KL and clip fraction ``|r - 1| > eps``; equal to the last bit, gradient too."""
    logp, old, adv = _inputs(seed, (257,))
    eps = 0.2
    logratio = logp - old
    ratio = logratio.exp()
    want = torch.max(-adv * ratio, -adv * ratio.clamp(1 - eps, 1 + eps)).mean()
    got = ppo_clip_loss(logp, old, adv, eps)
    assert torch.equal(got.loss, want)
    assert torch.equal(_grad(got.loss, logp), _grad(want, logp))
    assert torch.equal(got.approx_kl, ((ratio - 1) - logratio).mean().detach())
    want_outside = ((ratio - 1).abs() > eps).float().mean()
    assert torch.equal(got.outside, want_outside) and 0.1 < want_outside < 0.9
    assert not got.approx_kl.requires_grad and not got.outside.requires_grad


@pytest.mark.parametrize("clip_high", [None, 0.28])
@pytest.mark.parametrize("seed", range(3))
def test_llm_numbers_are_those_of_its_former_loss(seed, clip_high):
    """The LLM trainer's former per-token loss: weighted sum of ``-min(A r, A clip(r))``
    over ``[n, L]`` tokens with per-turn advantages ``[n, 1]`` and DAPO's clip-higher;
    clip fraction = weighted share of tokens that took the clipped branch."""
    logp, old, adv = _inputs(seed, (6, 9), (6, 1))
    mask = torch.rand(6, 9, generator=torch.Generator().manual_seed(seed)) < 0.7
    w = mask.float() / mask.sum()
    lo, hi = 0.2, 0.2 if clip_high is None else clip_high
    ratio = torch.exp(logp - old)
    unclipped, clipped = ratio * adv, torch.clamp(ratio, 1.0 - lo, 1.0 + hi) * adv
    per_unit = -torch.minimum(unclipped, clipped)
    want = (w * per_unit).sum()
    got = ppo_clip_loss(logp, old, adv, 0.2, clip_high, weight=w)
    assert torch.equal(got.loss, want)
    assert torch.equal(_grad(got.loss, logp), _grad(want, logp))
    assert torch.equal(got.terms.loss, per_unit)
    assert torch.equal(got.clipfrac, (w * (clipped < unclipped)).sum())
    log_ratio = logp - old
    assert torch.equal(got.approx_kl, (w * (log_ratio.exp() - 1 - log_ratio)).sum().detach())


def test_a_mask_keeps_padding_out_whatever_it_holds():
    logp, old, adv = _inputs(7, (4, 5), (4, 1))
    mask = torch.zeros(4, 5, dtype=torch.bool)
    mask[:, :3] = True
    padded = logp.detach().clone()
    padded[~mask] = float("nan")  # padding positions hold garbage
    padded.requires_grad_()
    got = ppo_clip_loss(padded, old, adv, mask=mask)
    want = ppo_clip_loss(logp[:, :3], old[:, :3], adv)
    assert torch.equal(got.loss, want.loss) and torch.isfinite(got.loss)
    grad = _grad(got.loss, padded)
    assert torch.equal(grad[~mask], torch.zeros(8)) and torch.isfinite(grad).all()
    # weights mask/units give the same mean (to rounding)
    w = ppo_clip_loss(logp, old, adv, weight=mask.float() / mask.sum())
    assert w.loss.item() == pytest.approx(want.loss.item(), rel=1e-6)


def test_weight_and_mask_together_are_refused():
    logp, old, adv = _inputs(0, (3,))
    with pytest.raises(ValueError, match="weight or mask, not both"):
        ppo_clip_loss(logp, old, adv, weight=torch.ones(3), mask=torch.ones(3, dtype=bool))


def test_one_implementation_serves_both_learners():
    assert llm_agents.losses.ppo_clip is losses.ppo_clip
    assert llm_agents.losses.ppo_clip_loss is losses.ppo_clip_loss
    assert marl.mappo_update.ppo_clip_loss is losses.ppo_clip_loss
