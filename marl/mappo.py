"""MAPPO and IPPO: PPO-clip for several agents (Yu et al., 2022, "The Surprising
Effectiveness of PPO in Cooperative Multi-Agent Games"; de Witt et al., 2020 for IPPO).

MAPPO trains decentralized actors with a centralized critic (global state, all agents'
observations, or a GNN over the entity graph); IPPO is the same learner with each critic
seeing only its own observation. Per update:

1. roll out ``rollout_steps`` steps of every copy; each agent's reward is credited to its
   own latest action (so turn-based games, where an agent's reward arrives on another
   agent's turn, are handled like simultaneous ones);
2. GAE over each agent's *own* acting steps (``marl.advantages.agent_gae``), bootstrapping
   on truncation (``truncation="terminal"``: not) and not on termination; an agent's last
   step whose outcome is not yet known is carried into the next rollout instead of being
   guessed (``rollout_end="bootstrap"``: ended with the value of the next observation, as
   TorchRL's GAE does), and the steps before it bootstrap from its value;
3. advantages normalized by the configured scheme of ``marl.advantages`` (``global``,
   ``agent``, ``role``...); value targets normalized by running statistics;
4. ``epochs`` × ``minibatches`` of clipped policy loss, value loss and entropy bonus.

Continuous actions (1-D boxes: VMAS and MPE with ``continuous_actions=True``) are played
by a diagonal Gaussian actor (``marl.actor_critic``: learned state-independent log-std,
samples stored unclipped with their log-probabilities and clipped into the box on their
way to the game), BenchMARL's default learner on VMAS.

With ``net.recurrent`` (rMAPPO, ``marl.recurrent``) actor and critic carry a GRU state per
(copy, agent): reset where an episode begins, advanced only where the agent acts, stored
in the buffer at every row; minibatches are then whole chunks of ``chunk_len`` rows,
re-run from their stored first-row states, with the loss on the complete acting steps.

Shape legend: ``T`` rollout rows (row 0 holds carried steps), ``B`` copies, ``A``
controlled agents, ``O`` padded obs width, ``N`` actions (continuous: ``D``, the widest
group's box width), ``C`` critic input width, ``H`` GRU width.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch
from torch import nn

from games import GameSpec, VecStep
from games.graphs import NODE_DIM
from marl.actor_critic import (
    Actor,
    Critic,
    NetConfig,
    PPOPolicy,
    critic_inputs,
    critic_width,
    pad_obs,
    seat_groups,
    space_key,
)
from marl.configs import (  # noqa: F401 - re-exported: the choices' old home
    MAPPO_KEYS,
    OPTIMS,
    ROLLOUT_ENDS,
    TRUNCATIONS,
    MAPPOConfig,  # the settings, torch-free (selfplay-train checks them early)
    reads_graphs,
)
from marl.core import (
    Capabilities,
    Learner,
    PolicyMeta,
    derive_seed,
    resolve_device,
    seed_from_state,
)
from marl.guards import FiniteGuard
from marl.networks import RunningMeanStd
from marl.optim import Adam
from marl.recurrent import episode_starts
from marl.registry import register_learner
from marl.state_checks import load_optimizer_state, refuse_nonfinite


def ippo_config(**kw: Any) -> MAPPOConfig:
    """IPPO: MAPPO with decentralized (local-observation) critics."""
    net = kw.pop("net", NetConfig())
    return MAPPOConfig(net=dataclasses.replace(net, critic="local"), **kw)


def as_ippo(cfg: MAPPOConfig) -> MAPPOConfig:
    """The ``ippo`` preset of a MAPPO config: every critic sees only its own observation."""
    return dataclasses.replace(cfg, net=dataclasses.replace(cfg.net, critic="local"))


def resolve_net(net: NetConfig, spec: GameSpec, agents: tuple[str, ...]) -> NetConfig:
    """``critic="auto"``: the game's global state when it has one, else every agent's
    observation concatenated (a centralized critic either way); ``share="auto"``: one
    network for all seats when they have the same actions, else one per role."""
    critic, share = net.critic, net.share
    if critic == "auto":
        critic = "state" if spec.state_shape is not None else "concat"
    if share == "auto":
        same = len({space_key(spec.action_spaces[a]) for a in agents}) == 1
        share = "all" if same else "role"
    return dataclasses.replace(net, critic=critic, share=share)


def check_game(cfg: MAPPOConfig, spec: GameSpec) -> str | None:
    """What of ``cfg`` ``spec`` cannot provide (None: nothing), as one clause."""
    net = cfg.net
    for a, sp in spec.action_spaces.items():
        if not sp.discrete and len(sp.shape) != 1:
            return f"its action boxes must be 1-D and {a}'s has shape {sp.shape}"
    # every setting the game refuses, in one clause: moving a preset to another game
    # (experiment=main on clobber) met them one refusal at a time
    needs, uses = [], []
    if net.critic == "state" and spec.state_shape is None:
        needs.append("net.critic='state' needs a global state")
        uses.append("mappo.net.critic=auto (or concat)")
    if reads_graphs(net) and not spec.has_entity_graph:
        needs.append("a gnn encoder or critic needs entity graphs")
        uses.append(f"encoder={'mlp_gru' if net.recurrent else 'mlp'}")  # gnn_gru: keep the GRU
    if not needs:
        return None
    has = " and it has none" if len(needs) == 1 else ", and it has neither"
    return f"{' and '.join(needs)}{has}; use {' and '.join(uses)}"


MAPPO_CAPABILITIES = Capabilities(discrete=True, continuous=True, on_policy=True,
                                  turn_based=True, centralized_critic=True, partial_seats=True)
IPPO_CAPABILITIES = dataclasses.replace(MAPPO_CAPABILITIES, centralized_critic=False)


class _Buffer:
    """Per-agent rollout storage ``[T+1, B, A, ...]`` on the learner's device.

    Recurrent learners (``H > 0``) also store, per row, the episode-start flags and the
    actor's and critic's GRU states before that row (``start``, ``h_actor``, ``h_critic``).
    Continuous learners store actions ``[T+1, B, A, D]`` (float, unclipped) and no legal masks.
    """

    def __init__(self, T: int, B: int, A: int, O: int, N: int, C: int, graph: tuple | None,
                 dev: torch.device, H: int = 0, continuous: bool = False) -> None:
        z = lambda *s, dt=torch.float32: torch.zeros(*s, dtype=dt, device=dev)  # noqa: E731
        self.obs = z(T, B, A, O)
        self.legal = None if continuous else z(T, B, A, N, dt=torch.bool)
        self.critic = z(T, B, A, C) if C else None
        self.graph = z(T, B, *graph) if graph else None
        # row 0 per seat: a copy's carried steps can come from different rows (turn order,
        # a seat that sat out a step), each with its own graph
        self.graph0 = z(B, A, *graph) if graph else None
        self.action = z(T, B, A, N) if continuous else z(T, B, A, dt=torch.long)
        self.logp, self.value = z(T, B, A), z(T, B, A)
        self.acting, self.reward = z(T, B, A, dt=torch.bool), z(T, B, A)
        self.end, self.term, self.final_value = (z(T, B, A, dt=torch.bool),
                                                 z(T, B, A, dt=torch.bool), z(T, B, A))
        self.start = z(T, B, A, dt=torch.bool) if H else None
        self.h_actor, self.h_critic = (z(T, B, A, H), z(T, B, A, H)) if H else (None, None)
        self.last = torch.full((B, A), -1, dtype=torch.long, device=dev)
        self.row = 1  # row 0 holds steps carried over from the previous rollout

    def per_agent(self) -> list[str]:
        return ["obs", "legal", "critic", "action", "logp", "value", "acting", "reward",
                "end", "term", "final_value", "start", "h_actor", "h_critic"]

    def graphs(self, flat: torch.Tensor) -> torch.Tensor:
        """``[U, V, F]`` entity graphs of the steps at ``flat`` (row-major ``[T, B, A]``
        positions): the copy's graph of the row, row 0's of the seat (carried steps)."""
        T, B, A = self.value.shape
        assert self.graph is not None and self.graph0 is not None
        rows = self.graph.reshape(T * B, *self.graph.shape[2:]).index_select(0, flat // A)
        first = flat < B * A
        seat = self.graph0.reshape(B * A, *self.graph0.shape[2:]).index_select(
            0, torch.where(first, flat, 0))
        return torch.where(first[:, None, None], seat, rows)

    def carry(self) -> None:
        """Move each agent's unfinished last step to row 0 and clear the rest."""
        keep = self.last >= 0  # [B, A]
        B, A = keep.shape
        t = self.last.clamp_min(0)
        b_idx = torch.arange(B, device=t.device)[:, None].expand(B, A)
        a_idx = torch.arange(A, device=t.device)[None, :].expand(B, A)
        for name in self.per_agent():
            buf = getattr(self, name)
            if buf is not None:
                buf[0] = buf[t, b_idx, a_idx]
                buf[1:] = 0
        if self.graph is not None:  # [T, B, V, F] per copy; row 0's per seat in graph0
            self.graph0 = self.graph[t, b_idx]  # [B, A, V, F]
            self.graph[0] = self.graph[t.max(1).values, torch.arange(B, device=t.device)]
            self.graph[1:] = 0
        self.acting[0] &= keep
        self.last = torch.where(keep, 0, -1)
        self.row = 1


def _on(x: np.ndarray | torch.Tensor, device: torch.device) -> torch.Tensor:
    """A numpy array, or a natively batched game's tensor (kept where it is), on ``device``."""
    if isinstance(x, torch.Tensor):
        return x.to(device)
    return torch.from_numpy(np.ascontiguousarray(x)).to(device)


def _stack(xs: list[np.ndarray] | list[torch.Tensor]) -> np.ndarray | torch.Tensor:
    """``[B, A]`` from per-agent ``[B]`` arrays or tensors."""
    return torch.stack(xs, 1) if isinstance(xs[0], torch.Tensor) else np.stack(xs, 1)


@register_learner("ippo", config=MAPPOConfig, policy="mappo", capabilities=IPPO_CAPABILITIES,
                  section="mappo", preset=as_ippo, check=check_game)
@register_learner("mappo", config=MAPPOConfig, policy="mappo",
                  capabilities=MAPPO_CAPABILITIES, check=check_game)
class MAPPO(Learner):
    """MAPPO/IPPO learner for the seats ``agents`` of ``spec`` (all seats by default).

    ``seed`` seeds the initial weights and the learner's own random stream (action
    sampling, minibatches); the global torch and numpy random states are left alone.
    """

    CAPABILITIES = MAPPO_CAPABILITIES
    reads_tensors = True  # rollouts, GAE and updates run on tensor VecSteps as on numpy

    def __init__(self, spec: GameSpec, cfg: MAPPOConfig | None = None,
                 agents: tuple[str, ...] | None = None, device: str = "cpu",
                 seed: int = 0) -> None:
        self.spec = spec
        self.agents = tuple(agents or spec.agent_ids)
        unknown = set(self.agents) - set(spec.agent_ids)
        if unknown:
            raise ValueError(f"agents {sorted(unknown)} are not seats of {spec.name}")
        cfg = cfg or MAPPOConfig()
        self.cfg = dataclasses.replace(cfg, net=resolve_net(cfg.net, spec, self.agents))
        problem = check_game(self.cfg, spec)
        if problem is not None:
            raise ValueError(f"MAPPO cannot play {spec.name}: {problem}")
        kinds = {k: [a for a in self.agents if spec.action_spaces[a].kind == k]
                 for k in ("discrete", "continuous")}
        if all(kinds.values()):  # one kind per learner: its buffer and act() assume it
            raise ValueError(f"MAPPO cannot play {spec.name}: agents {kinds['discrete']} take "
                             f"discrete actions and {kinds['continuous']} continuous ones; give "
                             "each kind its own learner (agents=...)")
        self.device = resolve_device(device)
        net = self.cfg.net
        self.groups = seat_groups(spec, self.agents, net.share)
        self.obs_dim = max(g.obs_dim for g in self.groups)
        self.n_max = max(g.num_actions for g in self.groups)
        # one kind per learner (refused above): Gaussian actors or not
        self.continuous = self.groups[0].continuous
        with torch.random.fork_rng(devices=[]):  # the weights' seed, not the global stream's
            torch.manual_seed(seed)
            self.actors = nn.ModuleList(Actor(net, g, NODE_DIM) for g in self.groups)
            self.critic_dim = critic_width(net, spec, self.agents, self.obs_dim)
            self.critics = nn.ModuleList(Critic(net, self.critic_dim, NODE_DIM)
                                         for _ in self.groups)
        # [state] action sampling and minibatch order: the learner's own stream
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(derive_seed(seed, "mappo"))
        self.to(self.device)
        params = list(self.actors.parameters()) + list(self.critics.parameters())
        # foreach: one kernel per op for all tensors; torch picks it by itself on CUDA only,
        # on CPU it loops over the tensors (~15 % of an update at matched settings), with
        # bitwise the same result
        self.opt = Adam(params, lr=self.cfg.lr, eps=self.cfg.adam_eps, foreach=True)
        self.value_rms = RunningMeanStd().to(self.device)
        agent_ids = torch.tensor([spec.agent_ids.index(a) for a in self.agents])
        roles = spec.roles
        role_ids = torch.tensor([roles.index(spec.agent(a).role) for a in self.agents])
        self.agent_key, self.role_key = agent_ids.to(self.device), role_ids.to(self.device)
        # what the key ids stand for: diagnostics log adv/role_adversary/..., not adv/role_0/...
        self.key_names = {"agent": spec.agent_ids, "role": roles}
        self.buf: _Buffer | None = None
        # [B, A, H] GRU states of actor and critic before the next step (recurrent only)
        self.h_actor: torch.Tensor | None = None
        self.h_critic: torch.Tensor | None = None
        self._node: dict[str, int] = {}  # agent -> entity-graph row (GNN inputs)
        # [B, A] bool: which copies' seats this learner really plays (None: all). A league
        # sets it when frozen opponents fill some seats in some copies.
        self.seat_mask: np.ndarray | None = None
        self._H = net.rnn_hidden if net.recurrent else 0  # GRU width (0: feed-forward)
        self.steps = 0  # frames seen (copies × steps)
        self.updates = 0
        self.guard = FiniteGuard(spec.name, self.agents)  # NaN/inf stop training

    def to(self, device: torch.device) -> MAPPO:
        self.actors.to(device)
        self.critics.to(device)
        return self

    @property
    def vector_game_kwargs(self) -> dict[str, bool]:
        """What the VectorGame must provide for this learner."""
        net = self.cfg.net
        return {"with_state": net.critic == "state",
                "with_graphs": reads_graphs(net)}

    # ------------------------------------------------------------------ acting
    def _inputs(self, vs: VecStep, final: bool = False) -> dict[str, torch.Tensor]:
        dev = self.device
        obs = pad_obs(vs, self.agents, self.obs_dim, final)
        x = {"obs": _on(obs, dev)}
        crit = critic_inputs(self.cfg.net, self.spec, self.agents, obs, vs, final)
        if crit is not None:
            x["critic"] = _on(crit, dev)
        graph = vs.final_graph if final else vs.graph
        if graph is not None:
            x["graph"] = _on(graph, dev)
        # checked on the numpy side: no device sync on the hot path
        self.guard.data(self.steps, per_agent={"observation": obs, "critic input": crit},
                        shared={"entity graph": graph})
        if not final and not self.continuous:  # a box has no legal mask
            shape = (obs.shape[0], len(self.agents), self.n_max)
            legal = (torch.zeros(shape, dtype=torch.bool, device=obs.device)
                     if isinstance(obs, torch.Tensor) else np.zeros(shape, bool))
            for i, a in enumerate(self.agents):
                legal[:, i, : vs.legal[a].shape[1]] = vs.legal[a]
            x["legal"] = _on(legal, dev)
        return x

    def _group_batch(self, x: dict[str, torch.Tensor], g: int) -> dict[str, torch.Tensor]:
        """Flatten the ``[..., A, ...]`` inputs of group g into ``[M, ...]`` samples."""
        cols = torch.tensor(self.groups[g].cols, device=self.device)
        lead = x["obs"].shape[:-2]
        k, width = len(cols), self.groups[g].obs_dim
        out = {"obs": x["obs"][..., cols, :width].reshape(-1, width)}
        out["seat"] = torch.arange(k, device=self.device).expand(*lead, k).reshape(-1)
        if "legal" in x:
            n = self.groups[g].num_actions
            out["legal"] = x["legal"][..., cols, :n].reshape(-1, n)
        if "critic" in x:
            out["critic"] = x["critic"][..., cols, :].reshape(-1, self.critic_dim)
        if "graph" in x:
            gr = x["graph"]  # [..., V, F] per copy
            out["graph"] = gr.unsqueeze(-3).expand(*lead, k, *gr.shape[-2:]).reshape(
                -1, *gr.shape[-2:])
            nodes = torch.tensor([self._node[a] for a in self.groups[g].agents],
                                 device=self.device)
            out["ego"] = nodes.expand(*lead, k).reshape(-1)
        return out

    @torch.no_grad()
    def _values(
        self, x: dict[str, torch.Tensor], start: torch.Tensor | None = None,
        move: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``[B, A]`` denormalized values and, when recurrent, the critic's next
        ``[B, A, H]`` state from ``self.h_critic`` (``start`` / ``move``: ``[B, A]``)."""
        B, A = x["obs"].shape[:2]
        v = torch.zeros(B, A, device=self.device)
        h_next = None if self.h_critic is None else self.h_critic.clone()
        for g, grp in enumerate(self.groups):
            cols = list(grp.cols)
            if self.cfg.net.value == "shared":  # one value per copy: every seat's input is it
                v[:, cols] = self.critics[g]({"critic": x["critic"][:, cols[0]]})[:, None]
                continue
            xg = self._group_batch(x, g)
            if h_next is None:
                vg = self.critics[g](xg)
            else:
                vg, hg = self.critics[g].step(xg, self.h_critic[:, cols].reshape(-1, self._H),
                                              start[:, cols].reshape(-1), move[:, cols].reshape(-1))
                h_next[:, cols] = hg.reshape(B, len(cols), -1)
            v[:, cols] = vg.reshape(B, len(cols))
        return (self.value_rms.denormalize(v) if self.cfg.value_norm else v), h_next

    @torch.no_grad()
    def act(self, vs: VecStep, actions: dict[str, np.ndarray] | None = None,
            logp: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """Sample actions for the learner's seats (``[B]`` ids, or ``[B, D]`` float32 inside
        a continuous box) and record the step for training; with
        ``actions`` (chosen elsewhere, e.g. by rollout workers) record those instead, with
        their behaviour log-probabilities ``logp`` (default: this learner's own)."""
        if vs.agent_node is not None:
            self._node = vs.agent_node
        x = self._inputs(vs)
        B, A = x["obs"].shape[:2]
        if self.buf is None:
            graph = tuple(x["graph"].shape[1:]) if "graph" in x else None
            self.buf = _Buffer(self.cfg.rollout_steps + 1, B, A, self.obs_dim, self.n_max,
                               self.critic_dim, graph, self.device, self._H, self.continuous)
            if self._H:
                self.h_actor = torch.zeros(B, A, self._H, device=self.device)
                self.h_critic = torch.zeros(B, A, self._H, device=self.device)
        buf, t = self.buf, self.buf.row
        acting = _on(_stack([vs.acting[a] for a in self.agents]), self.device)
        if self.seat_mask is not None:
            acting = acting & torch.as_tensor(self.seat_mask, device=self.device)
        start = None
        if self._H:
            start = _on(episode_starts(vs, self.agents), self.device)
            buf.start[t], buf.h_actor[t], buf.h_critic[t] = start, self.h_actor, self.h_critic
        if actions is not None and self.continuous:
            raise ValueError("replaying given actions (rollout workers) takes discrete actions; "
                             "a continuous MAPPO collects its own rollouts (rollout_workers=0)")
        given = None if actions is None else torch.from_numpy(
            np.stack([np.asarray(actions[a], np.int64) for a in self.agents], 1)).to(self.device)
        behaviour = None if logp is None else torch.from_numpy(
            np.stack([np.asarray(logp[a], np.float32) for a in self.agents], 1)).to(self.device)
        actions = self.buf.action[0].new_zeros(self.buf.action.shape[1:])  # [B, A(, D)]
        logp = torch.zeros(B, A, device=self.device)
        played = [None] * A  # what each seat's game receives
        for g, grp in enumerate(self.groups):
            cols, xg = list(grp.cols), self._group_batch(x, g)
            if start is None:
                logits = self.actors[g](xg)
            else:
                logits, hg = self.actors[g].step(xg, self.h_actor[:, cols].reshape(-1, self._H),
                                                 start[:, cols].reshape(-1),
                                                 acting[:, cols].reshape(-1))
                self.h_actor[:, cols] = hg.reshape(B, len(cols), -1)
            actor = self.actors[g]
            a = actor.sample(logits, self.gen) if given is None else given[:, cols].reshape(-1)
            lp = actor.log_prob(logits, a)
            D = grp.num_actions
            if self.continuous:
                actions[:, cols, :D] = a.reshape(B, len(cols), D)
            else:
                actions[:, cols] = a.reshape(B, -1)
            logp[:, cols] = lp.reshape(B, -1)
            game_BKD = actor.to_game(a).reshape(B, len(cols), *a.shape[1:])
            for k, c in enumerate(cols):
                played[c] = game_BKD[:, k]
        if behaviour is not None:
            logp = torch.where(acting, behaviour, logp)
        buf.obs[t], buf.action[t], buf.logp[t] = x["obs"], actions, logp
        if buf.legal is not None:
            buf.legal[t] = x["legal"]
        buf.value[t], h_critic = self._values(x, start, acting)
        buf.acting[t] = acting
        if h_critic is not None:
            self.h_critic = h_critic
        if buf.critic is not None:
            buf.critic[t] = x["critic"]
        if buf.graph is not None:
            buf.graph[t] = x["graph"]
        buf.last = torch.where(acting, t, buf.last)
        buf.row += 1
        self.steps += B
        if isinstance(vs.done, torch.Tensor):  # a natively batched game: no host copy
            return {a: played[i] for i, a in enumerate(self.agents)}
        if self.continuous:
            return {a: played[i].cpu().numpy() for i, a in enumerate(self.agents)}
        out = actions.cpu().numpy()
        return {a: out[:, i] for i, a in enumerate(self.agents)}

    @torch.no_grad()
    def observe(self, vs: VecStep) -> None:
        buf = self.buf
        if buf is None:  # as VDN, QMIX and MADDPG say it (was: no attribute 'last')
            raise RuntimeError("observe() called without a preceding act()")
        dev = self.device
        r_BA = _stack([vs.rewards[a] for a in self.agents])
        self.guard.data(self.steps, per_agent={"reward": r_BA})
        r = _on(r_BA, dev)
        term = _on(_stack([vs.terminated[a] for a in self.agents]), dev)
        trunc = _on(_stack([vs.truncated[a] for a in self.agents]), dev)
        done = _on(vs.done, dev)[:, None] | term | trunc  # [B, A]
        live = buf.last >= 0
        B, A = r.shape
        t = buf.last.clamp_min(0)
        # each (copy, agent) adds its reward to its pending step, a dense add: indexing by
        # `live` (a boolean mask) was four nonzeros, each a host wait for the GPU, every step;
        # one target per column, so no sort (index_put_ with accumulate sorts on CUDA)
        T = buf.reward.shape[0]
        buf.reward.view(T, B * A).scatter_add_(0, t.reshape(1, B * A),
                                               torch.where(live, r, 0.0).reshape(1, B * A))
        ended = live & done
        if ended.any():
            b_idx = torch.arange(B, device=dev)[:, None].expand(B, A)
            a_idx = torch.arange(A, device=dev)[None, :].expand(B, A)
            buf.end[t[ended], b_idx[ended], a_idx[ended]] = True
            if self.cfg.truncation == "terminal":  # a cut episode ends as if terminated
                term = term | trunc
            buf.term[t[ended], b_idx[ended], a_idx[ended]] = term[ended] | ~trunc[ended]
            cut = ended & trunc & ~term
            if cut.any():
                # recurrent: one more critic step from the state after the agent's last
                # step (the reset for the new episode happens at the next act)
                no = torch.zeros_like(done)
                fv, _ = self._values(self._inputs(vs, final=True), no, no)
                buf.final_value[t[cut], b_idx[cut], a_idx[cut]] = fv[cut]
            buf.last = torch.where(done, -1, buf.last)
        if self.cfg.rollout_end == "bootstrap" and self.ready():
            self._bootstrap_rollout_end(vs)

    @torch.no_grad()
    def _bootstrap_rollout_end(self, vs: VecStep) -> None:
        """``rollout_end="bootstrap"``: end each agent's unfinished last step with the value
        of the observation after it (TorchRL's GAE), where the agent acts at ``vs``; the
        others (turn-based seats waiting for their turn) stay carried."""
        buf, dev = self.buf, self.device
        acting = _on(_stack([vs.acting[a] for a in self.agents]), dev)
        if self.seat_mask is not None:
            acting = acting & torch.as_tensor(self.seat_mask, device=dev)
        pend = (buf.last >= 0) & acting  # [B, A]
        start = _on(episode_starts(vs, self.agents), dev) if self._H else None
        v, _ = self._values(self._inputs(vs), start, acting)  # GRU state kept for act
        B, A = pend.shape
        t = buf.last.clamp_min(0)
        b_idx = torch.arange(B, device=dev)[:, None].expand(B, A)
        a_idx = torch.arange(A, device=dev)[None, :].expand(B, A)
        at = (t[pend], b_idx[pend], a_idx[pend])
        buf.end[at] = True
        buf.term[at] = False
        buf.final_value[at] = v[pend]
        buf.last = torch.where(pend, -1, buf.last)

    def ready(self) -> bool:
        return self.buf is not None and self.buf.row > self.cfg.rollout_steps

    # ------------------------------------------------------------------ learning
    def update(self) -> dict[str, float]:
        from marl.mappo_update import ppo_update

        if self.buf is None:  # was: 'NoneType' object has no attribute 'row'
            raise RuntimeError("update() called before any act()/observe(): the rollout is "
                               "empty (call it when ready() is True)")
        metrics = ppo_update(self)
        self.buf.carry()
        self.updates += 1
        return metrics

    def policy(self) -> PPOPolicy:
        import copy

        meta = PolicyMeta.from_spec(
            "mappo", self.spec, self.agents,
            inputs=("graph",) if self.cfg.net.encoder == "gnn" else ("obs",),
            step=self.steps,
        )
        return PPOPolicy(meta, self.cfg.net, self.groups, copy.deepcopy(self.actors), NODE_DIM)

    def state_dict(self) -> dict[str, Any]:
        return {
            "actors": self.actors.state_dict(),
            "critics": self.critics.state_dict(),
            "opt": self.opt.state_dict(),
            "value_rms": self.value_rms.state_dict(),
            "steps": self.steps,
            "updates": self.updates,
            "gen": self.gen.get_state(),
            "gen_device": self.device.type,  # a CUDA stream's state does not fit a CPU one
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        refuse_nonfinite(state, "learner state")  # a file's: NaN weights act on NaN logits
        self.actors.load_state_dict(state["actors"])
        self.critics.load_state_dict(state["critics"])
        load_optimizer_state(self.opt, state["opt"], "opt")  # checked: torch's is not
        for group in self.opt.param_groups:  # a checkpoint's own setting (None before) is
            group["foreach"] = True  # how it ran, not a hyperparameter
        self.value_rms.load_state_dict(state["value_rms"])
        self.steps, self.updates = int(state["steps"]), int(state["updates"])
        # checkpoints before the learner's own stream have none; one saved on another kind
        # of device (CUDA -> CPU) cannot be restored, so the stream restarts from its state
        if "gen" in state and state.get("gen_device", "cpu") == self.device.type:
            self.gen.set_state(state["gen"])
        elif "gen" in state:
            self.gen.manual_seed(seed_from_state(state["gen"]))
        self.start_episodes()  # a resumed learner starts a fresh rollout

    def start_episodes(self) -> None:
        self.buf = None  # the rollout and the GRU states belonged to the old game copies
        self.h_actor = self.h_critic = None
