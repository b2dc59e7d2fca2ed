"""The PPO update of :class:`marl.mappo.MAPPO`: advantages, then clipped minibatch epochs.

Kept apart from the learner so the update reads top to bottom (CleanRL style) with the
paper's names: ``pg_loss``, ``v_loss``, ``entropy``, ``approx_kl``, ``clipfrac``,
``explained_var``. Shape legend as in ``marl.mappo``; ``M`` samples of one minibatch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from marl.advantages import AdvantageKeys, agent_gae, normalize_advantages

if TYPE_CHECKING:
    from marl.mappo import MAPPO


def _gather(L: MAPPO, g: int, t: torch.Tensor, b: torch.Tensor, a: torch.Tensor) -> dict:
    """Network inputs of group ``g`` for samples at rows ``t``, copies ``b``, agents ``a``."""
    buf, grp = L.buf, L.groups[g]
    seat_of = torch.full((len(L.agents),), -1, dtype=torch.long, device=L.device)
    seat_of[list(grp.cols)] = torch.arange(len(grp.cols), device=L.device)
    x = {
        "obs": buf.obs[t, b, a, : grp.obs_dim],
        "legal": buf.legal[t, b, a, : grp.num_actions],
        "seat": seat_of[a],
    }
    if buf.critic is not None:
        x["critic"] = buf.critic[t, b, a]
    if buf.graph is not None:
        x["graph"] = buf.graph[t, b]
        nodes = torch.tensor([L._node[ag] for ag in L.agents], device=L.device)
        x["ego"] = nodes[a]
    return x


def ppo_update(L: MAPPO) -> dict[str, float]:
    """One PPO iteration over the rollout in ``L.buf`` (rows ``0..row-1``)."""
    cfg, buf = L.cfg, L.buf
    rows = slice(0, buf.row)
    values_TBA = buf.value[rows]
    adv_TBA, complete_TBA = agent_gae(
        buf.reward[rows], values_TBA, buf.acting[rows], buf.end[rows], buf.term[rows],
        buf.final_value[rows], gamma=cfg.gamma, lam=cfg.gae_lambda,
    )
    returns_TBA = adv_TBA + values_TBA
    if cfg.value_norm:
        L.value_rms.update(returns_TBA[complete_TBA])
    keys = AdvantageKeys(agent=L.agent_key, role=L.role_key)
    res = normalize_advantages(cfg.adv_norm, adv_TBA, keys, mask=complete_TBA)
    norm_adv_TBA = res.advantages
    target_TBA = L.value_rms.normalize(returns_TBA) if cfg.value_norm else returns_TBA

    samples = []  # per group: (t, b, a) index tensors of its complete steps
    for grp in L.groups:
        in_group = torch.zeros(len(L.agents), dtype=torch.bool, device=L.device)
        in_group[list(grp.cols)] = True
        t, b, a = (complete_TBA & in_group).nonzero(as_tuple=True)
        samples.append((t, b, a))

    stats: dict[str, list[float]] = {k: [] for k in
                                     ("pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac",
                                      "grad_norm")}
    params = [p for grp in L.opt.param_groups for p in grp["params"]]
    for _ in range(cfg.epochs):
        perms = [torch.randperm(len(s[0]), device=L.device) for s in samples]
        for mb in range(cfg.minibatches):
            loss = torch.zeros((), device=L.device)
            for g, ((t, b, a), perm) in enumerate(zip(samples, perms, strict=True)):
                idx = perm[mb::cfg.minibatches]
                if idx.numel() == 0:
                    continue
                ti, bi, ai = t[idx], b[idx], a[idx]
                x = _gather(L, g, ti, bi, ai)
                logp_all = torch.log_softmax(L.actors[g](x), -1)
                newlogp = logp_all.gather(-1, buf.action[ti, bi, ai][:, None]).squeeze(-1)
                entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
                logratio = newlogp - buf.logp[ti, bi, ai]
                ratio = logratio.exp()
                mb_adv = norm_adv_TBA[ti, bi, ai]
                pg_loss = torch.max(
                    -mb_adv * ratio, -mb_adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)
                ).mean()
                v_loss = 0.5 * (L.critics[g](x) - target_TBA[ti, bi, ai]).pow(2).mean()
                loss = loss + pg_loss - cfg.ent_coef * entropy + cfg.vf_coef * v_loss
                with torch.no_grad():
                    stats["pg_loss"].append(pg_loss.item())
                    stats["v_loss"].append(v_loss.item())
                    stats["entropy"].append(entropy.item())
                    stats["approx_kl"].append(((ratio - 1) - logratio).mean().item())
                    stats["clipfrac"].append(
                        ((ratio - 1).abs() > cfg.clip_coef).float().mean().item())
            L.opt.zero_grad(set_to_none=True)
            loss.backward()
            stats["grad_norm"].append(float(nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)))
            L.opt.step()

    with torch.no_grad():
        y = returns_TBA[complete_TBA]
        var_y = y.var() if y.numel() > 1 else torch.tensor(0.0)
        pred = values_TBA[complete_TBA]
        explained = 1 - (y - pred).var() / var_y if var_y > 0 else torch.tensor(float("nan"))
    metrics = {f"losses/{k}": sum(v) / len(v) for k, v in stats.items() if v}
    metrics["losses/explained_variance"] = float(explained)
    metrics["charts/samples"] = float(complete_TBA.sum())
    metrics["charts/learning_rate"] = L.opt.param_groups[0]["lr"]
    metrics.update(res.diagnostics)
    return metrics
