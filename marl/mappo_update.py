"""The PPO update of :class:`marl.mappo.MAPPO`: advantages, then clipped minibatch epochs.

Kept apart from the learner so the update reads top to bottom (CleanRL style) with the
paper's names: ``pg_loss``, ``v_loss``, ``entropy``, ``approx_kl``, ``clipfrac``,
``explained_var``. Feed-forward nets draw minibatches of complete steps; recurrent nets
(rMAPPO) draw minibatches of whole chunks (:func:`chunk_rows`), re-run their GRUs from the
chunk's stored first-row states and take the loss on the chunk's complete steps only.
The policy loss is :func:`marl.losses.ppo_clip_loss`, the one the LLM trainer uses too.

Shape legend as in ``marl.mappo``; ``M`` samples of one minibatch, ``K`` chunks, ``L``
rows per chunk, ``S`` sequences (chunk × copy × agent) of one minibatch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import nn

from marl.advantages import AdvantageKeys, agent_gae, normalize_advantages
from marl.losses import ppo_clip_loss
from marl.networks import one_hot_seats

if TYPE_CHECKING:
    from marl.mappo import MAPPO


def chunk_rows(T: int, chunk_len: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``[K, L]`` and validity ``[K, L]`` of the chunks of a ``T``-row rollout.

    Row 0 (steps carried from the previous rollout, whose GRU states the previous
    policy computed) is a chunk of its own; rows ``1..T-1`` are cut every ``chunk_len``.
    Short chunks are padded (with the last row, marked invalid) to a common length.
    """
    n = max(1, min(chunk_len, T - 1))
    first = torch.tensor([0, *range(1, T, n)], device=device)  # [K]
    length = torch.minimum(first + n, torch.full_like(first, T)) - first
    length[0] = 1
    i = torch.arange(n, device=device)
    return (first[:, None] + i).clamp(max=T - 1), i < length[:, None]


def recurrent_forward(
    L: MAPPO, g: int, rows_KL: torch.Tensor, valid_KL: torch.Tensor, k: torch.Tensor,
    b: torch.Tensor, a: torch.Tensor, select_TBA: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, ...]]:
    """Re-run group ``g``'s actor and critic over the S sequences (chunk ``k``, copy ``b``,
    agent ``a``) from their stored first-row GRU states, with the rollout's resets and
    acting masks; returns logits ``[M, N]``, values ``[M]`` and the ``(t, b, a)`` of the
    M rows where ``select_TBA`` holds."""
    buf = L.buf
    t_LS, valid_LS = rows_KL[k].T, valid_KL[k].T
    b_LS, a_LS = b.expand_as(t_LS), a.expand_as(t_LS)
    x = _gather(L, g, flat_index(L, t_LS.reshape(-1), b_LS.reshape(-1), a_LS.reshape(-1)))
    start_LS = buf.start[t_LS, b_LS, a_LS] & valid_LS
    move_LS = buf.acting[t_LS, b_LS, a_LS] & valid_LS
    first = t_LS[0]
    select_LS = select_TBA[t_LS, b_LS, a_LS] & valid_LS
    need_LS = move_LS | select_LS  # encoded rows: padding and others' turns are not
    logits = L.actors[g].unroll(x, buf.h_actor[first, b, a], start_LS, move_LS, need_LS)
    values = L.critics[g].unroll(x, buf.h_critic[first, b, a], start_LS, move_LS, need_LS)
    keep = select_LS.reshape(-1)
    return logits[keep], values[keep], (t_LS.reshape(-1)[keep], b_LS.reshape(-1)[keep],
                                        a_LS.reshape(-1)[keep])


_Forward = Callable[[int, torch.Tensor], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


def flat_index(L: MAPPO, t: torch.Tensor, b: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """Row-major positions of ``(t, b, a)`` in a ``[T, B, A]`` tensor: one 1-D index
    selects from every per-step field (``view(-1)``) far faster than three index tensors."""
    _, B, A = L.buf.value.shape
    return (t * B + b) * A + a


def _gather(L: MAPPO, g: int, flat: torch.Tensor, critic: bool = True) -> dict:
    """Network inputs of group ``g`` at the rollout positions ``flat`` (:func:`flat_index`)
    as contiguous ``[U, ...]`` tensors (``critic=False``: the actor's inputs only). The
    feed-forward update gathers all of a group's units once, so that each minibatch is one
    ``index_select`` per input; the recurrent one gathers each minibatch's chunks."""
    buf, grp = L.buf, L.groups[g]
    seat_of = torch.full((len(L.agents),), -1, dtype=torch.long, device=L.device)
    seat_of[list(grp.cols)] = torch.arange(len(grp.cols), device=L.device)
    A = len(L.agents)

    def rows(x: torch.Tensor, width: int | None = None) -> torch.Tensor:
        y = x.reshape(-1, *x.shape[3:]).index_select(0, flat)
        return y if width is None or width == y.shape[-1] else y[:, :width].contiguous()

    x = {"obs": rows(buf.obs, grp.obs_dim), "seat": seat_of[flat % A]}
    if buf.legal is not None:  # a continuous group's box has no legal mask
        x["legal"] = rows(buf.legal, grp.num_actions)
    actor = L.actors[g]
    if actor.one_hot:  # the MLP actor's input with its seat one-hot
        x["obs_seat"] = torch.cat([x.pop("obs"), one_hot_seats(x.pop("seat"), actor.seats)], -1)
    if buf.critic is not None and critic:
        x["critic"] = rows(buf.critic)
    if buf.graph is not None:
        x["graph"] = buf.graphs(flat)  # row 0: each carried step's own graph
        nodes = torch.tensor([L._node[ag] for ag in L.agents], device=L.device)
        x["ego"] = nodes[flat % A]
    return x


def shared_rows(L: MAPPO, g: int, complete_TBA: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The distinct critic inputs of group ``g`` (``value="shared"``): one row per copy
    and step with a complete step of the group, its ``k`` seats side by side.

    Row 0 holds each seat's carried last step, which can come from different steps (turn
    order, an agent that ended early); a copy whose carried seats' inputs differ gets one
    row per seat there. Returns the seats' positions ``[R, k]`` (:func:`flat_index`), which
    of them are complete steps ``[R, k]``, and where each row's critic input is ``[R]``.
    """
    buf, grp = L.buf, L.groups[g]
    T, B, A = complete_TBA.shape
    cols = torch.tensor(grp.cols, device=L.device)
    k = len(grp.cols)
    c_TBK = complete_TBA[:, :, cols]
    steps_TB = torch.arange(T, device=L.device)[:, None] * B + torch.arange(B, device=L.device)
    pos_TBK = steps_TB[..., None] * A + cols
    x0_BKC = buf.critic[0][:, cols]
    same_B = ((x0_BKC == x0_BKC[:, :1]).all(-1) | ~c_TBK[0]).all(-1)
    rows_TB = c_TBK.any(-1)
    rows_TB[0] &= same_B
    t, b = rows_TB.nonzero(as_tuple=True)
    pos_RK, mask_RK = pos_TBK[t, b], c_TBK[t, b]
    sb, sk = (c_TBK[0] & ~same_B[:, None]).nonzero(as_tuple=True)
    if sb.numel():
        pos_RK = torch.cat([pos_RK, pos_TBK[0, sb]])
        mask_RK = torch.cat([mask_RK, nn.functional.one_hot(sk, k).bool()])
    crit_R = pos_RK.gather(1, mask_RK.int().argmax(1, keepdim=True)).squeeze(1)
    return pos_RK, mask_RK, crit_R


def _shared_source(L: MAPPO, complete_TBA: torch.Tensor) -> tuple[list[int], _Forward]:
    """:func:`_minibatch_source` of ``value="shared"``: minibatches of distinct critic
    rows (:func:`shared_rows`) with all their seats' complete steps; the critic runs once
    per row and its value is given to each of the row's samples."""
    sources = []
    for g in range(len(L.groups)):
        pos_RK, mask_RK, crit_R = shared_rows(L, g, complete_TBA)
        critic_RC = L.buf.critic.reshape(-1, L.buf.critic.shape[-1]).index_select(0, crit_R)
        flat = pos_RK.reshape(-1)
        full = bool(mask_RK.all())  # the usual case: no masking per minibatch
        sources.append((flat, mask_RK, full, _gather(L, g, flat, critic=False), critic_RC))

    def forward(g: int, idx: torch.Tensor) -> tuple:
        flat, mask_RK, full, actor_in, critic_RC = sources[g]
        M, k = len(idx), mask_RK.shape[1]
        units = (idx[:, None] * k + torch.arange(k, device=idx.device)).reshape(-1)
        values = L.critics[g]({"critic": critic_RC.index_select(0, idx)})  # [M] rows
        values = values[:, None].expand(M, k).reshape(-1)  # [M * k] samples, row-major
        if not full:
            keep = mask_RK.index_select(0, idx).reshape(-1)
            units, values = units[keep], values[keep]
        x = {key: v.index_select(0, units) for key, v in actor_in.items()}
        return L.actors[g](x), values, flat.index_select(0, units)
    return [len(s[1]) for s in sources], forward


def _minibatch_source(L: MAPPO, complete_TBA: torch.Tensor) -> tuple[list[int], _Forward]:
    """Per group, how many units minibatches are drawn from, and the forward pass of a
    set of them: complete steps (feed-forward), distinct critic rows (``value="shared"``)
    or chunks with a complete step (GRU). The forward pass returns logits ``[M, N]``,
    values ``[M]`` and the samples' positions (:func:`flat_index`) in the ``[T, B, A]``
    rollout fields."""
    if L.cfg.net.value == "shared":
        return _shared_source(L, complete_TBA)
    groups = []
    for grp in L.groups:
        in_group = torch.zeros(len(L.agents), dtype=torch.bool, device=L.device)
        in_group[list(grp.cols)] = True
        groups.append(in_group)
    if not L.cfg.net.recurrent:
        # the units' inputs are gathered once per update, not once per minibatch
        flats = [flat_index(L, *(complete_TBA & m).nonzero(as_tuple=True)) for m in groups]
        inputs = [_gather(L, g, f) for g, f in enumerate(flats)]

        def forward(g: int, idx: torch.Tensor) -> tuple:
            x = {k: v.index_select(0, idx) for k, v in inputs[g].items()}
            return L.actors[g](x), L.critics[g](x), flats[g].index_select(0, idx)
        return [len(f) for f in flats], forward
    rows_KL, valid_KL = chunk_rows(L.buf.row, L.cfg.chunk_len, L.device)
    has_KBA = (complete_TBA[rows_KL] & valid_KL[:, :, None, None]).any(1)
    units = [(has_KBA & m).nonzero(as_tuple=True) for m in groups]

    def forward_rnn(g: int, idx: torch.Tensor) -> tuple:
        k, b, a = (u[idx] for u in units[g])
        logits, values, tba = recurrent_forward(L, g, rows_KL, valid_KL, k, b, a, complete_TBA)
        return logits, values, flat_index(L, *tba)
    return [len(u[0]) for u in units], forward_rnn


def value_targets(L: MAPPO) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Advantages, value targets (returns) and which steps are complete, ``[T, B, A]``
    each, of the rollout in ``L.buf`` (rows ``0..row-1``)."""
    cfg, buf = L.cfg, L.buf
    rows = slice(0, buf.row)
    values_TBA = buf.value[rows]
    # an agent's unfinished last step (buf.last, carried to the next update) gets no
    # advantage of its own and passes none back: its earlier steps bootstrap from its value
    adv_TBA, complete_TBA = agent_gae(
        buf.reward[rows], values_TBA, buf.acting[rows], buf.end[rows], buf.term[rows],
        buf.final_value[rows], gamma=cfg.gamma, lam=cfg.gae_lambda,
    )
    return adv_TBA, adv_TBA + values_TBA, complete_TBA


def ppo_update(L: MAPPO) -> dict[str, float]:
    """One PPO iteration over the rollout in ``L.buf`` (rows ``0..row-1``)."""
    cfg, buf = L.cfg, L.buf
    rows = slice(0, buf.row)
    values_TBA = buf.value[rows]
    adv_TBA, returns_TBA, complete_TBA = value_targets(L)
    # finite rewards can still overflow a discounted sum: stop before value_rms moves
    L.guard.data(L.steps, per_agent={"value target": returns_TBA.where(complete_TBA, 0.0)},
                 agent_dim=2)
    if cfg.value_norm:
        L.value_rms.update(returns_TBA[complete_TBA])
    keys = AdvantageKeys(agent=L.agent_key, role=L.role_key)
    res = normalize_advantages(cfg.adv_norm, adv_TBA, keys, mask=complete_TBA,
                               names=L.key_names)
    norm_adv_TBA = res.advantages
    target_TBA = L.value_rms.normalize(returns_TBA) if cfg.value_norm else returns_TBA

    sizes, forward = _minibatch_source(L, complete_TBA)
    # [T*B*A] flat views of the per-step fields, read at each minibatch's positions
    # (actions: [T*B*A] ids, or [T*B*A, D] Gaussian samples)
    T, B, A = buf.value[rows].shape
    action_U = buf.action[rows].reshape(T * B * A, *buf.action.shape[3:])
    old_logp_U = buf.logp[rows].reshape(-1)
    norm_adv_U, target_U = norm_adv_TBA.reshape(-1), target_TBA.reshape(-1)

    names = ("pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac")
    mb_stats: list[torch.Tensor] = []  # [5] per minibatch and group, in ``names`` order
    grad_norms: list[float] = []
    # what one gradient-norm clip covers: everything (joint) or each network (separate)
    clipped = ([list(L.actors.parameters()), list(L.critics.parameters())]
               if cfg.optim == "separate" else
               [[p for grp in L.opt.param_groups for p in grp["params"]]])
    for _ in range(cfg.epochs):
        perms = [torch.randperm(n, device=L.device, generator=L.gen) for n in sizes]
        for mb in range(cfg.minibatches):
            loss = torch.zeros((), device=L.device)
            for g, perm in enumerate(perms):
                idx = perm[mb::cfg.minibatches]
                if idx.numel() == 0:
                    continue
                logits, newvalue, at = forward(g, idx)  # at: [M] positions in [T, B, A]
                action = action_U[at]
                if action.dim() > 1:  # a continuous group's own box width
                    action = action[:, :L.groups[g].num_actions]
                newlogp, entropy_M = L.actors[g].log_prob_entropy(logits, action)
                entropy = entropy_M.mean()
                pg = ppo_clip_loss(newlogp, old_logp_U[at], norm_adv_U[at],
                                   cfg.clip_coef)  # [M] samples, plain mean
                v_loss = 0.5 * (newvalue - target_U[at]).pow(2).mean()
                loss = loss + pg.loss - cfg.ent_coef * entropy + cfg.vf_coef * v_loss
                with torch.no_grad():  # read back once after the epochs, not per minibatch
                    mb_stats.append(torch.stack([pg.loss, v_loss, entropy, pg.approx_kl,
                                                 pg.outside]))  # clipfrac: CleanRL's |r-1|>eps
            if not loss.requires_grad:
                continue  # no complete step in this minibatch (a short turn-based rollout)
            L.guard.scalar(L.steps, "loss", loss)
            L.opt.zero_grad(set_to_none=True)
            loss.backward()
            norms = [nn.utils.clip_grad_norm_(ps, cfg.max_grad_norm) for ps in clipped]
            grad_norm = norms[0] if len(norms) == 1 else torch.stack(norms).norm()
            L.guard.scalar(L.steps, "gradient norm", grad_norm)
            grad_norms.append(float(grad_norm))
            L.opt.step()

    table = torch.stack(mb_stats).T.tolist() if mb_stats else [[] for _ in names]  # [5][n]
    stats = {**dict(zip(names, table, strict=True)), "grad_norm": grad_norms}
    with torch.no_grad():
        y = returns_TBA[complete_TBA]
        var_y = y.var() if y.numel() > 1 else torch.tensor(0.0)
        pred = values_TBA[complete_TBA]
        explained = 1 - (y - pred).var() / var_y if var_y > 0 else None
    metrics = {f"losses/{k}": sum(v) / len(v) for k, v in stats.items() if v}
    if explained is not None:  # undefined for constant targets (e.g. all-zero rewards): omitted
        metrics["losses/explained_variance"] = float(explained)
    metrics["charts/samples"] = float(complete_TBA.sum())
    metrics["charts/learning_rate"] = L.opt.param_groups[0]["lr"]
    metrics.update(res.diagnostics)
    return metrics
