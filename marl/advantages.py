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

Returns, GAE, turn-level returns and dense keys live in ``marl.returns`` and are re-exported
here, with the scans over samples grouped by key that ``turn_returns`` and ``role_ema`` use (a
counting sort on the CPU, closed forms per row; no loop over samples). Per-trajectory statistics
accumulate per (trajectory, key) pair and fold into keys; trajectories in collection order take
sort-free paths throughout.

Shape legend: _T time, _B batch (envs / episodes), _A agents, _N flattened samples,
_K segments (dense keys), _U units (a trajectory of one key, a joint action), _L tokens.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields

import torch
from torch import Tensor

from marl import native
from marl.returns import (
    GAEResult,
    SegmentKey,
    _acc,
    _compact,
    _dense,
    _ema_room,
    _keyed_ema,
    _native_key,
    _turn_returns,
    agent_gae,
    broadcast_to_tokens,
    dense_key,
    discounted_returns,
    gae,
    next_values_from,
    rewards_at_turn_ends,
    turn_returns,
)

__all__ = [
    "AdvantageConfig", "AdvantageKeys", "AdvantageResult", "GAEResult", "RoleEMABaseline",
    "SegmentKey", "SegmentStats", "advantage_diagnostics", "agent_gae", "available_schemes",
    "broadcast_to_tokens", "dense_key", "discounted_returns", "gae", "get_scheme",
    "group_normalize", "next_values_from", "normalize_advantages", "register_scheme",
    "rewards_at_turn_ends", "segment_stats", "turn_returns",
]  # fmt: skip

_TINY = 1e-30


# --- segment statistics
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


@dataclass(frozen=True)
class _Pairs:
    """Per-trajectory counting: (trajectory, key) pairs and the key of each pair."""

    key: SegmentKey  # pair id of each sample
    up: Tensor  # [P] int64 key id of each pair
    num_keys: int


def _pairs(trajectory: Tensor, key: SegmentKey) -> _Pairs:
    """(trajectory, key) pairs, sort-free in the usual layout: inside one trajectory the key ids
    span few values (its game and group are fixed, its agents vary), so a pair is
    ``traj * span + (key - lowest key of traj)``; ``dense_key`` otherwise."""
    n = key.ids.numel()
    traj = dense_key(trajectory)
    t, nt, dev = traj.ids, traj.num, key.ids.device
    lo = torch.full((nt,), key.num, device=dev).scatter_reduce_(0, t, key.ids, "amin")
    hi = torch.full((nt,), -1, device=dev).scatter_reduce_(0, t, key.ids, "amax")
    span = max(1, int((hi - lo).max()) + 1) if n else 1
    if nt * span <= max(2 * n, 1 << 16):
        ids = torch.sub(key.ids, lo[t]).add_(t, alpha=span)
        up = (lo[:, None] + torch.arange(span, device=dev)).view(-1).clamp_(0, max(key.num - 1, 0))
        return _Pairs(SegmentKey(ids, nt * span), up, key.num)
    pair = dense_key(trajectory, key.ids)
    up = torch.zeros(pair.num, dtype=torch.long, device=dev).scatter_(0, pair.ids, key.ids)
    return _Pairs(pair, up, key.num)


def _pairs_of(trajectory: Tensor, cols: list[Tensor]) -> _Pairs:
    """(trajectory, key) pairs straight from the key columns [N], without the key ids: a column
    enters the pair id's mixed radix while its range stays small; a wide one that is constant
    inside every trajectory (its game, its group) adds nothing to it. ``_pairs`` otherwise."""
    traj = dense_key(trajectory)
    n = traj.ids.numel()
    cap = max(2 * n, 1 << 16)
    ids, num, owned, digits = traj.ids, traj.num, False, []
    for c in cols:
        lo, hi = (int(v) for v in torch.aminmax(c)) if n else (0, 0)
        if num * (hi - lo + 1) <= cap:  # a digit of the pair id
            span, c = hi - lo + 1, c.long()
            ids = ids.mul_(span).add_(c) if owned else torch.add(c, ids, alpha=span)
            ids = ids.sub_(lo) if lo else ids
            num, owned = num * span, True
            digits.append((span, lo))
            continue
        first, last = _unit_range(traj, c)
        if not torch.equal(first, last):
            return _pairs(trajectory, dense_key(*cols))
        digits.append(first)  # the column's value in each trajectory
    rest, vals = torch.arange(num, device=traj.ids.device), [None] * len(cols)
    for i in reversed(range(len(cols))):
        if isinstance(digits[i], tuple):
            vals[i], rest = rest % digits[i][0] + digits[i][1], rest // digits[i][0]
    vals = [v if v is not None else d[rest] for v, d in zip(vals, digits, strict=True)]
    key = dense_key(*vals) if vals else SegmentKey(torch.zeros_like(rest), 1)
    return _Pairs(SegmentKey(ids if owned else ids.clone(), num), key.ids, key.num)


def _prepare(key, mask, weights, trajectory, per_trajectory: bool, dt):
    """Active samples, sample weights and (per-trajectory counting) the pairs."""
    act = _active(mask, weights)
    w = None if weights is None else weights.reshape(-1).to(dt)
    if not per_trajectory:
        return act, w, None
    if trajectory is None:
        raise ValueError("per_trajectory statistics need keys.trajectory; got None")
    return act, w, _pairs(trajectory.reshape(-1), key)


def _moments(
    x: Tensor,
    key: SegmentKey | None,
    active: Tensor | None,
    w: Tensor | None,
    unbiased: bool,
    owned=False,
    pairs: _Pairs | None = None,
) -> tuple[SegmentStats, Tensor, Tensor, Tensor, Tensor | None]:
    """Two-pass weighted moments per key.

    With ``pairs`` (per-trajectory counting) sums accumulate per pair, are divided by the pair's
    number of contributing samples (so each pair weighs 1, times its mean weight) and fold into
    keys. Returns the stats, the centered values ``d`` [N], a spare [N] buffer, the segment ids to
    gather per-segment values with (inactive samples point at a dummy segment when unweighted)
    and the key of each pair (None without pairs). Large temporaries are reused: on CPU every
    fresh [N] tensor costs page faults.
    """
    seg = key if pairs is None else pairs.key
    owned = owned or pairs is not None  # pair ids are always a fresh tensor
    k = seg.num
    if active is None:
        eff = gid = seg.ids
    elif w is None and owned:
        eff = gid = seg.ids.masked_fill_(~active, k)  # dummy bucket k
    else:
        eff = torch.where(active, seg.ids, k)
        gid = eff if w is None else seg.ids
    count = torch.bincount(eff, minlength=k + 1)[:k]
    if w is None:
        total = count.to(x.dtype)
        s1 = torch.bincount(eff, weights=x, minlength=k + 1)[:k]
    else:
        total = torch.bincount(eff, weights=w, minlength=k + 1)[:k]
        s1 = torch.bincount(eff, weights=x * w, minlength=k + 1)[:k]
    up, per = None, None
    if pairs is not None:  # a pair weighs its mean weight: exactly 1 when unweighted
        up, per = pairs.up, count.clamp_min(1).to(x.dtype)

        def fold(v: Tensor) -> Tensor:
            return v.new_zeros(pairs.num_keys).index_add_(0, up, v)

        count, total, s1 = fold(count), fold(total / per), fold(s1 / per)
    ok = count >= 2
    mean = torch.where(ok, s1 / total.clamp_min(_TINY), 0.0)
    d = torch.cat([mean if up is None else mean[up], mean.new_zeros(1)])[gid]
    d = torch.sub(x, d, out=d)
    spare = d * d if w is None else d * d * w
    var = torch.bincount(eff, weights=spare, minlength=k + 1)[:k]
    hi = x.new_full((k + 1,), -math.inf).scatter_reduce_(0, eff, x, "amax")[:k]
    lo = x.new_full((k + 1,), math.inf).scatter_reduce_(0, eff, x, "amin")[:k]
    if up is not None:
        var = fold(var / per)
        hi = x.new_full((pairs.num_keys,), -math.inf).scatter_reduce_(0, up, hi, "amax")
        lo = x.new_full((pairs.num_keys,), math.inf).scatter_reduce_(0, up, lo, "amin")
    var = var / total.clamp_min(_TINY)
    if unbiased:
        var = var * torch.where(total > 1, total / (total - 1).clamp_min(_TINY), 1.0)
    # exact constant-key test (rounding would leave tiny nonzero d / sigma otherwise)
    constant = ok & (hi == lo)
    std = torch.where(ok, torch.where(constant, 0.0, var.sqrt()), 1.0)
    return SegmentStats(mean, std, count, total, constant), d, spare, gid, up


def _normalize(x, key, active, w, *, eps: float, scale: bool, unbiased: bool, owned=False,
               pairs=None):  # fmt: skip
    st, d, spare, gid, up = _moments(x, key, active, w, unbiased, owned, pairs)
    inv = 1.0 / (st.std + eps) if scale else torch.ones_like(st.std)
    inv = torch.where(st.count >= 2, torch.where(st.constant, 0.0, inv), 1.0)
    inv = inv if up is None else inv[up]
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
    act, w, pairs = _prepare(key, mask, weights, trajectory, per_trajectory, x.dtype)
    return _moments(x, key, act, w, unbiased, pairs=pairs)[0]


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
    act, w, pairs = _prepare(key, mask, weights, trajectory, per_trajectory, x.dtype)
    return _normalize(x, key, act, w, eps=eps, scale=scale, unbiased=unbiased, pairs=pairs)


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
def _grouped(x, keys, mask, weights, cfg, cols, *, scale: bool | None = None, out=None) -> Tensor:
    """``_normalize`` per key built from ``cols`` with the config's counting and scaling; on the
    CPU the fused kernels of ``marl.native`` when they apply (``out`` may be ``x`` then)."""
    cols = [c for c in cols if c is not None]
    scale = cfg.scale if scale is None else scale
    if cfg.per_trajectory and keys.trajectory is None:
        raise ValueError("per_trajectory statistics need keys.trajectory; got None")
    if x.device.type == "cpu" and native.available():
        traj = keys.trajectory if cfg.per_trajectory else None
        key = (native.guess(cols) if traj is None else None) or _native_key(cols)
        fast = native.normalize(x, key, mask, weights, eps=cfg.eps, scale=scale,
                                unbiased=cfg.unbiased_std, trajectory=traj, out=out)  # fmt: skip
        if fast is not None:
            return fast
    act, w, pairs = _active(mask, weights), None if weights is None else weights.to(x.dtype), None
    if cfg.per_trajectory:  # statistics run over pairs only: no [N] key ids
        key, owned, pairs = None, True, _pairs_of(keys.trajectory, cols)
    elif cols:
        key, owned = _dense(cols)
    else:
        key, owned = SegmentKey(torch.zeros_like(x, dtype=torch.long), 1), True
    return _normalize(x, key, act, w, eps=cfg.eps, scale=scale, unbiased=cfg.unbiased_std,
                      owned=owned, pairs=pairs)  # fmt: skip


def _unit_sums(unit: SegmentKey, cols: list[Tensor]) -> list[Tensor]:
    """Per-unit sums [U] of each column [N]. Contiguous units (sorted ids, e.g. trajectories in
    collection order) use ``segment_reduce``: ``bincount`` serializes on runs of equal ids."""
    ids = unit.ids
    if ids.numel() > 1 and bool((ids[1:] >= ids[:-1]).all()):
        lengths = torch.bincount(ids, minlength=unit.num)
        return [torch.segment_reduce(c, "sum", lengths=lengths) for c in cols]
    return [torch.bincount(ids, weights=c, minlength=unit.num) for c in cols]


def _unit_means(x: Tensor, unit: SegmentKey, mask: Tensor | None, weights: Tensor | None):
    """Per unit [U]: weighted mean of unmasked samples (plain mean when all weights are 0),
    and whether the unit has positive weight (enters statistics)."""
    m = None if mask is None else mask.reshape(-1).bool()
    xm = x if m is None else torch.where(m, x, 0.0)
    ones = torch.ones_like(x) if m is None else m.to(x.dtype)
    if weights is None:
        cnt, tot = _unit_sums(unit, [ones, xm])
        return tot / cnt.clamp_min(1.0), cnt > 0
    w = weights.reshape(-1).to(x.dtype) * ones
    cnt, tot, total, wsum = _unit_sums(unit, [ones, xm, w, xm * w])
    plain = tot / cnt.clamp_min(1.0)
    mean = wsum / total.clamp_min(_TINY)
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
    if cfg.per_trajectory or weights is not None or (x.device.type == "cpu" and native.available()):
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
    fast = _native_player_turn(x, keys, mask, weights, cfg)
    if fast is not None:
        return fast
    r = _grouped(x, keys, mask, weights, cfg, [keys.game, keys.group, keys.agent], scale=True)
    traj_cols = [keys.game, keys.trajectory]
    g = _turn_returns(r, traj_cols, keys.agent, keys.turn, cfg.turn_gamma, mask, inplace=True)
    cols = [keys.game, keys.agent]
    return _grouped(g, keys, mask, weights, cfg, cols, scale=cfg.player_turn_scale, out=g)


def _native_player_turn(x, keys, mask, weights, cfg) -> Tensor | None:
    """``player_turn`` fused into three passes of ``marl.native`` (CPU, statistics per step,
    trajectories as ascending runs in turn order), or None."""
    if cfg.per_trajectory or x.device.type != "cpu" or not native.available():
        return None
    return native.player_turn(x, keys.game, keys.group, keys.agent, mask, weights,
                              keys.trajectory, keys.turn, gamma=cfg.turn_gamma, eps=cfg.eps,
                              unbiased=cfg.unbiased_std, scale2=cfg.player_turn_scale)  # fmt: skip


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
    scale, eps, unbiased = cfg.joint_group_scale, cfg.eps, cfg.unbiased_std
    if keys.trajectory is None:
        node = dense_key(keys.game, node_col)
        return group_normalize(x, node, mask, weights, eps=eps, scale=scale, unbiased=unbiased)
    fast = _native_joint_group(x, keys, node_col, mask, weights, cfg)
    if fast is not None:
        return fast
    unit = dense_key(keys.trajectory)
    # a trajectory normally stays in one node: then it is the unit, and each unit's node comes
    # from per-unit columns without an [N] node key
    ranges = [_unit_range(unit, c) for c in (keys.game, node_col) if c is not None]
    if all(torch.equal(lo, hi) for lo, hi in ranges):
        node_u = dense_key(*(lo for lo, _ in ranges))
    else:
        node = dense_key(keys.game, node_col)
        ids, num = _compact(dense_key(keys.trajectory, node.ids).ids, None)
        unit = SegmentKey(ids, num)
        node_u = SegmentKey(torch.zeros(num, dtype=torch.long, device=x.device).scatter_(
            0, ids, node.ids), node.num)  # fmt: skip
    r_u, live_u = _unit_means(x, unit, mask, weights)
    # units without positive weight are normalized but stay out of the node statistics
    a_u = group_normalize(r_u, node_u, None, live_u.to(r_u.dtype), eps=eps, scale=scale,
                          unbiased=unbiased)  # fmt: skip
    return a_u[unit.ids]


def _native_joint_group(x, keys, node_col, mask, weights, cfg) -> Tensor | None:
    """``joint_group`` through ``marl.native`` (CPU; each trajectory in one node), or None:
    joint returns from per-trajectory moments, the node baseline over [U], one gather."""
    if x.device.type != "cpu" or not native.available():
        return None
    unit = _native_key([keys.trajectory])
    checks = [c for c in (keys.game, node_col) if c is not None]
    node_vals = native.unit_values(unit, checks)
    if node_vals is None:  # a trajectory spans nodes: the torch path splits it
        return None
    plain = native.unit_means(x, unit, mask, None)  # (count, mean of unmasked samples) [U]
    if plain is None:
        return None
    cnt, mean = plain
    live = cnt > 0
    if weights is not None:  # weighted means; units of weight 0 keep plain ones, out of stats
        total, w_mean = native.unit_means(x, unit, mask, weights)
        live = total > 0
        mean = torch.where(live, w_mean, mean)
    r_u = torch.where(cnt > 0, mean, 0.0).to(x.dtype)
    node_u = dense_key(*node_vals.unbind(0))
    a_u = group_normalize(r_u, node_u, None, live.to(r_u.dtype), eps=cfg.eps,
                          scale=cfg.joint_group_scale, unbiased=cfg.unbiased_std)  # fmt: skip
    return native.gather(a_u, unit, mask, x.numel())


def _unit_range(unit: SegmentKey, col: Tensor) -> tuple[Tensor, Tensor]:
    """Smallest and largest value of ``col`` [N] in each unit, [U] each (0 for empty units)."""
    info = torch.iinfo(col.dtype)
    lo = col.new_full((unit.num,), info.max).scatter_reduce_(0, unit.ids, col, "amin")
    hi = col.new_full((unit.num,), info.min).scatter_reduce_(0, unit.ids, col, "amax")
    empty = hi < lo
    return lo.masked_fill_(empty, 0), hi.masked_fill_(empty, 0)


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
    sequential EMA, from its closed form per key (``_keyed_ema``). Samples that update nothing
    (weight 0) are compared with the baseline before the batch. ``drop_zero`` reproduces
    SPIRAL's filtering of zero-advantage samples. ``state`` (a ``RoleEMABaseline``) is updated
    in place.
    """
    _need("role_ema", keys, "role")
    if not isinstance(state, RoleEMABaseline):
        raise ValueError(f"scheme 'role_ema' needs state=RoleEMABaseline(); got {state!r}")
    if cfg.per_trajectory:
        _need("role_ema with per_trajectory", keys, "trajectory")
    fast = _native_role_ema(x, keys, mask, weights, cfg, state)
    if fast is not None:
        return fast
    spans = _role_spans(keys)
    (glo, ghi), (rlo, rhi) = spans
    room = _ema_room(cfg.role_ema_alpha, x.numel(), (ghi - glo + 1) * (rhi - rlo + 1))
    code, raw = _role_codes(keys.game, keys.role, spans, 0 if cfg.per_trajectory else room)
    if cfg.per_trajectory:
        unit = dense_key(keys.trajectory, keys.game, keys.role)
        r_u, live = _unit_means(x, unit, mask, weights)
        code = torch.zeros(unit.num, dtype=torch.long, device=x.device).scatter_(0, unit.ids, code)
    else:
        unit, r_u, live = None, x, _active(mask, weights)
    num, init = raw.numel(), state.lookup(raw, cfg.role_ema_init)
    if live is None:
        skip = code
    else:  # samples that update nothing go to key ``num``; without weights they are masked
        skip = code.masked_fill_(~live, num) if weights is None else code.masked_fill(~live, num)
    ema = _keyed_ema(r_u, skip, num, cfg.role_ema_alpha, init)
    base = ema.before
    if live is not None and weights is not None:  # they meet the baseline from before the batch
        base = torch.where(live, base, init.to(base.dtype)[code])
    hit = ema.count > 0
    state.merge(raw[hit], ema.final[hit])
    base = base if unit is None else base[unit.ids]
    return torch.sub(x, base, out=base)


_ROLE_TOPS = (("game", 1 << 31), ("role", 1 << 32))  # state codes game << 32 | role


def _role_spans(keys: AdvantageKeys) -> list[tuple[int, int]]:
    """``(lo, hi)`` of keys.game and keys.role ((0, 0) when absent), checked for the codes."""
    spans = []
    for name, top in _ROLE_TOPS:
        col = getattr(keys, name)
        lo, hi = (0, 0) if col is None else native.col_range(col)
        if lo < 0 or hi >= top:
            raise ValueError(f"role_ema needs 0 <= keys.{name} < {top}; got [{lo}, {hi}]")
        spans.append((lo, hi))
    return spans


def _native_role_ema(x, keys, mask, weights, cfg, state: RoleEMABaseline):
    """``role_ema`` in one sequential pass of ``marl.native`` (CPU), or None. Its key may be
    guessed when the guessed ranges lie inside the valid ids: the pass confirms them, which
    proves the ids valid; else (and after a miss) the exact ranges are checked first."""
    if x.device.type != "cpu" or not native.available():
        return None
    key = native.guess([keys.game, keys.role])
    tops = [top for name, top in _ROLE_TOPS if getattr(keys, name) is not None]
    if key is None or not key.guessed or any(lo < 0 or lo + s > top for lo, s, top
                                             in zip(key.lo, key.span, tops, strict=True)):
        spans = _role_spans(keys)
        key = native.radix([keys.game, keys.role])
    traj = keys.trajectory if cfg.per_trajectory else None
    while True:
        if key is None:  # huge id ranges: dense ids through a sort
            code, raw = _role_codes(keys.game, keys.role, spans, 0)
            key = native.Radix.of_ids(code, raw.numel())
        else:
            vals = key.unravel()
            game, role = vals if keys.game is not None else (torch.zeros_like(vals[0]), vals[0])
            raw = (game << 32) | role
        init = state.lookup(raw, cfg.role_ema_init)
        res = native.ema(x, key, mask, weights, cfg.role_ema_alpha, init, traj)
        if res is not native.MISSED:
            break
        _role_spans(keys)  # the key now holds the exact ranges: are they valid ids?
    if res is None:
        return None
    out, final, count = res
    hit = count > 0
    state.merge(raw[hit], final[hit])
    return out


def _role_codes(game: Tensor | None, role: Tensor, spans, room: int) -> tuple[Tensor, Tensor]:
    """Dense (game, role) ids [N] (a fresh tensor with ``room`` spare slots) and each id's state
    code ``game << 32 | role`` [K], ascending; ids are a mixed radix, renumbered by a sort only
    when the spans are huge."""
    (glo, ghi), (rlo, rhi) = spans
    rspan, r = rhi - rlo + 1, role.reshape(-1).long()
    code = torch.empty(r.numel() + room, dtype=torch.long, device=r.device)[: r.numel()]
    if game is None:
        torch.sub(r, rlo, out=code)
    else:
        torch.add(r, game.reshape(-1).long(), alpha=rspan, out=code)
        if glo * rspan + rlo:
            code.sub_(glo * rspan + rlo)
    num = (ghi - glo + 1) * rspan
    if num > max(2 * code.numel(), 1 << 16):
        used, code = torch.unique(code, return_inverse=True)
    else:
        used = torch.arange(num, device=code.device)
    return code, ((used // rspan + glo) << 32) | (used % rspan + rlo)


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
    if values.device.type == "cpu" and native.available():
        fast = _native_diagnostics(values.reshape(-1).to(dt), advantages.reshape(-1).to(dt), flat,
                                   None if mask is None else mask.reshape(-1).bool())  # fmt: skip
        if fast is not None:
            return fast
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


_DIAG_NAMES = ["count", "reward_mean", "reward_std", "adv_mean", "adv_std", "reward_std_ratio",
               "reward_m2_ratio"]  # fmt: skip


def _native_diagnostics(x, adv, flat: AdvantageKeys, m) -> dict[str, float] | None:
    """``advantage_diagnostics`` from the moments kernel of ``marl.native``: one pass per
    (values or advantages, global / agent / role), or None."""
    tables: list[tuple[str, native.Radix]] = [("global", native.radix([]))]
    for name in ("agent", "role"):
        col = getattr(flat, name)
        key = None if col is None else native.guess([col])
        if col is not None and key is None:
            return None
        if key is not None:
            tables.append((name, key))
    out: dict[str, float] = {}
    g_mu = g_sig = None
    for name, key in tables:
        r, a = native.moments(x, key, m), native.moments(adv, key, m)
        if r is None or a is None:
            return None
        cnt, r_mu, r_var = r
        r_sig, a_mu, a_sig = r_var.sqrt(), a[1], a[2].sqrt()
        if name == "global":
            g_mu, g_sig = r_mu[0], r_sig[0]
            labels = ["global"]
            rows = torch.stack([cnt, r_mu, r_sig, a_mu, a_sig], 1)
        else:
            labels = [f"{name}_{v}" for v in key.unravel()[0].tolist()]
            std_ratio = torch.where(g_sig > 0, r_sig / g_sig.clamp_min(_TINY), 1.0)
            m2 = (r_var + (r_mu - g_mu) ** 2) / (g_sig * g_sig).clamp_min(_TINY)
            rows = torch.stack([cnt, r_mu, r_sig, a_mu, a_sig, std_ratio,
                                torch.where(g_sig > 0, m2, 1.0)], 1)  # fmt: skip
        for lab, row in zip(labels, rows.tolist(), strict=True):
            if row[0] > 0 or lab == "global":
                out.update({f"adv/{lab}/{n}": v for n, v in zip(_DIAG_NAMES, row, strict=False)})
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
    with native.call_scope():  # key ranges computed once, kernel outputs already zeroed
        return _normalize_advantages(scheme, values, keys, mask, weights, cfg, state)


def _normalize_advantages(scheme, values, keys, mask, weights, cfg, state) -> AdvantageResult:
    fn = get_scheme(scheme)
    cfg = cfg if cfg is not None else AdvantageConfig()
    shape = values.shape
    flat = (keys or AdvantageKeys()).flat(shape)
    m = None if mask is None else mask.to(torch.bool).broadcast_to(shape).reshape(-1)
    w = None if weights is None else weights.broadcast_to(shape).reshape(-1)
    x = values.reshape(-1).to(_acc(values.dtype, cfg.float64))
    adv = fn(x, flat, m, w, cfg, state) if x.numel() else x.clone()
    if m is not None and not native.masked_zero(adv):  # fresh tensors, except ``none``'s x
        adv = torch.where(m, adv, 0.0) if adv is x else adv.masked_fill_(~m, 0.0)
    keep = m if m is not None else torch.ones_like(x, dtype=torch.bool)
    if cfg.drop_zero:
        keep = keep & (adv != 0)
    diag = advantage_diagnostics(x, adv, flat, m) if cfg.diagnostics and x.numel() else {}
    if cfg.drop_zero and diag:
        diag["adv/dropped_frac"] = 1.0 - float(keep.sum()) / max(1, int(x.numel()))
    return AdvantageResult(adv.to(values.dtype).reshape(shape), keep.reshape(shape), diag)
