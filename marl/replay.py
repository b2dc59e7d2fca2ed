"""Replay memory and VecStep stacking shared by the off-policy learners (VDN, QMIX, MADDPG).

* :class:`ReplayBuffer` is a ring buffer of tensors on the learner's device: ``add`` writes
  a batch of B transitions with one indexed assignment per field, ``sample`` draws a
  minibatch with one ``torch.randint`` and tensor indexing (no per-sample Python loop).
* :class:`AgentStacker` turns the per-agent dicts of a :class:`games.VecStep` into tensors
  with an agent dimension (``obs [B, A, O]``), padding heterogeneous observation widths
  (and action counts) to the largest one, and builds the "next" half of a transition:
  ``final_obs`` / ``final_state`` / ``final_legal`` where a copy's episode ended (so truncated
  episodes bootstrap from their last observation, with its legal actions) and a ``terminal``
  flag that is set only when the episode ended by the rules, never by a time limit.
* :class:`TeamTurns` holds each team's open transition in a turn-based game, from the
  team's acting step to its next one (or the episode's end), rewards summed in between.

Shape legend: ``C`` capacity, ``B`` copies (envs), ``M`` minibatch, ``A`` agents,
``O`` observation width (padded), ``N`` discrete actions (padded), ``S`` global state width.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from games import GameSpec, VecStep
from marl.configs import STATE_INPUTS, TEAM_REWARDS, check_choice  # torch-free: the configs'

FieldSpec = tuple[tuple[int, ...], torch.dtype]


def check_agents(spec: GameSpec, agents: Sequence[str] | None, learner: str) -> tuple[str, ...]:
    """The controlled seats (all of them by default), validated against ``spec``."""
    agents = tuple(agents) if agents is not None else spec.agent_ids
    unknown = [a for a in agents if a not in spec.agent_ids]
    if unknown or not agents:
        raise ValueError(
            f"{learner}: agents {list(agents)} are not seats of {spec.name}; "
            f"seats: {list(spec.agent_ids)}"
        )
    return agents


class ReplayBuffer:
    """Fixed-capacity FIFO of transitions, stored as one tensor per field on ``device``.

    Args:
        capacity: C, the number of transitions kept (the oldest are overwritten).
        fields: ``{name: (trailing shape, dtype)}``; every ``add`` must give all of them.

    ``frames`` counts the frames (steps of one copy, whoever moved) played into this replay
    since it started, which the learner adds after every step: a learner's warm-up
    (``learning_starts``) counts them, not the transitions stored, which are fewer where a
    turn-based team stores one per own turn (:func:`warmed_up`).
    """

    def __init__(
        self, capacity: int, fields: Mapping[str, FieldSpec], device: torch.device | str = "cpu"
    ) -> None:
        if capacity < 1:
            raise ValueError(f"replay capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.device = torch.device(device)
        self.data: dict[str, Tensor] = {
            k: torch.zeros((capacity, *shape), dtype=dtype, device=self.device)
            for k, (shape, dtype) in fields.items()
        }
        self.pos = 0  # next row to write
        self.size = 0
        self.frames = 0  # frames played into this replay (the learner counts them)

    def __len__(self) -> int:
        return self.size

    def add(self, batch: Mapping[str, Tensor]) -> None:
        """Append ``B`` transitions: ``batch[field]`` is ``[B, *shape]``."""
        if set(batch) != set(self.data):
            raise ValueError(f"replay add: fields {sorted(batch)} != {sorted(self.data)}")
        n = next(iter(batch.values())).shape[0]
        keep = min(n, self.capacity)  # only the last C of an oversized batch survive
        rows = (self.pos + n - keep + torch.arange(keep, device=self.device)) % self.capacity
        for k, v in batch.items():
            self.data[k][rows] = v[n - keep :].to(self.device, self.data[k].dtype)
        self.pos = (self.pos + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, batch_size: int, generator: torch.Generator) -> dict[str, Tensor]:
        """``batch_size`` transitions drawn uniformly with replacement (``[M, *shape]``)."""
        if self.size == 0:
            raise ValueError("replay sample: the buffer is empty")
        idx_M = torch.randint(self.size, (batch_size,), generator=generator).to(self.device)
        return {k: v[idx_M] for k, v in self.data.items()}

    def state_dict(self) -> dict[str, Any]:
        """Contents and write position. The filled rows are copied: ``torch.save`` writes a
        view's whole storage, so a slice would put the full capacity in every checkpoint."""
        data = {k: v[: self.size].clone() for k, v in self.data.items()}
        return {"data": data, "pos": self.pos, "size": self.size, "frames": self.frames}

    def load_state_dict(self, state: Mapping[str, Any],
                        missing: Mapping[str, float | bool] | None = None) -> None:
        """Restore :meth:`state_dict`; a field in ``missing`` that the state lacks (a
        checkpoint from before the field existed) is filled with that value, and ``frames``
        of a state from before they were counted is its size (one transition per frame)."""
        size, pos = state["size"], state["pos"]
        for name, value, top in (("size", size, self.capacity), ("pos", pos, self.capacity - 1)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
                raise ValueError(f"replay state holds {name}={value!r}; expected an integer in "
                                 f"[0, {top}] (capacity {self.capacity})")
        for k, v in state["data"].items():
            if k in self.data and (not isinstance(v, Tensor) or v.dim() < 1 or v.shape[0] != size):
                raise ValueError(f"replay state's {k!r} rows do not match its size {size}")
        for k, v in self.data.items():
            if k not in state["data"] and missing is not None and k in missing:
                v[:size] = missing[k]
            else:
                v[:size] = state["data"][k].to(self.device, v.dtype)
            v[size:self.size] = 0  # rows this buffer held before: as in a fresh one
        frames = state.get("frames", size)
        if isinstance(frames, bool) or not isinstance(frames, int) or not 0 <= frames < 2**62:
            raise ValueError(f"replay state holds frames={frames!r}; expected an integer in "
                             "[0, 2**62 - 1]")
        self.pos, self.size = pos, size
        self.frames = frames


class AgentStacker:
    """Stacks per-agent VecStep arrays over the agent dimension, as tensors on ``device``.

    Args:
        spec: the game.
        agents: the A controlled seats, in this order along the agent dimension.
        state_input: what the global input is: ``state`` (``vs.state``), ``obs`` (all
            seats' observations concatenated) or ``auto`` (state when the game has one).
        team_reward: how the controlled agents' rewards become one team reward.
    """

    def __init__(
        self,
        spec: GameSpec,
        agents: Sequence[str],
        device: torch.device,
        state_input: str = "auto",
        team_reward: str = "mean",
    ) -> None:
        check_choice("state_input", state_input, STATE_INPUTS)
        check_choice("team_reward", team_reward, TEAM_REWARDS)
        if state_input == "state" and spec.state_shape is None:
            raise ValueError(f"state_input='state' but {spec.name} has no global state")
        self.spec, self.agents, self.device = spec, tuple(agents), device
        self.use_state = state_input == "state" or (
            state_input == "auto" and spec.state_shape is not None
        )
        self.team_reward = team_reward
        self.obs_width = max(int(np.prod(spec.obs_shapes[a])) for a in self.agents)
        spaces = [spec.action_spaces[a] for a in self.agents]
        self.num_actions = max((sp.n for sp in spaces if sp.discrete), default=0)
        real = np.zeros((len(self.agents), self.num_actions), bool)  # [A, N] unpadded actions
        for i, sp in enumerate(spaces):
            real[i, : sp.n] = True
        self.real_actions = torch.as_tensor(real, device=device)
        self.state_width = (
            int(np.prod(spec.state_shape))
            if self.use_state
            else sum(int(np.prod(spec.obs_shapes[a])) for a in spec.agent_ids)
        )

    def _tensor(self, x: np.ndarray, dtype: torch.dtype = torch.float32) -> Tensor:
        return torch.as_tensor(x, dtype=dtype, device=self.device)

    def obs(self, obs: Mapping[str, np.ndarray]) -> Tensor:
        """``[B, A, O]`` float observations, zero-padded to the widest agent."""
        cols = [obs[a].reshape(obs[a].shape[0], -1) for a in self.agents]
        B = cols[0].shape[0]
        out = np.zeros((B, len(cols), self.obs_width), np.float32)
        for i, c in enumerate(cols):  # one copy per agent (A is small), no per-sample work
            out[:, i, : c.shape[1]] = c
        return self._tensor(out)

    def legal(self, vs: VecStep, final: bool = False) -> Tensor:
        """``[B, A, N]`` bool legal masks (``final``: ``vs.final_legal``, the masks where an
        episode ended; every real action in a VecStep without them); padded actions are
        never legal.

        Rows of agents that do not act (no legal action) allow every real action, so the
        placeholder actions chosen there are valid ids (the game ignores them).
        """
        B = vs.done.shape[0]
        src = vs.final_legal if final else vs.legal
        if src is None:
            return self.real_actions.expand(B, *self.real_actions.shape)
        out = np.zeros((B, len(self.agents), self.num_actions), bool)
        for i, a in enumerate(self.agents):
            out[:, i, : src[a].shape[1]] = src[a]
        legal = self._tensor(out, torch.bool)
        return torch.where(legal.any(-1, keepdim=True), legal, self.real_actions)

    def acting(self, vs: VecStep) -> Tensor:
        """``[B, A]`` bool, copies where each agent acts now."""
        return self._tensor(np.stack([vs.acting[a] for a in self.agents], 1), torch.bool)

    def state(self, vs: VecStep, final: bool = False) -> Tensor:
        """``[B, S]`` global input: ``vs.state`` (or ``final_state``) or all observations."""
        if self.use_state:
            st = vs.final_state if final else vs.state
            if st is None:
                raise ValueError(
                    f"{self.spec.name}: the learner reads the global state but the VecStep has "
                    "none; build the VectorGame with with_state=True (or use state_input='obs')"
                )
            return self._tensor(st.reshape(st.shape[0], -1))
        src = vs.final_obs if final else vs.obs
        flat = [src[a].reshape(src[a].shape[0], -1) for a in self.spec.agent_ids]
        return self._tensor(np.concatenate(flat, 1))

    def rewards(self, vs: VecStep) -> Tensor:
        """``[B, A]`` float rewards of the controlled agents."""
        return self._tensor(np.stack([vs.rewards[a] for a in self.agents], 1))

    def team(self, rewards_BA: Tensor) -> Tensor:
        """``[B]`` team reward: mean or sum over the controlled agents. The mean is over all
        of them (an agent that left is paid 0), i.e. ``sum / A``: the same objective as the
        sum, scaled. Averaging over the agents still in would weigh the others' rewards more
        after a departure, so leaving early could pay although it loses the team reward."""
        return rewards_BA.mean(1) if self.team_reward == "mean" else rewards_BA.sum(1)

    def terminated(self, vs: VecStep) -> Tensor:
        """``[B, A]`` bool, agents whose own episode ended by the rules at this step (an
        agent that leaves a game its team plays on; no bootstrap of its own value)."""
        return self._tensor(np.stack([vs.terminated[a] for a in self.agents], 1), torch.bool)

    def truncated(self, vs: VecStep) -> Tensor:
        """``[B, A]`` bool, agents whose own episode was cut at this step (a time limit)."""
        return self._tensor(np.stack([vs.truncated[a] for a in self.agents], 1), torch.bool)

    def terminal(self, vs: VecStep) -> Tensor:
        """``[B]`` float, 1 where the episode ended by the rules (no bootstrap).

        A copy whose episode was cut by a time limit (an agent truncated and not
        terminated) bootstraps from its final observation.
        """
        trunc = np.stack([vs.truncated[a] & ~vs.terminated[a] for a in self.agents], 1).any(1)
        return self._tensor(vs.done & ~trunc)

    def next_fields(self, vs: VecStep, with_state: bool,
                    still: Tensor | None = None) -> dict[str, Tensor]:
        """The "next" half of the transitions that ended in ``vs``.

        Where a copy's episode ended, ``vs.obs`` already belongs to the next episode, so
        ``next_obs`` / ``next_state`` / ``next_legal`` come from ``final_obs`` /
        ``final_state`` / ``final_legal`` (only a truncated episode reads them, to bootstrap:
        its max ranges over the actions legal at the state where it was cut, as mid-episode).
        An agent whose own episode ended alone (the copy plays on) has its last observation
        and legal mask there too (``vs.obs`` holds zeros for it); ``next_state`` is the copy's
        global input after the step.

        ``next_acting``: who acts in the next step; where the copy's episode ended, the
        agents that were still in it (``still``, ``[B, A]``: :meth:`StillIn.mask` before this
        step; all of them when not given) and did not leave it by the rules at this step:
        those a truncated episode bootstraps from, not one that left at an earlier step.
        """
        done_B = self._tensor(vs.done, torch.bool)
        nxt = self.obs(vs.obs)
        ended_BA = vs.done[:, None] | np.stack(
            [vs.terminated[a] | vs.truncated[a] for a in self.agents], 1)
        ended = self._tensor(ended_BA, torch.bool) if ended_BA.any() else None
        if ended is not None:
            nxt = torch.where(ended[:, :, None], self.obs(vs.final_obs), nxt)
        stayed_BA = ~self.terminated(vs)
        if still is not None:
            stayed_BA = stayed_BA & still
        out = {
            "next_obs": nxt,
            "next_acting": torch.where(done_B[:, None], stayed_BA, self.acting(vs)),
            "terminal": self.terminal(vs),
        }
        if self.num_actions:
            legal = self.legal(vs)
            if ended is not None:
                legal = torch.where(ended[:, :, None], self.legal(vs, final=True), legal)
            out["next_legal"] = legal
        if with_state:
            st = self.state(vs)
            if vs.done.any():
                st = torch.where(done_B[:, None], self.state(vs, final=True), st)
            out["next_state"] = st
        return out


class StillIn:
    """Which agents are still in their copy's episode: acting now *or waiting* (a seat
    that does not act on a step of a simultaneous game, or waits for its turn), not one
    that left it (its own episode ended, terminated or truncated, while others play on).

    ``mask(B)`` is the ``[B, A]`` mask before a step; ``step(vs)`` records who left in it
    (everyone is back where the copy's episode ended). ``clear()``: new games.
    """

    def __init__(self, stack: AgentStacker) -> None:
        self.stack, self.gone = stack, None

    def clear(self) -> None:
        self.gone = None

    def mask(self, B: int) -> Tensor:
        A = len(self.stack.agents)
        if self.gone is None or self.gone.shape != (B, A):
            self.gone = torch.zeros(B, A, dtype=torch.bool, device=self.stack.device)
        return ~self.gone

    def step(self, vs: VecStep) -> None:
        left_BA = self.stack.terminated(vs) | self.stack.truncated(vs)
        done_B1 = self.stack._tensor(vs.done, torch.bool)[:, None]
        self.gone = (~self.mask(len(vs.done)) | left_BA) & ~done_B1


def warmed_up(buffer: ReplayBuffer, cfg: Any, steps_since_update: int) -> bool:
    """Whether a replay learner configured by ``cfg`` updates now: its replay has been played
    ``cfg.learning_starts`` frames (``ReplayBuffer.frames``: steps of one copy, the other
    side's turns included, as the setting's doc says; a turn-based team's transitions, one
    per own turn, are about half of them) and holds a minibatch (``cfg.batch_size``
    transitions), and ``cfg.train_every`` steps have passed since the last update."""
    return (buffer.frames >= cfg.learning_starts and len(buffer) >= cfg.batch_size
            and steps_since_update >= cfg.train_every)


def seated(seat_mask: Any, B: int, A: int, device: torch.device) -> Tensor:
    """``[B, A]`` bool: where a learner holds each of its ``A`` seats in ``B`` copies
    (``Learner.seat_mask``; None: everywhere)."""
    if seat_mask is None:
        return torch.ones(B, A, dtype=torch.bool, device=device)
    mask = np.asarray(seat_mask, dtype=bool)
    if mask.shape != (B, A):
        raise ValueError(f"seat_mask has shape {mask.shape}; expected {(B, A)}")
    return torch.as_tensor(mask, device=device)


class TeamTurns:
    """Each team's open transition in every copy of a turn-based game.

    A transition runs from a step where a seated agent of team ``g`` acts to the team's next
    acting step (or the end of the episode). The steps in between are other teams' turns:
    their team rewards are summed into the transition (credited to the team's latest action,
    as MAPPO credits an agent's), so ``gamma`` discounts once per own step. A finished
    transition becomes one replay row that holds only team ``g``'s seats (``acting``,
    ``seated`` and ``next_acting`` masked to them; the team reward in column ``g``), so a
    learner holding both sides of a game trains each team's value on its own steps only.
    When a team has one agent this is that agent's own acting steps; a team of several
    passes its value from one member's turn to the next member's.

    Args:
        team_AG: ``[A, G]`` bool, controlled agent ``a`` plays for team ``g``.

    Open fields are ``[G, B, ...]``: the row fields given to :meth:`start` (``obs``,
    ``action``, ``acting``, ``seated``, optionally ``state``), ``reward`` ``[G, B]`` (summed
    so far) and ``is_open`` ``[G, B]``.
    """

    def __init__(self, team_AG: Tensor) -> None:
        self.team_AG = team_AG
        self.open: dict[str, Tensor] = {}

    def clear(self) -> None:
        """Drop every open transition (their games are gone)."""
        self.open = {}

    def start(self, row: Mapping[str, Tensor]) -> None:
        """Open a transition for every (team, copy) where a seated agent of the team acts.

        ``row``: ``[B, ...]`` fields of this step; ``row["acting"]`` ``[B, A]`` is already
        masked by ``row["seated"]``.
        """
        team_GA = self.team_AG.T
        mine_GBA = row["acting"][None] & team_GA[:, None]  # [G, B, A]
        starts_GB = mine_GBA.any(-1)
        G, B = starts_GB.shape
        op = self.open
        if not op or op["is_open"].shape[1] != B or set(op) != {*row, "reward", "is_open"}:
            op = {k: v.new_zeros((G, *v.shape)) for k, v in row.items()}
            op["is_open"] = starts_GB.new_zeros(G, B)
            op["reward"] = torch.zeros(G, B, device=starts_GB.device)
        new = {k: v[None].expand(G, *v.shape) for k, v in row.items()}
        new["acting"] = mine_GBA
        new["seated"] = new["seated"] & team_GA[:, None]
        new["reward"] = torch.zeros_like(op["reward"])
        for k, v in new.items():
            op[k] = torch.where(starts_GB.view(G, B, *(1,) * (v.dim() - 2)), v, op[k])
        op["is_open"] = op["is_open"] | starts_GB
        self.open = op

    def finish(self, team_BG: Tensor, nxt: Mapping[str, Tensor], acting_BA: Tensor,
               done_B: Tensor) -> dict[str, Tensor] | None:
        """Add this step's team rewards ``team_BG`` ``[B, G]`` to the open transitions and
        close those whose team acts again now (``acting_BA``: who acts in the new step) or
        whose episode ended; their replay rows ``[M, ...]`` (None: none closed).

        ``nxt``: the "next" fields of this step (:meth:`AgentStacker.next_fields`). Where
        the episode ended, ``next_acting`` is the seats that acted last (a terminated episode
        does not read it); at a cut, those of them still in the episode at its end
        (``nxt["next_acting"]``: it bootstraps from them, not from one that left after its
        move).
        """
        op = self.open
        if not op:
            return None
        op["reward"] = op["reward"] + team_BG.T * op["is_open"]
        again_GB = (acting_BA[None] & op["seated"]).any(-1)
        close_GB = op["is_open"] & (again_GB | done_B[None])
        if not bool(close_GB.any()):
            return None
        g_M, b_M = close_GB.nonzero(as_tuple=True)
        rows = {k: v[g_M, b_M] for k, v in op.items() if k not in ("is_open", "reward")}
        rows |= {k: v[b_M] for k, v in nxt.items()}
        # at the end: the seats that acted last, less one that left before a cut (a
        # terminated episode keeps them all; it does not bootstrap)
        last_MA = rows["acting"] & (rows["next_acting"] | rows["terminal"].bool()[:, None])
        rows["next_acting"] = torch.where(done_B[b_M, None], last_MA,
                                          acting_BA[b_M] & rows["seated"])
        reward_M = op["reward"][g_M, b_M]
        G = close_GB.shape[0]
        rows["reward"] = reward_M if G == 1 else (
            torch.zeros(len(g_M), G, device=reward_M.device).index_put_(
                (torch.arange(len(g_M), device=reward_M.device), g_M), reward_M))
        op["is_open"] = op["is_open"] & ~close_GB
        return rows
