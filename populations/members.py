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

What a member trains with is recorded beside it in ``league.db`` (``members.settings``):
:func:`member_settings` reads it from its learner's (or LLM trainer's) config dataclass, or
from a ``settings()`` method of a member class of one's own.

Frozen opponents may still draw from the global random streams (a PPO snapshot samples with
``torch.multinomial``); each generation runs them on a copy seeded from the member's name
and the generation (:func:`populations.seeds.isolated_global_rng`), so a generation replays
identically after a resume and the caller's global state is left alone.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

import games
from games.vector import to_numpy
from marl import registry
from marl.core import Learner, Policy, derive_seed
from marl.train import (
    ROUNDING_TOLD,
    ReadyWatch,
    budget_spent,
    planned_frames,
    rollout_frames,
    trains_whole_rollouts,
)
from populations.approx_exploit import evaluated_greedy
from populations.run_folder import stop_requested
from populations.seeds import RunSeeds, isolated_global_rng

if TYPE_CHECKING:
    from llm_agents.trainer import MultiTurnGRPO

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainPlan:
    """What one member needs to know of the league to train one generation: plain values,
    so a plan travels to a Ray actor (``populations.learner_actors``) as it is."""

    game: str
    game_kwargs: dict[str, Any]
    num_envs: int  # game copies stepped together
    frames: int  # frames to train this generation (a step loop rounds up to num_envs)
    seed: int  # the run's root seed
    generation: int
    team_of: tuple[int, ...]  # [A] team index of each agent (spec.agent_ids order)
    inputs: dict[str, bool] = field(default_factory=dict)  # views a seated snapshot of any
    # member may read (graphs, text): every game copy carries them
    single: bool = False  # a one-member league keeps plain metric names


@dataclass(frozen=True)
class OpponentDraw:
    """The matchmaking rule's answer for one member and generation: candidate snapshot ids
    (oldest first), their probabilities, and the seed of the member's own draw stream.

    The stream is seeded from (run seed, member, generation), not shared across members, so
    members draw the same opponents whether they train one after another or at once."""

    ids: tuple[int, ...]
    probs: tuple[float, ...]
    opponent_prob: float  # share of copies (or groups) where a snapshot is the opponent
    seed: int

    def sampler(self) -> Callable[[np.ndarray, np.ndarray, np.ndarray, bool], None]:
        """``pick(copies, opp, side, always)``: for each copy in ``copies`` an opponent
        snapshot id in ``opp`` (-1: none, with probability ``1 - opponent_prob`` unless
        ``always``) and the member's side (0/1) in ``side``; one stream per call of this."""
        rng = np.random.default_rng(self.seed)
        probs = np.asarray(self.probs, dtype=np.float64)

        def pick(copies: np.ndarray, opp: np.ndarray, side: np.ndarray,
                 always: bool = False) -> None:
            for b in copies:
                use = always or rng.random() < self.opponent_prob
                opp[b] = self.ids[rng.choice(len(self.ids), p=probs)] if use else -1
                side[b] = rng.integers(2)

        return pick


class Matchmaker(Protocol):
    """What a member sees of the league while it trains one generation: the plan, opponent
    draws, snapshot policies, and a metrics sink. The league gives one per member and
    generation, in this process or on a Ray actor; a member never reaches the league."""

    plan: TrainPlan

    def pick_opponents(self, copies: np.ndarray, opp: np.ndarray, side: np.ndarray,
                       always: bool = False) -> None:
        """Fill ``opp[copies]`` (snapshot id or -1) and ``side[copies]`` (see OpponentDraw)."""
        ...

    def load(self, snapshot_id: int) -> Policy:
        """The frozen policy of a snapshot (cached; the caller reseeds it)."""
        ...

    def log_metrics(self, frames: int, metrics: dict[str, float]) -> None:
        """Record ``metrics`` after ``frames`` frames of this member's generation."""
        ...

    def progress(self, done: int) -> None:
        """``done`` frames (or episodes) of this generation are trained (a progress bar)."""
        ...


class GenerationMatchmaker:
    """A :class:`Matchmaker` from a plan, a draw, a snapshot loader and a metrics sink
    (``sink(frames, metrics)``, names prefixed ``<member>/`` unless the league is single),
    and ``tick(done)`` for the member's progress (None: not shown)."""

    def __init__(self, name: str, plan: TrainPlan, draw: OpponentDraw,
                 load: Callable[[int], Policy],
                 sink: Callable[[int, dict[str, float]], None],
                 tick: Callable[[int], None] | None = None) -> None:
        self.name, self.plan, self.draw = name, plan, draw
        self._pick, self._load, self._sink, self._tick = draw.sampler(), load, sink, tick

    def pick_opponents(self, copies: np.ndarray, opp: np.ndarray, side: np.ndarray,
                       always: bool = False) -> None:
        self._pick(copies, opp, side, always)

    def load(self, snapshot_id: int) -> Policy:
        return self._load(snapshot_id)

    def log_metrics(self, frames: int, metrics: dict[str, float]) -> None:
        self._sink(frames, _prefixed(self.name, metrics, self.plan.single))

    def progress(self, done: int) -> None:
        if self._tick is not None:
            self._tick(done)


class Member(Protocol):
    """What a league needs of a member (see the module docstring).

    Optional: ``algo: str``, the learner that trains it (its registry name: ``"ippo"``,
    whose snapshots are ``"mappo"`` policies), for the league tables' kind column; the
    league reads it with ``getattr``, and a member without one (an LLM team's: ``"llm"``)
    shows its ``kind``. Not declared here, so a member class without it is a Member.

    Optional too: ``counts: str``, what :meth:`train_generation` returns a count of
    (default ``"frames"``; an LLM team's GRPO ``"episodes"``, which the league keeps out of
    its frame count)."""

    name: str
    kind: str  # "mappo" | "llm" | ...: what the member's snapshots are (their policy kind)
    opponents: tuple[str, ...] | None  # members whose snapshots it meets (None: all)
    latest_only: bool  # meet only each of those members' newest snapshot

    def train_generation(self, mm: Matchmaker) -> int:
        """Train for one generation (``mm.plan``); return the frames consumed (or what the
        member's optional ``counts`` names: an LLM team's ``"episodes"``)."""
        ...

    def inputs(self) -> dict[str, bool]:
        """Views its snapshots read from game copies (``with_graphs``, ``with_text``...)."""
        ...

    def policy(self) -> Policy: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def member_settings(member: Any) -> dict[str, Any] | None:
    """The settings ``member`` trains with, as plain JSON (what the league records in
    ``league.db``'s ``members.settings``): what its ``settings()`` returns (a dataclass or a
    mapping) when its class has one (an LLM team's: :meth:`LLMMember.settings`), else the
    ``cfg`` of its learner (a dataclass for MAPPO/IPPO, MADDPG, VDN/QMIX; MAPPO's with its
    network resolved); None when it has none (a user's learner without a config)."""
    own = getattr(member, "settings", None)
    if callable(own):
        return config_settings(own())
    trainer = getattr(member, "learner", None)
    if trainer is None:
        trainer = getattr(member, "trainer", None)
    return config_settings(getattr(trainer, "cfg", None))


def config_settings(cfg: Any) -> dict[str, Any] | None:
    """A config (a dataclass or a mapping) as plain JSON (:func:`_plain`); None for
    anything else (no config)."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        cfg = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    return _plain(cfg) if isinstance(cfg, Mapping) else None


def _plain(value: Any) -> Any:
    """``value`` as plain JSON: dataclasses and mappings as objects (string keys), tuples and
    lists as lists, enums by value, non-finite floats as text ("inf"), and anything else
    (a path, a device, a class) as its ``str``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, np.generic):  # a numpy scalar: its Python number
        return _plain(value.item())
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)


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
        algo: the learner's registry name, as the league tables show it (None: the policy
            kind its snapshots are saved as; IPPO's are ``mappo``).

    With ``opponents=("main",), latest_only=True, reset_win_rate=0.7`` the member is an
    AlphaStar-style **main exploiter** (Vinyals et al., 2019): it trains only against the
    current main agent, and starts over once it beats it.
    """

    def __init__(self, name: str, learner: Learner, opponents: tuple[str, ...] | None = None,
                 latest_only: bool = False, reset_win_rate: float | None = None,
                 algo: str | None = None) -> None:
        self.name, self.learner = name, learner
        self.kind = learner.policy().meta.kind
        self.algo = algo or self.kind
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

    def inputs(self) -> dict[str, bool]:
        return {k: True for k, v in getattr(self.learner, "vector_game_kwargs", {}).items() if v}

    def train_generation(self, mm: Matchmaker) -> int:
        plan = mm.plan
        with isolated_global_rng(derive_seed(plan.seed, "member", self.name, plan.generation)):
            return self._train_generation(mm, plan)

    def _train_generation(self, mm: Matchmaker, plan: TrainPlan) -> int:
        learner, generation = self.learner, plan.generation
        spec = games.make(plan.game, **plan.game_kwargs).spec
        team_of = np.asarray(plan.team_of)
        vkw = dict(getattr(learner, "vector_game_kwargs", {"with_state": True}))
        # another member's snapshot (a GNN or an LLM policy) may take a seat: the copies
        # carry what any member's policy reads
        vkw |= plan.inputs
        # each member and generation its own block of game seeds (resumes replay them)
        game_seed = RunSeeds(plan.seed).block("game", "member", self.name, index=generation)
        # MAPPO/IPPO read tensor VecSteps: on a natively batched game (VMAS) the rollout
        # stays on the game's device, as in the single-learner path
        vg = games.VectorGame(plan.game, plan.num_envs, seed=game_seed, **vkw,
                              tensors="auto" if _reads_tensors(learner) else False,
                              **plan.game_kwargs)
        B = plan.num_envs
        opp, side = np.full(B, -1), np.zeros(B, dtype=np.int64)
        mm.pick_opponents(np.arange(B), opp, side)
        vs = vg.reset()
        learner.start_episodes()  # the last generation's unfinished rollout was on its games
        done_frames = trained = 0
        # MAPPO/IPPO: a generation ends at an update, so every frame it counts was trained on
        # (frames_per_generation=1500 of 800-frame rollouts trained 800 of 1,504: the rest
        # was dropped by the next generation's start_episodes)
        whole = trains_whole_rollouts(learner)
        # one whose ready() never says True would keep the loop going past its budget for ever
        watch = ReadyWatch(learner, plan.frames, rollout_frames(learner, B),
                           f"league member {self.name}") if whole else None
        reseeded: set[int] = set()
        returns: deque[float] = deque(maxlen=50)  # the last finished episodes' (_member_returns)
        while not budget_spent(done_frames, plan.frames, trained, whole):
            # [B, A]: the learner plays a seat unless an opponent holds that seat's team
            mine_BA = (opp[:, None] < 0) | (team_of[None, :] == side[:, None])
            learner.seat_mask = mine_BA
            actions = learner.act(vs)
            # frozen snapshots read numpy: a tensor VecStep is copied to host once per step
            ovs = to_numpy(vs) if vg.tensors and (opp >= 0).any() else vs
            for sid in np.unique(opp[opp >= 0]):
                policy = mm.load(int(sid))
                if int(sid) not in reseeded:  # cached policies: the same draws after a resume
                    policy.reseed(derive_seed(plan.seed, "member", self.name, generation,
                                              int(sid)))
                    reseeded.add(int(sid))
                rows = opp == sid
                for i, agent in enumerate(spec.agent_ids):
                    theirs = rows & (team_of[i] != side)
                    if theirs.any():
                        view = _only(ovs, agent, theirs) if "text" in policy.meta.inputs \
                            else ovs
                        actions[agent] = _overwrite(actions[agent], theirs,
                                                    _opponent_act(policy, agent, view))
            played = getattr(learner, "played", None)
            if played is not None:  # a centralized critic (MADDPG) reads the joint action
                played(actions)
            vs = vg.step(actions)
            learner.observe(vs)
            done_frames += B
            mm.progress(done_frames)
            done = _host(vs.done)  # [B] bool on host: opponents are drawn per copy there
            if done.any():
                returns.extend(_member_returns(vs, spec.agent_ids, mine_BA, done, opp))
                mm.pick_opponents(np.flatnonzero(done), opp, side)
            if learner.ready():
                metrics, trained = learner.update(), done_frames
                if returns:  # as a single run logs it (marl.train.after_step)
                    metrics["charts/episode_return"] = float(np.mean(returns))
                mm.log_metrics(done_frames, metrics)
            if watch is not None:
                watch.check(done_frames, trained)
        learner.seat_mask = None
        vg.close()
        return done_frames


MAPPOMember = LearnerMember  # the name before any registered learner could be a member


class LLMMember:
    """An LLM team trained ``iterations`` GRPO iterations per generation; ``config``: the
    settings it was built from (its ``llm`` section, recorded as its settings), else what
    :meth:`settings` reads from the trainer."""

    kind = "llm"
    counts = "episodes"  # train_generation returns GRPO episodes, not frames

    def __init__(self, name: str, trainer: MultiTurnGRPO, iterations: int,
                 opponent_prob: float = 0.5, config: Any = None) -> None:
        self.name, self.trainer = name, trainer
        self.iterations, self.opponent_prob = iterations, opponent_prob
        self.config = config

    def settings(self) -> dict[str, Any] | None:
        """What the team trains with: ``config`` when given, else the model each team model
        loaded (its path or hub name; ``model.<name>`` for several) and the trainer's
        ``grpo`` settings, as in an ``llm`` section."""
        if self.config is not None:
            given = config_settings(self.config)
            built = config_settings(getattr(self.trainer, "cfg", None))
            if given is not None and built is not None and isinstance(given.get("grpo"), dict):
                # the seed and device the trainer was built with (build_trainer's overrides:
                # the run's seed tree, learner/<name>, and its device), not the section's
                # unread grpo.seed=0 and grpo.device, as VDN/QMIX/MADDPG members record theirs
                given["grpo"].update({k: built[k] for k in ("seed", "device") if k in built})
            return given
        out: dict[str, Any] = {}
        team = getattr(self.trainer, "team", None)
        models = {name: getattr(tm.model, "name_or_path", "")
                  or f"{type(tm.model).__name__} (built in code)"
                  for name, tm in getattr(team, "models", {}).items()}
        if models:
            out["model"] = next(iter(models.values())) if len(models) == 1 else models
        grpo = config_settings(getattr(self.trainer, "cfg", None))
        if grpo is not None:
            out["grpo"] = grpo
        return config_settings(out) if out else None

    def policy(self) -> Policy:
        return self.trainer.policy()

    def state_dict(self) -> dict[str, Any]:
        return self.trainer.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.trainer.load_state_dict(state)

    opponents: tuple[str, ...] | None = None
    latest_only = False

    def inputs(self) -> dict[str, bool]:
        return {"with_text": True}

    def train_generation(self, mm: Matchmaker) -> int:
        from llm_agents.opponents import OpponentPool

        plan = mm.plan
        groups = self.trainer.cfg.groups_per_step
        opp, side = np.full(groups, -1), np.zeros(groups, dtype=np.int64)
        mm.pick_opponents(np.arange(groups), opp, side, always=True)
        # The PFSP draw, with repeats, weights the pool the GRPO groups draw from.
        pool = [mm.load(int(s)) for s in opp]
        for s, policy in zip(opp, pool, strict=True):  # a resumed run draws the same
            policy.reseed(derive_seed(plan.seed, "member", self.name, plan.generation, int(s)))
        self.trainer.opponents = OpponentPool(pool, prob=self.opponent_prob)
        episodes, shown = 0, [0]

        def rollout_progress(p: Any) -> None:  # the bar moves while an iteration plays
            if p.phase == "rollout" and episodes + p.done > shown[0]:
                shown[0] = episodes + p.done
                mm.progress(shown[0])

        self.trainer.on_progress = rollout_progress
        started, noted = time.monotonic(), False
        try:
            for i in range(self.iterations):
                metrics = self.trainer.step()
                episodes += self.trainer.cfg.groups_per_step * self.trainer.cfg.group_size
                mm.log_metrics(episodes, metrics)
                if episodes > shown[0]:  # the rollout's own ticks reached it already
                    shown[0] = episodes
                    mm.progress(episodes)
                if not noted and stop_requested() and i + 1 < self.iterations:
                    noted = True  # the league stops after the generation: say how long
                    log.warning(_finishing(self.name, i + 1, self.iterations,
                                           time.monotonic() - started))
        finally:
            self.trainer.on_progress = None
        return episodes


def rounding_notes(members: Sequence[Any], frames: int, num_envs: int) -> list[str]:
    """Lines saying, as a league starts, which learner members play more than
    :data:`~marl.train.ROUNDING_TOLD` times ``frames`` (``population.frames_per_generation``)
    a generation, and why: :meth:`LearnerMember.train_generation` rounds up to whole steps
    of the ``num_envs`` copies and, for an on-policy learner, to whole rollouts (it trains
    on every frame it plays). One line per kind of rounding, naming its members: a VMAS
    league of 1,024 copies and 25-step rollouts trained 25,600 frames a generation for
    ``frames_per_generation=3000``, silently (a single run says it of ``frames``)."""
    notes: dict[str, list[str]] = {}
    for m in members:
        learner = getattr(m, "learner", None)
        if learner is None or getattr(m, "counts", "frames") != "frames":
            continue  # an LLM team counts its GRPO episodes
        rollout = rollout_frames(learner, num_envs) if trains_whole_rollouts(learner) else 0
        planned = planned_frames(frames, num_envs, 0, rollout)
        if planned <= ROUNDING_TOLD * frames:
            continue
        if rollout:
            entry = registry.entries().get(getattr(m, "algo", ""))
            steps = f"{entry.section + '.' if entry else ''}rollout_steps={rollout // num_envs}"
            n = planned // rollout
            why = (f"{'one whole rollout' if n == 1 else f'{n} whole rollouts'} of {rollout} "
                   f"frames (num_envs={num_envs} × {steps}): an on-policy learner trains on "
                   "every frame it plays")
        else:
            why = f"whole steps of the num_envs={num_envs} game copies"
        notes.setdefault(f"{planned} frames a generation for population.frames_per_generation="
                         f"{frames}: rounded up to {why}", []).append(m.name)
    return [f"league member{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))} "
            f"play{'' if len(names) > 1 else 's'} {text}" for text, names in notes.items()]


def _finishing(name: str, done: int, iterations: int, seconds: float) -> str:
    """The line a stop request (Ctrl-C, SIGTERM) gets while an LLM member trains: the league
    stops after the member's generation, ``iterations - done`` GRPO iterations away. A
    second signal of either kind raises at once (:func:`populations.run_folder.deferred_stop`):
    the league's checkpoint is the one before this generation, which the resume trains again."""
    left = seconds / done * (iterations - done)
    when = f"{left:.0f}s" if left < 90 else f"{left / 60:.0f} min"
    return (f"finishing {name}'s generation before stopping: {done} of its {iterations} GRPO "
            f"iterations done, {iterations - done} more (about {when}); a second Ctrl-C or "
            "SIGTERM stops now (the resume trains this generation again)")


def _opponent_act(policy: Policy, agent: str, vs: games.VecStep) -> Any:
    """A frozen opponent's actions: an off-policy learner's snapshot (QMIX/VDN/MADDPG) by
    its argmax, as evaluations and PSRO play it (exploration is part of its training, not
    of the snapshot: :func:`populations.approx_exploit.evaluated_greedy`); others sample."""
    if evaluated_greedy(policy):
        return policy.act(agent, vs, greedy=True)
    return policy.act(agent, vs)


def _member_returns(vs: games.VecStep, agents: tuple[str, ...], mine_BA: np.ndarray,
                    done_B: np.ndarray, opp_B: np.ndarray) -> list[float]:
    """Each finished episode's (``done_B``) return for the member: the mean over the seats it
    played in that copy (``mine_BA``, ``[B, A]``), as :func:`marl.train.after_step` takes the
    mean over a single run's learner seats; only episodes against a snapshot (``opp_B`` >= 0):
    in a self-play copy the member holds every seat, and in a zero-sum game their mean is 0
    whatever it learned (review of walk 20)."""
    ret_BA = np.stack([_host(vs.episode_return[a]) for a in agents], 1).astype(np.float64)
    per_B = (ret_BA * mine_BA).sum(1) / np.maximum(mine_BA.sum(1), 1)
    return [float(r) for r in per_B[done_B & (opp_B >= 0)]]


def _reads_tensors(learner: Learner) -> bool:
    """Whether ``learner`` takes torch-tensor VecSteps from a natively batched game
    (``Learner.reads_tensors``: MAPPO/IPPO), as in ``populations.experiment``."""
    return bool(getattr(learner, "reads_tensors", False))


def _host(x: Any) -> np.ndarray:
    """A numpy view of a VecStep field (a tensor is copied to host; numpy is kept)."""
    return x.detach().cpu().numpy() if hasattr(x, "detach") else x


def _overwrite(mine: Any, rows: np.ndarray, theirs: np.ndarray) -> Any:
    """``mine`` (``[B]`` or ``[B, D]``, numpy or a tensor on the game's device) with
    ``theirs[rows]`` written into ``rows``, without touching the caller's array."""
    if hasattr(mine, "detach"):  # the learner's tensor actions: write on their device
        import torch

        out = mine.clone()
        idx = torch.as_tensor(np.flatnonzero(rows), device=mine.device)
        out[idx] = torch.as_tensor(np.asarray(theirs)[rows], device=mine.device,
                                   dtype=mine.dtype)
        return out
    out = mine.copy()
    out[rows] = theirs[rows]
    return out


def _only(vs: games.VecStep, agent: str, rows: np.ndarray) -> games.VecStep:
    """``vs`` with ``agent`` acting only in ``rows``: an LLM then prompts for its own seats
    alone instead of every copy."""
    return dataclasses.replace(vs, acting={**vs.acting, agent: vs.acting[agent] & rows})


def _prefixed(name: str, metrics: dict[str, float], single: bool) -> dict[str, float]:
    """A single-member league keeps plain metric names; others prefix ``<member>/``."""
    return metrics if single else {f"{name}/{k}": v for k, v in metrics.items()}
