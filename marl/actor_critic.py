"""Actor and critic networks of the PPO family (MAPPO / IPPO), and their frozen policy.

Parameter sharing is by *seat group*: ``share="all"`` puts every controlled agent in one
group (one network, with a seat one-hot), ``"role"`` one group per role (speaker vs
listener, adversary vs good), ``"agent"`` one network per agent. Observations of a group
are zero-padded to its widest member.

Actor encoders: ``mlp`` on the agent's observation (+ seat one-hot), ``gnn`` on the
entity graph seen from the agent (no one-hot, so it runs at any number of agents), or one
registered by ``marl.encoders.register_encoder``, given the ``mlp``'s input rows and
returning the features the head takes.
Critic inputs (``critic=``): ``local`` (own observation: IPPO), ``state`` (the game's
global state + seat one-hot: MAPPO), ``concat`` (all agents' observations + one-hot) or
``gnn`` (entity graph from the agent's node). With ``value="shared"`` (state or concat
only) a group's critic drops the one-hot and computes one value per copy and step, given
to every seat of the group (BenchMARL's MAPPO critic: torchrl's centralized
``MultiAgentMLP``), so it runs once per copy instead of once per seat.

With ``recurrent=True`` (rMAPPO) both networks become encoder → MLP → GRU → linear head,
the GRU's hidden state kept per (copy, agent) (``marl.recurrent``); the learner and the
frozen :class:`PPOPolicy` then act through ``step`` and train through ``unroll``.

Actions: a discrete seat group's head gives masked logits ``[M, N]`` (a categorical
policy); a continuous one's (a 1-D box of width ``D``) gives the mean ``[M, D]`` of a
diagonal Gaussian in unit coordinates, with a learned state-independent log standard
deviation per dimension (``log_std``, starting at :data:`LOG_STD_INIT`), as CleanRL's
``ppo_continuous_action`` and the MAPPO paper's ``DiagGaussian``. A sample is stored as
drawn (its log-probability is the Gaussian's, summed over dimensions) and *clipped* to
``[-1, 1]`` only on its way to the game, where ``[-1, 1]`` maps affinely onto the box
``[low, high]``, each dimension onto its own bounds where the game gives them per dimension
(:meth:`Actor.to_game`); the greedy action is the clipped mean. Entropy
is the Gaussian's, summed over dimensions.

Shape legend: ``B`` copies, ``A`` controlled agents, ``M`` samples, ``O`` obs width,
``N`` actions (``D``: box width), ``C`` critic input width, ``V`` nodes, ``F`` node
features, ``H`` GRU width, ``L`` rows of a chunk, ``S`` sequences.
"""

from __future__ import annotations

import abc
import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from games import ActionSpace, GameSpec, VecStep
from marl.configs import (  # noqa: F401 - re-exported: the choices' old home
    CRITICS,
    ENCODERS,
    INITS,
    SHARING,
    VALUES,
    NetConfig,  # the settings, torch-free (selfplay-train checks them early)
)
from marl.core import (
    Policy,
    PolicyLoadError,
    PolicyMeta,
    build_checked,
    derive_seed,
    register_policy,
)
from marl.gnn import GraphEncoder
from marl.networks import FastTanh, config_tensor, masked_logits, mlp, one_hot_seats
from marl.recurrent import GRUCore, PolicyMemory, episode_starts

if TYPE_CHECKING:
    from marl.encoders import UserEncoder


@dataclass(frozen=True)
class SeatGroup:
    """Agents sharing one network; ``cols`` are their columns among controlled agents."""

    name: str
    agents: tuple[str, ...]
    cols: tuple[int, ...]
    obs_dim: int
    num_actions: int  # N actions, or the box width D of a continuous group
    continuous: bool = False
    low: float | tuple[float, ...] = 0.0  # the box of a continuous group: one number for
    high: float | tuple[float, ...] = 1.0  # every dimension, or D numbers (one per dimension)


# A continuous actor's log standard deviation at the start: std 0.5 in unit coordinates
# (the box is [-1, 1] there), so ~95 % of the first samples around a mean near 0 land
# inside the box and the clip barely biases them; CleanRL's 0 (std 1) clips ~32 %.
LOG_STD_INIT = math.log(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def gaussian_log_prob(mean_MD: torch.Tensor, log_std_D: torch.Tensor,
                      action_MD: torch.Tensor) -> torch.Tensor:
    """``[M]`` log-density of ``action_MD`` under the diagonal Gaussian ``N(mean, exp(log_std)²)``,
    summed over the ``D`` dimensions."""
    z = (action_MD - mean_MD) * torch.exp(-log_std_D)
    return (-0.5 * z.pow(2) - log_std_D - _LOG_SQRT_2PI).sum(-1)


def gaussian_entropy(log_std_D: torch.Tensor, M: int) -> torch.Tensor:
    """``[M]`` entropy of a diagonal Gaussian (state-independent: the same for every sample)."""
    return (0.5 + _LOG_SQRT_2PI + log_std_D).sum().expand(M)


def space_key(space: Any) -> tuple:
    """What seats must have in common to share one network's action head: a box's bounds
    as :meth:`games.ActionSpace.box` keeps them (one float each where every dimension
    shares it, else a tuple of D floats)."""
    if space.discrete:
        return ("discrete", space.n)
    box = ActionSpace.box(space.shape, *space.bounds())
    return ("continuous", tuple(space.shape), box.low, box.high)


def seat_groups(spec: GameSpec, agents: tuple[str, ...], share: str) -> list[SeatGroup]:
    """Split controlled ``agents`` into parameter-sharing groups (see module docstring)."""
    keys = {
        "all": lambda a: "all",
        "role": lambda a: spec.agent(a).role,
        "agent": lambda a: a,
    }[share]
    order: dict[str, list[str]] = {}
    for a in agents:
        order.setdefault(keys(a), []).append(a)
    groups = []
    for name, members in order.items():
        for a in members:
            sp = spec.action_spaces[a]
            if not sp.discrete and len(sp.shape) != 1:
                raise ValueError(f"{spec.name}: PPO learners need 1-D action boxes; {a} has "
                                 f"shape {sp.shape}")
        keys_ = {space_key(spec.action_spaces[a]) for a in members}
        if len(keys_) > 1:
            said = sorted(f"{k[1]} actions" if k[0] == "discrete"
                          else f"boxes {k[1]} in [{k[2]}, {k[3]}]" for k in keys_)
            others = " or ".join(f"share={o!r}" for o in ("role", "agent") if o != share)
            raise ValueError(f"share={share!r} puts agents with {said} in one network; "
                             f"use {others}")
        sp, key = spec.action_spaces[members[0]], keys_.pop()
        groups.append(
            SeatGroup(
                name=name,
                agents=tuple(members),
                cols=tuple(agents.index(a) for a in members),
                obs_dim=max(int(np.prod(spec.obs_shapes[a])) for a in members),
                num_actions=sp.n if sp.discrete else int(sp.shape[0]),
                continuous=not sp.discrete,
                low=0.0 if sp.discrete else key[2],
                high=1.0 if sp.discrete else key[3],
            )
        )
    return groups


def pad_obs(vs: VecStep, agents: tuple[str, ...], width: int, final: bool = False) -> np.ndarray:
    """``[B, len(agents), width]`` observations, zero-padded to ``width``."""
    src = vs.final_obs if final else vs.obs
    B = vs.done.shape[0]
    if isinstance(vs.done, torch.Tensor):  # a natively batched game: stay on its device
        out = torch.zeros(B, len(agents), width, device=vs.done.device)
    else:
        out = np.zeros((B, len(agents), width), np.float32)
    for i, a in enumerate(agents):
        o = src[a].reshape(B, -1)  # observations of any shape, flattened per copy
        out[:, i, : o.shape[1]] = o
    return out


class _PPONet(nn.Module, abc.ABC):
    """Encoder, then an MLP head (feed-forward) or MLP → GRU → linear head (recurrent).

    Subclasses build their encoder, call ``_heads`` and define ``encode`` and ``_out``.
    """

    rnn: GRUCore | None

    def _heads(self, net: NetConfig, in_dim: int, out_dim: int, gain: float) -> None:
        act = FastTanh if net.fast_tanh else nn.Tanh  # no parameters: same state_dict
        ortho = net.init == "orthogonal"
        if not net.recurrent:
            self.rnn = None
            self.head = mlp(in_dim, net.hidden, out_dim, act, out_gain=gain, orthogonal=ortho)
            return
        if net.hidden:
            body = mlp(in_dim, net.hidden[:-1], net.hidden[-1], act, out_gain=2**0.5,
                       orthogonal=ortho)
            self.body, in_dim = nn.Sequential(*body, act()), net.hidden[-1]
        else:
            self.body = nn.Identity()
        self.rnn = GRUCore(in_dim, net.rnn_hidden)
        self.head = mlp(net.rnn_hidden, (), out_dim, out_gain=gain, orthogonal=ortho)

    @abc.abstractmethod
    def encode(self, x: dict[str, torch.Tensor]) -> torch.Tensor:
        """``[M, F]`` features of the network's input (observation, critic input or graph)."""

    @abc.abstractmethod
    def _out(self, y: torch.Tensor, x: dict[str, torch.Tensor]) -> torch.Tensor:
        """The head's output ``y`` turned into logits (masked) or values."""

    def forward(self, x: dict[str, torch.Tensor]) -> torch.Tensor:
        """Feed-forward networks: outputs of ``M`` independent samples."""
        if self.rnn is not None:
            raise RuntimeError("a recurrent network acts through step() and trains through "
                               "unroll()")
        return self._out(self.head(self.encode(x)), x)

    def step(
        self, x: dict[str, torch.Tensor], h_MH: torch.Tensor, start_M: torch.Tensor,
        move_M: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Recurrent: outputs of one step and the next hidden state (``GRUCore.step``)."""
        y, h_next = self.rnn.step(self.body(self.encode(x)), h_MH, start_M, move_M)
        return self._out(self.head(y), x), h_next

    def unroll(
        self, x: dict[str, torch.Tensor], h0_SH: torch.Tensor, start_LS: torch.Tensor,
        move_LS: torch.Tensor, need_LS: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Recurrent: outputs ``[L*S, ...]`` of S sequences whose inputs ``x`` are
        flattened time-major (row ``t * S + s``); the encoder runs on all rows at once, or
        only on the rows ``need_LS`` holds (the others' outputs are then meaningless: rows
        where the GRU does not move and whose output nobody reads, e.g. chunk padding and
        other seats' turns, which are most rows of a turn-based game)."""
        L, S = start_LS.shape
        if need_LS is None:
            z = self.body(self.encode(x))
        else:
            idx = need_LS.reshape(-1).nonzero().squeeze(1)
            z_N = self.body(self.encode({k: v.index_select(0, idx) for k, v in x.items()}))
            z = z_N.new_zeros(L * S, z_N.shape[-1]).index_copy(0, idx, z_N)
        y = self.rnn.unroll(z.reshape(L, S, -1), h0_SH, start_LS, move_LS)
        return self._out(self.head(y.reshape(L * S, -1)), x)


def graph_encoder(net: NetConfig, node_dim: int) -> GraphEncoder:
    """The GNN encoder of an actor or a critic, with ``net``'s tanh kernel."""
    return GraphEncoder(node_dim, net.gnn_hidden, net.gnn_layers, net.gnn_heads, net.gnn_layer,
                        net.graph_radius, FastTanh if net.fast_tanh else nn.Tanh)


class Actor(_PPONet):
    """Policy network of one seat group: logits ``[M, N]``, or a continuous group's
    Gaussian means ``[M, D]`` (with its ``log_std`` ``[D]``; see the module docstring)."""

    def __init__(self, net: NetConfig, group: SeatGroup, node_dim: int) -> None:
        super().__init__()
        self.net, self.seats = net, len(group.agents)
        self.continuous = group.continuous
        # the MLP input's seat one-hot (width ``seats``), when the group shares one network
        # (a registered encoder gets the same rows)
        self.one_hot = self.seats > 1 and net.seat_id and net.encoder != "gnn"
        self.encoder: UserEncoder | None = None
        if net.encoder == "gnn":
            self.graph = graph_encoder(net, node_dim)
            in_dim = self.graph.out_dim
        else:
            in_dim = group.obs_dim + (self.seats if self.one_hot else 0)
        if net.encoder not in ENCODERS:  # registered: its features feed the head
            from marl.encoders import UserEncoder

            self.encoder = UserEncoder(net, in_dim)
            in_dim = self.encoder.out_dim
        self._heads(net, in_dim, group.num_actions, 0.01)
        if self.continuous:  # created after the head: a discrete actor's weights are as before
            self.log_std = nn.Parameter(torch.full((group.num_actions,), LOG_STD_INIT))
            # the box [D] each, on the actor's device; not saved with the weights (the
            # payload's group holds it). The half width is taken in float64 and rounded once,
            # as a number bound was before: the same actions as then
            D = group.num_actions
            low, high = (np.broadcast_to(np.asarray(v, np.float64), (D,))
                         for v in (group.low, group.high))
            for name, v in (("low_D", low), ("high_D", high), ("half_D", 0.5 * (high - low))):
                self.register_buffer(name, config_tensor(v, torch.float32), persistent=False)

    def encode(self, x: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.net.encoder == "gnn":
            return self.graph(x["graph"], x["ego"])
        if "obs_seat" in x:  # built once per update (marl.mappo_update), not per minibatch
            rows = x["obs_seat"]
        elif self.one_hot:
            rows = torch.cat([x["obs"], one_hot_seats(x["seat"], self.seats)], -1)
        else:
            rows = x["obs"]
        return rows if self.encoder is None else self.encoder(rows)

    def _out(self, y: torch.Tensor, x: dict[str, torch.Tensor]) -> torch.Tensor:
        return y if self.continuous else masked_logits(y, x.get("legal"))

    def sample(self, out: torch.Tensor, gen: torch.Generator,
               greedy: bool = False) -> torch.Tensor:
        """Actions drawn from the head's output ``out``: ``[M]`` ids (categorical) or
        ``[M, D]`` unclipped unit-coordinate vectors (Gaussian); ``greedy``: the mode."""
        if self.continuous:
            if greedy:
                return out
            noise = torch.randn(out.shape, generator=gen, device=out.device)
            return out + torch.exp(self.log_std) * noise
        if greedy:
            return out.argmax(-1)
        return torch.multinomial(torch.softmax(out, -1), 1, generator=gen).squeeze(-1)

    def log_prob(self, out: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """``[M]`` log-probabilities of ``action`` (as :meth:`sample` draws them) at ``out``."""
        if self.continuous:
            return gaussian_log_prob(out, self.log_std, action)
        return torch.log_softmax(out, -1).gather(-1, action[:, None]).squeeze(-1)

    def log_prob_entropy(self, out: torch.Tensor,
                         action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``[M]`` log-probabilities of ``action`` (``[M]`` ids or ``[M, D]`` vectors as
        :meth:`sample` draws them) and ``[M]`` entropies of the policy at ``out``."""
        if self.continuous:
            return (gaussian_log_prob(out, self.log_std, action),
                    gaussian_entropy(self.log_std, out.shape[0]))
        logp_all = torch.log_softmax(out, -1)
        return (logp_all.gather(-1, action[:, None]).squeeze(-1),
                -(logp_all.exp() * logp_all).sum(-1))

    def to_game(self, action: torch.Tensor) -> torch.Tensor:
        """Game actions: ids as they are; a continuous sample ``[M, D]`` clipped to
        ``[-1, 1]`` and mapped onto the box, each dimension onto its own ``[low, high]``
        (float32)."""
        if not self.continuous:
            return action
        unit = action.clamp(-1.0, 1.0)
        box = self.low_D + (unit + 1.0) * self.half_D
        return torch.minimum(torch.maximum(box, self.low_D), self.high_D).float()


class Critic(_PPONet):
    """Value network of one seat group: values ``[M]`` (normalized when value_norm)."""

    def __init__(self, net: NetConfig, in_dim: int, node_dim: int) -> None:
        super().__init__()
        self.net = net
        if net.critic == "gnn":
            self.graph = graph_encoder(net, node_dim)
            in_dim = self.graph.out_dim
        self._heads(net, in_dim, 1, 1.0)

    def encode(self, x: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.graph(x["graph"], x["ego"]) if self.net.critic == "gnn" else x["critic"]

    def _out(self, y: torch.Tensor, x: dict[str, torch.Tensor]) -> torch.Tensor:
        return y.squeeze(-1)


def critic_width(net: NetConfig, spec: GameSpec, agents: tuple[str, ...], obs_dim: int) -> int:
    """Width of the vector critic input (0 for the gnn critic)."""
    seat = 0 if net.value == "shared" else len(agents)
    if net.critic == "state":
        if spec.state_shape is None:
            raise ValueError(f"critic='state' but {spec.name} has no global state; use 'concat'")
        return int(np.prod(spec.state_shape)) + seat
    if net.critic == "concat":
        return sum(int(np.prod(spec.obs_shapes[a])) for a in spec.agent_ids) + seat
    if net.critic == "local":
        return obs_dim + seat
    return 0


def critic_inputs(
    net: NetConfig, spec: GameSpec, agents: tuple[str, ...], obs_BAO: np.ndarray, vs: VecStep,
    final: bool = False,
) -> np.ndarray | None:
    """``[B, A, C]`` vector critic inputs for every controlled agent (None for gnn);
    ``value="shared"``: no seat one-hot, so every agent of a copy has the same input."""
    if isinstance(obs_BAO, torch.Tensor):
        return _critic_inputs_tensor(net, spec, obs_BAO, vs, final)
    B, A = obs_BAO.shape[:2]
    seat_BAA = np.broadcast_to(np.eye(A, dtype=np.float32), (B, A, A))
    if net.critic == "state":
        state = vs.final_state if final else vs.state
        if state is None:
            raise ValueError("critic='state' needs a VectorGame built with with_state=True")
        state = state.reshape(B, -1)
        base = np.broadcast_to(state[:, None, :], (B, A, state.shape[1]))
    elif net.critic == "concat":
        src = vs.final_obs if final else vs.obs
        joint = np.concatenate([src[a].reshape(B, -1) for a in spec.agent_ids], axis=1)
        base = np.broadcast_to(joint[:, None, :], (B, A, joint.shape[1]))
    elif net.critic == "local":
        base = obs_BAO
    else:
        return None
    if net.value == "shared":
        return np.ascontiguousarray(base)
    return np.concatenate([base, seat_BAA], axis=-1)


def _critic_inputs_tensor(net: NetConfig, spec: GameSpec, obs_BAO: torch.Tensor, vs: VecStep,
                          final: bool) -> torch.Tensor | None:
    """:func:`critic_inputs` of a tensor VecStep, on its device."""
    B, A = obs_BAO.shape[:2]
    if net.critic == "state":
        state = vs.final_state if final else vs.state
        if state is None:
            raise ValueError("critic='state' needs a VectorGame built with with_state=True")
        state = state.reshape(B, -1)
        base = state[:, None, :].expand(B, A, state.shape[1])
    elif net.critic == "concat":
        src = vs.final_obs if final else vs.obs
        joint = torch.cat([src[a].reshape(B, -1) for a in spec.agent_ids], 1)
        base = joint[:, None, :].expand(B, A, joint.shape[1])
    elif net.critic == "local":
        base = obs_BAO
    else:
        return None
    if net.value == "shared":
        return base
    seat = torch.eye(A, device=obs_BAO.device).expand(B, A, A)
    return torch.cat([base, seat], -1)


def _box_value(v: float | tuple[float, ...]) -> float | list[float]:
    """A box bound as a payload saves it: a number (as every snapshot before per-dimension
    bounds), or a list of D numbers."""
    return list(v) if isinstance(v, tuple) else v


def _box_array(v: Any, D: Any) -> np.ndarray | None:
    """``[D]`` float64 values of a box bound read from a file (one finite real number, or a
    list or tuple of ``D`` of them); None for anything else."""
    def real(x: Any) -> bool:
        return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)

    if type(D) is not int or D < 1:
        return None
    if real(v):
        return np.full(D, float(v))
    if isinstance(v, (list, tuple)) and len(v) == D and all(real(x) for x in v):
        return np.array([float(x) for x in v])
    return None


def _payload_group(g: dict[str, Any], meta: PolicyMeta) -> SeatGroup:
    """A snapshot's seat group, every field untrusted: its kind must be a bool and, for each
    of its seats, the kind and size of the metadata's action space (which selfplay-eval
    checks against the game); a continuous group's box must be finite numbers (one, or one
    per dimension) with ``low < high`` in every dimension, equal to that space's (a number
    and a list of that number agree). Raises a one-line ``PolicyLoadError`` naming the
    field (``load_policy`` adds the file)."""
    where = f"mappo group {g['name']!r:.40}"
    continuous = g.get("continuous", False)  # a discrete group's payload has none
    if type(continuous) is not bool:
        raise PolicyLoadError(f"{where} field 'continuous' is {continuous!r:.40}; accepted: "
                              "true or false")
    agents, size = tuple(g["agents"]), g["num_actions"]
    box: dict[str, float | tuple[float, ...]] = {}
    for field in ("low", "high") if continuous else ():
        if field not in g:
            raise PolicyLoadError(f"{where} field {field!r} is missing")
        v = g[field]
        if type(v) in (int, float) and math.isfinite(v):
            box[field] = float(v)  # every dimension's (every snapshot before per-dimension ones)
        elif _box_array(v, size) is not None:
            box[field] = tuple(float(x) for x in v)
        else:
            raise PolicyLoadError(f"{where} field {field!r} is {v!r:.40}; accepted: a finite "
                                  f"number, or {size!r:.20} finite numbers (one per dimension)")
    width = size if type(size) is int and size >= 1 else 1  # a bad size is named below
    if box and not np.all(_box_array(box["low"], width) < _box_array(box["high"], width)):
        raise PolicyLoadError(f"{where} fields low={box['low']}, high={box['high']}; accepted: "
                              "low < high" + (" in every dimension" if any(
                                  isinstance(v, tuple) for v in box.values()) else ""))
    for a in agents:
        if a not in meta.agents:
            raise PolicyLoadError(f"{where}: agent {a!r:.40} is not one of the policy's seats "
                                  f"{list(meta.agents)}")
        sp, said = meta.action_spaces[a], f"the metadata's action space of {a!r}"
        if (sp.get("kind") != "discrete") != continuous:
            raise PolicyLoadError(f"{where} field 'continuous' is {continuous} but {said} is "
                                  f"{sp['kind']:.20}")  # a str (PolicyMeta.from_dict)
        if not continuous and sp.get("n") != size:
            raise PolicyLoadError(f"{where} has {size!r:.20} actions but {said} has "
                                  f"n={sp.get('n')!r:.20}")
        if continuous and list(sp.get("shape", ())) != [size]:
            raise PolicyLoadError(f"{where} has box width {size!r:.20} but {said} has shape "
                                  f"{tuple(sp.get('shape', ()))}")
        for field, v in box.items():  # one number and the same number per dimension agree
            m = sp.get(field)
            recorded = _box_array(m, size)
            if recorded is None or not np.array_equal(recorded, _box_array(v, size)):
                raise PolicyLoadError(f"{where} field {field!r} is {v} but {said} has "
                                      f"{field}={m!r:.40}")
    return SeatGroup(g["name"], agents, tuple(g["cols"]), g["obs_dim"], size, continuous,
                     **box)


@register_policy("mappo")
class PPOPolicy(Policy):
    """Frozen actors of a MAPPO/IPPO learner; acts for its seats (or same-role seats).

    A recurrent policy keeps a GRU state per (copy, agent): it restarts where
    ``marl.recurrent.episode_starts`` says an episode began (``vs.done``, the agent's end
    flags, a fresh ``VectorGame.reset()``) and advances only in the copies where the agent
    acts. Use one policy object per stream of steps (``reset_state()`` starts over).
    """

    def __init__(
        self, meta: PolicyMeta, net: NetConfig, groups: list[SeatGroup], actors: nn.ModuleList,
        node_dim: int,
    ) -> None:
        self.meta, self.net, self.groups, self.node_dim = meta, net, groups, node_dim
        self.actors = actors.eval()
        self._where: dict[str, tuple[int, int]] = {}
        for g, grp in enumerate(groups):
            for i, a in enumerate(grp.agents):
                self._where[a] = (g, i)
        self._device = next(actors.parameters()).device
        self.memory = PolicyMemory(net.rnn_hidden, self._device) if net.recurrent else None
        self.gen = torch.Generator(device=self._device)  # sampling: the policy's own stream
        self.reseed(0)

    def reseed(self, seed: int) -> None:
        self.gen.manual_seed(derive_seed(seed, "ppo_policy"))

    def reset_state(self) -> None:
        """Forget every hidden state (a recurrent policy's next step starts from zeros)."""
        if self.memory is not None:
            self.memory.reset()

    def _locate(self, agent: str) -> tuple[int, int]:
        if agent in self._where:
            return self._where[agent]
        # Unseen seat (e.g. more agents than in training): a GNN actor of the same role.
        role = agent.rsplit("_", 1)[0]
        for g, grp in enumerate(self.groups):
            if self.net.encoder == "gnn" and any(r == role for r in self._roles(grp)):
                return g, 0
        raise ValueError(
            f"policy trained for seats {list(self._where)} cannot play {agent!r}"
        )

    def _check_shapes(self, agent: str, vs: VecStep) -> None:
        """One line when ``vs`` is not of the game this policy trained on for ``agent``: a
        narrower observation was padded up to the group's width (which is meant for seats of
        one group with different widths, each at its own recorded width) and played silently,
        a wider one failed in numpy's broadcast, another action count in torch."""
        meta = self.meta
        if agent not in meta.agents:
            return
        space = meta.action_space(agent)
        obs_ok = self.net.encoder == "gnn" or (  # sizes: it reads each row flat
            math.prod(vs.obs[agent].shape[1:]) == math.prod(meta.obs_shapes[agent]))
        legal = vs.legal.get(agent) if space.discrete else None
        if obs_ok and (legal is None or legal.shape[-1] == space.n):
            return
        got = (f"observation shape {tuple(vs.obs[agent].shape[1:])}"
               + (f", {legal.shape[-1]} actions" if legal is not None else ""))
        raise ValueError(
            f"the {meta.kind} policy for seat {agent!r} was trained on {meta.game} (observation "
            f"shape {tuple(meta.obs_shapes[agent])}"
            + (f", {space.n} actions" if space.discrete else "")
            + f") but is given {got}; play it on the game it was trained on")

    def _roles(self, grp: SeatGroup) -> list[str]:
        return [self.meta.roles[self.meta.agents.index(a)] for a in grp.agents]

    @torch.no_grad()
    def logits(self, agent: str, vs: VecStep) -> torch.Tensor:
        g, seat = self._locate(agent)
        grp, dev = self.groups[g], self._device
        x: dict[str, torch.Tensor] = {}
        B = vs.done.shape[0]
        self._check_shapes(agent, vs)
        if not grp.continuous:  # a box has no legal mask
            x["legal"] = torch.from_numpy(vs.legal[agent]).to(dev)
        if self.net.encoder == "gnn":
            if vs.graph is None or vs.agent_node is None:
                raise ValueError("a GNN policy needs a VectorGame built with with_graphs=True")
            x["graph"] = torch.from_numpy(vs.graph).to(dev)
            x["ego"] = torch.full((B,), vs.agent_node[agent], device=dev)
        else:
            obs = vs.obs[agent].reshape(B, -1)
            pad = np.zeros((obs.shape[0], grp.obs_dim), np.float32)
            pad[:, : obs.shape[1]] = obs
            x["obs"] = torch.from_numpy(pad).to(dev)
            x["seat"] = torch.full((obs.shape[0],), seat, device=dev)
        if self.memory is None:
            return self.actors[g](x)
        h = self.memory.before(agent, vs)  # [B, H]
        start = torch.from_numpy(episode_starts(vs, (agent,))[:, 0]).to(dev)
        move = torch.from_numpy(vs.acting[agent]).to(dev)
        logits, h_next = self.actors[g].step(x, h, start, move)
        self.memory.after(agent, vs, h, h_next)
        return logits

    def act(self, agent: str, vs: VecStep, greedy: bool = False) -> np.ndarray:
        """``[B]`` action ids, or ``[B, D]`` float32 actions inside a continuous box."""
        logits = self.logits(agent, vs)  # a continuous group's: the Gaussian's means
        actor = self.actors[self._locate(agent)[0]]
        with torch.no_grad():
            return actor.to_game(actor.sample(logits, self.gen, greedy)).cpu().numpy()

    def action_probs(self, agent: str, vs: VecStep) -> np.ndarray:
        if self.groups[self._locate(agent)[0]].continuous:
            raise NotImplementedError(
                f"{self.meta.kind} plays continuous actions of {agent!r}: a density, no "
                "action probabilities")
        return torch.softmax(self.logits(agent, vs), -1).cpu().numpy()

    def payload(self) -> dict[str, Any]:
        return {
            "net": {k: list(v) if isinstance(v, tuple) else v
                    for k, v in dataclasses.asdict(self.net).items()},
            "groups": [
                {"name": g.name, "agents": list(g.agents), "cols": list(g.cols),
                 "obs_dim": g.obs_dim, "num_actions": g.num_actions,
                 **({"continuous": True, "low": _box_value(g.low), "high": _box_value(g.high)}
                    if g.continuous else {})}  # a discrete group's payload as before
                for g in self.groups
            ],
            "node_dim": self.node_dim,
            "actors": {k: v.cpu() for k, v in self.actors.state_dict().items()},
            # the module that registered a user's encoder: quoted on a load that lacks it
            **({"encoder_module": self.actors[0].encoder.module}
               if self.net.encoder not in ENCODERS else {}),
        }

    @classmethod
    def from_payload(cls, meta: PolicyMeta, payload: dict[str, Any]) -> PPOPolicy:
        net_d = dict(payload["net"])
        net_d["hidden"] = tuple(net_d["hidden"])
        encoder = net_d.get("encoder", "mlp")
        if isinstance(encoder, str) and encoder not in ENCODERS:  # a user's: only from this
            from marl.encoders import snapshot_refusal  # process' registry

            why = snapshot_refusal(encoder, payload.get("encoder_module"))
            if why is not None:
                raise PolicyLoadError(why)
        net = NetConfig(**net_d)
        groups = [_payload_group(g, meta) for g in payload["groups"]]
        from marl.encoders import EncoderError

        try:
            actors = build_checked(  # sizes come from the file: dry run first
                lambda: nn.ModuleList(Actor(net, g, payload["node_dim"]) for g in groups),
                payload["actors"], "mappo actors")
        except EncoderError as err:  # the user's code, not the file: said as it is
            raise PolicyLoadError(str(err)) from err
        return cls(meta, net, groups, actors, payload["node_dim"])
