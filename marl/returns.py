"""Returns and generalized advantage estimation over ``[T, B, ...]`` (part of the advantage
math re-exported by ``marl.advantages``; loops over time only).

``gae``/``discounted_returns`` bootstrap on truncation and not on termination;
``agent_gae`` runs GAE over each agent's own acting steps for turn-based games.

Shape legend: ``_T`` time, ``_B`` batch (copies / episodes), ``_A`` agents.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


def _acc(dtype: torch.dtype, float64: bool) -> torch.dtype:
    return torch.float64 if float64 or dtype == torch.float64 else torch.float32


@dataclass(frozen=True)
class GAEResult:
    """Output of ``gae``: both ``[T, B, ...]`` in the dtype of ``rewards``."""

    advantages: Tensor
    returns: Tensor  # advantages + values: the critic's regression target


def _trail(flag: Tensor, ref: Tensor) -> Tensor:
    """Append singleton dims so a ``[T, B]`` flag broadcasts against ``[T, B, ...]``."""
    return flag.reshape(*flag.shape, *([1] * (ref.dim() - flag.dim())))


def _reverse_scan_T(x_T: Tensor, coef_T: Tensor) -> Tensor:
    """In place ``x[t] += coef[t] * x[t + 1]`` from the end: the module's only time loop."""
    for t in range(x_T.shape[0] - 2, -1, -1):
        x_T[t].addcmul_(coef_T[t], x_T[t + 1])
    return x_T


def discounted_returns(
    rewards: Tensor,
    terminated: Tensor,
    truncated: Tensor,
    next_values: Tensor | None = None,
    *,
    gamma: float = 0.99,
    float64: bool = False,
) -> Tensor:
    """Discounted returns over ``[T, B, ...]``; flags are bool [T, B] or [T, B, ...].

    ``next_values`` [T, B, ...] is V of the observation *after* step t (0 when None).
    ``G_t = r_t + gamma * (1 - terminated_t) * next_values_t`` when step t ends an episode
    (truncated: bootstrap; terminated: none) or the rollout, else ``r_t + gamma * G_{t+1}``.
    """
    acc = _acc(rewards.dtype, float64)
    r = rewards.to(acc)
    term = _trail(terminated, r).to(acc)  # [T, B, 1...]: flags stay small
    cut = torch.maximum(term, _trail(truncated, r).to(acc))
    if cut.shape[0]:
        cut[-1] = 1.0  # the rollout end bootstraps like a truncation
    if next_values is None:
        ret = r.clone()
    else:
        ret = torch.mul(next_values.to(acc), gamma * (1.0 - term) * cut).add_(r)
    return _reverse_scan_T(ret, gamma * (1.0 - cut)).to(rewards.dtype)


def gae(
    rewards: Tensor,
    values: Tensor,
    next_values: Tensor,
    terminated: Tensor,
    truncated: Tensor,
    *,
    gamma: float = 0.99,
    lam: float = 0.95,
    float64: bool = False,
) -> GAEResult:
    """Generalized advantage estimation (Schulman et al., 2016) over ``[T, B, ...]``.

    ``next_values`` [T, B, ...] is V of the observation after step t: ``values[t + 1]`` inside
    an episode, V of the *final* observation when step t was truncated (``next_values_from``),
    ignored when it terminated. ``delta_t = r_t + gamma (1 - terminated_t) next_values_t - V_t``,
    ``A_t = delta_t + gamma lam (1 - done_t) A_{t+1}``, ``A_T = 0`` (the rollout end bootstraps).
    With ``lam = 1``, ``A = discounted_returns(...) - values``.
    """
    acc = _acc(rewards.dtype, float64)
    r, v = rewards.to(acc), values.to(acc)
    term = _trail(terminated, r).to(acc)
    done = torch.maximum(term, _trail(truncated, r).to(acc))
    adv = torch.mul(next_values.to(acc), gamma * (1.0 - term)).add_(r).sub_(v)  # delta_t
    adv = _reverse_scan_T(adv, (gamma * lam) * (1.0 - done))
    return GAEResult(adv.to(rewards.dtype), (adv + v).to(rewards.dtype))


def next_values_from(
    values: Tensor,
    last_values: Tensor,
    final_values: Tensor | None = None,
    truncated: Tensor | None = None,
) -> Tensor:
    """``next_values`` [T, B, ...] from V(s_t) ``values``, ``last_values`` [B, ...] (after the
    rollout) and, for truncated steps, ``final_values`` [T, B, ...] (V of final observations)."""
    nxt = torch.cat([values[1:], last_values.unsqueeze(0).to(values.dtype)], 0)
    if truncated is None:
        return nxt
    if final_values is None:
        raise ValueError("truncated steps need final_values (V of each final observation)")
    return torch.where(_trail(truncated, nxt), final_values.to(nxt.dtype), nxt)


def agent_gae(
    rewards_TBA: torch.Tensor,
    values_TBA: torch.Tensor,
    acting_TBA: torch.Tensor,
    end_TBA: torch.Tensor,
    terminated_TBA: torch.Tensor,
    final_values_TBA: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE over each agent's own acting steps; returns ``(advantages, complete)`` ``[T, B, A]``.

    ``rewards`` hold, at an acting step, everything the agent received until its next action
    (or the episode end); ``end`` marks an agent's last step of an episode, ``terminated``
    whether that end was terminal (else ``final_values`` bootstraps it). Non-acting steps are
    skipped: the next value of an acting step is the value of the same agent's next acting
    step. ``complete`` is False for steps whose successor is not in the buffer yet.
    """
    adv_TBA = torch.zeros_like(values_TBA)
    complete_TBA = torch.zeros_like(acting_TBA)
    next_v = torch.zeros_like(values_TBA[0])
    next_adv = torch.zeros_like(values_TBA[0])
    has_next = torch.zeros_like(acting_TBA[0])
    zero = torch.zeros_like(next_v)
    for t in range(values_TBA.shape[0] - 1, -1, -1):
        act, end = acting_TBA[t], end_TBA[t]
        boot = torch.where(end, torch.where(terminated_TBA[t], zero, final_values_TBA[t]), next_v)
        delta = rewards_TBA[t] + gamma * boot - values_TBA[t]
        a_t = delta + gamma * lam * torch.where(end, zero, next_adv)
        adv_TBA[t] = torch.where(act, a_t, zero)
        complete_TBA[t] = act & (end | has_next)
        next_v = torch.where(act, values_TBA[t], next_v)
        next_adv = torch.where(act, a_t, next_adv)
        has_next = has_next | act
    return adv_TBA, complete_TBA
