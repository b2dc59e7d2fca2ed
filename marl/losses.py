"""PPO's clipped surrogate, the one policy loss of every PPO-style learner.

:class:`marl.mappo.MAPPO` (one unit = one agent's action) and the LLM trainer
(``llm_agents.trainer``: one unit = one generated token, or one scored choice) both call
:func:`ppo_clip_loss`. The clip range may be asymmetric (DAPO's clip-higher, Yu et al., 2025,
arXiv:2503.14476); with ``clip_high=None`` it is PPO's symmetric ``[1 - eps, 1 + eps]``
(Schulman et al., 2017).

Shape legend: ``U...`` any shape of units, e.g. ``[M]`` samples of a minibatch or ``[n, L]``
turns × tokens; ``adv`` broadcasts to it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class PPOTerms:
    """Per-unit PPO terms, each shaped like ``logp`` ``[U...]``."""

    loss: Tensor  # -min(r A, clip(r) A)
    ratio: Tensor  # r = pi / pi_old
    log_ratio: Tensor  # log pi - log pi_old
    clipped: Tensor  # bool: the clipped branch was taken (the unit's gradient is zero)
    outside: Tensor  # bool: r left [1 - clip_low, 1 + clip_high], whichever branch was taken


def ppo_clip(logp: Tensor, old_logp: Tensor, adv: Tensor, clip_low: float = 0.2,
             clip_high: float | None = None) -> PPOTerms:
    """Clipped surrogate per unit: ``logp``, ``old_logp`` ``[U...]``; ``adv`` broadcasts."""
    high = clip_low if clip_high is None else clip_high
    log_ratio = logp - old_logp
    ratio = torch.exp(log_ratio)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + high) * adv
    with torch.no_grad():
        # ratio - 1 and 1 - ratio round alike: the same test as CleanRL's |r - 1| > eps
        outside = (ratio - 1 > high) | (1 - ratio > clip_low)
    return PPOTerms(-torch.minimum(unclipped, clipped), ratio, log_ratio, clipped < unclipped,
                    outside)


@dataclass
class PPOLoss:
    """:func:`ppo_clip_loss`'s result: the loss to back-propagate and its diagnostics.

    Attributes:
        loss: ``[]`` the (weighted) mean of the per-unit surrogate loss, differentiable.
        approx_kl: ``[]`` the same mean of ``(r - 1) - log r``, an estimate of
            KL(pi_old || pi) (Schulman's k3), detached.
        clipfrac: ``[]`` the same mean of ``clipped``: share of units whose gradient the
            clip zeroed, detached.
        outside: ``[]`` the same mean of ``outside``: share of units whose ratio left the
            clip range (CleanRL's ``clipfrac``), detached.
        terms: the per-unit terms.
    """

    loss: Tensor
    approx_kl: Tensor
    clipfrac: Tensor
    outside: Tensor
    terms: PPOTerms


def ppo_clip_loss(logp: Tensor, old_logp: Tensor, adv: Tensor, clip_low: float = 0.2,
                  clip_high: float | None = None, *, weight: Tensor | None = None,
                  mask: Tensor | None = None) -> PPOLoss:
    """PPO-clip loss of a minibatch and its diagnostics (:class:`PPOLoss`).

    Args:
        logp: ``[U...]`` log-probabilities of the taken actions (tokens) under the policy
            being trained.
        old_logp: ``[U...]`` the same under the policy that sampled them.
        adv: advantages, broadcast to ``[U...]`` (e.g. ``[n, 1]`` per turn for ``[n, L]``).
        clip_low, clip_high: the ratio is clipped to ``[1 - clip_low, 1 + clip_high]``
            (``clip_high=None``: ``clip_low``).
        weight: ``[U...]`` per-unit weights, zero off the trained units: the loss is
            ``sum(weight * loss)`` (weights summing to 1 make it a mean; a minibatch cut in
            chunks, each with its share of the weights, sums to the whole's loss).
        mask: ``[U...]`` bool, the trained units (e.g. generated tokens, not padding): the
            loss is their plain mean. Masked-off units never enter the sum, so padding may
            hold any value. Give ``weight`` or ``mask``, not both; neither: mean of all.
    """
    if weight is not None and mask is not None:
        raise ValueError("ppo_clip_loss takes weight or mask, not both")
    if mask is not None:  # padding holds anything (NaN too): neither loss nor gradient sees it
        logp, old_logp = logp.masked_fill(~mask, 0.0), old_logp.masked_fill(~mask, 0.0)
        adv = torch.where(mask, adv, 0.0)
    terms = ppo_clip(logp, old_logp, adv, clip_low, clip_high)

    def reduce(x: Tensor) -> Tensor:
        if weight is not None:
            return (weight * x).sum()
        return x[mask].mean() if mask is not None else x.mean()

    with torch.no_grad():
        approx_kl = reduce((terms.ratio - 1) - terms.log_ratio)
        clipfrac = reduce(terms.clipped.float())
        outside = reduce(terms.outside.float())
    return PPOLoss(reduce(terms.loss), approx_kl, clipfrac, outside, terms)
