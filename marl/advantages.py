"""Advantage estimation and normalization: the one home of advantage math in ``selfplay``.

Every learner (MAPPO's per-agent GAE, the LLM trainer's group-relative turn-level advantages)
calls these pure tensor functions on its own device. Building blocks: ``gae`` and
``discounted_returns`` over ``[T, B, ...]`` (the only Python loop, over time), ``turn_returns``
with ``broadcast_to_tokens`` / ``rewards_at_turn_ends``, and ``dense_key`` + ``segment_stats`` /
``group_normalize`` (segment reductions: ``bincount``, ``scatter_reduce``; no loop over samples,
agents or groups). Named schemes, registered with ``@register_scheme`` and run by
``normalize_advantages``: ``none``, ``global``, ``agent`` (Dr. MAS), ``role``, ``group_role``,
``role_ema`` (SPIRAL), ``player_turn`` (MARS), ``joint_group`` (MAGRPO).

Degenerate cases, shared by every grouped statistic (a "key" is one segment of samples):
    * masked samples never enter statistics and get advantage exactly 0 (they may hold NaN);
      samples with weight 0 do not enter statistics but are still normalized;
    * a key with fewer than two contributing samples (group of one, empty key) uses mu=0, sigma=1;
    * a constant key (all contributing values equal, sigma=0) gets advantage exactly 0.
Statistics accumulate in float32 (float64 on request); outputs keep the input dtype (bfloat16
in, bfloat16 out). Standard deviations are population ones unless ``unbiased_std``.

Returns and GAE live in ``marl.returns`` and are re-exported here.

Shape legend: _T time, _B batch (envs / episodes), _A agents, _N flattened samples,
_K segments (dense keys), _U units (a trajectory of one key, a joint action), _L tokens.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields

import torch
from torch import Tensor

from marl.returns import (
    GAEResult,
    _acc,
    agent_gae,
    discounted_returns,
    gae,
    next_values_from,
)

__all__ = [
    "AdvantageConfig", "AdvantageKeys", "AdvantageResult", "GAEResult", "RoleEMABaseline",
    "SegmentKey", "SegmentStats", "advantage_diagnostics", "agent_gae", "available_schemes",
    "broadcast_to_tokens", "dense_key", "discounted_returns", "gae", "get_scheme",
    "group_normalize", "next_values_from", "normalize_advantages", "register_scheme",
    "rewards_at_turn_ends", "segment_stats", "turn_returns",
]  # fmt: skip

_TINY = 1e-30


# --- keys and segments
@dataclass(frozen=True)
class SegmentKey:
    """Dense segment ids [N] in ``[0, num)``; some ids may be empty."""

    ids: Tensor
    num: int


def _compact(ids: Tensor, num: int | None) -> tuple[Tensor, int]:
    """Renumber used ids to ``0..K-1`` keeping order: a presence table, or a sort (num None)."""
    if num is None:
        uniq, inv = torch.unique(ids, return_inverse=True)
        return inv, uniq.numel()
    present = torch.zeros(num, dtype=torch.bool, device=ids.device)
    present[ids] = True
    remap = torch.cumsum(present, 0) - 1
    return remap[ids], int(remap[-1]) + 1


def dense_key(*columns: Tensor | None, cap: int | None = None) -> SegmentKey:
    """Combine integer columns (each [N], ``None`` skipped) into one segment id per sample.

    Mixed-radix ``((c0 - min0) * r1 + (c1 - min1)) * r2 + ...``: equal tuples get equal ids,
    ids ascend with the tuples. Sort-free while id ranges stay below ``cap`` (default
    ``max(2N, 65536)``) or, after renumbering used ids with a presence table, below
    ``max(cap, 2**24)``; beyond that ``torch.unique`` (a sort) renumbers them.
    """
    return _dense(columns, cap)[0]


def _dense(columns, cap: int | None = None) -> tuple[SegmentKey, bool]:
    """``dense_key`` plus whether its ids are a fresh temporary (safe to overwrite in place)."""
    cols = [c.reshape(-1) for c in columns if c is not None]
    if not cols:
        raise ValueError("dense_key needs at least one key column")
    n = cols[0].numel()
    if n == 0:
        return SegmentKey(torch.zeros(0, dtype=torch.long, device=cols[0].device), 1), True
    cap = cap if cap is not None else max(2 * n, 1 << 16)
    table = max(cap, 1 << 24)
    ids, num, owned = cols[0], 1, False
    for i, c in enumerate(cols):
        lo, hi = (int(v) for v in torch.aminmax(c))
        span = hi - lo + 1
        fresh = lo != 0 or c.dtype != torch.long or span > table
        c = c.long() - lo if lo != 0 or c.dtype != torch.long else c
        if span > table:
            c, span = _compact(c, None)
        if i == 0:
            ids, num, owned = c, span, fresh
            continue
        if num * span > cap:
            ids, num = _compact(ids, num)
            owned = True
            if num * span > cap:
                c, span = _compact(c, span)
        ids = ids.mul_(span).add_(c) if owned else torch.add(c, ids, alpha=span)
        num, owned = num * span, True
        if num > cap:
            ids, num = _compact(ids, num if num <= table else None)
    return SegmentKey(ids, num), owned


@dataclass(frozen=True)
class SegmentStats:
    """Per-key statistics [K] as used for normalization (degenerate keys: mean 0, std 1)."""

    mean: Tensor
    std: Tensor
    count: Tensor  # contributing samples (unmasked, weight > 0), int64
    weight: Tensor  # total weight: sum of weights, or number of trajectories when per-trajectory
    constant: Tensor  # bool: at least two contributing samples, all equal


def _active(mask: Tensor | None, weights: Tensor | None) -> Tensor | None:
    """Samples that enter statistics: unmasked and with positive weight (None: all)."""
    mask = None if mask is None else mask.reshape(-1).bool()
    if weights is None:
        return mask
    pos = weights.reshape(-1) > 0
    return pos if mask is None else mask & pos


def _pair_weights(pair: SegmentKey, active: Tensor | None, weights: Tensor | None, dt) -> Tensor:
    """Per-trajectory counting: each (trajectory, key) ``pair`` weighs 1 (times its mean sample
    weight), i.e. every weight is divided by the pair's number of contributing steps."""
    base = torch.ones(pair.ids.shape, dtype=dt, device=pair.ids.device)
    base = base if weights is None else weights.reshape(-1).to(dt)
    live = base > 0 if active is None else active
    steps = torch.bincount(pair.ids, weights=live.to(dt), minlength=pair.num)
    return base / steps.clamp_min(1.0)[pair.ids]


def _prepare(key, mask, weights, trajectory, per_trajectory: bool, dt, cols=None):
    """Active samples and statistic weights; ``cols`` (when given) build the pair key."""
    act = _active(mask, weights)
    if not per_trajectory:
        return act, None if weights is None else weights.reshape(-1).to(dt)
    if trajectory is None:
        raise ValueError("per_trajectory statistics need keys.trajectory; got None")
    pair = dense_key(trajectory, *(cols if cols is not None else [key.ids]))  # small ranges
    return act, _pair_weights(pair, act, weights, dt)


def _moments(
    x: Tensor, key: SegmentKey, active: Tensor | None, w: Tensor | None, unbiased: bool, owned=False
) -> tuple[SegmentStats, Tensor, Tensor, Tensor]:
    """Two-pass weighted moments per key.

    Returns the stats, the centered values ``d`` [N], a spare [N] buffer and the ids to gather
    per-key values with (inactive samples point at a dummy key ``num`` when unweighted). Large
    temporaries are reused: on CPU every fresh [N] tensor costs page faults.
    """
    k = key.num
    if active is None:
        eff = gid = key.ids
    elif w is None and owned:
        eff = gid = key.ids.masked_fill_(~active, k)  # dummy bucket k
    else:
        eff = torch.where(active, key.ids, k)
        gid = eff if w is None else key.ids
    count = torch.bincount(eff, minlength=k + 1)[:k]
    if w is None:
        total = count.to(x.dtype)
        s1 = torch.bincount(eff, weights=x, minlength=k + 1)[:k]
    else:
        total = torch.bincount(eff, weights=w, minlength=k + 1)[:k]
        s1 = torch.bincount(eff, weights=x * w, minlength=k + 1)[:k]
    ok = count >= 2
    mean = torch.where(ok, s1 / total.clamp_min(_TINY), 0.0)
    d = torch.cat([mean, mean.new_zeros(1)])[gid]
    d = torch.sub(x, d, out=d)
    spare = d * d if w is None else d * d * w
    var = torch.bincount(eff, weights=spare, minlength=k + 1)[:k] / total.clamp_min(_TINY)
    if unbiased:
        var = var * torch.where(total > 1, total / (total - 1).clamp_min(_TINY), 1.0)
    # exact constant-key test (rounding would leave tiny nonzero d / sigma otherwise)
    hi = x.new_full((k + 1,), -math.inf).scatter_reduce_(0, eff, x, "amax")[:k]
    lo = x.new_full((k + 1,), math.inf).scatter_reduce_(0, eff, x, "amin")[:k]
    constant = ok & (hi == lo)
    std = torch.where(ok, torch.where(constant, 0.0, var.sqrt()), 1.0)
    return SegmentStats(mean, std, count, total, constant), d, spare, gid


def _normalize(x, key, active, w, *, eps: float, scale: bool, unbiased: bool, owned=False):
    st, d, spare, gid = _moments(x, key, active, w, unbiased, owned)
    inv = 1.0 / (st.std + eps) if scale else torch.ones_like(st.std)
    inv = torch.where(st.count >= 2, torch.where(st.constant, 0.0, inv), 1.0)
    return d.mul_(torch.index_select(torch.cat([inv, inv.new_zeros(1)]), 0, gid, out=spare))


def segment_stats(
    x: Tensor,
    key: SegmentKey,
    mask: Tensor | None = None,
    weights: Tensor | None = None,
    trajectory: Tensor | None = None,
    *,
    per_trajectory: bool = False,
    unbiased: bool = False,
) -> SegmentStats:
    """Weighted mean/std/count of ``x`` [N] per key, ``[K]`` each. ``per_trajectory``: every
    (key, trajectory) pair weighs 1, so many steps of one trajectory do not outweigh few."""
    act, w = _prepare(key, mask, weights, trajectory, per_trajectory, x.dtype)
    return _moments(x, key, act, w, unbiased)[0]


def group_normalize(
    x: Tensor,
    key: SegmentKey,
    mask: Tensor | None = None,
    weights: Tensor | None = None,
    trajectory: Tensor | None = None,
    *,
    eps: float = 1e-6,
    scale: bool = True,
    per_trajectory: bool = False,
    unbiased: bool = False,
) -> Tensor:
    """``(x - mu_k) / (sigma_k + eps)`` per key (``scale=False``: ``x - mu_k``), [N]; stats
    as in ``segment_stats``, degenerate keys by the module rules, masked entries unspecified."""
    act, w = _prepare(key, mask, weights, trajectory, per_trajectory, x.dtype)
    return _normalize(x, key, act, w, eps=eps, scale=scale, unbiased=unbiased)


# --- segmented scans
def _segment_scan(x: Tensor, start: Tensor, a: float, init: Tensor) -> Tensor:
    """Exclusive discounted scan over contiguous segments, float64, O(N), no Python loop.

    ``y[i] = a**(i - s) * init[i] + sum_{s <= j < i} a**(i - 1 - j) * x[j]`` with ``s = start[i]``
    the first position of i's segment (``init`` constant per segment). Cumulative sums run over
    rows of ``width`` positions, keeping every exponent within ``a**-width <= 1e150``; a
    segment crossing into a row carries its value from the previous row only, dropping weight
    ``<= a**width <= 1e-150``. Temporaries are few and reused (each costs page faults on CPU).
    """
    n = x.numel()
    if n == 0:
        return x.clone()
    if a < 1e-100:  # history vanishes at once: y[i] = x[i - 1] inside a segment
        first = start == torch.arange(n, device=x.device)
        return torch.where(first, init, torch.cat([x.new_zeros(1), x[:-1]]))
    width = n if a == 1.0 else min(n, math.ceil(150.0 / -math.log10(a)))
    rows, pad = -(-n // width), -n % width
    pos = torch.arange(n + pad, device=x.device)
    start = (torch.cat([start, pos[n:]]) if pad else start).view(rows, width)
    init = (torch.cat([init, x.new_zeros(pad)]) if pad else init).view(rows, width)
    powers = torch.pow(a, torch.arange(width + 1, dtype=x.dtype, device=x.device))
    inc = x.new_zeros(rows, width + 1)  # inc[r, c]: sum of x_j * a**-(col_j + 1) over col_j < c
    xp = torch.cat([x, x.new_zeros(pad)]) if pad else x
    torch.div(xp.view(rows, width), powers[1:], out=inc[:, 1:])
    flat = inc.cumsum_(1).view(-1)
    row_start = pos.view(rows, width)[:, :1]
    head = start >= row_start  # the segment starts in this row
    age = torch.sub(pos.view(rows, width), start)
    if rows > 1:  # value at each row start of the segment crossing into it (one per row)
        s0, prev = start[:, 0], row_start[:, 0] - width
        t = torch.maximum(s0, prev).clamp_min_(0)
        carry = torch.cat([inc.new_zeros(1), inc[:-1, width]]) - flat[t + t // width]
        carry = carry.mul_(powers[width]).add_(
            torch.where(s0 >= prev, powers[(row_start[:, 0] - s0).clamp(0, width)], 0.0)
            * init[:, 0]
        )
        # elements of a crossing segment act as if it started at the row start with init=carry
        torch.where(head, age, pos[:width], out=age)
        init = torch.where(head, init, carry[:, None])
    own = powers[age.clamp_max_(width)].mul_(init)
    s = torch.where(head, start, row_start)
    idx = torch.floor_divide(s, width, out=age).add_(s)  # flat index of s in ``inc``
    y = torch.sub(inc[:, :width], flat[idx]).mul_(powers[:width]).add_(own)
    return y.view(-1)[:n]


def _sort_perm(code: Tensor) -> Tensor | None:
    """Stable sorting permutation of ``code``, or None when it is already sorted."""
    if code.numel() < 2 or bool((code[1:] >= code[:-1]).all()):
        return None
    return torch.argsort(code, stable=True)


# --- turn-level returns
def turn_returns(
    rewards: Tensor,
    trajectory: Tensor,
    agent: Tensor,
    turn: Tensor | None = None,
    *,
    gamma: float = 1.0,
    mask: Tensor | None = None,
) -> Tensor:
    """Return-to-go over one agent's own turns of a multi-turn episode, ``[N]`` -> ``[N]``.

    One sample per (trajectory, agent, turn): ``rewards`` [N] is the reward placed at the end of
    that turn, ``turn`` [N] orders turns inside a trajectory (sample order when None).
    ``G_i = r_i + gamma * G_next`` where ``next`` is the same agent's next turn in the same
    trajectory, so gamma discounts per own turn, not per turn of the game. Masked turns are
    skipped (no discount step) and get 0. Computed in float64 (sort + segmented scan, no loop);
    returned in ``rewards.dtype``. Use ``broadcast_to_tokens`` to give the result to tokens.
    """
    shape, r = rewards.shape, rewards.reshape(-1)
    if r.numel() == 0:
        return rewards.clone()
    seg, owned = _dense([trajectory, agent])
    code = seg.ids if owned else seg.ids.clone()
    m = None if mask is None else mask.reshape(-1).bool()
    if m is not None:
        code.masked_fill_(~m, seg.num)  # masked turns form a dummy segment
    span = 1
    if turn is not None:  # code = (segment, turn) in mixed radix
        lo, hi = (int(v) for v in torch.aminmax(turn))
        span = hi - lo + 1
        t = turn.reshape(-1).long()
        code.mul_(span).add_(t - lo if lo else t)
    perm = _sort_perm(code)
    xs = r.double() if perm is None else r[perm].double()
    if perm is not None:
        code = code[perm]
    counts = torch.unique_consecutive(code.floor_divide_(span), return_counts=True)[1]
    ends = torch.cumsum(counts, 0) - 1
    if gamma == 1.0:  # suffix sums inside segments from one float64 cumulative sum
        csum = torch.cumsum(xs, 0)
        g = csum[torch.repeat_interleave(ends, counts)].sub_(csum).add_(xs)
    else:  # reversed order turns the suffix recursion into the forward scan
        xr = xs.flip(0)
        start = (r.numel() - 1 - torch.repeat_interleave(ends, counts)).flip(0)
        g = xr.add_(_segment_scan(xr, start, gamma, torch.zeros_like(xr)), alpha=gamma).flip(0)
    if perm is not None:
        g = torch.empty_like(g).index_copy_(0, perm, g)
    if m is not None:
        g.masked_fill_(~m, 0.0)
    return g.to(rewards.dtype).reshape(shape)


def broadcast_to_tokens(turn_values: Tensor, token_turn: Tensor, fill: float = 0.0) -> Tensor:
    """Give each token the value of its turn: ``turn_values`` [N], ``token_turn`` [B, L] -> [B, L].

    ``token_turn`` holds, per token, the index into ``turn_values`` of the turn that generated
    it, or -1 for tokens of no turn (prompt, observations, padding), which get ``fill``.
    """
    idx = token_turn.long()
    out = turn_values[idx.clamp_min(0)]
    return torch.where(idx >= 0, out, torch.tensor(fill, dtype=out.dtype, device=out.device))


def rewards_at_turn_ends(turn_rewards: Tensor, token_turn: Tensor) -> Tensor:
    """Token-level rewards [B, L]: each turn's reward on its last token, 0 elsewhere.

    ``token_turn`` [B, L] as in ``broadcast_to_tokens``; a turn's tokens are contiguous in a row.
    """
    idx = token_turn.long()
    end = idx >= 0
    end[..., :-1] &= idx[..., 1:] != idx[..., :-1]
    return torch.where(end, turn_rewards[idx.clamp_min(0)], 0.0).to(turn_rewards.dtype)


# --- config and registry
@dataclass(frozen=True)
class AdvantageConfig:
    """Settings of ``normalize_advantages``; one source for YAML presets and learners."""

    eps: float = 1e-6  # added to sigma before dividing
    per_trajectory: bool = False  # each (key, trajectory) weighs 1 in statistics, not each step
    float64: bool = False  # accumulate statistics in float64 instead of float32
    unbiased_std: bool = False  # Bessel-corrected std (weights read as frequency weights)
    scale: bool = True  # global/agent/role/group_role divide by sigma (False: center only)
    role_ema_alpha: float = 0.95  # role_ema decay: b <- alpha * b + (1 - alpha) * R
    role_ema_init: float = 0.0  # role_ema baseline of a (game, role) never seen before
    drop_zero: bool = False  # drop samples with advantage exactly 0 from the returned mask
    turn_gamma: float = 1.0  # player_turn discount per own turn of a player
    player_turn_scale: bool = False  # player_turn also divides by the per-player std at the end
    joint_group_scale: bool = False  # joint_group divides by the std of sibling joint returns
    diagnostics: bool = True  # compute AdvantageResult.diagnostics (one host sync)

    def __post_init__(self) -> None:
        for name in ("role_ema_alpha", "turn_gamma"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected a value in [0, 1]")
        if not self.eps >= 0.0:
            raise ValueError(f"eps={self.eps!r}; expected a value >= 0")


@dataclass(frozen=True)
class AdvantageKeys:
    """Integer key tensors aligned with the samples (each broadcastable to ``values.shape``)."""

    game: Tensor | None = None  # game id
    group: Tensor | None = None  # group / prompt id: samples that share a start state
    agent: Tensor | None = None  # agent id (seat)
    role: Tensor | None = None  # role id
    trajectory: Tensor | None = None  # episode id (joint_group: one joint action)
    node: Tensor | None = None  # joint_group: node whose sibling joint actions share a baseline
    turn: Tensor | None = None  # player_turn: turn index inside a trajectory

    def present(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]

    def flat(self, shape: torch.Size) -> AdvantageKeys:
        """Broadcast every key to ``shape``, flatten it, and check it is an integer tensor."""
        out = {}
        for name in self.present():
            col = getattr(self, name)
            if col.dtype.is_floating_point or col.dtype.is_complex or col.dtype == torch.bool:
                raise ValueError(f"keys.{name} has dtype {col.dtype}; expected an integer dtype")
            try:
                out[name] = col.broadcast_to(shape).reshape(-1)
            except RuntimeError:
                msg = f"keys.{name} has shape {tuple(col.shape)}; expected one broadcastable to"
                raise ValueError(f"{msg} values' {tuple(shape)}") from None
        return AdvantageKeys(**out)


@dataclass(frozen=True)
class AdvantageResult:
    """Output of ``normalize_advantages``."""

    advantages: Tensor  # same shape and dtype as values; 0 where masked
    mask: Tensor  # bool, same shape: samples to train on (input mask minus dropped zeros)
    diagnostics: dict[str, float]  # per-agent / per-role statistics for the logger


# (values [N] in the accumulation dtype, flat keys, mask [N] bool | None, weights [N] | None,
#  config, role_ema state | None) -> advantages [N]
SchemeFn = Callable[..., Tensor]
_SCHEMES: dict[str, SchemeFn] = {}


def register_scheme(name: str) -> Callable[[SchemeFn], SchemeFn]:
    """Decorator registering an advantage scheme under ``name``."""

    def deco(fn: SchemeFn) -> SchemeFn:
        if name in _SCHEMES:
            raise ValueError(f"advantage scheme {name!r} is already registered")
        _SCHEMES[name] = fn
        return fn

    return deco


def available_schemes() -> list[str]:
    """Names accepted by ``normalize_advantages``, sorted."""
    return sorted(_SCHEMES)


def get_scheme(name: str) -> SchemeFn:
    """The scheme registered as ``name``; unknown names raise a one-line ``ValueError``."""
    try:
        return _SCHEMES[name]
    except KeyError:
        raise ValueError(
            f"unknown advantage scheme {name!r}; valid: {', '.join(available_schemes())}"
        ) from None


def _need(scheme: str, keys: AdvantageKeys, *names: str) -> None:
    missing = [n for n in names if getattr(keys, n) is None]
    if missing:
        have = ", ".join(keys.present()) or "none"
        raise ValueError(f"scheme {scheme!r} needs keys.{', keys.'.join(missing)}; got: {have}")


# --- schemes
def _grouped(x, keys, mask, weights, cfg, cols, *, scale: bool | None = None) -> Tensor:
    """``_normalize`` per key built from ``cols`` with the config's counting and scaling."""
    cols = [c for c in cols if c is not None]
    if cols:
        key, owned = _dense(cols)
    else:
        key, owned = SegmentKey(torch.zeros_like(x, dtype=torch.long), 1), True
    act, w = _prepare(key, mask, weights, keys.trajectory, cfg.per_trajectory, x.dtype, cols)
    scale = cfg.scale if scale is None else scale
    return _normalize(x, key, act, w, eps=cfg.eps, scale=scale, unbiased=cfg.unbiased_std,
                      owned=owned)  # fmt: skip


def _unit_means(x: Tensor, unit: SegmentKey, mask: Tensor | None, weights: Tensor | None):
    """Per unit [U]: weighted mean of unmasked samples (plain mean when all weights are 0),
    and whether the unit has positive weight (enters statistics)."""
    m = None if mask is None else mask.reshape(-1).bool()
    xm = x if m is None else torch.where(m, x, 0.0)
    ones = torch.ones_like(x) if m is None else m.to(x.dtype)
    cnt = torch.bincount(unit.ids, weights=ones, minlength=unit.num)
    plain = torch.bincount(unit.ids, weights=xm, minlength=unit.num) / cnt.clamp_min(1.0)
    if weights is None:
        return plain, cnt > 0
    w = weights.reshape(-1).to(x.dtype) * ones
    total = torch.bincount(unit.ids, weights=w, minlength=unit.num)
    mean = torch.bincount(unit.ids, weights=xm * w, minlength=unit.num) / total.clamp_min(_TINY)
    return torch.where(total > 0, mean, plain), total > 0


@register_scheme("none")
def _none(x, keys, mask, weights, cfg, state) -> Tensor:
    """No normalization: the advantages are the values (e.g. GAE advantages) themselves."""
    return x


@register_scheme("global")
def _global(x, keys, mask, weights, cfg, state) -> Tensor:
    """One mean/std over the whole batch, ``A = (R - mu) / (sigma + eps)``.

    The baseline everyone starts from: PPO's advantage normalization (Schulman et al., 2017),
    MAPPO (Yu et al., 2022, arXiv:2103.01955) and GRPO with one batch-wide group.
    """
    if cfg.per_trajectory or weights is not None:
        return _grouped(x, keys, mask, weights, cfg, [])
    if mask is None:
        n = torch.tensor(x.numel(), device=x.device)
        var, mean = torch.var_mean(x, correction=0)
        mean = torch.where(n >= 2, mean, 0.0)
        lo, hi = torch.aminmax(x)
        d = torch.sub(x, mean)
    else:
        act = mask.reshape(-1).bool()
        off, n = ~act, act.sum()
        d = torch.where(act, x, 0.0)
        mean = torch.where(n >= 2, d.sum() / n.clamp_min(1), 0.0)
        d.sub_(mean).masked_fill_(off, 0.0)
        var = torch.dot(d, d) / n.clamp_min(1)
        # inactive entries copy an active deviation, so min/max see active samples only
        lo, hi = torch.aminmax(d.masked_fill_(off, d[act.view(torch.uint8).argmax()]))
    if cfg.unbiased_std:
        var = var * torch.where(n > 1, n / (n - 1).clamp_min(1), 1.0)
    inv = 1.0 / (var.sqrt() + cfg.eps) if cfg.scale else torch.ones_like(var)
    return d.mul_(torch.where(n >= 2, torch.where(hi == lo, 0.0, inv), 1.0))


@register_scheme("agent")
def _agent(x, keys, mask, weights, cfg, state) -> Tensor:
    """Agent-wise normalization of Dr. MAS (Feng et al., 2026, arXiv:2602.08847).

    Statistics per (game, group, agent id) -- game and group when given --,
    ``A = (R - mu_k) / (sigma_k + eps)``. A single global baseline mis-centers agents whose
    reward distributions differ and inflates their gradient norms; each agent's own statistics
    calibrate them. A key with a single sample gets mu=0, sigma=1.
    """
    _need("agent", keys, "agent")
    return _grouped(x, keys, mask, weights, cfg, [keys.game, keys.group, keys.agent])


@register_scheme("role")
def _role(x, keys, mask, weights, cfg, state) -> Tensor:
    """Role-wise normalization: statistics per (game, role), ``A = (R - mu_k) / (sigma_k + eps)``.

    The role analogue of Dr. MAS (arXiv:2602.08847): agents sharing a role share statistics.
    """
    _need("role", keys, "role")
    return _grouped(x, keys, mask, weights, cfg, [keys.game, keys.role])


@register_scheme("group_role")
def _group_role(x, keys, mask, weights, cfg, state) -> Tensor:
    """GRPO-style group normalization split by role: statistics per (game, group, role).

    Group-relative advantages (GRPO, Shao et al., 2024, arXiv:2402.03300) computed separately
    for each role, as in agent-/turn-wise grouped multi-agent GRPO (arXiv:2602.08847).
    """
    _need("group_role", keys, "group", "role")
    return _grouped(x, keys, mask, weights, cfg, [keys.game, keys.group, keys.role])


@register_scheme("player_turn")
def _player_turn(x, keys, mask, weights, cfg, state) -> Tensor:
    """Turn-level advantages with agent-specific normalization of MARS
    (Yuan et al., 2025, arXiv:2510.15414), for any number of players.

    1. per-turn rewards normalized per player within each game group: statistics per
       (game, group, agent);
    2. turn-level return-to-go over the player's own later turns (``turn_gamma`` per own turn,
       ``keys.turn`` orders turns, sample order when absent);
    3. per-player centering of those returns over the batch, per (game, agent), divided by the
       per-player std when ``player_turn_scale``.
    """
    _need("player_turn", keys, "agent", "trajectory")
    r = _grouped(x, keys, mask, weights, cfg, [keys.game, keys.group, keys.agent], scale=True)
    traj = keys.trajectory if keys.game is None else dense_key(keys.game, keys.trajectory).ids
    g = turn_returns(r, traj, keys.agent, keys.turn, gamma=cfg.turn_gamma, mask=mask)
    cols = [keys.game, keys.agent]
    return _grouped(g, keys, mask, weights, cfg, cols, scale=cfg.player_turn_scale)


@register_scheme("joint_group")
def _joint_group(x, keys, mask, weights, cfg, state) -> Tensor:
    """Joint-action group baseline of MAGRPO (Liu et al., 2025, arXiv:2508.04652).

    Samples of one joint action share ``keys.trajectory``; sibling joint actions sampled at the
    same node share ``keys.node`` (``keys.group`` when no node is given). The joint return is
    the (weighted) mean value of the joint action's samples; the baseline is the mean joint
    return of the node's joint actions, each counted once, so every agent of a joint action
    gets the same ``A = R_joint - mean`` (divided by the std when ``joint_group_scale``).
    Without ``keys.trajectory`` each sample is its own joint action.
    """
    node_col = keys.node if keys.node is not None else keys.group
    if node_col is None:
        _need("joint_group", keys, "node")
    node = dense_key(keys.game, node_col)
    scale, eps, unbiased = cfg.joint_group_scale, cfg.eps, cfg.unbiased_std
    if keys.trajectory is None:
        return group_normalize(x, node, mask, weights, eps=eps, scale=scale, unbiased=unbiased)
    unit = dense_key(keys.trajectory)
    # a trajectory normally stays in one node: then it is the unit, without a pair key
    lo, hi = (torch.zeros(unit.num, dtype=torch.long, device=x.device).scatter_reduce_(
        0, unit.ids, node.ids, r, include_self=False) for r in ("amin", "amax"))  # fmt: skip
    if not torch.equal(lo, hi):
        unit = dense_key(keys.trajectory, node.ids)
        ids, num = _compact(unit.ids, unit.num)
        unit = SegmentKey(ids, num)
    r_u, live_u = _unit_means(x, unit, mask, weights)
    node_u = torch.zeros_like(r_u, dtype=torch.long).scatter_(0, unit.ids, node.ids)
    # units without positive weight are normalized but stay out of the node statistics
    a_u = group_normalize(r_u, SegmentKey(node_u, node.num), None, live_u.to(r_u.dtype), eps=eps,
                          scale=scale, unbiased=unbiased)  # fmt: skip
    return a_u[unit.ids]


class RoleEMABaseline:
    """State of ``role_ema``: one scalar baseline per (game, role); save it with the learner.

    ``state_dict()`` holds plain tensors (``codes`` int64 ``game << 32 | role``, sorted;
    ``values`` float64), so it fits a checkpoint loaded with ``torch.load(weights_only=True)``.
    The decay and the initial value live in ``AdvantageConfig``.
    """

    def __init__(self) -> None:
        self.codes = torch.zeros(0, dtype=torch.long)
        self.values = torch.zeros(0, dtype=torch.float64)

    def get(self, game: int, role: int) -> float | None:
        """The baseline of (game, role), or None if it was never updated."""
        hit = (self.codes == (game << 32 | role)).nonzero()
        return float(self.values[hit[0, 0]]) if hit.numel() else None

    def state_dict(self) -> dict[str, Tensor]:
        return {"codes": self.codes.cpu().clone(), "values": self.values.cpu().clone()}

    def load_state_dict(self, state: dict[str, Tensor]) -> None:
        if set(state) != {"codes", "values"} or state["codes"].shape != state["values"].shape:
            raise ValueError(f"role_ema state has keys {sorted(state)}; expected codes, values")
        self.codes = state["codes"].long().clone()
        self.values = state["values"].double().clone()

    def lookup(self, codes: Tensor, init: float) -> Tensor:
        """Baselines of ``codes`` [K] (``init`` where never updated), float64."""
        known, vals = self.codes.to(codes.device), self.values.to(codes.device)
        if known.numel() == 0:
            return torch.full(codes.shape, init, dtype=torch.float64, device=codes.device)
        idx = torch.searchsorted(known, codes).clamp_max(known.numel() - 1)
        return torch.where(known[idx] == codes, vals[idx], init)

    def merge(self, codes: Tensor, values: Tensor) -> None:
        """Set the baselines of sorted unique ``codes`` [K] to ``values`` [K]."""
        known = self.codes.to(codes.device)
        merged, inv = torch.unique(torch.cat([known, codes]), return_inverse=True)
        out = torch.zeros(merged.numel(), dtype=torch.float64, device=codes.device)
        out.scatter_(0, inv[: known.numel()], self.values.to(codes.device))
        self.codes, self.values = merged, out.scatter_(0, inv[known.numel() :], values)


@register_scheme("role_ema")
def _role_ema(x, keys, mask, weights, cfg, state) -> Tensor:
    """Role-conditioned advantage estimation of SPIRAL (Liu et al., 2025, arXiv:2506.24119).

    One scalar baseline ``b`` per (game, role), ``A = R - b`` with the baseline *before* it is
    updated, then ``b <- alpha * b + (1 - alpha) * R`` (``role_ema_alpha``); no std division.
    Updates run in batch order, one per sample, or, with ``per_trajectory``, one per
    (trajectory, game, role) with its mean value (trajectories in id order) -- exactly the
    sequential EMA, computed by a segmented scan. Samples that update nothing (weight 0) are
    compared with the baseline before the batch. ``drop_zero`` reproduces SPIRAL's filtering
    of zero-advantage samples. ``state`` (a ``RoleEMABaseline``) is updated in place.
    """
    _need("role_ema", keys, "role")
    if not isinstance(state, RoleEMABaseline):
        raise ValueError(f"scheme 'role_ema' needs state=RoleEMABaseline(); got {state!r}")
    game = keys.game if keys.game is not None else torch.zeros_like(keys.role)
    for name, col, top in (("game", game, 1 << 31), ("role", keys.role, 1 << 32)):
        lo, hi = (int(v) for v in torch.aminmax(col.long()))
        if lo < 0 or hi >= top:
            raise ValueError(f"role_ema needs 0 <= keys.{name} < {top}; got [{lo}, {hi}]")
    code = (game.long() << 32).bitwise_or_(keys.role.long())
    if cfg.per_trajectory:
        _need("role_ema with per_trajectory", keys, "trajectory")
        unit = dense_key(keys.trajectory, game, keys.role)
        r_u, live = _unit_means(x, unit, mask, weights)
        code_u = torch.zeros_like(r_u, dtype=torch.long).scatter_(0, unit.ids, code)
    else:
        unit, r_u, live, code_u = None, x, _active(mask, weights), code
    sel = None if live is None else live.nonzero().squeeze(1)
    r_s, c_s = (r_u, code_u) if sel is None else (r_u[sel], code_u[sel])
    perm = _sort_perm(c_s)
    if perm is not None:
        r_s, c_s = r_s[perm], c_s[perm]
    uniq, counts = torch.unique_consecutive(c_s, return_counts=True)
    alpha = cfg.role_ema_alpha
    step = torch.empty_like(r_s, dtype=torch.float64).copy_(r_s).mul_(1.0 - alpha)  # float64 scan
    init = torch.repeat_interleave(state.lookup(uniq, cfg.role_ema_init), counts)
    last = torch.cumsum(counts, 0) - 1
    pre = _segment_scan(step, torch.repeat_interleave(last + 1 - counts, counts), alpha, init)
    final = alpha * pre[last] + step[last]
    if perm is not None:
        pre = torch.empty_like(pre).index_copy_(0, perm, pre)
    if sel is not None:  # units that update nothing meet the baseline from before the batch
        dead = (~live).nonzero().squeeze(1)
        base = torch.empty(r_u.shape, dtype=pre.dtype, device=pre.device).index_copy_(0, sel, pre)
        pre = base.index_copy_(0, dead, state.lookup(code_u[dead], cfg.role_ema_init))
    state.merge(uniq, final)
    base = (pre if unit is None else pre[unit.ids]).to(x.dtype)
    return torch.sub(x, base, out=base)


# --- diagnostics
def _diag_rows(sums: list[Tensor], mu: Tensor) -> Tensor:
    """[K, 5] rows (count, reward mean/std, advantage mean/std) from shifted sums."""
    cnt = sums[0].to(torch.float64)
    rows = [cnt]
    for i in (1, 3):
        m1 = sums[i].double() / cnt.clamp_min(1)
        var = sums[i + 1].double() / cnt.clamp_min(1) - m1 * m1
        rows += [m1 + mu[i // 2], var.clamp_min(0).sqrt()]
    return torch.stack(rows, 1)


def advantage_diagnostics(
    values: Tensor,
    advantages: Tensor,
    keys: AdvantageKeys | None = None,
    mask: Tensor | None = None,
) -> dict[str, float]:
    """Per-agent, per-role and global reward/advantage statistics, as floats for the logger.

    Keys ``adv/{global,agent_<id>,role_<id>}/{count,reward_mean,reward_std,adv_mean,adv_std}``
    plus, per agent and role, ``reward_std_ratio`` (sigma_k / sigma) and ``reward_m2_ratio``
    ((sigma_k**2 + (mu_k - mu)**2) / sigma**2: the mean squared advantage the key would get under
    global normalization, the gradient-norm inflation factor of Dr. MAS, arXiv:2602.08847).
    Ratios are 1 when the global std is 0. Unweighted, over unmasked samples.
    """
    dt = torch.float64 if values.dtype == torch.float64 else torch.float32
    flat = (keys or AdvantageKeys()).flat(values.shape)
    m = None if mask is None else mask.reshape(-1).bool()
    cnt = torch.tensor(values.numel(), device=values.device) if m is None else m.sum()
    shifted, mu = [], []
    for v in (values.reshape(-1).to(dt), advantages.reshape(-1).to(dt)):
        v = v.clone() if m is None else torch.where(m, v, 0.0)  # our copy; masked -> 0
        mu.append(v.sum(dtype=torch.float64) / cnt.clamp_min(1))
        shifted.append(v.sub_(mu[-1].to(dt)) if m is None else v.sub_(mu[-1].to(dt)).mul_(m))
    cols = [shifted[0], shifted[0] * shifted[0], shifted[1], shifted[1] * shifted[1]]
    mu_t = torch.stack(mu)
    g = _diag_rows([cnt.reshape(1)] + [c.sum(dtype=torch.float64).reshape(1) for c in cols], mu_t)
    tables, labels = [g], [["global"]]
    ones = None if m is None else m.to(dt)
    for name in ("agent", "role"):
        col = getattr(flat, name)
        if col is None:
            continue
        key = dense_key(col)
        sums = [torch.bincount(key.ids, weights=w, minlength=key.num) for w in [ones, *cols]]
        t, sig = _diag_rows(sums, mu_t), g[0, 2]
        std_ratio = torch.where(sig > 0, t[:, 2] / sig.clamp_min(_TINY), 1.0)
        m2 = (t[:, 2] ** 2 + (t[:, 1] - g[0, 1]) ** 2) / (sig * sig).clamp_min(_TINY)
        tables.append(torch.cat([t, std_ratio[:, None], torch.where(sig > 0, m2, 1.0)[:, None]], 1))
        raw = torch.zeros(key.num, dtype=torch.long, device=col.device).scatter_(0, key.ids, col)
        labels.append([f"{name}_{v}" for v in raw.tolist()])
    names = ["count", "reward_mean", "reward_std", "adv_mean", "adv_std", "reward_std_ratio",
             "reward_m2_ratio"]  # fmt: skip
    out: dict[str, float] = {}
    for table, labs in zip(tables, labels, strict=True):
        for lab, row in zip(labs, table.tolist(), strict=True):
            if row[0] > 0 or lab == "global":
                out.update({f"adv/{lab}/{n}": v for n, v in zip(names, row, strict=False)})
    return out


# --- entry point
def normalize_advantages(
    scheme: str,
    values: Tensor,
    keys: AdvantageKeys | None = None,
    mask: Tensor | None = None,
    weights: Tensor | None = None,
    cfg: AdvantageConfig | None = None,
    state: RoleEMABaseline | None = None,
) -> AdvantageResult:
    """Advantages of ``values`` (returns, rewards or raw advantages, any shape) under ``scheme``.

    ``keys`` hold integer tensors broadcastable to ``values.shape``; ``mask`` (bool) marks real
    samples (padding / prompt tokens False: no statistics, advantage 0); ``weights`` (>= 0)
    weigh samples in statistics only. ``state`` is the ``RoleEMABaseline`` for ``role_ema``.
    Example::

        res = normalize_advantages("agent", returns_TBA, AdvantageKeys(agent=torch.arange(A)))
        loss = -(res.advantages * logratio_TBA).mean(); logger.log(res.diagnostics)
    """
    fn = get_scheme(scheme)
    cfg = cfg if cfg is not None else AdvantageConfig()
    shape = values.shape
    flat = (keys or AdvantageKeys()).flat(shape)
    m = None if mask is None else mask.to(torch.bool).broadcast_to(shape).reshape(-1)
    w = None if weights is None else weights.broadcast_to(shape).reshape(-1)
    x = values.reshape(-1).to(_acc(values.dtype, cfg.float64))
    adv = fn(x, flat, m, w, cfg, state) if x.numel() else x.clone()
    if m is not None:  # schemes return fresh tensors, except ``none`` (x itself)
        adv = torch.where(m, adv, 0.0) if adv is x else adv.masked_fill_(~m, 0.0)
    keep = m if m is not None else torch.ones_like(x, dtype=torch.bool)
    if cfg.drop_zero:
        keep = keep & (adv != 0)
    diag = advantage_diagnostics(x, adv, flat, m) if cfg.diagnostics and x.numel() else {}
    if cfg.drop_zero and diag:
        diag["adv/dropped_frac"] = 1.0 - float(keep.sum()) / max(1, int(x.numel()))
    return AdvantageResult(adv.to(values.dtype).reshape(shape), keep.reshape(shape), diag)
