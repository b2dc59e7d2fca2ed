"""Policy-loss pieces of the LLM trainer as pure tensor functions, registered by name.

* :func:`ppo_clip` / :func:`ppo_clip_loss` -- PPO's clipped surrogate per trained unit, with
  DAPO-style asymmetric clip ranges: :mod:`marl.losses`' (MAPPO's too), re-exported here.
* ``KL_ESTIMATORS`` -- per-unit estimators of KL(pi || pi_ref) from log-probabilities of
  sampled units (Schulman, "Approximating KL divergence", 2020): ``k1``, ``k2``, ``k3``.
  Their *values* average to the KL (``k1``, ``k3`` exactly); as loss terms on sampled
  units their *gradients* differ: ``k2``'s is the gradient of KL(pi || pi_ref), ``k3``'s
  that of KL(pi_ref || pi) (GRPO's penalty), and ``k1``'s is 0 in expectation -- ``k1``
  measures the KL but does not regularize (``tests/llm_agents/test_loss_reference.py``).
* ``AGGREGATIONS`` -- how per-unit losses of a minibatch are averaged: ``token_mean``
  (every generated token weighs the same; DAPO) or ``turn_mean`` (every turn weighs the
  same, its tokens averaged; GRPO as published). They return weights, so a minibatch split
  into chunks (per role, for gradient norms) sums to the same loss.

Shape legend: ``n`` turns of a chunk, ``L`` units per turn (generated tokens, or 1).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from marl.losses import PPOLoss, PPOTerms, ppo_clip, ppo_clip_loss

__all__ = ["AGGREGATIONS", "KL_ESTIMATORS", "PPOLoss", "PPOTerms", "ppo_clip", "ppo_clip_loss",
           "register_aggregation", "register_kl", "resolve"]


KLFn = Callable[[Tensor, Tensor], Tensor]
KL_ESTIMATORS: dict[str, KLFn] = {}


def register_kl(name: str) -> Callable[[KLFn], KLFn]:
    def deco(fn: KLFn) -> KLFn:
        KL_ESTIMATORS[name] = fn
        return fn

    return deco


@register_kl("k1")
def _k1(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """``log pi - log pi_ref``: unbiased, high variance, can be negative; as a loss its
    expected gradient is 0 (no regularization), so prefer ``k2`` or ``k3`` for ``kl_coef``."""
    return logp - ref_logp


@register_kl("k2")
def _k2(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """``(log pi - log pi_ref)^2 / 2``: biased, low variance."""
    return 0.5 * (logp - ref_logp) ** 2


@register_kl("k3")
def _k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """``exp(d) - d - 1`` with ``d = log pi_ref - log pi``: unbiased, non-negative (GRPO)."""
    d = ref_logp - logp
    return torch.exp(d) - d - 1.0


AggFn = Callable[[Tensor, int, int], Tensor]
AGGREGATIONS: dict[str, AggFn] = {}


def register_aggregation(name: str) -> Callable[[AggFn], AggFn]:
    def deco(fn: AggFn) -> AggFn:
        AGGREGATIONS[name] = fn
        return fn

    return deco


@register_aggregation("token_mean")
def _token_mean(mask: Tensor, units: int, turns: int) -> Tensor:
    """Weight ``1 / units`` on every trained unit of the minibatch."""
    return mask.float() / max(units, 1)


@register_aggregation("turn_mean")
def _turn_mean(mask: Tensor, units: int, turns: int) -> Tensor:
    """Weight ``1 / (turns * units of the row)``: each turn counts once."""
    m = mask.float()
    return m / (m.sum(-1, keepdim=True).clamp_min(1.0) * max(turns, 1))


def resolve(table: dict[str, Callable], kind: str, name: str) -> Callable:
    """``table[name]``; unknown names raise a one-line error listing the valid ones."""
    if name not in table:
        raise ValueError(f"{kind} {name!r} unknown; choose one of {sorted(table)}")
    return table[name]
