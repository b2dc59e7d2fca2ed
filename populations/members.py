"""League members: a named line of snapshots and the trainer that produces them.

A :class:`Member` trains for one generation against opponents the league draws for it
(from every member's snapshots, by the matchmaking rule), publishes a frozen ``Policy``,
and checkpoints its whole trainer state. Two kinds ship:

* :class:`LearnerMember` -- any registered learner that honours ``Learner.seat_mask``
  (``Capabilities.partial_seats``: MAPPO/IPPO, VDN/QMIX, MADDPG); in a share of its game copies an
  opponent snapshot plays one team and the learner the other (sides drawn per episode);
* :class:`LLMMember` -- an LLM team trained by multi-turn GRPO
  (``llm_agents.MultiTurnGRPO``); each GRPO group meets a drawn snapshot with probability
  ``opponent_prob``, otherwise the team plays every seat (self-play).

Both kinds meet each other's snapshots: a learner member's game copies carry text views
when an LLM snapshot may sit at the table, and an LLM member's rollouts seat classic policies.

Frozen opponents may still draw from the global random streams (a PPO snapshot samples with
``torch.multinomial``); each generation runs them on a copy seeded from the member's name
and the generation (:func:`populations.seeds.isolated_global_rng`), so a generation replays
identically after a resume and the caller's global state is left alone.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

import games
from marl.core import Learner, Policy, derive_seed
from populations.seeds import RunSeeds, isolated_global_rng

if TYPE_CHECKING:
    from llm_agents.trainer import MultiTurnGRPO
    from populations.league import League

log = logging.getLogger(__name__)


class Member(Protocol):
    """What a league needs of a member (see the module docstring)."""

    name: str
    kind: str  # "mappo" | "llm" | ...: what the member's snapshots are (their policy kind)

    def train_generation(self, league: League, generation: int) -> int:
        """Train for one generation; return the frames (or episodes) it consumed."""
        ...

    def policy(self) -> Policy: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


# learner state entries that are random streams: a reset keeps them going (not rewound)
_STREAM_KEYS = ("gen", "gens", "act_gen", "sample_gen", "rng")


class LearnerMember:
    """A learner (``marl.core.Learner`` with ``seat_mask`` support) trained
    ``frames_per_generation`` frames per generation.

    Args:
        name: the member's name (its snapshots are ``<name>/vNNNN``).
        learner: the learner.
        opponents: members whose snapshots it meets (None: every member, itself included).
        latest_only: meet only the newest snapshot of each of those members.
        reset_win_rate: after a generation whose new snapshot wins at least this often
            against the newest snapshot of every opponent member, restart the learner from
            its initial weights (None: never).

    With ``opponents=("main",), latest_only=True, reset_win_rate=0.7`` the member is an
    AlphaStar-style **main exploiter** (Vinyals et al., 2019): it trains only against the
    current main agent, and starts over once it beats it.
    """

    def __init__(self, name: str, learner: Learner, opponents: tuple[str, ...] | None = None,
                 latest_only: bool = False, reset_win_rate: float | None = None) -> None:
        self.name, self.learner = name, learner
        self.kind = learner.policy().meta.kind
        self.opponents, self.latest_only = opponents, latest_only
        self.reset_win_rate = reset_win_rate
        self._initial = copy.deepcopy(learner.state_dict()) if reset_win_rate is not None \
            else None

    def reset(self) -> None:
        """Restart from the initial weights and optimizer (an exploiter that won)."""
        if self._initial is None:
            raise ValueError(f"member {self.name!r} keeps no initial state to reset to")
        state = copy.deepcopy(self._initial)
        now = self.learner.state_dict()
        for key in _STREAM_KEYS:  # the random streams go on; they are not rewound
            if key in now:
                state[key] = now[key]
        self.learner.load_state_dict(state)

    def policy(self) -> Policy:
        return self.learner.policy()

    def state_dict(self) -> dict[str, Any]:
        return self.learner.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.learner.load_state_dict(state)

    def train_generation(self, league: League, generation: int) -> int:
        with isolated_global_rng(derive_seed(league.cfg.seed, "member", self.name, generation)):
            return self._train_generation(league, generation)

    def _train_generation(self, league: League, generation: int) -> int:
        cfg, learner, spec = league.cfg, self.learner, league.spec
        vkw = dict(getattr(learner, "vector_game_kwargs", {"with_state": True}))
        for other in league.members:  # another member's snapshot (a GNN policy) may take
            # a seat: the copies carry what any member's learner reads
            wants = getattr(getattr(other, "learner", None), "vector_game_kwargs", {})
            vkw |= {k: True for k, v in wants.items() if v}
        if league.needs_text:  # an LLM snapshot may take a seat
            vkw["with_text"] = True
        # each member and generation its own block of game seeds (resumes replay them)
        game_seed = RunSeeds(cfg.seed).block("game", "member", self.name, index=generation)
        vg = games.VectorGame(cfg.game, cfg.num_envs, seed=game_seed, **vkw, **cfg.game_kwargs)
        B = cfg.num_envs
        opp, side = np.full(B, -1), np.zeros(B, dtype=np.int64)
        league.pick_opponents(self.name, np.arange(B), opp, side)
        vs = vg.reset()
        learner.start_episodes()  # the last generation's unfinished rollout was on its games
        done_frames = 0
        reseeded: set[int] = set()
        while done_frames < cfg.frames_per_generation:
            # [B, A]: the learner plays a seat unless an opponent holds that seat's team
            learner.seat_mask = (opp[:, None] < 0) | (league.team_of[None, :] == side[:, None])
            actions = learner.act(vs)
            for sid in np.unique(opp[opp >= 0]):
                policy = league.store.load(int(sid))
                if int(sid) not in reseeded:  # cached policies: the same draws after a resume
                    policy.reseed(derive_seed(cfg.seed, "member", self.name, generation,
                                              int(sid)))
                    reseeded.add(int(sid))
                rows = opp == sid
                for i, agent in enumerate(spec.agent_ids):
                    theirs = rows & (league.team_of[i] != side)
                    if theirs.any():
                        view = _only(vs, agent, theirs) if "text" in policy.meta.inputs else vs
                        actions[agent] = actions[agent].copy()
                        actions[agent][theirs] = policy.act(agent, view)[theirs]
            played = getattr(learner, "played", None)
            if played is not None:  # a centralized critic (MADDPG) reads the joint action
                played(actions)
            vs = vg.step(actions)
            learner.observe(vs)
            done_frames += B
            if vs.done.any():
                league.pick_opponents(self.name, np.flatnonzero(vs.done), opp, side)
            if learner.ready():
                league.log_metrics(league.frames + done_frames, _prefixed(
                    self.name, learner.update(), league.single))
        learner.seat_mask = None
        vg.close()
        return done_frames


MAPPOMember = LearnerMember  # the name before any registered learner could be a member


class LLMMember:
    """An LLM team trained ``iterations`` GRPO iterations per generation."""

    kind = "llm"

    def __init__(self, name: str, trainer: MultiTurnGRPO, iterations: int,
                 opponent_prob: float = 0.5) -> None:
        self.name, self.trainer = name, trainer
        self.iterations, self.opponent_prob = iterations, opponent_prob

    def policy(self) -> Policy:
        return self.trainer.policy()

    def state_dict(self) -> dict[str, Any]:
        return self.trainer.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.trainer.load_state_dict(state)

    def train_generation(self, league: League, generation: int) -> int:
        from llm_agents.opponents import OpponentPool

        groups = self.trainer.cfg.groups_per_step
        opp, side = np.full(groups, -1), np.zeros(groups, dtype=np.int64)
        league.pick_opponents(self.name, np.arange(groups), opp, side, always=True)
        # The PFSP draw, with repeats, weights the pool the GRPO groups draw from.
        pool = [league.store.load(int(s)) for s in opp]
        for s, policy in zip(opp, pool, strict=True):  # a resumed run draws the same
            policy.reseed(derive_seed(league.cfg.seed, "member", self.name, generation, int(s)))
        self.trainer.opponents = OpponentPool(pool, prob=self.opponent_prob)
        episodes = 0
        for _ in range(self.iterations):
            metrics = self.trainer.step()
            episodes += self.trainer.cfg.groups_per_step * self.trainer.cfg.group_size
            league.log_metrics(league.frames + episodes,
                               _prefixed(self.name, metrics, league.single))
        return episodes


def _only(vs: games.VecStep, agent: str, rows: np.ndarray) -> games.VecStep:
    """``vs`` with ``agent`` acting only in ``rows``: an LLM then prompts for its own seats
    alone instead of every copy."""
    return dataclasses.replace(vs, acting={**vs.acting, agent: vs.acting[agent] & rows})


def _prefixed(name: str, metrics: dict[str, float], single: bool) -> dict[str, float]:
    """A single-member league keeps plain metric names; others prefix ``<member>/``."""
    return metrics if single else {f"{name}/{k}": v for k, v in metrics.items()}
