"""A league's progress bars and lines: how far a bar has come, the time a run has left, what a
member's generation counts (frames, or an LLM team's episodes) and how many it plays, and the
note on learner members whose budget leaves them without an update."""

from __future__ import annotations

import bisect
import logging
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from marl.train import league_budget_note, warmup_frames

if TYPE_CHECKING:
    from marl.progress import tqdm
    from populations.members import Member

log = logging.getLogger("populations.league")  # the league's log, as before the move


def advance_bar(bar: tqdm, n: int) -> None:
    """Show ``n`` done on ``bar``; past its total (a learner of a rollout length not known
    ahead) the total follows, as :func:`marl.train.train`'s bar does."""
    if bar.total is not None and n > bar.total:
        bar.total = n
    bar.update(n - bar.n)


def step_postfix(bar: tqdm) -> Any:
    """``bar``'s postfix fed a GRPO iteration's :class:`llm_agents.trainer.StepProgress`
    (``rollout 12/64 episodes, 230 turns, 5.1k tokens``, ``update 3/8 minibatches``: an
    iteration of a real model runs for minutes), for :attr:`MultiTurnGRPO.on_status`: a
    single LLM run's bar of iterations and a league LLM member's bar of episodes
    (:meth:`marl.progress.tqdm.note`: on a terminal redrawn at most every
    ``bar.mininterval`` and at the end of each phase; in a log on the bar's next line)."""

    def show(p: Any) -> None:
        bar.note(p.text(), now=p.done == p.total)

    return show


def time_left(seconds: float, done: int, total: int, eval_seconds: float = 0.0,
              pairs: float = 0, pairs_left: float = 0) -> str:
    """``; about 5 min left`` for a run ``done`` of ``total`` generations in after
    ``seconds`` (those this process timed: a resumed run's ``total`` counts those left
    after them): the mean generation times those left. With the evaluation's timings
    (``pairs`` evaluated pairs took ``eval_seconds``, not counted in ``seconds``), the
    evaluation is estimated apart, at the mean time a pair, from the ``pairs_left`` the
    generations left will play: it grows with the snapshots (:func:`sync_pairs_left`,
    :func:`async_pairs_left`). Nothing when none is done or none is left. "About": a
    generation's time varies, with the machine's load too. An asynchronous league's
    (``sync=False``) is :func:`async_time_left`'s."""
    left = total - done
    if done <= 0 or left <= 0:
        return ""
    secs = seconds / done * left
    evals = eval_seconds / pairs * pairs_left if pairs > 0 else 0.0
    return _about(secs + evals)


def _about(secs: float) -> str:
    """``; about 5 min left`` for ``secs`` seconds left."""
    text = (f"{secs:.0f}s" if secs < 90 else f"{secs / 60:.0f} min" if secs < 5400
            else f"{secs / 3600:.1f} h")
    return f"; about {text} left"


def async_time_left(per_member: Sequence[tuple[float, int]], parallel: int,
                    eval_seconds: float = 0.0, pairs: float = 0,
                    pairs_left: float = 0) -> str:
    """An asynchronous league's (``sync=False``) ``; about 5 min left``: ``per_member``, each
    member's mean generation (its training seconds on a learner actor) and generations left.
    The training left is the longest of a member's own generations one after another (once
    the others have finished it trains alone) and all members' over the ``parallel`` actors
    training at once. The evaluation (``pairs`` pairs took ``eval_seconds``, ``pairs_left``
    left) overlaps it: the driver evaluates one member's snapshot while the others train,
    and a member trains its next generation after its evaluation, so the time left is also
    at least each member's training and its share of the evaluation one after another (all
    of it over the members with generations left) and the driver's evaluations one after
    another. Nothing when none is left."""
    chains = [mean * left for mean, left in per_member if left > 0]
    if not chains:
        return ""
    total = sum(chains)
    training = max(max(chains), total / max(1, parallel))
    evals = eval_seconds / pairs * pairs_left if pairs > 0 else 0.0
    return _about(max(training, (total + evals) / len(chains), evals))


class AsyncTiming:
    """An asynchronous league's recorded member generations (``LeagueDB.generations`` rows),
    read once (as the loop starts or resumes) and then one row as each member generation is
    recorded (:meth:`add`), with running sums per member: the same estimate as
    :func:`recorded_estimate` over every row (:meth:`estimate`) without reading and sorting
    the whole table again per member generation (its cost grew with the square of the
    league's length), and each member's own mean generation (:meth:`means`)."""

    def __init__(self, rows: Sequence[dict[str, Any]], members: Sequence[Member],
                 parallel: int) -> None:
        self.members, self.parallel = members, parallel
        # (member, version): (frames, seconds), in the finishing order (``seq``); a row
        # recorded again keeps its place, as LeagueDB.add_generation's
        self.rows: dict[tuple[str, int], tuple[int, float]] = {}
        self.total = 0.0  # every timed row's seconds, in that order
        # per member, by version: the frames its earlier rows played and the running seconds
        self.before: dict[str, list[int]] = {}
        self.prefix: dict[str, list[float]] = {}
        self.last: dict[str, int] = {}  # each member's last version counted
        for r in rows:
            self.add(r["member"], r["version"], r["frames"], r["started_at"],
                     r["finished_at"])

    def add(self, member: str, version: int | None, frames: int | None,
            started_at: float | None, finished_at: float) -> None:
        """Count a recorded member generation (as :func:`warm_rows` does: one with no start
        or of version 0 is not)."""
        if started_at is None or not version:
            return
        key = (member, int(version))
        row = (int(frames or 0), float(finished_at) - float(started_at))
        again = key in self.rows
        self.rows[key] = row
        if not again and key[1] > self.last.get(member, 0):  # the member's next one
            self.last[member] = key[1]
            self.total += row[1]
            before, prefix = self.before.setdefault(member, [0]), \
                self.prefix.setdefault(member, [0.0])
            before.append(before[-1] + row[0])
            prefix.append(prefix[-1] + row[1])
            return
        # recorded again (a resume's retrained generation) or out of order: recount
        self.total = sum(s for _, s in self.rows.values())
        mine = sorted((v, f, s) for (m, v), (f, s) in self.rows.items() if m == member)
        before, prefix = [0], [0.0]
        for _, f, s in mine:
            before.append(before[-1] + f)
            prefix.append(prefix[-1] + s)
        self.before[member], self.prefix[member] = before, prefix
        self.last[member] = mine[-1][0]

    def _warm(self) -> dict[str, tuple[float, int]] | None:
        """Each member's warm generations' (:func:`warm_rows`) seconds and count; None while
        the estimate gives none (:func:`recorded_estimate`)."""
        counts = update_counts(self.members)
        restarts = [getattr(m, "reset_win_rate", None) is not None for m in self.members]
        if any(n is not None and n < 0 and not r
               for n, r in zip(counts, restarts, strict=True)):
            return None
        need = {m.name: warmup_frames(m.learner.cfg) - _step_frames(m.learner)
                for m in self.members if _warming(m)}
        warm = {}
        for name, before in self.before.items():
            # rows 0..k-1 (by version) are cold: the frames before row k reach the warm-up
            k = bisect.bisect_left(before, need.get(name, 0), hi=len(before) - 1)
            warm[name] = (self.prefix[name][k], len(before) - 1 - k)  # cold seconds, warm
        return warm

    def estimate(self) -> tuple[float, int]:
        """:func:`recorded_estimate` of every row counted, with ``parallel``."""
        warm = self._warm()
        if warm is None:
            return 0.0, 0
        cold = sum(c for c, _ in warm.values())
        return (self.total - cold) / max(1, self.parallel), sum(n for _, n in warm.values())

    def means(self) -> dict[str, float] | None:
        """Each member's mean warm generation (its training seconds), the mean of them all
        for a member with none warm yet; None when no warm generation is recorded."""
        warm = self._warm()
        if not warm:
            return None
        seconds = {name: self.prefix[name][-1] - cold for name, (cold, _) in warm.items()}
        n = sum(k for _, k in warm.values())
        if n == 0:
            return None
        mean = sum(seconds.values()) / n
        return {m.name: seconds[m.name] / warm[m.name][1]
                if warm.get(m.name, (0, 0))[1] else mean for m in self.members}


def sync_pairs(members: int, window: int, generation: int) -> int:
    """The snapshot pairs generation ``generation`` of a league (``sync=True``) of
    ``members`` members evaluates (``League._evaluate``): each new snapshot against the
    earlier ones (``members * generation``; the last ``window`` of them when ``window``) and
    the new ones before it. The matchmaking rule (self-play, FSP, PFSP) picks training
    opponents only: every rule evaluates these."""
    rivals = members * generation
    if window:
        rivals = min(window, rivals)
    return members * rivals + members * (members - 1) // 2


def sync_pairs_left(members: int, window: int, done: int, total: int) -> int:
    """The pairs generations ``done + 1`` to ``total`` evaluate (:func:`sync_pairs`)."""
    return sum(sync_pairs(members, window, g) for g in range(done + 1, total + 1))


def async_pairs_left(generations: Sequence[int], window: int, total: int) -> float:
    """About the pairs an asynchronous league (``sync=False``) has left to evaluate, its
    members at ``generations`` (each its last done): a member's snapshot ``g`` meets every
    published one (``League._finish_async``; the last ``window`` when ``window``): its own
    ``g`` earlier ones and each other member's ``g`` or ``g + 1``, as they finish first or
    after it (half and half, taken here)."""
    n = len(generations)
    left = 0.0
    for done in generations:
        for g in range(done + 1, total + 1):
            rivals = n * g + (n - 1) / 2
            left += min(window, rivals) if window else rivals
    return left


def recorded_training(rows: Sequence[dict[str, Any]], since: int = 1) -> tuple[float, int]:
    """The seconds the recorded generations (``LeagueDB.generations`` rows) of versions
    ``since`` on trained, from the first member's start to the last one's finish of each
    version, and how many versions: a resumed league's estimate before this process has timed
    a whole one. A row of another process (its ``worker``) that starts after the version's
    members so far finished starts a span of its own: a version trained partly before a kill
    and partly after its resume counts its members' time, not the downtime between."""
    spans: dict[int, list[list[Any]]] = {}  # version: [start, end, worker] spans
    for r in sorted(rows, key=lambda r: (r["started_at"] is None, r["started_at"] or 0.0)):
        if r["started_at"] is None or not r["version"] or int(r["version"]) < since:
            continue  # no start recorded; version 0; before `since`
        v, start, end = int(r["version"]), float(r["started_at"]), float(r["finished_at"])
        worker, runs = r.get("worker"), spans.setdefault(v, [])
        last = runs[-1] if runs else None
        if last is not None and (start < last[1] or worker == last[2]):  # at once, or its own
            last[1] = max(last[1], end)
        else:
            runs.append([start, end, worker])
    return sum(b - a for runs in spans.values() for a, b, _ in runs), len(spans)


def _step_frames(learner: Any) -> int:
    """The frames a replay learner's step plays (its copies, VDN/QMIX's and MADDPG's
    ``_copies``: the last step's; 0 before its first)."""
    n = getattr(learner, "_copies", 0)
    return int(n) if isinstance(n, numbers.Integral) else 0


def _ready(learner: Any) -> bool:
    """Whether a replay learner (its ``cfg.learning_starts``) updates from the first step of
    its next generation: after that step its replay has been played ``learning_starts``
    frames and holds a minibatch (:func:`marl.replay.warmed_up`, its ``train_every``
    aside); True for any other learner."""
    cfg = getattr(learner, "cfg", None)
    starts = getattr(cfg, "learning_starts", None)
    if not isinstance(starts, numbers.Integral):
        return True
    buffer, step = getattr(learner, "buffer", None), _step_frames(learner)
    try:
        return (int(getattr(buffer, "frames", 0)) + step >= starts
                and len(buffer) + step >= int(getattr(cfg, "batch_size", 0)))
    except TypeError:  # no replay to ask: taken as ready
        return True


def update_counts(members: Sequence[Member]) -> list[int | None]:
    """Each member's learner's update count (``updates``: MAPPO/IPPO, MADDPG, VDN/QMIX), -1
    for a replay learner that has made none and is not ready to (its replay short of
    ``learning_starts`` or a minibatch: a generation from here fills it, in part or whole);
    None for a member that keeps none (an LLM team, a user's learner)."""
    counts: list[int | None] = []
    for m in members:
        learner = getattr(m, "learner", None)
        n = getattr(learner, "updates", None)
        if not isinstance(n, numbers.Integral):
            counts.append(None)
        else:
            counts.append(-1 if n == 0 and not _ready(learner) else int(n))
    return counts


def updated(before: Sequence[int | None], after: Sequence[int | None]) -> bool:
    """Whether every member that counts its updates was ready to update as the generation
    began and made an update between ``before`` and ``after`` (:func:`update_counts`): a
    generation in which an off-policy learner filled its replay (``learning_starts``), all
    of it or until part-way, made fewer updates than those after it, is faster, and the time
    left is not extrapolated from it."""
    return all(a is None or b is None or 0 <= b < a
               for b, a in zip(before, after, strict=True))


def _warming(m: Member) -> bool:
    """Whether ``m``'s learner fills a replay before its first update (``learning_starts``)."""
    return getattr(getattr(getattr(m, "learner", None), "cfg", None),
                   "learning_starts", None) is not None


def warm_rows(rows: Sequence[dict[str, Any]],
              members: Sequence[Member]) -> list[dict[str, Any]]:
    """The recorded member generations (``LeagueDB.generations`` rows with a start, version
    1 on) trained as the rest will: each of a member that warms a replay
    (``learning_starts``) once its earlier generations' frames and the first step's reach
    its warm-up (:func:`marl.train.warmup_frames`: it updates from that step on), every one
    of the others. A restart (an exploiter's ``reset_win_rate``) empties a replay, which the
    rows do not say: its frames count on."""
    need = {m.name: warmup_frames(m.learner.cfg) - _step_frames(m.learner)
            for m in members if _warming(m)}
    played: dict[str, int] = {}
    warm = []
    for r in sorted(rows, key=lambda r: int(r["version"] or 0)):
        if r["started_at"] is None or not r["version"]:
            continue
        name = r["member"]
        if played.get(name, 0) >= need.get(name, 0):
            warm.append(r)
        played[name] = played.get(name, 0) + int(r["frames"] or 0)
    return warm


def recorded_estimate(rows: Sequence[dict[str, Any]], members: Sequence[Member],
                      parallel: int | None = None) -> tuple[float, int]:
    """The training seconds and generations the time left is the mean of, from the recorded
    member generations (``rows``) trained as the rest will (:func:`warm_rows`): a resumed
    league's estimate before this process has timed a generation; none while a member that
    warms a replay has made no update and is not an exploiter that restarts (back at 0
    updates, which the rows do not tell from none made yet).

    Synchronous (``parallel`` None): :func:`recorded_training` of the versions every member
    trained warm, per version. Asynchronous (``sync=False``): per member generation, what
    the time left counts, as ``parallel`` learner actors train at once: the members'
    training seconds over ``parallel``, each a share of the wall time (the versions' spans
    per version were about ``parallel`` times a member generation's share)."""
    counts = update_counts(members)
    restarts = [getattr(m, "reset_win_rate", None) is not None for m in members]
    if any(n is not None and n < 0 and not r for n, r in zip(counts, restarts, strict=True)):
        return 0.0, 0
    warm = warm_rows(rows, members)
    if parallel is not None:
        seconds = sum(float(r["finished_at"]) - float(r["started_at"]) for r in warm)
        return seconds / max(1, parallel), len(warm)
    names = {m.name for m in members}
    by_version: dict[int, set[str]] = {}
    for r in warm:
        by_version.setdefault(int(r["version"]), set()).add(r["member"])
    whole = {v for v, who in by_version.items() if who >= names}
    return recorded_training([r for r in warm if int(r["version"]) in whole])


def planned_episodes(m: Member) -> int | None:
    """The GRPO episodes an LLM team's generation plays (``LLMMember``: ``iterations`` of
    ``groups_per_step`` groups of ``group_size``); None for a member that says nothing of
    them (a bar without a total)."""
    grpo = getattr(getattr(m, "trainer", None), "cfg", None)
    try:
        return int(m.iterations) * int(grpo.groups_per_step) * int(grpo.group_size)
    except (AttributeError, TypeError, ValueError):
        return None


def count_unit(m: Member) -> str:
    """What ``m.train_generation`` returns a count of: ``frames`` (learners), or what the
    member's ``counts`` says (an LLM team's: ``episodes``)."""
    return getattr(m, "counts", "frames")


def note_short_budgets(cfg: Any, members: Sequence[Member], left: int,
                       in_process: bool) -> None:
    """Say, as the run starts, which learner members ``cfg.frames_per_generation`` (``cfg``:
    the league's :class:`~populations.league.LeagueConfig`) leaves without an update (a
    warning: they never learn) or without one in their first generations (info) of the
    ``left`` it trains, as a single learner's run warns of its ``frames``
    (:func:`marl.train.league_budget_note`): once per kind of member and settings, naming
    its members, not once per generation. ``in_process``: the members train in this
    process (on learner actors a replay buffer outlives a generation only if the learner
    checkpoints it)."""
    notes: dict[tuple[bool, str], list[str]] = {}
    for m in members:
        learner = getattr(m, "learner", None)
        if learner is None or count_unit(m) != "frames" or left <= 0:
            continue
        carries = in_process or getattr(learner.cfg, "checkpoint_buffer", True)
        never, text = league_budget_note(learner, cfg.frames_per_generation, cfg.num_envs,
                                         left, carries)
        if text:
            notes.setdefault((never, text), []).append(m.name)
    for (never, text), names in notes.items():
        who = ", ".join(map(repr, names))
        (log.warning if never else log.info)(
            "league member%s %s: %s", "s" if len(names) > 1 else "", who, text)
