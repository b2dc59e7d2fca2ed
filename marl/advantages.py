"""Advantage estimation and normalization: the one home of advantage math in ``selfplay``.

Every learner (MAPPO's per-agent GAE, the LLM trainer's group-relative turn-level advantages)
calls these tensor functions on its own device; plain torch, the same code on CPU and CUDA.
Returns, GAE and segment keys live in ``marl.returns`` (re-exported here); grouped statistics
are sort-free segment reductions (``scatter_add_`` over keys built once per call).

An **adv_norm** (the one name of the concept: ``MAPPOConfig.adv_norm``, ``GRPOConfig.adv_norm``,
the first argument of ``normalize_advantages``) is a registered function that declares the keys
it needs and whether it consumes per-sample returns or per-turn rewards: ``none``, ``global``,
``agent`` (Dr. MAS), ``role``, ``group_role``, ``role_ema`` (SPIRAL), ``player_turn`` (MARS),
``joint_group`` (MAGRPO). ``@register_adv_norm`` adds one.

Degenerate cases, shared by every grouped statistic (a "key" is one segment of samples):
    * masked samples never enter statistics and get advantage exactly 0 (they may hold NaN);
      samples with weight 0 do not enter statistics but are still normalized;
    * a key with fewer than two contributing samples (group of one, empty key) uses mu=0, sigma=1;
    * a constant key (all contributing values equal, sigma=0) gets advantage exactly 0.
Statistics accumulate in float32 (float64 on request) around a pilot value per key (one of its
samples: little cancellation); outputs keep the input dtype. Standard deviations are population
ones unless ``unbiased_std``. Diagnostics (``marl.adv_diagnostics``) are computed when first
read (one host sync).

Shape legend: N flattened samples, K keys (segments), U units (trajectory of a key, joint action).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cached_property

import torch
from torch import Tensor

from games.registry import defined_at, redefinition
from marl.configs import AdvantageConfig, did_you_mean  # torch-free (the LLM settings hold one)
from marl.returns import (
    GAEResult,
    SegmentKey,
    accumulate_dtype,
    agent_gae,
    broadcast_to_tokens,
    dense_key,
    discounted_returns,
    gae,
    linear_scan,
    next_values_from,
    run_positions,
    turn_returns,
)

__all__ = [
    "AdvNorm", "AdvantageConfig", "AdvantageKeys", "AdvantageResult", "GAEResult", "KeyNames",
    "RoleEMABaseline", "SegmentKey", "SegmentStats", "agent_gae", "adv_norms_for",
    "broadcast_to_tokens", "check_adv_norm", "dense_key", "discounted_returns", "gae",
    "get_adv_norm", "group_normalize", "next_values_from", "normalize_advantages",
    "register_adv_norm", "segment_stats", "turn_returns",
]  # fmt: skip

_TINY = 1e-30
_BUILTIN: frozenset[str] = frozenset()  # the module's own adv_norms, set once they register


# --- segment statistics
@dataclass(frozen=True)
class SegmentStats:
    """Per-key statistics [K] as used for normalization (degenerate keys: mean 0, std 1)."""

    mean: Tensor
    std: Tensor
    count: Tensor  # contributing samples (unmasked, weight > 0), int64
    constant: Tensor  # bool: at least two contributing samples, all equal


def _active(mask: Tensor | None, weights: Tensor | None) -> Tensor | None:
    """Samples that enter statistics: unmasked and with positive weight (None: all)."""
    if weights is None:
        return mask
    pos = weights > 0
    return pos if mask is None else mask & pos


def segment_stats(x: Tensor, key: SegmentKey | None, mask: Tensor | None = None,
                  weights: Tensor | None = None, trajectory: Tensor | None = None, *,
                  per_trajectory: bool = False, unbiased: bool = False) -> SegmentStats:
    """Weighted mean/std/count of ``x`` [N] per key (``None``: one key), ``[K]`` each.

    One pass of sums around a pilot ``p_k`` (one active sample of the key): with ``d = x - p_k``,
    ``mu = p_k + S(w d) / W`` and ``sigma^2 = S(w d^2) / W - (S(w d) / W)^2``; the key is constant
    when ``S(w d^2) = 0``. ``per_trajectory``: a (trajectory, key) pair weighs its mean weight
    (1 when unweighted), so many steps of one trajectory do not outweigh few.
    """
    x, k = x.reshape(-1), 1 if key is None else key.num
    act = _active(None if mask is None else mask.reshape(-1).bool(),
                  None if weights is None else weights.reshape(-1))  # fmt: skip
    w = None if weights is None else torch.where(act, weights.reshape(-1).to(x.dtype), 0.0)

    def total(v: Tensor) -> Tensor:
        return v.sum(0, keepdim=True) if key is None else key.sum(v)

    tot, on = None, torch.ones_like(x) if act is None else act.to(x.dtype)  # on: 1 if active
    if per_trajectory:  # w / (active samples of the pair); W sums pair means (exact when 1)
        if trajectory is None:
            raise ValueError("per_trajectory statistics need keys.trajectory; got None")
        pair = dense_key(trajectory, None if key is None else key.ids)
        w, n_p = on if w is None else w, pair.sum(on).clamp_min(1.0)
        up = pair.ids.new_zeros(pair.num) if key is None else pair.per_segment(key.ids)
        tot = x.new_zeros(k).index_add_(0, up, pair.sum(w) / n_p)
        w = w / n_p[pair.ids]

    if key is None:  # the pilot: the first active sample
        pilot = x[:1] if act is None else x[act.to(torch.uint8).argmax().reshape(1)]  # no sync
        d = x - pilot
    else:  # one active sample of each key (scatter_ keeps one of the writes to a key)
        sel = key.ids if act is None else key.ids.masked_fill(~act, k)
        pilot = x.new_zeros(k + 1).scatter_(0, sel, x)[:k]
        d = x - pilot[key.ids]
    if act is not None:
        d = torch.where(act, d, 0.0)
    wd = d if w is None else w * d
    count = total(on)
    tot = tot if tot is not None else count if w is None else total(w)
    s1, s2 = total(wd), total(wd * d)
    ok, tot_ = count >= 2, tot.clamp_min(_TINY)
    m1 = s1 / tot_
    var = (s2 / tot_ - m1 * m1).clamp_min(0.0)
    if unbiased:
        var = var * torch.where(tot > 1, tot / (tot - 1).clamp_min(_TINY), 1.0)
    constant = ok & (s2 == 0)
    std = torch.where(ok, torch.where(constant, 0.0, var.sqrt()), 1.0)
    return SegmentStats(torch.where(ok, pilot + m1, 0.0), std, count.long(), constant)


def group_normalize(x: Tensor, key: SegmentKey | None, mask: Tensor | None = None,
                    weights: Tensor | None = None, trajectory: Tensor | None = None, *,
                    eps: float = 1e-6, scale: bool = True, per_trajectory: bool = False,
                    unbiased: bool = False) -> Tensor:  # fmt: skip
    """``(x - mu_k) / (sigma_k + eps)`` per key (``scale=False``: ``x - mu_k``), [N]; stats
    as in ``segment_stats``, degenerate keys by the module rules, masked entries unspecified."""
    st = segment_stats(x, key, mask, weights, trajectory, per_trajectory=per_trajectory,
                       unbiased=unbiased)  # fmt: skip
    inv = 1.0 / (st.std + eps) if scale else torch.ones_like(st.std)
    inv = torch.where(st.count >= 2, torch.where(st.constant, 0.0, inv), 1.0)  # degenerate keys
    mean, inv = (st.mean, inv) if key is None else (st.mean[key.ids], inv[key.ids])
    return (x.reshape(-1) - mean) * inv


# --- config, keys, registry
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
        return [n for n in KEY_NAMES if getattr(self, n) is not None]


KEY_NAMES = tuple(f.name for f in fields(AdvantageKeys))
KeyNames = Mapping[str, Sequence[str]]
"""Names of key ids, per key kind: ``{"agent": ["scout_0", "solver_0"], "role": [...]}``."""


class FlatKeys:
    """``AdvantageKeys`` broadcast to ``shape`` and flattened [N] on first use (an adv_norm
    reads few); integer dtypes are checked at once, shapes on first use."""

    def __init__(self, keys: AdvantageKeys | None, shape: torch.Size) -> None:
        self._keys, self._shape = keys or AdvantageKeys(), shape
        for name in self._keys.present():
            dt = getattr(self._keys, name).dtype
            if dt.is_floating_point or dt.is_complex or dt == torch.bool:
                raise ValueError(f"keys.{name} has dtype {dt}; expected an integer dtype")

    def __getattr__(self, name: str) -> Tensor | None:
        if name not in KEY_NAMES:
            raise AttributeError(name)
        col = getattr(self._keys, name)
        try:
            col = None if col is None else (
                col if col.shape == self._shape else col.broadcast_to(self._shape)).reshape(-1)
        except RuntimeError:
            msg = f"keys.{name} has shape {tuple(col.shape)}; expected one broadcastable to"
            raise ValueError(f"{msg} values' {tuple(self._shape)}") from None
        setattr(self, name, col)  # next reads skip __getattr__
        return col


@dataclass
class AdvantageResult:
    """Output of ``normalize_advantages``: ``advantages`` (shape and dtype of the values, 0 where
    masked), ``mask`` (bool: samples to train on, the input mask minus dropped zeros) and
    ``diagnostics`` (``adv/...`` floats), computed on first read: unread, they cost nothing."""

    advantages: Tensor
    mask: Tensor
    compute_diagnostics: Callable[[], dict[str, float]] = dict

    @cached_property
    def diagnostics(self) -> dict[str, float]:
        return self.compute_diagnostics()


# (values [N] in the accumulation dtype, flat keys, mask [N] bool | None, weights [N] | None,
#  config, state | None) -> advantages [N]
AdvNormFn = Callable[..., Tensor]


@dataclass(frozen=True)
class AdvNorm:
    """A registered advantage normalization and what it asks of its caller."""

    name: str
    fn: AdvNormFn
    needs: tuple[str, ...]  # keys it reads; "node|group": either one
    consumes: str  # "returns" (per-sample returns or advantages) | "rewards" (per-turn rewards)
    stateful: bool  # needs state=RoleEMABaseline()

    def why_not(self, have: set[str] | list[str], consumes: str | None = None,
                stateful: bool = True, by: str = "the caller") -> str:  # fmt: skip
        """Why a caller with keys ``have`` (giving ``consumes``, keeping a state or not) cannot
        run it, or "" when it can; a needed alternative "a|b" counts when either is there."""
        missing = [n for n in self.needs if not set(n.split("|")) & set(have)]
        if missing:
            return (f"needs keys.{', keys.'.join(missing)}, which {by} does not provide "
                    f"({', '.join(sorted(have)) or 'none'})")  # fmt: skip
        if consumes not in (None, self.consumes):
            return f"consumes {self.consumes}, {by} gives {consumes}"
        if self.stateful and not stateful:
            return f"needs a RoleEMABaseline state, which {by} does not keep"
        return ""


_REGISTRY: dict[str, AdvNorm] = {}


def register_adv_norm(name: str, *, needs: tuple[str, ...] = (), consumes: str = "returns",
                      stateful: bool = False) -> Callable[[AdvNormFn], AdvNormFn]:  # fmt: skip
    """Decorator registering an adv_norm under ``name``; ``needs`` lists the keys it reads."""
    if consumes not in ("returns", "rewards"):
        raise ValueError(f"consumes={consumes!r}; expected returns or rewards")
    bad = [n for alt in needs for n in alt.split("|") if n not in KEY_NAMES]
    if bad:
        raise ValueError(f"needs names unknown keys {bad}; keys are {list(KEY_NAMES)}")

    def deco(fn: AdvNormFn) -> AdvNormFn:
        old = _REGISTRY.get(name)
        if old is not None and (name in _BUILTIN or not redefinition(old.fn, fn)):
            by = f"{'built in:' if name in _BUILTIN else 'by'} {defined_at(old.fn)}"
            raise ValueError(f"adv_norm {name!r} is already registered ({by}); register yours "
                             "under another name")
        # a notebook cell run again (same module and qualname): its new function replaces
        _REGISTRY[name] = AdvNorm(name, fn, tuple(needs), consumes, stateful)
        return fn

    return deco


def get_adv_norm(name: str) -> AdvNorm:
    """The adv_norm registered as ``name``; unknown names raise a one-line ``ValueError``."""
    return check_adv_norm(name, KEY_NAMES)  # every key present: only the name can be wrong


def adv_norms_for(have: set[str] | list[str] | tuple[str, ...] = KEY_NAMES, *,
                  consumes: str | None = None, stateful: bool = True) -> list[str]:  # fmt: skip
    """Names a caller with keys ``have`` (default: all) can run (see ``AdvNorm.why_not``),
    sorted; ``adv_norms_for()`` lists every registered adv_norm."""
    return [n for n, s in sorted(_REGISTRY.items()) if not s.why_not(have, consumes, stateful)]


def check_adv_norm(name: str, have: set[str] | list[str], *, by: str = "the caller",
                   consumes: str | None = None, stateful: bool = True) -> AdvNorm:  # fmt: skip
    """The adv_norm ``name`` if a caller with keys ``have`` can run it, else a one-line error
    naming what is missing and the names it could use (see ``adv_norms_for``)."""
    spec = _REGISTRY.get(name)
    why = "unknown" if spec is None else spec.why_not(have, consumes, stateful, by)
    if why:
        ok = adv_norms_for(have, consumes=consumes, stateful=stateful)
        yours = ("; an adv_norm of your own is registered by @register_adv_norm when its module "
                 "is imported (selfplay-train imports=[module])") if spec is None else ""
        cased = [n for n in _REGISTRY if spec is None and n.lower() == str(name).lower()]
        if cased:  # adv_norm=Role: names are case-sensitive
            yours = f" (names are case-sensitive: {cased[0]!r})"
        elif spec is None:  # adv_norm=agnet: the nearest name the caller can run
            yours = f"{yours}{did_you_mean(name, ok)}"  # the nearest last, as every site
        raise ValueError(f"adv_norm={name!r} {why}; choose one of {ok}{yours}")
    return spec


# --- the adv_norms
def _grouped(x, keys, mask, weights, cfg, cols, *, scale: bool | None = None) -> Tensor:
    """``group_normalize`` per key built from ``cols`` (none: one key) with the config."""
    key = dense_key(*cols) if any(c is not None for c in cols) else None
    scale = cfg.scale if scale is None else scale
    return group_normalize(x, key, mask, weights, keys.trajectory, eps=cfg.eps, scale=scale,
                           per_trajectory=cfg.per_trajectory, unbiased=cfg.unbiased_std)


@register_adv_norm("none")
def _none(x, keys, mask, weights, cfg, state) -> Tensor:
    """No normalization, [N] -> [N]: the advantages are the values (e.g. GAE advantages)."""
    return x


@register_adv_norm("global")
def _global(x, keys, mask, weights, cfg, state) -> Tensor:
    """One mean/std over the whole batch, ``A = (R - mu) / (sigma + eps)``, [N] -> [N]: PPO's
    advantage normalization (Schulman et al., 2017), MAPPO (Yu et al., 2022, arXiv:2103.01955),
    GRPO with one batch-wide group. Unweighted, the one-liner over the unmasked samples plus the
    degenerate rules (a constant batch: max == min)."""
    if weights is not None or cfg.per_trajectory:
        return _grouped(x, keys, mask, weights, cfg, [])
    xs = x if mask is None else x.masked_select(mask)
    if xs.numel() < 2:
        return x.clone()
    lo, hi = torch.aminmax(xs)
    sd = xs.std(correction=int(cfg.unbiased_std)) + cfg.eps if cfg.scale else 1.0
    return (x - xs.mean()) * ((hi != lo) / sd)  # a constant batch: exactly 0


@register_adv_norm("agent", needs=("agent",))
def _agent(x, keys, mask, weights, cfg, state) -> Tensor:
    """Agent-wise normalization of Dr. MAS (Feng et al., 2026, arXiv:2602.08847), [N] -> [N]:
    ``A = (R - mu_k) / (sigma_k + eps)`` per (game, group, agent), game and group when given.
    One global baseline mis-centers agents whose reward distributions differ and inflates their
    gradient norms; each agent's own statistics calibrate them."""
    return _grouped(x, keys, mask, weights, cfg, [keys.game, keys.group, keys.agent])


@register_adv_norm("role", needs=("role",))
def _role(x, keys, mask, weights, cfg, state) -> Tensor:
    """Role-wise normalization, the role analogue of Dr. MAS (arXiv:2602.08847), [N] -> [N]:
    ``A = (R - mu_k) / (sigma_k + eps)`` per (game, role); agents of one role share statistics."""
    return _grouped(x, keys, mask, weights, cfg, [keys.game, keys.role])


@register_adv_norm("group_role", needs=("group", "role"))
def _group_role(x, keys, mask, weights, cfg, state) -> Tensor:
    """Group-relative advantages (GRPO, Shao et al., 2024, arXiv:2402.03300) split by role, as in
    grouped multi-agent GRPO (arXiv:2602.08847): ``A = (R - mu_k) / (sigma_k + eps)`` per (game,
    group, role), [N] -> [N]."""
    return _grouped(x, keys, mask, weights, cfg, [keys.game, keys.group, keys.role])


@register_adv_norm("player_turn", needs=("agent", "trajectory"), consumes="rewards")
def _player_turn(x, keys, mask, weights, cfg, state) -> Tensor:
    """Turn-level advantages with agent-specific normalization of MARS (Yuan et al., 2025,
    arXiv:2510.15414), any number of players: per-turn rewards [N] -> advantages [N].

    1. ``r = (r - mu) / (sigma + eps)`` per (game, group, agent);
    2. ``G_i = r_i + turn_gamma * G_next``: return-to-go over the player's own later turns in
       its trajectory (``keys.turn`` orders turns, sample order when absent);
    3. ``A = G - mu_G`` per (game, agent) over the batch (``/ (sigma_G + eps)`` when
       ``player_turn_scale``).
    """
    r = _grouped(x, keys, mask, weights, cfg, [keys.game, keys.group, keys.agent], scale=True)
    g = turn_returns(r, keys.trajectory, keys.agent, keys.turn, gamma=cfg.turn_gamma, mask=mask,
                     game=keys.game)  # fmt: skip
    return _grouped(g, keys, mask, weights, cfg, [keys.game, keys.agent],
                    scale=cfg.player_turn_scale)  # fmt: skip


@register_adv_norm("joint_group", needs=("node|group",))
def _joint_group(x, keys, mask, weights, cfg, state) -> Tensor:
    """Joint-action group baseline of MAGRPO (Liu et al., 2025, arXiv:2508.04652), [N] -> [N].

    Samples of one joint action share ``keys.trajectory``; sibling joint actions sampled at the
    same node share ``keys.node`` (``keys.group`` when no node is given). The joint return
    ``R_u`` [U] is the (weighted) mean value of the joint action's samples; ``A = R_u - mean``
    over the node's joint actions, each counted once, the same for every agent of the joint
    action (divided by the std when ``joint_group_scale``). Without ``keys.trajectory`` each
    sample is its own joint action. A joint action whose samples all weigh 0 gets the plain
    mean of its unmasked samples and stays out of the statistics.
    """
    node = dense_key(keys.game, keys.node if keys.node is not None else keys.group)
    norm = dict(eps=cfg.eps, scale=cfg.joint_group_scale, unbiased=cfg.unbiased_std)
    if keys.trajectory is None:
        return group_normalize(x, node, mask, weights, **norm)
    unit = dense_key(node.ids, keys.trajectory)  # a trajectory spanning nodes splits
    unit = SegmentKey(unit.ids, unit.num, side_by_side=True)  # a joint action's samples adjoin
    on = torch.ones_like(x) if mask is None else mask.to(x.dtype)  # 1: unmasked
    xm = x if mask is None else torch.where(mask, x, 0.0)  # masked samples may hold NaN
    w = on if weights is None else weights.to(x.dtype) * on
    tot = unit.sum(w)  # [U]
    plain = unit.sum(xm) / unit.sum(on).clamp_min(1.0)
    r_u = torch.where(tot > 0, unit.sum(xm * w) / tot.clamp_min(_TINY), plain)  # [U]
    node_u = SegmentKey(unit.per_segment(node.ids), node.num)
    # units without positive weight (and empty unit ids) are normalized but stay out of stats
    return group_normalize(r_u, node_u, None, (tot > 0).to(r_u.dtype), **norm)[unit.ids]


class RoleEMABaseline:
    """State of ``role_ema``: one scalar baseline per (game, role); save it with the learner.
    ``state_dict()`` holds plain tensors (``codes`` int64 ``game << 32 | role``, sorted;
    ``values`` float64) for ``torch.load(weights_only=True)``; decay and initial value live in
    ``AdvantageConfig``."""

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

    def find(self, codes: Tensor, init: float) -> tuple[Tensor, Tensor, Tensor]:
        """For ``codes`` [M]: index in the state, whether it is there, and the baseline
        (``init`` where never updated, float64), [M] each; no host sync."""
        end = self.codes.new_full((1,), torch.iinfo(torch.int64).max)  # past every valid code
        known = torch.cat([self.codes, end]).to(codes.device)
        vals = torch.cat([self.values, self.values.new_full((1,), init)]).to(codes.device)
        idx = torch.searchsorted(known, codes)
        hit = (idx < self.codes.numel()) & (known[idx] == codes)  # the end is no key
        return idx, hit, torch.where(hit, vals[idx], init)

    def update(self, codes, values, new, idx, hit, fresh: int) -> None:
        """Baselines of ``codes[new]`` (distinct) set to ``values[new]``, [M] each, given
        ``idx, hit`` of ``find(codes)`` and ``fresh``, the number of new codes the state lacks."""
        k, dev = self.codes.numel(), codes.device  # fresh codes go after the known ones
        slot = torch.where(new, torch.where(hit, idx, k + (new & ~hit).cumsum(0) - 1), k + fresh)
        codes = torch.cat([self.codes.to(dev), codes.new_zeros(fresh + 1)]).scatter_(0, slot, codes)
        vals = torch.cat([self.values.to(dev), values.new_zeros(fresh + 1, dtype=torch.float64)])
        vals = vals.scatter_(0, slot, values.double())[: k + fresh]
        order = torch.argsort(codes[: k + fresh])  # the state is small: (game, role) pairs
        self.codes, self.values = codes[order], vals[order]


def _ema_units(x, code, traj, act, weights) -> tuple[Tensor, ...]:
    """``role_ema``'s per-trajectory units: samples ordered by (code, trajectory) by two stable
    sorts, each run a unit. Returns ``order`` [N], each ordered sample's unit [N] and, per unit
    slot [N]: its code (-1: no unit), the weighted mean of its active samples, and whether it
    has one (None: all do)."""
    o = torch.sort(traj, stable=True).indices
    order = o[torch.sort(code[o], stable=True).indices]
    cs, ts = code[order], traj[order]
    start = (cs != cs.roll(1)) | (ts != ts.roll(1))
    start[:1] = True
    unit = start.cumsum(0) - 1
    xs, ao = x[order], None if act is None else act[order]
    on = torch.ones_like(x) if ao is None else ao.to(x.dtype)
    w = on if weights is None else on * weights[order].to(x.dtype)
    xs = xs if ao is None else torch.where(ao, xs, 0.0)  # masked values may be NaN
    tot = x.new_zeros(x.numel()).index_add_(0, unit, w)
    mean = x.new_zeros(x.numel()).index_add_(0, unit, w * xs) / tot.clamp_min(_TINY)
    live = None if act is None else tot > 0  # None: every unit, slots [0, units)
    return order, unit, code.new_full((x.numel(),), -1).scatter_(0, unit, cs), mean, live


@register_adv_norm("role_ema", needs=("role",), stateful=True)
def _role_ema(x, keys, mask, weights, cfg, state: RoleEMABaseline) -> Tensor:
    """Role-conditioned advantage estimation of SPIRAL (Liu et al., 2025, arXiv:2506.24119).

    One scalar baseline ``b`` per (game, role): ``A = R - b`` with the baseline *before* it is
    updated, then ``b <- alpha * b + (1 - alpha) * R`` (``role_ema_alpha``); no std division.
    Updates run in batch order, one per sample, or, with ``per_trajectory`` (SPIRAL: once per
    game and role), one per (trajectory, game, role) with its mean value, trajectories in id
    order. Samples that update nothing (weight 0) meet the baseline from before the batch;
    ``drop_zero`` is SPIRAL's filtering of zero advantages; ``state`` is updated in place.
    [N] -> [N] by a stable sort by (game, role) and ``linear_scan`` of the sorted updates; one
    host sync reads the key bounds, the numbers of updates and new pairs, the longest run.
    """
    role, game = keys.role.long(), None if keys.game is None else keys.game.long()
    code = role if game is None else game << 32 | role  # [N]: the state's codes
    limits = [(n, c, top) for n, c, top in (("game", game, 1 << 31), ("role", role, 1 << 32))
              if c is not None]  # fmt: skip
    act = _active(mask, weights)
    if cfg.per_trajectory:  # units: (game, role, trajectory)
        order, unit, code_u, r_u, live = _ema_units(x, code, keys.trajectory, act, weights)
    else:  # units: samples
        order = torch.sort(code, stable=True).indices
        unit, code_u, r_u, live = None, code[order], x[order], None if act is None else act[order]
    n, alpha, init = x.numel(), cfg.role_ema_alpha, cfg.role_ema_init
    cu, ru = code_u, r_u
    if live is not None:  # the updating units first, in order (slots past them: code -1)
        dest = live.cumsum(0) - 1
        slot = torch.where(live, dest, n)
        cu = code.new_full((n + 1,), -1).scatter_(0, slot, code_u)[:n]
        ru = r_u.new_zeros(n + 1).scatter_(0, slot, r_u)[:n]
    real = cu >= 0  # slots that hold an update: a prefix (codes are >= 0 once checked)
    start = (cu != cu.roll(1)) | ~real  # first update of each (game, role); empty slots
    start[:1] = True
    pos, (idx, hit, b0) = run_positions(start), state.find(cu, init)
    last = torch.cat([start[1:], start.new_ones(1)]) & real  # each key's last update
    reads = [v for _, c, _ in limits for v in torch.aminmax(c)]
    *seen, fresh, max_pos, ups = torch.stack(
        reads + [(last & ~hit).sum(), pos.max(), real.sum()]).tolist()  # the one host sync
    for (name, _, top), lo, hi in zip(limits, seen[::2], seen[1::2], strict=True):
        if lo < 0 or hi >= top:
            raise ValueError(f"role_ema needs 0 <= keys.{name} < {top}; got [{lo}, {hi}]")
    if not ups:  # nothing updates: every sample meets the baseline from before the batch
        return x - state.find(code, init)[2].to(x.dtype)
    cu, ru, start, pos, idx, hit, b0, last = (t[:ups] for t in (cu, ru, start, pos, idx, hit,
                                                                 b0, last))  # fmt: skip
    b = torch.where(start, b0, 0.0).mul_(alpha).add_(ru.double(), alpha=1 - alpha)
    after = linear_scan(b, pos, alpha, max_pos=max_pos)  # the baseline after each update
    before = torch.where(start, b0, after.roll(1))  # the baseline each update meets
    if live is not None:  # units that update nothing meet the baseline before the batch
        before = torch.where(live, before[dest.clamp_min(0)], state.find(code_u, init)[2])
    base = before if unit is None else before[unit]
    base = torch.empty_like(base).scatter_(0, order, base)
    state.update(cu, after, last, idx, hit, fresh)
    return x - base.to(x.dtype)


# the adv_norms above, tested against slow references: normalize_advantages checks only the
# others' output for non-finite values (a host sync MAPPO's default call does not pay)
_BUILTIN = frozenset(_REGISTRY)


# --- entry point
def normalize_advantages(adv_norm: str, values: Tensor, keys: AdvantageKeys | None = None,
                         mask: Tensor | None = None, weights: Tensor | None = None,
                         cfg: AdvantageConfig | None = None,
                         state: RoleEMABaseline | None = None,
                         names: KeyNames | None = None) -> AdvantageResult:
    """Advantages of ``values`` (any shape) under the registered ``adv_norm``.

    ``values`` are returns / raw advantages, or per-turn rewards for an adv_norm that
    ``consumes="rewards"`` (``player_turn``). ``keys`` hold integer tensors broadcastable to
    ``values.shape``; ``mask`` (bool) marks real samples (padding / prompt tokens False: no
    statistics, advantage 0); ``weights`` (>= 0) weigh samples in statistics only. ``state``
    is the ``RoleEMABaseline`` of ``role_ema``. ``names`` name the key ids in the diagnostics
    (``{"agent": spec.agent_ids}``: ``adv/agent_player_0/...`` instead of ``adv/agent_0/...``;
    see ``advantage_diagnostics``), checked here, used on first read. Example::

        res = normalize_advantages("agent", returns_TBA, AdvantageKeys(agent=torch.arange(A)),
                                   names={"agent": spec.agent_ids})
        loss = -(res.advantages * logratio_TBA).mean(); logger.log(res.diagnostics)
    """
    _check_values(values)
    cfg, keys = cfg or AdvantageConfig(), keys or AdvantageKeys()
    from marl import adv_diagnostics as ad  # it imports this module

    ad.check_names(names)  # checked now, read on first use: a copy the caller cannot change
    names = {k: tuple(v) for k, v in (names or {}).items()}
    spec = check_adv_norm(adv_norm, keys.present())
    if spec.stateful and not isinstance(state, RoleEMABaseline):
        raise ValueError(f"adv_norm {adv_norm!r} needs state=RoleEMABaseline(); got {state!r}")
    if cfg.per_trajectory and keys.trajectory is None:
        raise ValueError("per_trajectory statistics need keys.trajectory; got None")
    shape, flat = values.shape, FlatKeys(keys, values.shape)
    m = None if mask is None else mask.to(torch.bool)
    m = None if m is None else (m if m.shape == shape else m.broadcast_to(shape)).reshape(-1)
    w = None if weights is None else weights.broadcast_to(shape).reshape(-1)
    x = values.reshape(-1).to(accumulate_dtype(values.dtype, cfg.float64))
    adv = spec.fn(x, flat, m, w, cfg, state) if x.numel() else x.clone()
    if x.numel():
        _check_shape(spec, x, adv)
        if spec.name not in _BUILTIN:
            _check_finite(spec, x, adv, m)
    if m is not None:
        adv = torch.where(m, adv, 0.0)
    keep = m if m is not None else torch.ones_like(x, dtype=torch.bool)
    if cfg.drop_zero:
        keep = keep & (adv != 0)
    lazy = x.numel() and cfg.diagnostics != "none"
    diag = (lambda: ad.diagnostics_of(x, adv, keys, m, keep, shape, cfg, names)) if lazy else dict
    return AdvantageResult(adv.to(values.dtype).reshape(shape), keep.reshape(shape), diag)


def _check_values(values: object) -> None:
    """One line unless ``values`` is a real floating tensor: integer values came back as
    integers (``[1, 2, 3]`` -> ``[-1, 0, 1]``, the output keeps the input's dtype), bool ones
    and complex ones lost meaning, numpy arrays and lists failed on a missing attribute."""
    if not isinstance(values, Tensor):
        raise TypeError(f"values is a {type(values).__name__}; expected a floating torch "
                        "tensor (float16, bfloat16, float32 or float64): torch.as_tensor(x, "
                        "dtype=torch.float32)")
    if not values.is_floating_point():
        raise TypeError(f"values are {values.dtype}; integer, bool and complex values are "
                        "refused: expected a floating tensor (float16, bfloat16, float32 or "
                        "float64), e.g. values.float()")


def _check_shape(spec: AdvNorm, x: Tensor, adv: object) -> None:
    """One line naming the adv_norm when its output is not a floating tensor shaped as the
    flat values ``x`` [N] on their device (a scalar would broadcast into a constant advantage,
    ``x[:-1]`` fail in the caller's loss without naming it)."""
    want = f"expected shape {tuple(x.shape)} (one advantage per value it is given, flat)"
    where = f"adv_norm {spec.name!r} ({defined_at(spec.fn)})"
    if not isinstance(adv, Tensor):
        raise ValueError(f"{where} returned {type(adv).__name__}; expected a floating tensor "
                         f"of shape {tuple(x.shape)} (one advantage per value it is given, "
                         f"flat), as the {x.dtype} values it was given")  # fmt: skip
    if adv.shape != x.shape or not adv.is_floating_point() or adv.device != x.device:
        on = f" on {adv.device}" if adv.device != x.device else ""
        raise ValueError(f"{where} returned a tensor of shape {tuple(adv.shape)}, dtype "
                         f"{adv.dtype}{on}; {want}, floating (it was given {x.dtype} on "
                         f"{x.device})")  # fmt: skip


def _check_finite(spec: AdvNorm, x: Tensor, adv: Tensor, m: Tensor | None) -> None:
    """One line naming the adv_norm when it turns finite unmasked values [N] into NaN or inf:
    else the learner's guard stops later, on a non-finite loss, and blames the game's rewards
    or the learning rate. One host sync; masked samples become 0 anyway."""
    fin = torch.isfinite(x) if m is None else torch.isfinite(x) & m
    bad = fin & ~torch.isfinite(adv)
    if bool(bad.any()):
        raise ValueError(
            f"adv_norm {spec.name!r} ({defined_at(spec.fn)}) returned a non-finite advantage "
            f"({float(adv[bad][0])}) at {int(bad.sum())} of {int(fin.sum())} samples whose "
            "values are finite: the adv_norm is at fault, not the game's rewards or the "
            "learning rate")

