"""Returns: generalized advantage estimation and discounted returns over ``[T, B, ...]`` (loops
over time only), turn-level returns over flat samples, and the dense keys and scans over samples
grouped by key they share with ``marl.advantages`` (which re-exports the public names).

``gae``/``discounted_returns`` bootstrap on truncation and not on termination;
``agent_gae`` runs GAE over each agent's own acting steps for turn-based games;
``turn_returns`` runs the return-to-go over one agent's own turns of multi-turn episodes, with
``broadcast_to_tokens`` / ``rewards_at_turn_ends`` to move between turns and tokens.

Keys and scans: ``dense_key`` turns integer columns into segment ids (mixed radix, sort-free
while ranges stay small); ``_sort_by_key`` groups samples by a key (a counting sort on the CPU,
O(N + K)); ``_segment_scan`` / ``_suffix_sums`` scan contiguous segments; ``_keyed_ema`` runs one
exponential moving average per key in sample order from the closed form
``b_j = alpha**j b_0 + (1 - alpha) sum_{i<j} alpha**(j-1-i) x_i``. No loop over samples.

Shape legend: ``_T`` time, ``_B`` batch (copies / episodes), ``_A`` agents; flat scans: ``M``
samples (or slots, in key order), ``K`` keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from marl import native


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


def _native_key(cols) -> native.Radix:
    """The key of ``cols`` for ``marl.native``: their radix, or dense ids when it is too wide."""
    key = native.radix(cols)
    if key is None:
        seg = _dense(cols)[0]
        key = native.Radix.of_ids(seg.ids, seg.num)
    return key


# --- scans over flat samples grouped by a key (no loop over samples)
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


@dataclass(frozen=True)
class _Sorted:
    """Samples grouped by key: slot ``p`` holds sample ``perm[p]`` with value ``values[p]``; key
    ``k`` owns slots ``start[k]:start[k + 1]``, samples in their original order."""

    perm: Tensor  # [M] int64
    values: Tensor  # [M]
    start: Tensor  # [K + 1] int64, start[K] = M


def _sort_by_key(
    code: Tensor, num: int, values: Tensor, *, counting: bool | None = None
) -> _Sorted:
    """Stable grouping of ``values`` [M] by ``code`` [M] (integers in ``[0, num)``).

    ``counting`` (default: on CPU tensors that need no gradient): a counting sort, O(M + num),
    through scipy's COO -> CSR conversion -- one pass that moves ``values`` too, where a radix
    sort and a gather cost several times more on the CPU. Otherwise ``torch.sort`` (radix on
    GPUs) and a gather.
    """
    code = code.reshape(-1).long()
    m = code.numel()
    if counting is None:
        counting = code.device.type == "cpu" and not values.requires_grad
    if counting and m and values.dtype in (torch.float32, torch.float64):
        from scipy.sparse import coo_array  # noqa: PLC0415 -- imported on first use

        cols = np.arange(m, dtype=np.int64)  # int64 indices: scipy keeps them, no copies
        csr = coo_array((values.numpy(), (code.numpy(), cols)), shape=(num, m)).tocsr()
        return _Sorted(*(torch.from_numpy(a) for a in (csr.indices, csr.data, csr.indptr)))
    perm = torch.argsort(code, stable=True)
    counts = torch.bincount(code, minlength=num)
    return _Sorted(perm, values[perm], torch.cat([counts.new_zeros(1), counts.cumsum(0)]))


def _segment_starts(start: Tensor, m: int) -> Tensor:
    """First slot of each slot's segment, [M] int64, from segment boundaries ``start`` [K + 1]
    (a cumulative sum of jumps at the nonempty segments' starts)."""
    s = start[:-1][start[1:] > start[:-1]]
    marks = torch.zeros(m, dtype=torch.long, device=start.device)
    marks[s] = torch.diff(s, prepend=s.new_zeros(1))
    return marks.cumsum_(0)


def _suffix_sums(xs: Tensor, start: Tensor) -> Tensor:
    """``g[p] = xs[p] + ... + xs[end]`` inside each contiguous segment, float64 [M]: a running sum
    that enters each segment at its total and drops one value per slot (one float64 buffer)."""
    m = xs.numel()
    w = torch.empty(m + 1, dtype=torch.float64, device=xs.device)
    w[1:] = xs
    lengths = torch.diff(start)
    total = torch.segment_reduce(w[1:], "sum", lengths=lengths)
    w[0] = 0.0
    w.neg_()  # w[p] = -xs[p - 1]
    first = lengths > 0
    w.index_add_(0, start[:-1][first], total[first])
    return w[:m].cumsum_(0)


def _discounted_suffix(xs: Tensor, start: Tensor, gamma: float) -> Tensor:
    """``g[p] = xs[p] + gamma * g[p + 1]`` inside each contiguous segment, float64 [M]."""
    m = xs.numel()
    xr = xs.double().flip(0)  # reversed, the suffix recursion is a forward scan
    s = _segment_starts(m - start.flip(0), m)
    return xr.add_(_segment_scan(xr, s, gamma, torch.zeros_like(xr)), alpha=gamma).flip(0)


@dataclass(frozen=True)
class _KeyedEMA:
    """Output of ``_keyed_ema``."""

    before: Tensor  # [M] x's dtype: the key's baseline just before the sample's own update
    final: Tensor  # [K] float64 baselines after the batch (``init`` where a key has no sample)
    count: Tensor  # [K] int64 samples per key


_EMA_ROW = 1024  # widest row of the EMA layout


def _ema_width(alpha: float, m: int, k: int) -> int:
    """Row width: ``alpha**-(w-1) <= 1e150`` keeps the scaled sums finite, and ``k * w <= m / 4``
    keeps the padding (under ``w`` slots per key) below a quarter of the samples."""
    if alpha >= 1.0:
        bound = _EMA_ROW
    elif alpha <= 0.0:
        bound = 1
    else:
        bound = int(150.0 / -math.log10(alpha)) + 1
    return max(1, min(_EMA_ROW, bound, m // (4 * k)))


def _ema_room(alpha: float, m: int, num: int) -> int:
    """Spare slots after a ``code`` of ``m`` samples that spare ``_keyed_ema`` a copy."""
    return (num + 1) * (_ema_width(alpha, m, num + 1) - 1)


def _keyed_ema(x: Tensor, code: Tensor, num: int, alpha: float, init: Tensor) -> _KeyedEMA:
    """One sequential EMA per key in sample order, ``b <- alpha * b + (1 - alpha) * x``.

    ``x`` [M] float, ``code`` [M] int64 in ``[0, num]`` (``num``: the sample updates nothing and
    its baseline is unspecified; ``code`` is consumed, and ``_ema_room`` spare slots in its
    storage -- ``torch.empty(M + room)[:M]`` -- take the padding without a copy), ``init`` [K]
    float64 baselines before the batch. Samples are grouped by key (``_sort_by_key``), each key
    padded to whole rows of ``w`` slots; inside a row the closed form needs one cumulative sum of
    ``(1 - alpha) * x_c * alpha**-c``, and rows chain through a scan over rows with decay
    ``alpha**w``. Float64 throughout.
    """
    m, dev, k1 = x.numel(), x.device, num + 1
    counts = torch.bincount(code, minlength=k1)
    if m == 0:
        return _KeyedEMA(x.clone(), init.to(torch.float64), counts[:num])
    w = _ema_width(alpha, m, k1)
    pads = torch.remainder(-counts, w)  # pad each key to whole rows (pads sort after its samples)
    p = int(pads.sum())
    keys = torch.arange(k1, device=dev)
    room = code.untyped_storage().nbytes() // code.element_size() - code.storage_offset()
    if code.is_contiguous() and room >= m + p:
        codes = code.as_strided((m + p,), (1,))
        codes[m:] = torch.repeat_interleave(keys, pads)
    else:
        codes = torch.cat([code, torch.repeat_interleave(keys, pads)])
    vals = torch.empty(m + p, dtype=torch.float64, device=dev)
    vals[:m].copy_(x)
    vals[m:].zero_()
    srt = _sort_by_key(codes, k1, vals)
    rows = (m + p) // w
    t = srt.values.view(rows, w)  # ours to overwrite
    powers = torch.pow(alpha, torch.arange(w, dtype=torch.float64, device=dev))
    t.mul_((1.0 - alpha) / powers).cumsum_(1)
    row_key = torch.repeat_interleave(keys, (counts + pads) // w)
    local = t[:, -1] * powers[-1]  # state after each row from state 0
    local.masked_fill_(row_key == num, 0.0)  # skipped samples (may be NaN) feed nothing
    first_row = torch.div(srt.start[:-1], w, rounding_mode="floor")[row_key]
    base = torch.cat([init.to(torch.float64), init.new_zeros(1, dtype=torch.float64)])[row_key]
    state = _segment_scan(local, first_row, alpha**w, base)  # [rows] baseline before each row
    t.add_(state[:, None] * alpha).mul_(powers)  # t[r, c]: baseline after slot c
    # baseline before each slot: the one after the previous slot, or the row's; ``vals`` is free
    pre = vals.view(torch.float32)[: m + p] if x.dtype == torch.float32 else vals
    pre = pre if pre.dtype == x.dtype else torch.empty(m + p, dtype=x.dtype, device=dev)
    pre[1:] = t.view(-1)[:-1]
    pre.view(rows, w)[:, 0] = state
    out = torch.empty(m + p, dtype=x.dtype, device=dev).index_copy_(0, srt.perm, pre)
    cnt = counts[:num]
    last = (srt.start[:num] + cnt - 1).clamp_min(0)
    final = torch.where(cnt > 0, t.view(-1)[last], init.to(torch.float64))
    return _KeyedEMA(out[:m], final, cnt)


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
    skipped (no discount step) and get 0. Computed in float64 (samples grouped by (trajectory,
    agent) -- a counting sort when turns already run in sample order inside each trajectory,
    the usual layout; else a sort --, then a segmented scan, no loop); returned in
    ``rewards.dtype``. Use ``broadcast_to_tokens`` to give the result to tokens.
    """
    return _turn_returns(rewards, [trajectory], agent, turn, gamma, mask)


def _in_turn_order(trajectory: Tensor, turn: Tensor) -> bool:
    """Whether each trajectory is one contiguous run of samples whose turns never decrease."""
    t, u = trajectory.reshape(-1), turn.reshape(-1)
    if t.numel() < 2:
        return True
    brk = t[1:] != t[:-1]
    if not bool(brk.logical_or(u[1:] >= u[:-1]).all()):
        return False
    if bool((t[1:] >= t[:-1]).all()):  # ascending ids: every trajectory is one run
        return True
    return int(brk.sum()) + 1 == int(torch.count_nonzero(torch.bincount(dense_key(t).ids)))


def _turn_returns(rewards, traj_cols, agent, turn, gamma: float, mask, inplace=False) -> Tensor:
    """``turn_returns`` with the trajectory given by columns (e.g. game and trajectory);
    ``inplace``: ``rewards`` is a temporary the result may overwrite."""
    shape, r = rewards.shape, rewards.reshape(-1)
    if r.numel() == 0:
        return rewards.clone()
    if r.device.type == "cpu" and native.available():  # one backward pass per sample
        ordered = turn is None or native.in_order(traj_cols[-1], turn)
        out = r if inplace and r.is_contiguous() else None
        key = _native_key([*traj_cols, agent]) if ordered else None
        g = None if key is None else native.turn_returns(r, key, mask, gamma, out=out)
        if g is not None:
            return g.reshape(shape)
    seg, owned = _dense([*traj_cols, agent])
    code = seg.ids if owned else seg.ids.clone()
    m = None if mask is None else mask.reshape(-1).bool()
    if m is not None:
        code.masked_fill_(~m, seg.num)  # masked turns form a dummy segment, last
    num = seg.num + 1
    if turn is None or _in_turn_order(traj_cols[-1], turn):
        srt = _sort_by_key(code, num, r)
        perm, xs, start = srt.perm, srt.values, srt.start
    else:  # (segment, turn) codes in mixed radix through a sort
        counts = torch.bincount(code, minlength=num)
        start = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
        lo, hi = (int(v) for v in torch.aminmax(turn))
        t = turn.reshape(-1).long()
        code.mul_(hi - lo + 1).add_(t - lo if lo else t)
        perm = _sort_perm(code)
        xs = r if perm is None else r[perm]
    g = _suffix_sums(xs, start) if gamma == 1.0 else _discounted_suffix(xs, start, gamma)
    g[int(start[seg.num]) :] = 0.0  # masked turns
    if perm is None:
        return g.to(rewards.dtype).reshape(shape)
    # ``xs`` is a sorted copy here, free to take the cast (fresh pages cost more than the copy)
    g = xs.copy_(g) if xs.dtype == rewards.dtype else g.to(rewards.dtype)
    return torch.empty_like(g).index_copy_(0, perm, g).reshape(shape)


def _sort_perm(code: Tensor) -> Tensor | None:
    """Stable sorting permutation of ``code``, or None when it is already sorted."""
    if code.numel() < 2 or bool((code[1:] >= code[:-1]).all()):
        return None
    return torch.argsort(code, stable=True)


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
