"""Returns: GAE and discounted returns over ``[T, B, ...]`` (loops over time only), turn-level
returns over flat samples (``turn_returns``, ``broadcast_to_tokens``), and the segment keys
(``dense_key``) and scans (``run_positions``, ``linear_scan``) that ``marl.advantages`` builds
on and re-exports. Plain torch: the same code runs on CPU and CUDA.

Shape legend: ``_T`` time, ``_B`` batch (copies / episodes), ``_A`` agents; flat: ``N`` samples,
``K`` keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch
from torch import Tensor


def accumulate_dtype(dtype: torch.dtype, float64: bool) -> torch.dtype:
    """The dtype sums over ``dtype`` values accumulate in: float64 when asked (``float64``) or
    given, else float32 (shared with :mod:`marl.advantages`' normalisation)."""
    return torch.float64 if float64 or dtype == torch.float64 else torch.float32


@dataclass(frozen=True)
class GAEResult:
    """Output of ``gae``: both ``[T, B, ...]`` in the dtype of ``rewards``."""

    advantages: Tensor
    returns: Tensor  # advantages + values: the critic's regression target


def _trail(flag: Tensor, ref: Tensor) -> Tensor:
    """Append singleton dims so a ``[T, B]`` flag broadcasts against ``[T, B, ...]``."""
    return flag.reshape(*flag.shape, *([1] * (ref.dim() - flag.dim())))


def discounted_returns(rewards: Tensor, terminated: Tensor, truncated: Tensor,
                       next_values: Tensor | None = None, *, gamma: float = 0.99,
                       float64: bool = False) -> Tensor:  # fmt: skip
    """Discounted returns over ``[T, B, ...]``; flags are bool [T, B] or [T, B, ...].

    ``next_values`` [T, B, ...] is V of the observation *after* step t (0 when None), read only
    where step t ends an episode (truncated: bootstrap; terminated: none) or the rollout:
    ``G_t = r_t + gamma * (1 - terminated_t) * next_values_t`` there, else ``r_t + gamma G_{t+1}``.
    This is ``gae`` with ``lam = 1`` and ``V = 0``.
    """
    cut = (_trail(terminated, rewards) != 0) | (_trail(truncated, rewards) != 0)  # [T, B, 1...]
    if cut.shape[0]:
        cut[-1] = True  # the rollout end bootstraps like a truncation
    nv = torch.zeros_like(rewards) if next_values is None else torch.where(cut, next_values, 0.0)
    return gae(rewards, torch.zeros_like(rewards), nv, terminated, truncated, gamma=gamma, lam=1.0,
               float64=float64).returns  # fmt: skip


def gae(rewards: Tensor, values: Tensor, next_values: Tensor, terminated: Tensor,
        truncated: Tensor, *, gamma: float = 0.99, lam: float = 0.95,
        float64: bool = False) -> GAEResult:
    """Generalized advantage estimation (Schulman et al., 2016) over ``[T, B, ...]``.

    ``next_values`` [T, B, ...] is V of the observation after step t: ``values[t + 1]`` inside
    an episode, V of the *final* observation when step t was truncated (``next_values_from``),
    ignored when it terminated. ``delta_t = r_t + gamma (1 - terminated_t) next_values_t - V_t``,
    ``A_t = delta_t + gamma lam (1 - done_t) A_{t+1}``, ``A_T = 0`` (the rollout end bootstraps).
    With ``lam = 1``, ``A = discounted_returns(...) - values``.
    """
    acc = accumulate_dtype(rewards.dtype, float64)
    r, v = rewards.to(acc), values.to(acc)
    term = _trail(terminated, r).to(acc)
    done = torch.maximum(term, _trail(truncated, r).to(acc))
    adv = torch.mul(next_values.to(acc), gamma * (1.0 - term)).add_(r).sub_(v)  # delta_t
    coef = (gamma * lam) * (1.0 - done)
    for t in range(adv.shape[0] - 2, -1, -1):  # the module's only time loop, in place
        adv[t].addcmul_(coef[t], adv[t + 1])
    return GAEResult(adv.to(rewards.dtype), (adv + v).to(rewards.dtype))


def next_values_from(values: Tensor, last_values: Tensor, final_values: Tensor | None = None,
                     truncated: Tensor | None = None) -> Tensor:  # fmt: skip
    """``next_values`` [T, B, ...] from V(s_t) ``values``, ``last_values`` [B, ...] (after the
    rollout) and, for truncated steps, ``final_values`` [T, B, ...] (V of final observations)."""
    nxt = torch.cat([values[1:], last_values.unsqueeze(0).to(values.dtype)], 0)
    if truncated is None:
        return nxt
    if final_values is None:
        raise ValueError("truncated steps need final_values (V of each final observation)")
    return torch.where(_trail(truncated, nxt), final_values.to(nxt.dtype), nxt)


def agent_gae(rewards_TBA: torch.Tensor, values_TBA: torch.Tensor, acting_TBA: torch.Tensor,
              end_TBA: torch.Tensor, terminated_TBA: torch.Tensor, final_values_TBA: torch.Tensor,
              gamma: float, lam: float) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """GAE over each agent's own acting steps; returns ``(advantages, complete)`` ``[T, B, A]``.

    ``rewards`` hold, at an acting step, all the agent received until its next action (or the
    episode end); ``end`` marks its last step of an episode, ``terminated`` whether that end was
    terminal (else ``final_values`` bootstraps it). Non-acting steps are skipped: ``n(t)``, the
    agent's next acting step, is found at once (a reverse ``cummin``), so
    ``delta_t = r_t + gamma * (end_t ? (terminated_t ? 0 : final_t) : V_n(t)) - V_t`` is one
    tensor expression and only ``A_t = delta_t + gamma lam (end_t ? 0 : A_n(t))`` loops over
    time. ``complete`` is False where the successor is not in the buffer yet: advantage 0 and
    nothing passed back (the agent's earlier steps bootstrap from its value: outcome unknown).
    """
    T = values_TBA.shape[0]
    step = torch.arange(T, device=values_TBA.device).reshape(T, *[1] * (values_TBA.dim() - 1))
    acted = torch.where(acting_TBA, step, T)  # [T, B, A]: the step where the agent acts, else T
    nxt = torch.cat([acted[1:], torch.full_like(acted[:1], T)]).flip(0).cummin(0).values.flip(0)
    has_next = nxt < T  # nxt = n(t): the agent's next acting step after t (T: none yet)
    next_v = torch.cat([values_TBA, torch.zeros_like(values_TBA[:1])]).gather(0, nxt)  # V_n(t)
    boot = torch.where(end_TBA, torch.where(terminated_TBA, 0.0, final_values_TBA), next_v)
    # an unfinished last step (no successor, no end) has no delta yet: 0, not r - V
    delta_TBA = torch.where(end_TBA | has_next, rewards_TBA + gamma * boot - values_TBA, 0.0)
    a_T = []  # A_t [B, A], from the last step back
    next_adv = torch.zeros_like(values_TBA[0])  # [B, A]: A of the agent's next acting step
    for delta, end, act in zip(*(x.unbind(0)[::-1] for x in (delta_TBA, end_TBA, acting_TBA)),
                               strict=True):  # fmt: skip
        a_T.append(delta + gamma * lam * torch.where(end, 0.0, next_adv))
        next_adv = torch.where(act, a_T[-1], next_adv)
    adv_TBA = torch.where(acting_TBA, torch.stack(a_T[::-1]), 0.0).to(values_TBA.dtype)
    return adv_TBA, acting_TBA & (end_TBA | has_next)


# --- keys and segments
@dataclass(frozen=True)
class SegmentKey:
    """Segment ids [N] in ``[0, num)`` (some ids may be empty)."""

    ids: Tensor
    num: int
    side_by_side: bool = False  # each segment's samples lie together (see ``lanes``)

    def sum(self, values: Tensor) -> Tensor:
        """Per-segment sums [num] of ``values`` [N] (``scatter_add_``: no sort). With ``lanes``
        > 1 each segment spreads over that many bins by sample position, then they are summed."""
        if self.lanes == 1:
            return values.new_zeros(self.num).scatter_add_(0, self.ids, values)
        out = values.new_zeros(self.num * self.lanes).scatter_add_(0, self._laned, values)
        return out.view(self.num, self.lanes).sum(1)

    def per_segment(self, col: Tensor) -> Tensor:
        """``col`` [N], constant inside each segment, as one value per segment [num] (0: empty)."""
        return col.new_zeros(self.num).scatter_(0, self.ids, col)

    @cached_property
    def lanes(self) -> int:
        """1 on the CPU; on CUDA a power of two up to 256 that keeps ``num * lanes`` near 4096,
        so atomics on a handful of segments (role's 32) do not serialize on a few addresses.
        A ``side_by_side`` key (each segment's samples adjacent: a joint action's agents) takes
        up to ``2**20`` bins, at most its mean samples per segment, whatever its ``num``;
        spreading keys whose samples interleave (agent) only slows them."""
        if self.ids.device.type != "cuda":
            return 1
        num = max(self.num, 1)
        if self.side_by_side:
            lanes = min(256, (1 << 20) // num, self.ids.numel() // num)
        elif num < 2048:
            lanes = min(256, 4096 // num)
        else:
            return 1
        return 1 << (lanes.bit_length() - 1) if lanes > 1 else 1

    @cached_property
    def _laned(self) -> Tensor:
        lane = torch.arange(self.ids.numel(), device=self.ids.device) & (self.lanes - 1)
        return self.ids * self.lanes + lane


def dense_key(*columns: Tensor | None, cap: int | None = None) -> SegmentKey:
    """Combine integer columns (each [N], ``None`` skipped) into one segment id per sample.

    Mixed radix ``((c0 - min0) * r1 + (c1 - min1)) * r2 + ...`` (one host sync for all the
    ranges): equal tuples get equal ids and ids ascend with the tuples. When the id range
    passes ``cap`` (default ``max(2N, 65536)``) the used ids are renumbered by ``torch.unique``.
    """
    cols = [c.reshape(-1).long() for c in columns if c is not None]
    if not cols:
        raise ValueError("dense_key needs at least one key column")
    n = cols[0].numel()
    if n == 0:
        return SegmentKey(torch.zeros(0, dtype=torch.long, device=cols[0].device), 1)
    cap = cap if cap is not None else max(2 * n, 1 << 16)
    ranges = torch.stack([m for c in cols for m in torch.aminmax(c)]).tolist()  # [lo, hi, ...]
    ids, num = None, 1
    for c, lo, hi in zip(cols, ranges[::2], ranges[1::2], strict=True):
        span = hi - lo + 1
        if span >= 1 << 62:  # c - lo or the radix would wrap (64-bit hashed ids): rank it
            (c, span), lo = _renumber(c), 0
        if ids is not None and num * span >= 1 << 62:  # keep the radix inside int64
            ids, num = _renumber(ids)
        # one fresh [N] tensor per column, updated in place (fresh pages cost on the CPU)
        ids = c - lo if ids is None else torch.add(c, ids, alpha=span).sub_(lo)
        num *= span
        if num > cap:
            ids, num = _renumber(ids)
    return SegmentKey(ids, num)


def _renumber(ids: Tensor) -> tuple[Tensor, int]:
    """Used ids renumbered ``0..K-1`` in ascending order (a sort)."""
    uniq, inv = torch.unique(ids, return_inverse=True)
    return inv, uniq.numel()


# --- scans over flat samples
def run_first(start: Tensor) -> Tensor:
    """Index of the first sample of each sample's run, [N] int64: ``start`` [N] (bool) marks
    the first sample of each run (sample 0 always starts one). Run ids are a cumsum and each
    start writes its index to its run's slot (the other samples write to a spare slot), so no
    scan with indices: ``cummax`` of the start indices is the same number but ran ~40 times
    slower on CUDA at 10M samples (one block walks the whole row)."""
    n = start.numel()
    idx = torch.arange(n, device=start.device)
    start = start | (idx == 0)
    run = start.cumsum(0) - 1
    slots = torch.zeros(n + 1, dtype=torch.long, device=start.device)
    return slots.scatter_(0, torch.where(start, run, n), idx)[run]


def run_positions(start: Tensor) -> Tensor:
    """Position of each sample inside its run, [N] int64: ``start`` [N] (bool) marks the first
    sample of each run (sample 0 always starts one)."""
    return torch.arange(start.numel(), device=start.device) - run_first(start)


def linear_scan(b: Tensor, pos: Tensor, coef: float, *, max_pos: int | None = None) -> Tensor:
    """``y_i = b_i + coef * y_{i-1}`` inside runs, ``y_i = b_i`` at a run's first sample, by
    recursive doubling, [N] -> [N]; ``pos`` [N] is each sample's position in its run
    (``run_positions``), ``max_pos`` its largest value (None: read, one host sync).

    Step ``s`` adds ``coef**s * y_{i-s}`` where ``pos_i >= s``: log2 of the longest run steps,
    fewer when ``|coef| ** s`` vanishes below float64 precision.
    """
    y, s = b.clone(), 1
    top = (int(pos.max()) if pos.numel() else 0) if max_pos is None else max_pos
    while s <= top and abs(coef) ** s > 1e-20:
        y[s:].add_(y[:-s].masked_fill(pos[s:] < s, 0.0), alpha=coef**s)  # a copy: no aliasing
        s *= 2
    return y


def _narrow(ids: Tensor, bound: int) -> Tensor:
    """``ids`` (int64 in ``[0, bound)``) as int32 when they fit: a radix sort of 32-bit keys
    makes half the passes (the sort was a quarter of ``player_turn`` on the CPU at 1M)."""
    return ids.int() if bound <= 1 << 31 else ids


# --- turn-level returns
def turn_returns(rewards: Tensor, trajectory: Tensor, agent: Tensor, turn: Tensor | None = None, *,
                 gamma: float = 1.0, mask: Tensor | None = None,
                 game: Tensor | None = None) -> Tensor:  # fmt: skip
    """Return-to-go over one agent's own turns of a multi-turn episode, ``[N]`` -> ``[N]``.

    One sample per (trajectory, agent, turn): ``rewards`` [N] is the reward placed at the end of
    that turn, ``turn`` [N] orders turns inside a trajectory (sample order when None), ``game``
    [N] (optional) scopes trajectory ids per game. ``G_i = r_i + gamma * G_next`` where ``next``
    is the same agent's next turn in the same trajectory, so gamma discounts per own turn, not
    per turn of the game. Masked turns are skipped (no discount step) and get 0. Computed in
    float64 (one stable sort by (trajectory, agent, turn); then a suffix sum or a scan),
    returned in ``rewards.dtype``.
    """
    shape, r = rewards.shape, rewards.reshape(-1)
    if r.numel() == 0:
        return rewards.clone()
    seg = dense_key(game, trajectory, agent)
    ids = seg.ids if mask is None else seg.ids.masked_fill(~mask.reshape(-1).bool(), seg.num)
    tk = None if turn is None or turn.is_floating_point() else dense_key(turn)
    if turn is None:
        order = torch.sort(_narrow(ids, seg.num + 1), stable=True).indices  # ties: sample order
    elif tk is not None and (seg.num + 1) * tk.num < 1 << 62:  # one sort by (segment, turn)
        order = torch.sort(_narrow(ids * tk.num + tk.ids, (seg.num + 1) * tk.num),
                           stable=True).indices
    else:  # by turn (float turns too), then by segment
        order = torch.sort(turn.reshape(-1), stable=True).indices
        order = order[torch.sort(ids[order], stable=True).indices]
    s = ids[order]
    last = torch.cat([s[1:] != s[:-1], s.new_ones(1, dtype=torch.bool)])  # a run's last sample
    xs = r[order].double()
    if gamma == 1.0:  # suffix sums inside each run: its total minus what came before
        incl = xs.cumsum(0)
        end = (r.numel() - 1) - run_first(last.flip(0)).flip(0)  # each run's last sample
        g = incl[end] - incl + xs
    else:  # backwards: g_i = x_i + gamma * g_{i+1} inside a run
        pos = run_positions(last.flip(0))  # steps past the longest run add exact zeros: no sync
        g = linear_scan(xs.flip(0), pos, gamma, max_pos=r.numel() - 1).flip(0)
    if mask is not None:  # masked turns (their id is seg.num) get 0
        g = torch.where(s < seg.num, g, 0.0)
    return torch.empty_like(g).scatter_(0, order, g).to(rewards.dtype).reshape(shape)


def broadcast_to_tokens(turn_values: Tensor, token_turn: Tensor, fill: float = 0.0) -> Tensor:
    """Give each token the value of its turn: ``turn_values`` [N], ``token_turn`` [B, L] -> [B, L].

    ``token_turn`` holds, per token, the index into ``turn_values`` of the turn that generated
    it, or -1 for tokens of no turn (prompt, observations, padding), which get ``fill``.
    """
    idx = token_turn.long()
    out = turn_values[idx.clamp_min(0)]
    return torch.where(idx >= 0, out, torch.tensor(fill, dtype=out.dtype, device=out.device))
