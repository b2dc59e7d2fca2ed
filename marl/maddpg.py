"""MADDPG (Lowe et al., 2017): decentralized actors, one centralized critic per agent.

Each controlled agent ``i`` has a deterministic actor ``mu_i(o_i)`` and a critic
``Q_i(x, u_1, ..., u_A)`` that sees the global input ``x`` (the game's state, or all
observations concatenated) and every controlled agent's action. Critics regress on
``r_i + gamma * Q'_i(x', mu'_1(o'_1), ..., mu'_A(o'_A))`` with target networks updated by
Polyak averaging (the ``gamma`` term is dropped where agent ``i``'s own episode ended by
the rules: the game's end, or ``i`` leaving a game the others play on; a truncated episode
bootstraps from its final observation, and so does an agent truncated alone while the others
play on: its own critic's target takes its next action from its last observation, the other
critics see it gone, as at the steps after); actor ``i`` ascends ``Q_i`` with its own action
replaced by ``mu_i(o_i)`` and the others' taken from the replay. All A actor updates run as
one batched critic call (rows ``i`` of a ``[B, A, A, D]`` joint-action tensor differ only in
agent ``i``'s slot). An update (every ``train_every`` vector steps) takes ``gradient_steps``
critic + actor steps, each on its own replay minibatch and followed by the Polyak targets
(``auto``: ``ceil(copies * train_every / batch_size)``, about one sample per frame played).

* Continuous actions: ``tanh`` outputs in ``[-1, 1]`` (the units the critic sees), Gaussian
  exploration noise, clipped and mapped affinely into the game's box ``[low, high]`` (each
  dimension onto its own bounds where the game gives them per dimension).
* Discrete actions: straight-through Gumbel-softmax (hard one-hot forward, soft gradient);
  critics see one-hot actions; illegal actions get a logit of ``-1e9`` and are never chosen.
* ``share_parameters``: agents of one role share actor and critic weights (critics also see
  the agent's one-hot id, as each agent has its own reward).

Only the steps where an agent is in the episode train its critic and actor: one that waits a
step (it does not act but has not left) keeps its transitions and its reward there; an agent
that left the game (``knights_archers_zombies``' dead knight) has none until the next episode.

In a league (``Learner.seat_mask``) an agent whose seat another policy played is not
trained there (its critic and actor losses are masked), the critics see the action that
policy really played (:meth:`MADDPG.played`), and a copy where the learner held no seat is
not stored. Target actions of those seats still come from the learner's own target actors.

Weights are stored per *group* (one per agent, or one per role when sharing) and applied to
all agents at once with a gathered batched matmul, so no hot path loops over agents.

Shape legend: ``B`` copies or minibatch, ``A`` controlled agents, ``G`` parameter groups,
``O`` observation width (padded), ``D`` action width (N logits or box width, padded),
``S`` global input width, ``I`` / ``H`` layer input / output width.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from games import ActionSpace, GameSpec, VecStep
from marl.configs import (  # noqa: F401 - re-exported: the choices' old home
    STATE_INPUTS,
    TARGET_ACTIONS,
    MADDPGConfig,  # the settings, torch-free (selfplay-train checks them early)
    check_choice,
    gradient_steps_per_update,
    replay_warnings,
)
from marl.core import (
    Capabilities,
    CheckpointError,
    Learner,
    Policy,
    PolicyMeta,
    build_checked,
    register_policy,
    resolve_device,
)
from marl.guards import FiniteGuard
from marl.networks import masked_logits, orthogonal_
from marl.optim import Adam
from marl.registry import register_learner
from marl.replay import (
    AgentStacker,
    ReplayBuffer,
    StillIn,
    check_agents,
    seated,
    warmed_up,
)
from marl.state_checks import load_optimizer_state, refuse_nonfinite

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------- networks
class GroupedLinear(nn.Module):
    """G independent linear layers applied to the A agent slots of a batch at once."""

    def __init__(self, groups: int, d_in: int, d_out: int, gain: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(groups, d_in, d_out))
        self.bias = nn.Parameter(torch.zeros(groups, d_out))
        with torch.no_grad():
            for g in range(groups):  # init only (none when weights are loaded over it)
                self.weight[g] = orthogonal_(torch.empty(d_out, d_in), gain).T

    def forward(self, x_BAI: Tensor, group_A: Tensor) -> Tensor:
        """``[B, A, I] → [B, A, H]``; slot ``a`` uses the weights of group ``group_A[a]``."""
        return torch.einsum("bai,aih->bah", x_BAI, self.weight[group_A]) + self.bias[group_A]


class GroupedMLP(nn.Module):
    """An MLP per group (ReLU hidden layers, orthogonal init), batched over agent slots."""

    def __init__(
        self, groups: int, d_in: int, hidden: Sequence[int], d_out: int, out_gain: float = 1.0
    ) -> None:
        super().__init__()
        dims = [d_in, *hidden, d_out]
        gains = [math.sqrt(2.0)] * len(hidden) + [out_gain]
        self.layers = nn.ModuleList(
            GroupedLinear(groups, i, o, g)
            for i, o, g in zip(dims[:-1], dims[1:], gains, strict=True)
        )

    def forward(self, x_BAI: Tensor, group_A: Tensor) -> Tensor:
        for k, layer in enumerate(self.layers):
            x_BAI = layer(x_BAI, group_A)
            if k < len(self.layers) - 1:
                x_BAI = F.relu(x_BAI)
        return x_BAI


def gumbel_softmax_st(logits: Tensor, temperature: float, gen: torch.Generator | None) -> Tensor:
    """Straight-through Gumbel-softmax: hard one-hot forward, soft gradient (same shape)."""
    u = torch.rand(logits.shape, generator=gen).to(logits.device).clamp_(1e-10, 1.0 - 1e-7)
    soft = F.softmax((logits - torch.log(-torch.log(u))) / temperature, -1)
    hard = F.one_hot(soft.argmax(-1), logits.shape[-1]).to(soft.dtype)
    return hard - soft.detach() + soft


@dataclass(frozen=True)
class ActionHead:
    """How actor outputs ``[..., D]`` become actions (shared by learner and policy)."""

    discrete: bool
    dims_A: Tensor  # [A] real action width (N or box width) of each slot
    low_AD: Tensor  # [A, D] box low per dimension (continuous; -1 past a slot's width)
    high_AD: Tensor  # [A, D] box high per dimension (continuous; 1 past a slot's width)

    def __post_init__(self) -> None:
        # [A] bounds (one number per slot, as heads were built before per-dimension boxes)
        # span every dimension of their slot
        D = int(self.dims_A.max()) if self.dims_A.numel() else 0
        for name in ("low_AD", "high_AD"):
            bound = getattr(self, name)
            if bound.dim() == 1:
                object.__setattr__(self, name, bound[:, None].expand(-1, D).clone())

    def unit_actions(
        self,
        out_BAD: Tensor,
        legal_BAD: Tensor | None,
        *,
        explore: bool,
        noise: float = 0.0,
        temperature: float = 1.0,
        gen: torch.Generator | None = None,
    ) -> Tensor:
        """``[B, A, D]`` actions as the critic sees them: one-hot, or a vector in [-1, 1]."""
        if self.discrete:
            logits = masked_logits(out_BAD, legal_BAD)
            if explore:
                return gumbel_softmax_st(logits, temperature, gen)
            return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(out_BAD.dtype)
        act = torch.tanh(out_BAD)
        if explore and noise > 0.0:
            act = act + noise * torch.randn(act.shape, generator=gen).to(act.device)
        pad = torch.arange(act.shape[-1], device=act.device) >= self.dims_A[:, None]
        return act.clamp(-1.0, 1.0).masked_fill(pad, 0.0)

    def to_game(self, unit_BAD: Tensor) -> np.ndarray:
        """Game actions: ``[B, A]`` int ids, or ``[B, A, D]`` float32 inside each box (each
        dimension mapped onto its own bounds)."""
        if self.discrete:
            return unit_BAD.argmax(-1).cpu().numpy()
        low, high = self.low_AD, self.high_AD
        box = low + (unit_BAD + 1.0) * 0.5 * (high - low)
        return torch.minimum(torch.maximum(box, low), high).cpu().numpy().astype(np.float32)


def _game_action(head: ActionHead, unit_BAD: Tensor, index: int, width: int) -> np.ndarray:
    out = head.to_game(unit_BAD)[:, index]
    return out if head.discrete else out[:, :width]


def _head_for(spaces: Sequence[ActionSpace], agents: Sequence[str]) -> tuple[ActionHead, int]:
    """The action head of agents with these spaces, and the padded action width D."""
    discrete = spaces[0].discrete
    for a, sp in zip(agents, spaces, strict=True):
        if not sp.discrete and len(sp.shape) != 1:
            raise ValueError(f"MADDPG needs 1-D action boxes; {a} has shape {sp.shape}")
    dims = [sp.n if discrete else sp.shape[0] for sp in spaces]
    D = max(dims)
    low_AD, high_AD = np.full((len(spaces), D), -1.0), np.ones((len(spaces), D))
    for i, sp in enumerate(spaces if not discrete else ()):
        low_AD[i, : dims[i]], high_AD[i, : dims[i]] = sp.bounds()  # per dimension
    head = ActionHead(
        discrete,
        torch.tensor(dims),
        torch.tensor(low_AD, dtype=torch.float32),
        torch.tensor(high_AD, dtype=torch.float32),
    )
    return head, D


# ---------------------------------------------------------------------------------- policy
@register_policy("maddpg")
class MADDPGPolicy(Policy):
    """Decentralized MADDPG actors on CPU: greedy, or explorative (noise / Gumbel) actions."""

    def __init__(
        self,
        meta: PolicyMeta,
        actor: GroupedMLP,
        groups: Sequence[int],
        noise: float,
        temperature: float,
        seed: int = 0,
    ) -> None:
        self.meta, self.actor = meta, actor.cpu().eval()
        self.groups, self.noise, self.temperature = list(groups), float(noise), float(temperature)
        self.seed = int(seed)
        self.gen = torch.Generator().manual_seed(self.seed)
        self.head, self.width = _head_for([meta.action_space(a) for a in meta.agents], meta.agents)
        self.obs_width = self.actor.layers[0].weight.shape[1]

    def reseed(self, seed: int) -> None:
        self.gen.manual_seed(seed)

    @torch.no_grad()
    def act(self, agent: str, vs: VecStep, greedy: bool = False) -> np.ndarray:
        """``[B]`` action ids or ``[B, D]`` box actions of ``agent``."""
        i = self.meta.agents.index(agent)
        obs = vs.obs[agent].reshape(vs.obs[agent].shape[0], -1)
        obs_B1O = torch.zeros(obs.shape[0], 1, self.obs_width)
        obs_B1O[:, 0, : obs.shape[1]] = torch.as_tensor(obs)
        out_B1D = self.actor(obs_B1O, torch.tensor([self.groups[i]]))
        legal = None
        if self.head.discrete:
            n = int(self.head.dims_A[i])
            legal = torch.zeros(obs.shape[0], 1, self.width, dtype=torch.bool)
            legal[:, 0, :n] = torch.as_tensor(vs.legal[agent])
            legal[~legal.any(-1)] = torch.arange(self.width) < n  # placeholder rows
        head = dataclasses.replace(
            self.head,
            dims_A=self.head.dims_A[i : i + 1],
            low_AD=self.head.low_AD[i : i + 1],
            high_AD=self.head.high_AD[i : i + 1],
        )
        unit = head.unit_actions(
            out_B1D,
            legal,
            explore=not greedy,
            noise=self.noise,
            temperature=self.temperature,
            gen=self.gen,
        )
        return _game_action(head, unit, 0, int(self.head.dims_A[i]))

    def payload(self) -> dict[str, Any]:
        hidden = [layer.weight.shape[2] for layer in self.actor.layers][:-1]
        return {
            "actor": self.actor.state_dict(),
            "groups": self.groups,
            "hidden": hidden,
            "noise": self.noise,
            "temperature": self.temperature,
            "seed": self.seed,
        }

    @classmethod
    def from_payload(cls, meta: PolicyMeta, payload: dict[str, Any]) -> MADDPGPolicy:
        w0 = payload["actor"]["layers.0.weight"]  # [G, O, H]
        _, width = _head_for([meta.action_space(a) for a in meta.agents], meta.agents)
        actor = build_checked(  # sizes come from the file: dry run first
            lambda: GroupedMLP(w0.shape[0], w0.shape[1], payload["hidden"], width),
            payload["actor"], "maddpg actor")
        return cls(
            meta,
            actor,
            payload["groups"],
            payload["noise"],
            payload["temperature"],
            payload["seed"],
        )


# --------------------------------------------------------------------------------- learner
MADDPG_CAPABILITIES = Capabilities(
    discrete=True, continuous=True, on_policy=False, turn_based=False, centralized_critic=True,
    partial_seats=True,
    why_not={"turn_based": "each critic scores the joint action of all agents at one step and "
                           "every actor learns through it by a deterministic policy gradient; "
                           "a turn-based game has one mover per step and no joint action"},
)


@register_learner("maddpg", config=MADDPGConfig, policy="maddpg",
                  capabilities=MADDPG_CAPABILITIES)
class MADDPG(Learner):
    """MADDPG for the seats ``agents`` of a simultaneous-move game.

    Example::

        vg = VectorGame("pettingzoo/mpe2.simple_spread_v3", 8, with_state=True, N=2,
                        continuous_actions=True)
        learner = MADDPG(vg.spec, MADDPGConfig(share_parameters=True))
        train(learner, vg, frames=50_000)
    """

    CAPABILITIES = MADDPG_CAPABILITIES

    def __init__(
        self,
        spec: GameSpec,
        config: MADDPGConfig | None = None,
        agents: Sequence[str] | None = None,
        device: str | torch.device = "cpu",
        seed: int | None = None,
    ) -> None:
        """``seed`` (None: ``config.seed``) seeds the weights and the learner's own streams."""
        cfg = config or MADDPGConfig()
        if seed is not None and seed != cfg.seed:
            cfg = dataclasses.replace(cfg, seed=seed)
        self.cfg = cfg
        cfg.validate()
        self.spec = spec
        self.agents = check_agents(spec, agents, "MADDPG")
        self.CAPABILITIES.check(spec, self.agents, "MADDPG")
        self.device = resolve_device(device)
        self.stack = AgentStacker(spec, self.agents, self.device, cfg.state_input)
        self.still_in = StillIn(self.stack)
        # state_input "obs": where each controlled agent's observation sits in the global input
        widths = {a: int(np.prod(spec.obs_shapes[a])) for a in spec.agent_ids}
        starts = np.cumsum([0] + [widths[a] for a in spec.agent_ids])
        self._obs_slots = [(int(starts[spec.agent_ids.index(a)]), widths[a]) for a in self.agents]
        head, D = _head_for([spec.action_spaces[a] for a in self.agents], self.agents)
        self.head = dataclasses.replace(
            head,
            dims_A=head.dims_A.to(self.device),
            low_AD=head.low_AD.to(self.device),
            high_AD=head.high_AD.to(self.device),
        )
        A, O, S = len(self.agents), self.stack.obs_width, self.stack.state_width
        keys = [spec.agent(a).role if cfg.share_parameters else a for a in self.agents]
        self.groups = [list(dict.fromkeys(keys)).index(k) for k in keys]
        self.group_A = torch.tensor(self.groups, device=self.device)
        G = max(self.groups) + 1
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            self.actor = GroupedMLP(G, O, cfg.hidden, D, out_gain=0.01).to(self.device)
            self.critic = GroupedMLP(G, S + A * D + A, cfg.hidden, 1).to(self.device)
        self.target_actor = copy.deepcopy(self.actor).requires_grad_(False)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor_opt = Adam(self.actor.parameters(), lr=cfg.lr_actor)
        self.critic_opt = Adam(self.critic.parameters(), lr=cfg.lr_critic)
        fields = {
            "obs": ((A, O), torch.float32),
            "state": ((S,), torch.float32),
            "action": ((A, D), torch.float32),
            "seated": ((A,), torch.bool),  # the learner held the seat (Learner.seat_mask)
            "acting": ((A,), torch.bool),  # the agent is in the episode (acts or waits)
            "reward": ((A,), torch.float32),
            "next_obs": ((A, O), torch.float32),
            "next_state": ((S,), torch.float32),
            "next_acting": ((A,), torch.bool),
            "terminal": ((), torch.float32),
            "terminated": ((A,), torch.bool),  # the agent's own episode ended by the rules
            "left": ((A,), torch.bool),  # the agent's own episode ended, the copy's goes on
        }
        if self.head.discrete:
            fields |= {"legal": ((A, D), torch.bool), "next_legal": ((A, D), torch.bool)}
        self.buffer = ReplayBuffer(cfg.buffer_size, fields, self.device)
        self.act_gen = torch.Generator().manual_seed(cfg.seed + 1)
        self.sample_gen = torch.Generator().manual_seed(cfg.seed + 2)
        self.update_gen = torch.Generator().manual_seed(cfg.seed + 3)
        self.frames = self.updates = self.steps_since_update = 0
        self.gradient_steps = 0  # critic + actor steps over all updates (cfg.gradient_steps each)
        self._copies = 0  # copies of the last step observed (gradient_steps="auto"; 0: none
        # yet, the settings' warnings are due)
        self._pending: dict[str, Tensor] | None = None
        self.seat_mask: np.ndarray | None = None
        self.guard = FiniteGuard(spec.name, self.agents)  # NaN/inf stop training

    # ----------------------------------------------------------------- acting / data
    @torch.no_grad()
    def act(self, vs: VecStep, greedy: bool = False) -> dict[str, np.ndarray]:
        """Exploratory actions (``greedy``: deterministic actor output, nothing recorded)."""
        cfg = self.cfg
        obs_BAO = self.stack.obs(vs.obs)
        legal_BAD = self.stack.legal(vs) if self.head.discrete else None
        unit_BAD = self.head.unit_actions(
            self.actor(obs_BAO, self.group_A),
            legal_BAD,
            explore=not greedy,
            noise=cfg.exploration_noise,
            temperature=cfg.gumbel_temperature,
            gen=self.act_gen,
        )
        if not greedy:
            B, A = obs_BAO.shape[0], len(self.agents)
            self._pending = {"obs": obs_BAO, "state": self.stack.state(vs), "action": unit_BAD,
                             "seated": seated(self.seat_mask, B, A, self.device),
                             "acting": self.still_in.mask(B)}
            if legal_BAD is not None:
                self._pending["legal"] = legal_BAD
        out = self.head.to_game(unit_BAD)
        dims = self.head.dims_A.tolist()
        if self.head.discrete:
            return {a: out[:, i] for i, a in enumerate(self.agents)}
        return {a: out[:, i, : dims[i]] for i, a in enumerate(self.agents)}

    def start_episodes(self) -> None:
        """Drop the half-transition of the last ``act`` (its games are gone)."""
        self._pending = None
        self.still_in.clear()

    @torch.no_grad()
    def played(self, actions: dict[str, np.ndarray]) -> None:
        """The actions the game received, after another policy replaced this learner's in
        the seats it did not hold: the centralized critics see the joint action really
        played (the learner's own proposals there were ignored)."""
        if self._pending is None:
            raise RuntimeError("played() called without a preceding act()")
        seated_BA, unit_BAD = self._pending["seated"], self._pending["action"]
        if bool(seated_BA.all()):
            return
        unit_BAD = unit_BAD.clone()
        D = unit_BAD.shape[-1]
        for i, a in enumerate(self.agents):
            rows = ~seated_BA[:, i]
            if not bool(rows.any()):
                continue
            act = torch.as_tensor(np.asarray(actions[a]), device=self.device)
            if self.head.discrete:
                unit = F.one_hot(act.long().reshape(-1), D).to(unit_BAD.dtype)
            else:
                box = act.reshape(act.shape[0], -1).to(unit_BAD.dtype)
                w = box.shape[1]  # [w] bounds of this slot's own dimensions
                low, high = self.head.low_AD[i, :w], self.head.high_AD[i, :w]
                unit = torch.zeros_like(unit_BAD[:, i])
                unit[:, :w] = ((box - low) / (high - low) * 2.0 - 1.0).clamp(-1, 1)
            unit_BAD[rows, i] = unit[rows]
        self._pending["action"] = unit_BAD

    def observe(self, vs: VecStep) -> None:
        """Store the copies' transitions; copies where the learner holds none of its seats
        are not stored, and an agent whose seat another policy held is not trained there
        (``seated`` masks its critic and actor losses)."""
        if self._pending is None:
            raise RuntimeError("observe() called without a preceding act()")
        nxt = self.stack.next_fields(vs, with_state=True, still=self.still_in.mask(len(vs.done)))
        rewards_BA, p = self.stack.rewards(vs), self._pending
        self.guard.data(self.frames, per_agent={"reward": rewards_BA, "observation": p["obs"],
                                                "next observation": nxt["next_obs"]},
                        shared={"global state": p["state"], "next global state": nxt["next_state"]})
        nxt["next_acting"] = nxt["next_acting"] & p["seated"]
        term_BA = self.stack.terminated(vs)
        done_B1 = torch.as_tensor(vs.done, device=self.device)[:, None]
        left_BA = (term_BA | self.stack.truncated(vs)) & ~done_B1
        row = {**p, "reward": rewards_BA, **nxt, "terminated": term_BA, "left": left_BA}
        keep_B = p["seated"].any(1)
        if not bool(keep_B.all()):
            row = {k: v[keep_B] for k, v in row.items()}
        self.buffer.add(row)
        self.still_in.step(vs)
        self._pending = None
        if not self._copies:  # the first step: settings that waste most of the copies' frames
            for note in replay_warnings("maddpg", self.cfg, int(vs.done.shape[0])):
                log.warning(note)
        self._copies = int(vs.done.shape[0])
        self.frames += self._copies
        self.buffer.frames += self._copies  # the warm-up counts frames, not transitions
        self.steps_since_update += 1

    def ready(self) -> bool:
        """Once the replay has been played ``learning_starts`` frames and holds a minibatch,
        every ``train_every`` steps (:func:`marl.replay.warmed_up`)."""
        return warmed_up(self.buffer, self.cfg, self.steps_since_update)

    # ------------------------------------------------------------------------ update
    def _q(self, critic: GroupedMLP, state_BS: Tensor, joint_BAJ: Tensor) -> Tensor:
        """``[B, A]`` values: critic ``i`` reads the state (``[B, S]``, or its own row of a
        ``[B, A, S]`` one), row ``i`` of the joint actions (``J = A * D``) and its agent's
        one-hot id."""
        B, A, _ = joint_BAJ.shape
        ids = torch.eye(A, device=state_BS.device).expand(B, A, A)
        if state_BS.dim() == 2:
            state_BS = state_BS[:, None].expand(B, A, state_BS.shape[1])
        x = torch.cat([state_BS, joint_BAJ, ids], -1)
        return critic(x, self.group_A)[..., 0]

    def _own_next_state(self, b: dict[str, Tensor]) -> Tensor:
        """The critics' next global input: ``[B, S]``, or ``[B, A, S]`` (one per critic) where
        the input is the observations (``state_input="obs"``) and an agent left alone: its
        own critic reads its last observation in its slot (as at every step it trained on),
        the others its zeros (it is gone for them)."""
        st_BS = b["next_state"]
        if self.stack.use_state or not bool(b["left"].any()):
            return st_BS
        B, A = b["left"].shape
        st_BAS = st_BS[:, None].expand(B, A, st_BS.shape[1]).clone()
        for i, (start, width) in enumerate(self._obs_slots):  # A is small
            slot = st_BAS[:, i, start : start + width]
            slot.copy_(torch.where(b["left"][:, i, None], b["next_obs"][:, i, :width], slot))
        return st_BAS

    def steps_per_update(self) -> int:
        """Gradient steps of the next update: ``cfg.gradient_steps``, or for ``"auto"``
        enough minibatches to sample about as many transitions as the copies played frames
        since the last update (:func:`marl.configs.gradient_steps_per_update`)."""
        cfg = self.cfg
        return gradient_steps_per_update(cfg.gradient_steps, self._copies, cfg.train_every,
                                         cfg.batch_size)

    def update(self) -> dict[str, float]:
        """:meth:`steps_per_update` gradient steps (one critic and one actor step on its own
        replay minibatch, then Polyak targets); losses are their means."""
        steps = [self._gradient_step() for _ in range(self.steps_per_update())]
        self.updates += 1
        self.steps_since_update = 0
        return {
            **{k: float(torch.stack([s[k] for s in steps]).mean()) for k in steps[0]},
            "charts/buffer_size": float(len(self.buffer)),
            "charts/updates": float(self.updates),
            "charts/gradient_steps": float(self.gradient_steps),
        }

    def _gradient_step(self) -> dict[str, Tensor]:
        """One critic and one actor gradient step on a replay minibatch, then Polyak targets;
        their losses as 0-d tensors (read once per update)."""
        cfg = self.cfg
        b = self.buffer.sample(cfg.batch_size, self.sample_gen)
        B, A, D = b["action"].shape
        g = self.group_A

        # Critic: Q_i(x, u) -> r_i + gamma * Q'_i(x', mu'(o'))
        with torch.no_grad():
            sample = {"explore": cfg.target_action == "gumbel",  # discrete only; no box noise
                      "temperature": cfg.gumbel_temperature, "gen": self.update_gen}
            next_out_BAD = self.target_actor(b["next_obs"], g)
            next_act_BAD = self.head.unit_actions(next_out_BAD, b.get("next_legal"), **sample)
            # an agent that left now (the copy goes on): its own row bootstraps from its last
            # observation (a truncation), the others see it gone, with the target action of
            # the zero observation it has at every later step (placeholder: any real action)
            gone_1AD = self.head.unit_actions(
                self.target_actor(b["next_obs"].new_zeros(1, A, b["next_obs"].shape[-1]), g),
                self.stack.real_actions[None] if self.head.discrete else None, **sample)
            others_BAD = torch.where(b["left"][..., None], gone_1AD, next_act_BAD)
            own_AA1 = torch.eye(A, dtype=torch.bool, device=self.device)[:, :, None]
            next_BAAD = torch.where(own_AA1, next_act_BAD[:, None], others_BAD[:, None])
            next_q_BA = self._q(self.target_critic, self._own_next_state(b),
                                next_BAAD.reshape(B, A, -1))
            # agent i stops where its own episode ended by the rules (it left the game, or
            # the game ended); a truncated one bootstraps from its final observation
            ended_BA = b["terminated"] | b["terminal"][:, None].bool()
            target_BA = b["reward"] + cfg.gamma * (~ended_BA) * next_q_BA
        q_BA = self._q(self.critic, b["state"], _shared(b["action"]))
        # an agent is trained only where it is in the episode (acting or waiting a step)
        # and the learner held its seat: one that left the game has no transition there
        train_BA = (b["seated"] & b["acting"]).to(q_BA.dtype)
        n_train = train_BA.sum().clamp(min=1.0)
        critic_loss = ((q_BA - target_BA).pow(2) * train_BA).sum() / n_train
        self.guard.scalar(self.frames, "critic loss", critic_loss)
        self.critic_opt.zero_grad()
        critic_loss.backward()
        critic_grad = nn.utils.clip_grad_norm_(self.critic.parameters(), cfg.max_grad_norm)
        self.guard.scalar(self.frames, "critic gradient norm", critic_grad)
        self.critic_opt.step()

        # Actors: row i of the joint action holds mu_i(o_i) in slot i, replay actions elsewhere
        out_BAD = self.actor(b["obs"], g)
        mu_BAD = self.head.unit_actions(
            out_BAD,
            b.get("legal"),
            explore=True,  # Gumbel sample (discrete); no noise on continuous actions
            temperature=cfg.gumbel_temperature,
            gen=self.update_gen,
        )
        joint_BAAD = torch.where(own_AA1, mu_BAD[:, None], b["action"][:, None])
        self.critic.requires_grad_(False)  # the actor step needs no critic gradients
        q_pi_BA = self._q(self.critic, b["state"], joint_BAAD.reshape(B, A, A * D))
        self.critic.requires_grad_(True)
        reg = masked_reg(out_BAD, b["legal"]) if self.head.discrete else out_BAD.pow(2).mean()
        actor_loss = -(q_pi_BA * train_BA).sum() / n_train + cfg.actor_reg * reg
        self.guard.scalar(self.frames, "actor loss", actor_loss)
        self.actor_opt.zero_grad()
        actor_loss.backward()
        actor_grad = nn.utils.clip_grad_norm_(self.actor.parameters(), cfg.max_grad_norm)
        self.guard.scalar(self.frames, "actor gradient norm", actor_grad)
        self.actor_opt.step()

        _polyak(self.actor, self.target_actor, cfg.tau)
        _polyak(self.critic, self.target_critic, cfg.tau)
        self.gradient_steps += 1
        return {
            "losses/critic_loss": critic_loss.detach(),
            "losses/actor_loss": actor_loss.detach(),
            "losses/q_values": q_BA.detach().mean(),
            "losses/target": (target_BA * train_BA).sum() / n_train,
            "losses/critic_grad_norm": critic_grad.detach(),
            "losses/actor_grad_norm": actor_grad.detach(),
            "charts/mean_reward": b["reward"].mean(),
        }

    # ----------------------------------------------------------------- snapshots
    def policy(self) -> MADDPGPolicy:
        meta = PolicyMeta.from_spec(
            "maddpg",
            self.spec,
            self.agents,
            step=self.updates,
            extra={"config": dataclasses.asdict(self.cfg)},
        )
        return MADDPGPolicy(
            meta,
            copy.deepcopy(self.actor),
            self.groups,
            self.cfg.exploration_noise,
            self.cfg.gumbel_temperature,
            self.cfg.seed,
        )

    def state_dict(self) -> dict[str, Any]:
        """Weights, targets, optimizers, counters, RNG streams and (optionally) the replay."""
        return {
            "config": dataclasses.asdict(self.cfg),
            "agents": list(self.agents),
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "target_actor": self.target_actor.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "actor_opt": self.actor_opt.state_dict(),
            "critic_opt": self.critic_opt.state_dict(),
            "counters": [self.frames, self.updates, self.steps_since_update, self.gradient_steps,
                         self._copies],
            "gens": [gen.get_state() for gen in self._gens()],
            "buffer": self.buffer.state_dict() if self.cfg.checkpoint_buffer else None,
        }

    def _gens(self) -> tuple[torch.Generator, ...]:
        return (self.act_gen, self.sample_gen, self.update_gen)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("agents") != list(self.agents):
            raise CheckpointError(
                f"checkpoint is for seats {state.get('agents')}; this learner has "
                f"{list(self.agents)}"
            )
        refuse_nonfinite(state, "learner state")  # a file's: NaN weights act on NaN logits
        for key in ("actor", "critic", "target_actor", "target_critic"):
            getattr(self, key).load_state_dict(state[key])
        for key in ("actor_opt", "critic_opt"):  # checked: torch's load_state_dict is not
            load_optimizer_state(getattr(self, key), state[key], key)
        counters = [int(c) for c in state["counters"]]
        # a checkpoint from before gradient_steps: one gradient step per update; from before
        # the copies were kept: 0 (read, and warned of, at the next step)
        counters += [counters[1], 0][len(counters) - 3:]
        (self.frames, self.updates, self.steps_since_update, self.gradient_steps,
         self._copies) = counters
        for gen, st in zip(self._gens(), state["gens"], strict=True):
            gen.set_state(st)
        if state.get("buffer") is not None:
            # a checkpoint from before seat masks: the learner held every seat
            # ... and from before per-agent ends: every agent acted, none left alone
            # ... and from before agents leaving alone kept their last observation
            self.buffer.load_state_dict(state["buffer"], missing={
                "seated": True, "acting": True, "terminated": False, "left": False})
        self.start_episodes()  # the half-transition and who left belong to games that are gone


def _shared(actions_BAD: Tensor) -> Tensor:
    """``[B, A, D] → [B, A, A*D]``: the same joint action in every critic's row."""
    B, A, D = actions_BAD.shape
    return actions_BAD.reshape(B, 1, A * D).expand(B, A, A * D)


@torch.no_grad()
def _polyak(online: nn.Module, target: nn.Module, tau: float) -> None:
    for p, tp in zip(online.parameters(), target.parameters(), strict=True):
        tp.lerp_(p, tau)


def masked_reg(logits_BAD: Tensor, legal_BAD: Tensor) -> Tensor:
    """Mean squared logit over legal actions (the padded / illegal ones are not penalized)."""
    legal = legal_BAD.to(logits_BAD.dtype)
    return (logits_BAD.pow(2) * legal).sum() / legal.sum().clamp(min=1.0)
