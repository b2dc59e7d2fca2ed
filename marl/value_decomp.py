"""Value decomposition: VDN (Sunehag et al., 2018) and QMIX (Rashid et al., 2018).

Every controlled agent ``a`` has a utility ``Q_a(o_a, u_a)``, computed by one network shared
by all agents (the agent's one-hot id is appended to its observation). A *mixer* turns the
utilities of the chosen actions into the team value ``Q_tot``, trained by TD on the team
reward: the sum of the controlled agents' rewards, or their mean over all of them (``sum / A``,
an agent that left counts 0: the same objective as the sum, scaled):

* ``vdn``:  ``Q_tot = sum_a Q_a``.
* ``qmix``: ``Q_tot = f_s(Q_1, ..., Q_A)``, a two-layer network whose weights are produced
  by hypernetworks from the global state ``s`` and made non-negative (``abs``), so
  ``Q_tot`` is monotone in every ``Q_a``.

Both keep ``argmax Q_tot`` equal to the per-agent argmaxes, so agents act greedily on their
own utilities (decentralized execution). Targets use double Q-learning (the online network
picks ``u'``, the target network evaluates it), illegal actions are masked in action
selection and in the target max, and a transition bootstraps unless its episode
*terminated* (a truncated episode bootstraps from ``final_obs`` / ``final_state``, its max
over ``final_legal``, the actions legal where it was cut).
Exploration is ε-greedy over legal actions with ε decaying linearly in frames. Updates start
once the replay has been played ``learning_starts`` frames (steps of one copy, the other
teams' turns included) and holds a minibatch; an update (every ``train_every`` vector steps)
takes ``gradient_steps`` TD steps, each on its own replay minibatch (``auto``:
``ceil(copies * train_every / batch_size)``, about one sample per frame played, so 4,096
copies are not trained on 128 of their frames); hard target copies count gradient steps.

Turn-based games (one agent acts per step): a team's transition runs from its acting step
to its next acting step or the episode's end (:class:`marl.replay.TeamTurns`), the rewards
of the other teams' turns in between summed into it, ``gamma`` once per own step (as MAPPO
does it). ``Q_tot`` mixes the utility of the team's agent acting at that step (the others
count 0), and the target maximizes over the legal actions of the team's agent acting at its
next step. A team of one agent (tic-tac-toe, poker) learns over its own acting steps; a
team of several passes its value from one member's turn to the next member's.

In a league (``Learner.seat_mask``) the learner holds every seat, of both teams: each team
gets its own ``Q_tot`` (:class:`TeamMixer`) trained on its own team reward, a seat another
policy played is masked out of its team's value, a team held elsewhere is not trained on,
and a copy where the learner held no seat is not stored.

Known limitation: both mixers are monotone, so they cannot represent payoffs where one
agent's best action depends on the other's (non-monotonic games such as the climbing
game). With uniform data the best monotone fit of climbing prefers (2, 2) over the optimum
(0, 0), and ε-greedy VDN/QMIX settle on (2, 2) or (1, 2). ``optimistic_weight`` < 1 scales
down the TD loss of samples whose ``Q_tot`` overestimates the target (the optimistic
weighting of OW-QMIX, Rashid et al. 2020, without its unrestricted ``Q*``), which lets
QMIX find (0, 0) there.

Shape legend: ``B`` copies or minibatch, ``A`` controlled agents, ``O`` observation width
(padded to the widest agent), ``N`` actions (padded), ``S`` global-state width,
``E`` mixing embedding width.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from games import GameSpec, VecStep
from marl.configs import (  # noqa: F401 - re-exported: the choices' old home
    LOSSES,
    STATE_INPUTS,
    TARGET_UPDATES,
    TEAM_REWARDS,
    ValueDecompConfig,  # the settings, torch-free (checked early)
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
from marl.networks import masked_logits, mlp
from marl.optim import Adam
from marl.registry import register_learner
from marl.replay import (
    AgentStacker,
    ReplayBuffer,
    StillIn,
    TeamTurns,
    check_agents,
    seated,
    warmed_up,
)
from marl.state_checks import load_optimizer_state, refuse_nonfinite

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- mixing math
def vdn_mix(q_BA: Tensor) -> Tensor:
    """VDN: ``[B, A]`` chosen utilities → ``[B]`` team value (their sum)."""
    return q_BA.sum(-1)


def qmix_mix(q_BA: Tensor, w1_BAE: Tensor, b1_BE: Tensor, w2_BE: Tensor, v_B: Tensor) -> Tensor:
    """QMIX: ``Q_tot = elu(q @ |W1| + b1) @ |W2| + V`` → ``[B]``, monotone in every ``q``."""
    hidden_BE = F.elu(torch.einsum("ba,bae->be", q_BA, w1_BAE.abs()) + b1_BE)
    return (hidden_BE * w2_BE.abs()).sum(-1) + v_B


class VDNMixer(nn.Module):
    """Sum of utilities; ignores the state."""

    def forward(self, q_BA: Tensor, state_BS: Tensor | None) -> Tensor:
        return vdn_mix(q_BA)


def _two_layer(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))


class QMixer(nn.Module):
    """Hypernetworks map the state to the weights of a monotone mixing network.

    PyTorch's default (uniform fan-in) init keeps ``dQ_tot/dQ_a`` near 0.6 at the start;
    orthogonal init of the hypernetworks gives ~3 per agent and destabilizes bootstrapping.
    """

    def __init__(self, n_agents: int, state_dim: int, embed_dim: int, hyper_hidden: int) -> None:
        super().__init__()
        self.n_agents, self.embed_dim = n_agents, embed_dim
        self.hyper_w1 = _two_layer(state_dim, hyper_hidden, n_agents * embed_dim)
        self.hyper_b1 = nn.Linear(state_dim, embed_dim)
        self.hyper_w2 = _two_layer(state_dim, hyper_hidden, embed_dim)
        self.value = _two_layer(state_dim, embed_dim, 1)

    def forward(self, q_BA: Tensor, state_BS: Tensor | None) -> Tensor:
        assert state_BS is not None, "QMIX needs a global state"
        B = q_BA.shape[0]
        w1 = self.hyper_w1(state_BS).view(B, self.n_agents, self.embed_dim)
        return qmix_mix(
            q_BA, w1, self.hyper_b1(state_BS), self.hyper_w2(state_BS), self.value(state_BS)[:, 0]
        )


MIXERS: dict[str, Callable[[int, int, ValueDecompConfig], nn.Module]] = {
    "vdn": lambda A, S, cfg: VDNMixer(),
    "qmix": lambda A, S, cfg: QMixer(A, S, cfg.mixing_embed_dim, cfg.hypernet_hidden),
}


class TeamMixer(nn.Module):
    """One mixer per team when the learner holds seats of several teams (a league member
    playing both sides): each team's ``Q_tot`` mixes its own agents' utilities only and is
    trained on its own team reward, so opposing teams never share a value.

    Args:
        team_A: ``[A]`` team group index of every controlled agent (0..G-1).
    """

    def __init__(self, team_A: Sequence[int], state_dim: int, cfg: ValueDecompConfig) -> None:
        super().__init__()
        G = max(team_A) + 1
        self.slots = [[i for i, t in enumerate(team_A) if t == g] for g in range(G)]
        self.mixers = nn.ModuleList(
            MIXERS[cfg.mixer](len(slots), state_dim, cfg) for slots in self.slots)

    def forward(self, q_BA: Tensor, state_BS: Tensor | None) -> Tensor:
        """``[B, A]`` chosen utilities → ``[B, G]`` team values."""
        return torch.stack([m(q_BA[:, slots], state_BS)
                            for m, slots in zip(self.mixers, self.slots, strict=True)], -1)


def mix_teams(mixer: nn.Module, q_BA: Tensor, state_BS: Tensor | None) -> Tensor:
    """``[B, G]`` team values (G = 1 for a plain mixer)."""
    out = mixer(q_BA, state_BS)
    return out if isinstance(mixer, TeamMixer) else out[:, None]


class AgentQNetwork(nn.Module):
    """Shared utility network: ``[obs, one-hot agent id] → Q`` over the N (padded) actions."""

    def __init__(self, obs_dim: int, n_agents: int, n_actions: int, hidden: Sequence[int]) -> None:
        super().__init__()
        self.n_agents = n_agents
        self.net = mlp(obs_dim + n_agents, hidden, n_actions, nn.ReLU)

    def forward(self, obs_BAO: Tensor) -> Tensor:
        """``[B, A, O] → [B, A, N]`` utilities of every agent."""
        B, A, _ = obs_BAO.shape
        ids = torch.eye(A, device=obs_BAO.device).expand(B, A, A)
        return self.net(torch.cat([obs_BAO, ids], -1))

    def forward_agent(self, obs_BO: Tensor, index: int) -> Tensor:
        """``[B, O] → [B, N]`` utilities of the agent in slot ``index``."""
        ids = torch.zeros(obs_BO.shape[0], self.n_agents, device=obs_BO.device)
        ids[:, index] = 1.0
        return self.net(torch.cat([obs_BO, ids], -1))


def epsilon_greedy(
    q_BAN: Tensor, legal_BAN: Tensor, epsilon: float, gen: torch.Generator | None
) -> Tensor:
    """``[B, A]`` actions: greedy over legal actions, uniform legal with probability ε."""
    greedy_BA = masked_logits(q_BAN, legal_BAN).argmax(-1)
    if epsilon <= 0.0:
        return greedy_BA
    B, A, N = q_BAN.shape
    noise = torch.rand(B, A, N, generator=gen).to(q_BAN.device)
    random_BA = ((noise + 1.0) * legal_BAN).argmax(-1)  # uniform over the legal actions
    explore_BA = torch.rand(B, A, generator=gen).to(q_BAN.device) < epsilon
    return torch.where(explore_BA, random_BA, greedy_BA)


# ---------------------------------------------------------------------------------- policy
@register_policy("vdn")
@register_policy("qmix")
class ValueDecompPolicy(Policy):
    """Greedy (or ε-greedy) actions on a snapshot of the shared agent Q network (on CPU)."""

    def __init__(
        self, meta: PolicyMeta, qnet: AgentQNetwork, epsilon: float = 0.0, seed: int = 0
    ) -> None:
        self.meta, self.qnet = meta, qnet.cpu().eval()
        self.epsilon, self.seed = float(epsilon), int(seed)
        self.gen = torch.Generator().manual_seed(self.seed)
        self.index = {a: i for i, a in enumerate(meta.agents)}
        self.obs_width = self.qnet.net[0].in_features - len(meta.agents)
        self.num_actions = self.qnet.net[-1].out_features

    def reseed(self, seed: int) -> None:
        self.gen.manual_seed(seed)

    @torch.no_grad()
    def act(self, agent: str, vs: VecStep, greedy: bool = False) -> np.ndarray:
        """``[B]`` int64 actions of ``agent`` (ε-greedy with the snapshot's ε unless greedy)."""
        obs = vs.obs[agent].reshape(vs.obs[agent].shape[0], -1)
        obs_BO = torch.zeros(obs.shape[0], self.obs_width)
        obs_BO[:, : obs.shape[1]] = torch.as_tensor(obs)
        legal_BN = torch.zeros(obs.shape[0], self.num_actions, dtype=torch.bool)
        n = self.meta.action_space(agent).n
        legal_BN[:, :n] = torch.as_tensor(vs.legal[agent])
        legal_BN[~legal_BN.any(-1), :n] = True  # placeholder rows: any real action
        q_BN = self.qnet.forward_agent(obs_BO, self.index[agent])
        eps = 0.0 if greedy else self.epsilon
        return epsilon_greedy(q_BN[:, None], legal_BN[:, None], eps, self.gen)[:, 0].numpy()

    def payload(self) -> dict[str, Any]:
        hidden = [m.out_features for m in self.qnet.net if isinstance(m, nn.Linear)][:-1]
        return {
            "qnet": self.qnet.state_dict(),
            "obs_width": self.obs_width,
            "num_actions": self.num_actions,
            "hidden": hidden,
            "epsilon": self.epsilon,
            "seed": self.seed,
        }

    @classmethod
    def from_payload(cls, meta: PolicyMeta, payload: dict[str, Any]) -> ValueDecompPolicy:
        qnet = build_checked(  # sizes come from the file: dry run first
            lambda: AgentQNetwork(
                payload["obs_width"], len(meta.agents), payload["num_actions"], payload["hidden"]
            ),
            payload["qnet"], "q-network")
        return cls(meta, qnet, payload["epsilon"], payload["seed"])


# --------------------------------------------------------------------------------- learner
VALUE_DECOMP_CAPABILITIES = Capabilities(
    discrete=True, continuous=False, on_policy=False, turn_based=True, centralized_critic=True,
    team=True, partial_seats=True,
)


def _mixer_preset(mixer: str) -> Callable[[ValueDecompConfig], ValueDecompConfig]:
    def preset(cfg: ValueDecompConfig) -> ValueDecompConfig:
        return cfg if cfg.mixer == mixer else dataclasses.replace(cfg, mixer=mixer)

    return preset


@register_learner("qmix", config=ValueDecompConfig, policy="qmix",
                  capabilities=VALUE_DECOMP_CAPABILITIES,
                  default=lambda: ValueDecompConfig(mixer="qmix"), preset=_mixer_preset("qmix"))
@register_learner("vdn", config=ValueDecompConfig, policy="vdn",
                  capabilities=VALUE_DECOMP_CAPABILITIES,
                  default=lambda: ValueDecompConfig(mixer="vdn"), preset=_mixer_preset("vdn"))
class ValueDecomp(Learner):
    """VDN or QMIX (``config.mixer``) for the cooperative seats ``agents`` of a game.

    Example::

        vg = VectorGame("matrix/climbing", num_envs=8, with_state=True)
        learner = ValueDecomp(vg.spec, ValueDecompConfig(mixer="qmix"))
        train(learner, vg, frames=20_000)
        learner.policy().save("qmix.pt")
    """

    CAPABILITIES = VALUE_DECOMP_CAPABILITIES

    def __init__(
        self,
        spec: GameSpec,
        config: ValueDecompConfig | None = None,
        agents: Sequence[str] | None = None,
        device: str | torch.device = "cpu",
        seed: int | None = None,
    ) -> None:
        """``seed`` (None: ``config.seed``) seeds the weights and the learner's own streams."""
        cfg = config or ValueDecompConfig()
        if seed is not None and seed != cfg.seed:
            cfg = dataclasses.replace(cfg, seed=seed)
        self.cfg = cfg
        cfg.validate()
        name = cfg.mixer.upper()
        self.spec = spec
        self.agents = check_agents(spec, agents, name)
        self.CAPABILITIES.check(spec, self.agents, name)
        self.device = resolve_device(device)
        self.stack = AgentStacker(spec, self.agents, self.device, cfg.state_input, cfg.team_reward)
        self.still_in = StillIn(self.stack)
        self.uses_state = cfg.mixer == "qmix"
        A, O, N = len(self.agents), self.stack.obs_width, self.stack.num_actions
        # seats of several teams (a league member plays every side): one Q_tot per team
        teams = [spec.agent(a).team for a in self.agents]
        team_A = [list(dict.fromkeys(teams)).index(t) for t in teams]
        G = max(team_A) + 1
        self.team_AG = F.one_hot(torch.tensor(team_A), G).bool().to(self.device)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            self.qnet = AgentQNetwork(O, A, N, cfg.hidden).to(self.device)
            S = self.stack.state_width
            self.mixer = (MIXERS[cfg.mixer](A, S, cfg) if G == 1
                          else TeamMixer(team_A, S, cfg)).to(self.device)
        self.target_qnet = copy.deepcopy(self.qnet).requires_grad_(False)
        self.target_mixer = copy.deepcopy(self.mixer).requires_grad_(False)
        self.params = [*self.qnet.parameters(), *self.mixer.parameters()]
        self.optimizer = Adam(self.params, lr=cfg.lr)
        fields = {
            "obs": ((A, O), torch.float32),
            "action": ((A,), torch.int64),
            "acting": ((A,), torch.bool),
            "seated": ((A,), torch.bool),  # the learner held the seat (Learner.seat_mask)
            "reward": (() if G == 1 else (G,), torch.float32),  # team reward(s)
            "next_obs": ((A, O), torch.float32),
            "next_acting": ((A,), torch.bool),
            "next_legal": ((A, N), torch.bool),
            "terminal": ((), torch.float32),
        }
        if self.uses_state:
            S = self.stack.state_width
            fields |= {"state": ((S,), torch.float32), "next_state": ((S,), torch.float32)}
        self.buffer = ReplayBuffer(cfg.buffer_size, fields, self.device)
        self.act_gen = torch.Generator().manual_seed(cfg.seed + 1)
        self.sample_gen = torch.Generator().manual_seed(cfg.seed + 2)
        self.frames = self.updates = self.steps_since_update = 0
        self.gradient_steps = 0  # TD gradient steps over all updates (cfg.gradient_steps each)
        self._copies = 0  # copies of the last step observed (gradient_steps="auto"; 0: none
        # yet, the settings' warnings are due)
        self._pending: dict[str, Tensor] | None = None
        # turn-based: each team's transition spans the other teams' turns
        self.turns = None if spec.simultaneous else TeamTurns(self.team_AG)
        self.seat_mask: np.ndarray | None = None
        self.guard = FiniteGuard(spec.name, self.agents)  # NaN/inf stop training

    @property
    def epsilon(self) -> float:
        """ε now: linear from ``eps_start`` to ``eps_end`` over ``eps_decay_frames``."""
        cfg = self.cfg
        frac = min(1.0, self.frames / max(1, cfg.eps_decay_frames))
        return cfg.eps_start + frac * (cfg.eps_end - cfg.eps_start)

    # ----------------------------------------------------------------- acting / data
    @torch.no_grad()
    def act(self, vs: VecStep, greedy: bool = False) -> dict[str, np.ndarray]:
        """ε-greedy actions of every controlled agent (``greedy``: no exploration, no record)."""
        obs_BAO, legal_BAN = self.stack.obs(vs.obs), self.stack.legal(vs)
        q_BAN = self.qnet(obs_BAO)
        actions_BA = epsilon_greedy(q_BAN, legal_BAN, 0.0 if greedy else self.epsilon, self.act_gen)
        if not greedy:
            seated_BA = seated(self.seat_mask, obs_BAO.shape[0], len(self.agents), self.device)
            self._pending = {"obs": obs_BAO, "action": actions_BA, "seated": seated_BA,
                             "acting": self.stack.acting(vs) & seated_BA}
            if self.uses_state:
                self._pending["state"] = self.stack.state(vs)
            if self.turns is not None:
                self.turns.start(self._pending)
        out = actions_BA.cpu().numpy()
        return {a: out[:, i] for i, a in enumerate(self.agents)}

    def start_episodes(self) -> None:
        """Drop the half-transition of the last ``act`` (its games are gone)."""
        self._pending = None
        self.still_in.clear()
        if self.turns is not None:
            self.turns.clear()

    def observe(self, vs: VecStep) -> None:
        """Store the copies' transitions; copies where the learner holds none of its seats
        (another policy played them all) are not stored, and a seat another policy held is
        masked out of its team's value (``seated``). In a turn-based game a team's
        transition is stored when the team acts again or its episode ends
        (:class:`~marl.replay.TeamTurns`)."""
        if self._pending is None:
            raise RuntimeError("observe() called without a preceding act()")
        rewards_BA = self.stack.rewards(vs)
        # where the episode ended, only the agents still in it bootstrap (a truncated
        # episode): those that had not left it (acting or waiting a step) and did not leave
        # by the rules at this step
        nxt = self.stack.next_fields(vs, with_state=self.uses_state,
                                     still=self.still_in.mask(len(vs.done)))
        self.still_in.step(vs)
        p = self._pending
        self.guard.data(self.frames, per_agent={"reward": rewards_BA, "observation": p["obs"],
                                                "next observation": nxt["next_obs"]},
                        shared={"global state": p.get("state"),
                                "next global state": nxt.get("next_state")})
        team_BG = torch.stack([self.stack.team(rewards_BA[:, col])
                               for col in self.team_AG.T], -1)
        if self.turns is not None:  # turn-based: the teams' transitions that ended now
            done_B = torch.as_tensor(vs.done, device=self.device)
            rows = self.turns.finish(team_BG, nxt, self.stack.acting(vs), done_B)
            if rows is not None:
                self.buffer.add(rows)
        else:
            nxt["next_acting"] = nxt["next_acting"] & p["seated"]
            row = {**p, "reward": team_BG[:, 0] if team_BG.shape[1] == 1 else team_BG, **nxt}
            keep_B = p["seated"].any(1)
            if not bool(keep_B.all()):
                row = {k: v[keep_B] for k, v in row.items()}
            self.buffer.add(row)
        self._pending = None
        if not self._copies:  # the first step: settings that waste most of the copies' frames
            for note in replay_warnings(self.cfg.mixer, self.cfg, int(vs.done.shape[0])):
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
    def steps_per_update(self) -> int:
        """TD gradient steps of the next update: ``cfg.gradient_steps``, or for ``"auto"``
        enough minibatches to sample about as many transitions as the copies played frames
        since the last update (:func:`marl.configs.gradient_steps_per_update`)."""
        cfg = self.cfg
        return gradient_steps_per_update(cfg.gradient_steps, self._copies, cfg.train_every,
                                         cfg.batch_size)

    def update(self) -> dict[str, float]:
        """:meth:`steps_per_update` TD gradient steps, each on its own replay minibatch and
        followed by the target-network update; losses are their means."""
        steps = [self._td_step() for _ in range(self.steps_per_update())]
        self.updates += 1
        self.steps_since_update = 0
        return {
            **{k: float(torch.stack([s[k] for s in steps]).mean()) for k in steps[0]},
            "charts/epsilon": self.epsilon,
            "charts/buffer_size": float(len(self.buffer)),
            "charts/updates": float(self.updates),
            "charts/gradient_steps": float(self.gradient_steps),
        }

    def _td_step(self) -> dict[str, Tensor]:
        """One TD gradient step on a replay minibatch, then the target-network update; its
        losses as 0-d tensors (read once per update)."""
        cfg = self.cfg
        b = self.buffer.sample(cfg.batch_size, self.sample_gen)
        state, next_state = b.get("state"), b.get("next_state")

        q_BAN = self.qnet(b["obs"])
        q_taken_BA = q_BAN.gather(-1, b["action"][..., None])[..., 0] * b["acting"]
        q_tot_BG = mix_teams(self.mixer, q_taken_BA, state)
        B, G = q_tot_BG.shape
        with torch.no_grad():
            next_target_BAN = self.target_qnet(b["next_obs"])
            chooser_BAN = self.qnet(b["next_obs"]) if cfg.double_q else next_target_BAN
            next_a_BA = masked_logits(chooser_BAN, b["next_legal"]).argmax(-1)
            next_q_BA = next_target_BAN.gather(-1, next_a_BA[..., None])[..., 0]
            next_tot_BG = mix_teams(self.target_mixer, next_q_BA * b["next_acting"], next_state)
            alive_B1 = (1.0 - b["terminal"])[:, None]
            target_BG = b["reward"].reshape(B, G) + cfg.gamma * alive_B1 * next_tot_BG
        td_BG = q_tot_BG - target_BG
        per_sample_BG = (
            td_BG.pow(2)
            if cfg.loss == "mse"
            else F.smooth_l1_loss(q_tot_BG, target_BG, reduction="none")
        )
        weight_BG = torch.where(td_BG > 0, cfg.optimistic_weight, 1.0)
        # a team value is trained only where the learner held that team's seats
        held_BG = (b["seated"][:, :, None] & self.team_AG[None]).any(1).to(td_BG.dtype)
        loss = (weight_BG.detach() * per_sample_BG * held_BG).sum() / held_BG.sum().clamp(min=1)
        n_held = held_BG.sum().clamp(min=1)

        def held_mean(x_BG: Tensor) -> Tensor:  # metrics over the team values trained on
            return (x_BG.detach() * held_BG).sum() / n_held

        self.guard.scalar(self.frames, "TD loss", loss)
        self.optimizer.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(self.params, cfg.max_grad_norm)
        self.guard.scalar(self.frames, "gradient norm", grad_norm)
        self.optimizer.step()
        self.gradient_steps += 1
        self._update_targets()
        return {
            "losses/td_loss": loss.detach(),
            "losses/q_tot": held_mean(q_tot_BG),
            "losses/q_values": q_taken_BA.detach().sum() / b["acting"].sum().clamp(min=1),
            "losses/target": held_mean(target_BG),
            "losses/abs_td_error": held_mean(td_BG.abs()),
            "losses/grad_norm": grad_norm.detach(),
        }

    @torch.no_grad()
    def _update_targets(self) -> None:
        pairs = ((self.qnet, self.target_qnet), (self.mixer, self.target_mixer))
        if self.cfg.target_update == "polyak":
            for online, target in pairs:
                for p, tp in zip(online.parameters(), target.parameters(), strict=True):
                    tp.lerp_(p, self.cfg.tau)
        elif self.gradient_steps % self.cfg.target_update_interval == 0:
            for online, target in pairs:
                target.load_state_dict(online.state_dict())

    # ----------------------------------------------------------------- snapshots
    def policy(self, epsilon: float | None = None) -> ValueDecompPolicy:
        """Snapshot acting ε-greedily with ``epsilon`` (default: the learner's ε now)."""
        meta = PolicyMeta.from_spec(
            self.cfg.mixer,
            self.spec,
            self.agents,
            step=self.updates,
            extra={"config": dataclasses.asdict(self.cfg)},
        )
        eps = self.epsilon if epsilon is None else epsilon
        return ValueDecompPolicy(meta, copy.deepcopy(self.qnet), eps, self.cfg.seed)

    def state_dict(self) -> dict[str, Any]:
        """Weights, targets, optimizer, counters, RNG streams and (optionally) the replay."""
        return {
            "config": dataclasses.asdict(self.cfg),
            "agents": list(self.agents),
            "qnet": self.qnet.state_dict(),
            "mixer": self.mixer.state_dict(),
            "target_qnet": self.target_qnet.state_dict(),
            "target_mixer": self.target_mixer.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "counters": [self.frames, self.updates, self.steps_since_update, self.gradient_steps,
                         self._copies],
            "act_gen": self.act_gen.get_state(),
            "sample_gen": self.sample_gen.get_state(),
            "buffer": self.buffer.state_dict() if self.cfg.checkpoint_buffer else None,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("agents") != list(self.agents) or state["config"]["mixer"] != self.cfg.mixer:
            raise CheckpointError(
                f"checkpoint is for {state['config']['mixer']} on seats {state.get('agents')}; "
                f"this learner is {self.cfg.mixer} on {list(self.agents)}"
            )
        refuse_nonfinite(state, "learner state")  # a file's: NaN weights act on NaN values
        for key in ("qnet", "mixer", "target_qnet", "target_mixer"):
            getattr(self, key).load_state_dict(state[key])
        load_optimizer_state(self.optimizer, state["optimizer"], "optimizer")  # torch's: unchecked
        counters = [int(c) for c in state["counters"]]
        # a checkpoint from before gradient_steps: one gradient step per update; from before
        # the copies were kept: 0 (read, and warned of, at the next step)
        counters += [counters[1], 0][len(counters) - 3:]
        (self.frames, self.updates, self.steps_since_update, self.gradient_steps,
         self._copies) = counters
        self.act_gen.set_state(state["act_gen"])
        self.sample_gen.set_state(state["sample_gen"])
        if state.get("buffer") is not None:
            # a checkpoint from before seat masks: the learner held every seat
            self.buffer.load_state_dict(state["buffer"], missing={"seated": True})
        self.start_episodes()  # open transitions belong to games that are gone
