"""Training and evaluation loops over ``games.VectorGame`` for any :class:`~marl.core.Learner`.

``train`` steps B copies of a game, lets the learner act for its seats and fixed
policies (opponents) act for the others, feeds outcomes back, updates whenever the
learner is ready, and periodically evaluates the learner's policy against a baseline
(uniformly random by default). ``evaluate`` plays policies in their seats and reports
mean returns per agent, role and team.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from games import EpisodeTooLongError, GameSpec, VecStep, VectorGame
from games.vector import to_numpy
from marl.core import Learner, Policy, PolicyMeta, check_fits, misfit, register_policy
from marl.guards import FiniteGuard
from marl.progress import tqdm

log = logging.getLogger(__name__)


@register_policy("random")
class RandomPolicy(Policy):
    """Uniformly random legal actions (uniform in the box for continuous agents). Saved (a
    PSRO run's first members), it loads back from its metadata alone: ``spec`` may be the
    :class:`PolicyMeta` of a saved one."""

    def __init__(self, spec: GameSpec | PolicyMeta, seed: int = 0) -> None:
        self.meta = spec if isinstance(spec, PolicyMeta) else \
            PolicyMeta.from_spec("random", spec, spec.agent_ids)
        self.rng = np.random.default_rng(seed)

    def reseed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, agent: str, vs: VecStep, greedy: bool = False) -> np.ndarray:
        """``[B]`` uniformly drawn legal action ids (any id where none is legal), or ``[B, D]``
        float32 actions uniform in the box; ``greedy`` changes nothing."""
        space = self.meta.action_space(agent)
        B = vs.done.shape[0]
        if not space.discrete:
            low, high = space.bounds()  # [*shape] each: bounds per dimension
            return self.rng.uniform(low, high, (B, *space.shape)).astype(np.float32)
        legal = vs.legal[agent] | ~vs.legal[agent].any(1, keepdims=True)
        return (self.rng.random(legal.shape) * legal).argmax(1)

    def action_probs(self, agent: str, vs: VecStep) -> np.ndarray:
        """``[B, N]`` uniform over each copy's legal actions (zeros where none is legal)."""
        legal = vs.legal[agent].astype(np.float64)
        return legal / np.maximum(legal.sum(1, keepdims=True), 1.0)

    def payload(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_payload(cls, meta: PolicyMeta, payload: dict[str, Any]) -> Policy:
        return cls(meta)


def check_episode_lengths(vs: VecStep, spec: GameSpec, where: str) -> None:
    """Raise :class:`EpisodeTooLongError` when a copy's running episode has taken
    ``spec.max_steps`` steps without ending. Evaluation and match play wait for whole
    episodes, so a game that never ends one would hang them; ``where`` names the caller."""
    over = (vs.episode_length >= spec.max_steps) & ~vs.done  # [B]
    if over.any():
        raise EpisodeTooLongError(
            f"game {spec.name!r}: an episode ran {int(vs.episode_length[over].max())} steps "
            f"without ending in {where}, but spec.max_steps={spec.max_steps}; a game must end "
            "(terminate or truncate) every episode within max_steps")


@dataclass
class EvalResult:
    """Mean episode return per agent, role and team over ``episodes`` episodes."""

    episodes: int
    per_agent: dict[str, float]
    per_role: dict[str, float]
    per_team: dict[str, float]


def evaluate(
    vg: VectorGame,
    seats: Mapping[str, Policy],
    episodes: int,
    greedy: bool = False,
) -> EvalResult:
    """Play ``episodes`` episodes on a fresh reset of ``vg`` with ``seats[agent]`` acting."""
    spec = vg.spec
    if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)) or episodes < 1:
        raise ValueError(f"evaluate: episodes={episodes!r:.40}; expected an integer >= 1 (the "
                         "mean of no episodes is no score)")
    missing = set(spec.agent_ids) - set(seats)
    if missing:
        raise ValueError(f"evaluate: no policy for seats {sorted(missing)}")
    check_fits("evaluate", [(a, seats[a]) for a in spec.agent_ids], spec)
    vs = vg.reset()
    finished: dict[str, list[float]] = {a: [] for a in spec.agent_ids}
    guard = FiniteGuard(spec.name, spec.agent_ids, "evaluation stopped")
    steps = 0
    while len(finished[spec.agent_ids[0]]) < episodes:
        vs = vg.step({a: seats[a].act(a, vs, greedy=greedy) for a in spec.agent_ids})
        steps += len(vs.done)
        guard.data(steps, per_agent=_rewards(vs, spec.agent_ids))  # NaN returns are no score
        check_episode_lengths(vs, spec, "evaluation")
        for b in np.flatnonzero(vs.done):
            for a in spec.agent_ids:
                finished[a].append(float(vs.episode_return[a][b]))
    per_agent = {a: float(np.mean(r[:episodes])) for a, r in finished.items()}

    def group(key: Callable[[Any], str]) -> dict[str, float]:
        out: dict[str, list[float]] = {}
        for ag in spec.agents:
            out.setdefault(key(ag), []).append(per_agent[ag.id])
        return {k: float(np.mean(v)) for k, v in out.items()}

    return EvalResult(episodes, per_agent, group(lambda ag: ag.role), group(lambda ag: ag.team))


@dataclass
class TrainResult:
    """What a training run did: frames, updates, metrics history and evaluations."""

    frames: int
    updates: int
    seconds: float
    metrics: list[dict[str, float]] = field(default_factory=list)
    evals: list[tuple[int, EvalResult]] = field(default_factory=list)
    episode_returns: list[float] = field(default_factory=list)
    side_returns: dict[str, list[float]] = field(default_factory=dict)  # team -> returns,
    # when the learner plays more than one team (self-play: the mean over seats says nothing)
    trained_frames: int = 0  # frames played up to the last update (what it trained on)
    started: float = field(default_factory=lambda: time.perf_counter(), repr=False,
                           compare=False)  # the loop's start: charts/frames_per_second


def trains_whole_rollouts(learner: Learner) -> bool:
    """Whether ``learner`` trains on-policy rollouts (its class declares
    ``CAPABILITIES.on_policy``, as MAPPO/IPPO do, or was registered with
    ``capabilities=Capabilities(on_policy=True)``): every update takes the frames played
    since the last one and nothing else ever trains on them, so a frame budget must end at
    an update (:func:`budget_spent`)."""
    declared = getattr(learner, "CAPABILITIES", None)
    if declared is not None:
        return bool(getattr(declared, "on_policy", False))
    from marl import registry  # a learner registered with its capabilities only

    return any(e.cls is type(learner) and e.capabilities.on_policy
               for e in registry.entries().values())


def budget_spent(done: int, frames: int, trained: int, whole: bool) -> bool:
    """Whether a loop that played ``done`` frames (``trained`` of them up to its last update)
    has spent a budget of ``frames``: for a learner of whole rollouts (``whole``,
    :func:`trains_whole_rollouts`) only once the rollout in progress is trained, so the
    budget is rounded up to whole rollouts (``num_envs`` × ``rollout_steps`` frames each for
    MAPPO) instead of counting frames it never trained on (3,000 frames of 800-frame
    rollouts: 3,008 played, 2,400 trained; now 3,200 and 3,200)."""
    return done >= frames and (not whole or trained >= done)


def planned_frames(frames: int, num_envs: int, trained: int = 0, rollout: int = 0) -> int:
    """The frames a :func:`train` loop with a budget of ``frames`` plays (its progress bar's
    total): whole steps of the ``num_envs`` copies; for a learner of whole rollouts of
    ``rollout`` frames (0: none, or not known), on to the end of the rollout that reaches the
    budget, counted from its last update at ``trained`` frames (:func:`budget_spent`)."""
    if not rollout:
        return -(-frames // num_envs) * num_envs
    return trained + max(0, -(-(frames - trained) // rollout)) * rollout


NEVER_READY_ROLLOUTS = 4
"""Whole rollouts a learner of whole rollouts may play past its frame budget without an
update before the loop stops (:class:`ReadyWatch`): a correct one updates within one."""
UNDECLARED_ROLLOUT = 1 << 16
"""The rollout length (frames) taken for a learner that declares none
(:func:`rollout_frames`) and has not updated yet: 4 × 65,536 frames past its budget."""


class NeverReadyError(ValueError):
    """A learner of whole rollouts played far past its frame budget and never said
    ``ready()``: the loop, which waits for its update (:func:`budget_spent`), would never end
    (a user's learner with a ``ready()`` bug)."""


@dataclass
class ReadyWatch:
    """Ends a loop whose learner of whole rollouts never becomes ready: once it has played
    :data:`NEVER_READY_ROLLOUTS` rollouts past the budget of ``frames`` without an update,
    :meth:`check` raises :class:`NeverReadyError` naming the learner (``who``: how the loop
    names it, e.g. ``"league member vdn2"``). A rollout is the longest of the declared one
    (``rollout``: :func:`rollout_frames`, 0 for none) and those trained so far; a learner
    that declares none is given at least :data:`UNDECLARED_ROLLOUT` frames."""

    learner: Learner
    frames: int
    rollout: int = 0
    who: str = ""
    _last: int = field(default=0, init=False)  # frames at the last update
    _longest: int = field(default=0, init=False)  # the longest trained (between updates)

    def check(self, done: int, trained: int) -> None:
        """After a step: ``done`` frames played, ``trained`` of them up to the last update."""
        if trained > self._last:
            self._longest, self._last = max(self._longest, trained - self._last), trained
        # undeclared: never below UNDECLARED_ROLLOUT, as a learner that updates every few
        # episodes may meet episodes many times longer than any it trained on before
        length = max(self.rollout, self._longest) if self.rollout else \
            max(self._longest, UNDECLARED_ROLLOUT)
        if trained >= done or done - self.frames < NEVER_READY_ROLLOUTS * length:
            return
        cls = type(self.learner)
        algo = _registered_name(cls)
        name = f"learner {algo} ({cls.__module__}.{cls.__qualname__})" if algo else \
            f"learner {cls.__module__}.{cls.__qualname__}"
        what = ("cfg.rollout_steps × num_envs" if length == self.rollout
                else "its longest so far" if length == self._longest
                else "it declares no cfg.rollout_steps")
        last = f"its last update at {trained} frames" if trained else "no update at all"
        raise NeverReadyError(
            f"{self.who + ': ' if self.who else ''}{name} trains whole rollouts "
            f"(on_policy=True) but played {done} frames for a budget of {self.frames} with "
            f"{last}: ready() never returned True in {NEVER_READY_ROLLOUTS} rollouts of "
            f"{length} frames past the budget ({what}); an on_policy learner must say ready() "
            "once it holds a rollout")


def _registered_name(cls: type) -> str:
    """The algo names ``cls`` itself (not a subclass) is registered as in
    :mod:`marl.registry`, sorted and joined by ``or`` ('' if none): a class registered under
    several names (``MAPPO``: ``ippo or mappo``) is not told which of them the run chose, and
    the first in registration order depended on the modules imported first."""
    from marl import registry  # the error's path only: it loads the built-in learners

    return " or ".join(sorted(n for n, e in registry.entries().items() if e.cls is cls))


def rollout_frames(learner: Learner, num_envs: int) -> int:
    """The frames of one rollout of an on-policy learner that says its length
    (``cfg.rollout_steps`` steps of every copy, as MAPPO/IPPO do); else 0 (learnt at its
    first updates)."""
    steps = getattr(getattr(learner, "cfg", None), "rollout_steps", None)
    return steps * num_envs if isinstance(steps, int) and steps > 0 else 0


ROUNDING_TOLD = 2
"""A loop that plays more than this many times its frame budget (whole steps of many copies,
whole rollouts) says so when it starts, not only in its closing line."""


def warmup_frames(config: Any) -> int:
    """Frames a replay learner configured by ``config`` collects before its first update, at
    least: it is ready once ``learning_starts`` frames were played into its replay and it
    holds ``batch_size`` transitions (:func:`marl.replay.warmed_up`; one per copy and step in
    a simultaneous game, one per own turn in a turn-based one); 0 for a config without
    ``learning_starts`` (MAPPO/IPPO update at the end of every rollout)."""
    starts = getattr(config, "learning_starts", None)
    if not isinstance(starts, int) or isinstance(starts, bool):
        return 0
    batch = getattr(config, "batch_size", 0)
    return max(starts, batch if isinstance(batch, int) else 0)


def short_budget(frames: int, planned: int, config: Any, section: str,
                 budget: str = "frames", held: int = 0) -> str:
    """Why a budget of ``frames`` (``planned`` played: :func:`planned_frames`), the setting
    ``budget`` names, ends before a learner configured by ``config`` (its settings' section:
    ``maddpg``) makes its first update ('' when it does not), its replay already holding
    ``held`` transitions (a resumed one). Only a sure case: a game whose seats do not all act
    every step fills the replay more slowly, and the loop's closing check catches that."""
    need = warmup_frames(config) - held
    if need <= 0 or planned >= need:
        return ""
    starts, batch = config.learning_starts, getattr(config, "batch_size", 0)
    first = (f"{section}.learning_starts={starts}" if starts >= batch else
             f"{section}.batch_size={batch} (above {section}.learning_starts={starts})")
    held_text = f", of which its replay holds {held}" if held else ""
    return (f"{budget}={frames} ends before the first update: the learner collects {first} "
            f"frames first{held_text}, so it makes no update and plays as initialized; give it "
            f"at least {need} frames or lower {section}.learning_starts")


_TOLD: ContextVar[frozenset[tuple[str, int]]] = ContextVar("short_budgets_told",
                                                           default=frozenset())


@contextmanager
def budget_told(section: str, frames: int) -> Iterator[None]:
    """Within the block, :func:`train` does not repeat the warning of a budget of ``frames``
    below a ``section`` learner's warm-up that the caller gave once, up front, for all of its
    learners (a PSRO run names ``population.oracle_frames`` for every best response)."""
    token = _TOLD.set(_TOLD.get() | {(section, frames)})
    try:
        yield
    finally:
        _TOLD.reset(token)


def _section(learner: Learner) -> str:
    """The settings' section a learner's config comes from (``maddpg``; ``mappo`` for IPPO),
    ``cfg`` for a learner not in the registry."""
    from marl import registry  # the warning's path only: it loads the built-in learners

    cls, cfg = type(learner), getattr(learner, "cfg", None)
    entries = [e for e in registry.entries().values() if e.cls is cls]

    def keeps(entry: Any) -> bool:  # one class, several entries (VDN, QMIX): its preset's
        try:
            return entry.resolve(cfg) == cfg
        except Exception:  # noqa: BLE001 (a user's preset: the name is only for a message)
            return False

    return next((e.section for e in entries if keeps(e)), entries[0].section if entries
                else "cfg")


def _replay_held(learner: Learner) -> int:
    """Frames already played into a replay learner's buffer (a resumed one's: what its
    ``learning_starts`` counts, ``ReplayBuffer.frames``; its length where it counts none);
    0 if none."""
    try:
        buffer = learner.buffer  # type: ignore[attr-defined]
        return int(getattr(buffer, "frames", len(buffer)))
    except (AttributeError, TypeError):
        return 0


def league_budget_note(learner: Learner, frames: int, num_envs: int, generations: int,
                       carries: bool = True) -> tuple[bool, str]:
    """Whether a league member whose ``learner`` trains ``frames`` per generation
    (``population.frames_per_generation``, played in whole steps of ``num_envs`` copies) for
    the ``generations`` left makes no update in the whole run, and why, in
    :func:`short_budget`'s words; ``(False, note)`` when its first update only comes in a
    later generation (its replay, ``carries`` over between generations, fills over several);
    ``(False, '')`` when a generation reaches it."""
    held = _replay_held(learner)
    config = getattr(learner, "cfg", None)
    planned = planned_frames(frames, num_envs, 0, 0)
    need = warmup_frames(config) - held
    if need <= 0 or planned >= need:
        return False, ""
    section, budget = _section(learner), "population.frames_per_generation"
    first = -(-need // planned)  # generations of play that fill the replay
    if carries and first <= generations:
        return False, (f"{budget}={frames} is below the {need} frames the {section} learner "
                       f"collects before its first update ({section}.learning_starts, "
                       f"{section}.batch_size): its replay fills over generations, so at least its "
                       f"first {first - 1} generation(s) publish untrained snapshots")
    played = planned * generations if carries else planned
    span = f"its {generations} generation(s) left play {played} frames in all" if carries \
        else f"each generation starts with an empty replay: {section}.checkpoint_buffer=false"
    why = short_budget(frames, planned, config, section, budget, held)
    return True, (f"{why.split('; give it')[0]} ({span}); give it at least "
                  f"{-(-need // (generations if carries else 1))} frames per generation or "
                  f"lower {section}.learning_starts")


def _budget_notes(learner: Learner, frames: int, planned: int, budget: str, who: str,
                  unit: str) -> bool:
    """Log, as :func:`train` starts, a plan more than :data:`ROUNDING_TOLD` times the budget
    (info; ``unit``: what it rounds up to) and a budget that ends before the first update (a
    warning, unless the caller gave it: :func:`budget_told`); whether the budget is short."""
    if planned > ROUNDING_TOLD * frames:
        log.info("%swill play %d frames for %s=%d: rounded up to %s", who, planned, budget,
                 frames, unit)
    section = _section(learner)
    why = short_budget(frames, planned, getattr(learner, "cfg", None), section, budget,
                       _replay_held(learner))
    if why and (section, frames) not in _TOLD.get():
        log.warning("%s%s", who, why)
    return bool(why)


def train(
    learner: Learner,
    vg: VectorGame,
    frames: int,
    opponents: Mapping[str, Policy] | None = None,
    eval_every: int = 0,
    eval_episodes: int = 32,
    eval_game: VectorGame | None = None,
    eval_greedy: bool = False,
    progress: bool = True,
    on_update: Callable[[int, dict[str, float]], None] | None = None,
    on_step: Callable[[int], None] | None = None,
    log_as: str = "",
    whole_rollouts: bool | None = None,
    budget: str = "frames",
    resumed_at: int = 0,
) -> TrainResult:
    """Train ``learner`` for ``frames`` joint steps (one frame = one step of one copy),
    rounded up to whole steps of the copies and, for an on-policy learner, to whole
    rollouts: every frame counted is trained on (:func:`budget_spent`).

    Args:
        opponents: fixed policies for the seats the learner does not control.
        eval_every: evaluate the learner's policy every this many frames (0: never) on
            ``eval_game`` (default: a new copy of ``vg``'s game), the other seats played
            by ``opponents`` or uniformly random policies.
        eval_greedy: evaluate greedy actions (e.g. for value-based learners) instead of
            sampling from the policy.
        on_update: called with (frames, metrics) after each update (logging hooks).
        on_step: called with the frames so far after each step (and its update, if any).
        log_as: what trained, as the closing log line names it (``"RL oracle: player_0"``
            -> ``"RL oracle: player_0 trained 512 frames in ..."``); a caller names its
            learner here instead of logging a second line of the same frames.
        budget: the setting ``frames`` comes from, as the warnings name it (a budget that
            ends before a replay learner's first update, one rounded up past
            :data:`ROUNDING_TOLD` times itself).
        resumed_at: frames trained before this call (a resumed run's checkpoint): the
            progress bar starts there and counts to the whole run's end (it counted the
            frames left from 0); ``frames``, the result and the hooks count this call's.

    The bar's rate and ETA are the average over the whole loop (updates included), and every
    update logs ``charts/frames_per_second`` alike (:func:`after_step`).
    """
    if isinstance(frames, bool) or not isinstance(frames, (int, np.integer)) or frames < 0:
        raise ValueError(f"train: frames={frames!r:.40}; expected an integer >= 0 (the frames "
                         "to train)")
    if eval_every and (isinstance(eval_episodes, bool)
                       or not isinstance(eval_episodes, (int, np.integer)) or eval_episodes < 1):
        raise ValueError(f"train: eval_episodes={eval_episodes!r:.40}; expected an integer >= "
                         f"1 with eval_every={eval_every}")
    opponents = dict(opponents or {})
    free = set(vg.spec.agent_ids) - set(learner.agents) - set(opponents)
    if free:
        raise ValueError(f"train: seats {sorted(free)} have neither the learner nor an opponent")
    _check_learner_fits(learner, vg.spec)
    check_fits("train: opponents", opponents, vg.spec)
    result = TrainResult(0, 0, 0.0)
    start = result.started
    whole = trains_whole_rollouts(learner) if whole_rollouts is None else whole_rollouts
    # the bar's total: the frames the loop plays (tqdm drops the total of a bar past it)
    rollout = rollout_frames(learner, vg.num_envs) if whole else 0
    planned = planned_frames(frames, vg.num_envs, 0, rollout)
    who = f"{log_as}: " if log_as else ""
    short = _budget_notes(learner, frames, planned, budget, who,
                          f"whole rollouts of {rollout} frames" if rollout
                          else f"whole steps of the {vg.num_envs} copies")
    # smoothing=0: the rate (and ETA) is frames over the wall time so far, updates included;
    # tqdm's moving average counted the fast steps between updates alone (35,000 frame/s
    # shown, 3,800 real, on 4,096 VMAS copies with a 25 s PPO update)
    bar = tqdm(total=resumed_at + planned, initial=resumed_at, disable=not progress,
               unit="frame", dynamic_ncols=True, smoothing=0)
    sides = learner_sides(vg.spec, learner.agents)
    opponent_guard = FiniteGuard(vg.spec.name, tuple(opponents)) if opponents else None
    vs = vg.reset()
    next_eval = eval_every
    updates, last_update = 0, 0  # of whole rollouts: their length, as they are trained
    watch = ReadyWatch(learner, frames, rollout, log_as) if whole else None
    while not budget_spent(result.frames, frames, result.trained_frames, whole):
        actions = learner.act(vs)
        if opponents:  # fixed policies read numpy; a tensor VecStep is copied once for them
            ovs = to_numpy(vs) if _on_device(vs) else vs
            # the opponents' rewards of the last step, on the host copy (no wait for a GPU
            # of its own); the learner checks its own seats in observe
            opponent_guard.data(result.frames, per_agent=_rewards(ovs, opponent_guard.agents))
            for a, pol in opponents.items():
                actions[a] = pol.act(a, ovs)
        vs = vg.step(actions)
        learner.observe(vs)
        if bar.total is not None and bar.n + len(vs.done) > bar.total:  # a rollout not known
            bar.total = bar.n + len(vs.done)
        after_step(learner, vs, result, bar, on_update, sides)
        if whole and result.updates > updates:  # a rollout trained: the total from its length
            rollout = result.trained_frames - last_update
            updates, last_update = result.updates, result.trained_frames
            bar.total = max(bar.n, resumed_at + planned_frames(frames, vg.num_envs, last_update,
                                                               rollout))
            bar.refresh()
        if watch is not None:
            watch.check(result.frames, result.trained_frames)
        if on_step is not None:
            on_step(result.frames)
        if eval_every and result.frames >= next_eval:
            next_eval += eval_every
            result.evals.append(
                (
                    result.frames,
                    evaluate_learner(learner, eval_game or _fresh(vg), opponents, eval_episodes),
                )
            )
    if opponent_guard is not None:  # the last step's
        opponent_guard.data(result.frames, per_agent=_rewards(vs, opponent_guard.agents))
    bar.close()
    result.seconds = time.perf_counter() - start
    rounded = (f"; frames={frames} rounded up to whole rollouts: an on-policy learner trains "
               "on every frame it plays" if whole and result.frames >= frames + vg.num_envs
               else "")
    log.info("%strained %d frames in %.1fs (%d update%s%s)", f"{log_as} " if log_as else "",
             result.frames, result.seconds, result.updates, "" if result.updates == 1 else "s",
             rounded)
    if not result.updates and result.frames and not short:  # a warm-up no check foresaw
        log.warning("%smade no update in %d frames (%s=%d), so it plays as initialized: its "
                    "ready() never returned True (a replay learner waits for its warm-up, "
                    "%s.learning_starts, and a minibatch of batch_size transitions, which a "
                    "turn-based seat stores one per own turn); "
                    "give it more frames", who, result.frames, budget, frames, _section(learner))
    return result


def _check_learner_fits(learner: Learner, spec: GameSpec) -> None:
    """Refuse, in one line, a learner built for another game's shapes (``learner.spec``,
    where it keeps one): it failed deep in its networks, or padded and trained silently."""
    own = getattr(learner, "spec", None)
    if not isinstance(own, GameSpec):
        return
    meta = PolicyMeta.from_spec(type(learner).__name__, own,
                                tuple(a for a in learner.agents if a in own.action_spaces))
    for agent in meta.agents:
        why = misfit(meta, spec, agent)
        if why is not None:
            raise ValueError(f"train: {why.replace(' policy ', ' learner ', 1)}")


def learner_sides(spec: GameSpec, agents: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Team -> the learner's seats in it, when the learner plays more than one team
    (``{}`` otherwise): what the progress bar shows one return for each."""
    sides: dict[str, tuple[str, ...]] = {}
    for a in spec.agents:
        if a.id in agents:
            sides[a.team] = (*sides.get(a.team, ()), a.id)
    return sides if len(sides) > 1 else {}



CLOCK_METRICS = ("charts/frames_per_second",)
"""Metrics measured on the wall clock: the one thing two runs of the same seed (or a run and
its resume) do not repeat."""


def without_clock(metrics: list[dict[str, float]]) -> list[dict[str, float]]:
    """``metrics`` (per update) with the wall-clock ones (:data:`CLOCK_METRICS`) set to 0,
    every key still there: what compares equal across runs of one seed."""
    return [{k: (0.0 if k in CLOCK_METRICS else v) for k, v in m.items()} for m in metrics]

def after_step(learner: Learner, vs: VecStep, result: TrainResult, bar: Any,
               on_update: Callable[[int, dict[str, float]], None] | None,
               sides: Mapping[str, Sequence[str]] | None = None) -> None:
    """Bookkeeping after ``learner.observe(vs)``: frames, finished episodes' returns (mean
    over the learner's seats, and per side of ``sides``), and an update with its metrics
    when the learner is ready."""
    B = len(vs.done)
    result.frames += B
    bar.update(B)
    ended = np.flatnonzero(_host(vs.done))  # a tensor VecStep: one device-to-host copy
    ret = {a: _host(r) for a, r in vs.episode_return.items()} if len(ended) else {}
    for b in ended:
        result.episode_returns.append(float(np.mean([ret[a][b] for a in learner.agents])))
        for team, seats in (sides or {}).items():
            result.side_returns.setdefault(team, []).append(
                float(np.mean([ret[a][b] for a in seats])))
    if learner.ready():
        metrics = learner.update()
        result.updates += 1
        result.trained_frames = result.frames
        recent = result.episode_returns[-50:]
        if recent:
            metrics["charts/episode_return"] = float(np.mean(recent))
        metrics["charts/frames"] = float(result.frames)
        # after the update: its time counts (the frames a run trains per second of wall time)
        metrics["charts/frames_per_second"] = result.frames / max(
            time.perf_counter() - result.started, 1e-9)
        result.metrics.append(metrics)
        if result.side_returns:  # zero-sum self-play: the mean is 0, each side's is not
            bar.set_postfix({t: f"{np.mean(r[-50:]):.2f}" for t, r in result.side_returns.items()})
        elif "charts/episode_return" in metrics:  # none while no episode ended (not ret=nan)
            bar.set_postfix(ret=f"{metrics['charts/episode_return']:.2f}")
        if on_update is not None:
            on_update(result.frames, metrics)


def _rewards(vs: VecStep, agents: Sequence[str]) -> dict[str, Any]:
    """``{"reward": [B, len(agents)]}`` of ``vs``, for :class:`FiniteGuard` (agents on dim 1)."""
    r = [vs.rewards[a] for a in agents]
    if isinstance(r[0], torch.Tensor):  # a tensor VecStep: stays on its device
        return {"reward": torch.stack(r, 1)}
    return {"reward": np.stack(r, 1)}


def _on_device(vs: VecStep) -> bool:
    """A natively batched game's VecStep (torch tensors; ``VectorGame(tensors=True)``)."""
    return hasattr(vs.done, "cpu")


def _host(x: Any) -> np.ndarray:
    return x.cpu().numpy() if hasattr(x, "cpu") else x


def _fresh(vg: VectorGame) -> VectorGame:
    """A new VectorGame of the same game, on seeds the training copies do not use."""
    return VectorGame(
        vg.factory,
        vg.num_envs,
        seed=10_000 + (vg.seed or 0),
        with_state=vg.with_state,
        with_graphs=vg.with_graphs,
    )


def evaluate_learner(
    learner: Learner,
    vg: VectorGame,
    opponents: Mapping[str, Policy] | None = None,
    episodes: int = 32,
    greedy: bool = False,
) -> EvalResult:
    """The learner's current policy in its seats, ``opponents`` (or random) elsewhere."""
    pol = learner.policy()
    rnd = RandomPolicy(vg.spec, seed=1)
    seats = {
        a: (pol if a in learner.agents else (opponents or {}).get(a, rnd))
        for a in vg.spec.agent_ids
    }
    return evaluate(vg, seats, episodes, greedy=greedy)
