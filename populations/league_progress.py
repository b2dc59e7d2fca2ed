"""A league's progress bars and lines: how far a bar has come, the time a run has left, what a
member's generation counts (frames, or an LLM team's episodes) and how many it plays, and the
note on learner members whose budget leaves them without an update."""

from __future__ import annotations

import logging
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from marl.train import league_budget_note

if TYPE_CHECKING:
    from tqdm.auto import tqdm

    from populations.members import Member

log = logging.getLogger("populations.league")  # the league's log, as before the move


def _advance(bar: tqdm, n: int) -> None:
    """Show ``n`` done on ``bar``; past its total (a learner of a rollout length not known
    ahead) the total follows, as :func:`marl.train.train`'s bar does."""
    if bar.total is not None and n > bar.total:
        bar.total = n
    bar.update(n - bar.n)


def _time_left(seconds: float, done: int, total: int, eval_seconds: float = 0.0,
               pairs: float = 0, pairs_left: float = 0) -> str:
    """``; about 5 min left`` for a run ``done`` of ``total`` generations in after
    ``seconds`` (those this process timed: a resumed run's ``total`` counts those left
    after them): the mean generation times those left. With the evaluation's timings
    (``pairs`` evaluated pairs took ``eval_seconds``, not counted in ``seconds``), the
    evaluation is estimated apart, at the mean time a pair, from the ``pairs_left`` the
    generations left will play: it grows with the snapshots (:func:`sync_pairs_left`,
    :func:`async_pairs_left`). Nothing when none is done or none is left. "About": a
    generation's time varies, with the machine's load too."""
    left = total - done
    if done <= 0 or left <= 0:
        return ""
    secs = seconds / done * left
    if pairs > 0:
        secs += eval_seconds / pairs * pairs_left
    text = (f"{secs:.0f}s" if secs < 90 else f"{secs / 60:.0f} min" if secs < 5400
            else f"{secs / 3600:.1f} h")
    return f"; about {text} left"


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


def update_counts(members: Sequence[Member]) -> list[int | None]:
    """Each member's learner's update count (``updates``: MAPPO/IPPO, MADDPG, VDN/QMIX);
    None for a member that keeps none (an LLM team, a user's learner)."""
    counts: list[int | None] = []
    for m in members:
        n = getattr(getattr(m, "learner", None), "updates", None)
        counts.append(int(n) if isinstance(n, numbers.Integral) else None)
    return counts


def updated(before: Sequence[int | None], after: Sequence[int | None]) -> bool:
    """Whether every member that counts its updates made one between ``before`` and
    ``after`` (:func:`update_counts`): a generation in which an off-policy learner only
    filled its replay (``learning_starts``) is faster than those after it, and the time
    left is not extrapolated from it."""
    return all(a is None or b is None or a > b for b, a in zip(before, after, strict=True))


def recorded_estimate(rows: Sequence[dict[str, Any]],
                      members: Sequence[Member]) -> tuple[float, int]:
    """:func:`recorded_training` for a resumed league's estimate, from the versions known to
    have updated every member: none while a member that counts its updates has made none
    and cannot restart (its replay still fills: no estimate), only the last recorded one
    when a member warms up a replay (its ``learning_starts``: earlier versions may have only
    collected), else all. A member that restarts (an exploiter's ``reset_win_rate``) is
    back at 0 updates after a restart, which the recorded rows do not tell from none made
    yet: it refuses nothing, and when it warms a replay only the last recorded version is
    taken, as a warming member's."""
    counts = update_counts(members)
    restarts = [getattr(m, "reset_win_rate", None) is not None for m in members]
    if any(n == 0 and not r for n, r in zip(counts, restarts, strict=True)):
        return 0.0, 0
    warms = any(getattr(getattr(getattr(m, "learner", None), "cfg", None),
                        "learning_starts", None) is not None for m in members)
    versions = [int(r["version"]) for r in rows if r["started_at"] is not None and r["version"]]
    since = max(versions) if warms and versions else 1
    return recorded_training(rows, since)


def _planned_episodes(m: Member) -> int | None:
    """The GRPO episodes an LLM team's generation plays (``LLMMember``: ``iterations`` of
    ``groups_per_step`` groups of ``group_size``); None for a member that says nothing of
    them (a bar without a total)."""
    grpo = getattr(getattr(m, "trainer", None), "cfg", None)
    try:
        return int(m.iterations) * int(grpo.groups_per_step) * int(grpo.group_size)
    except (AttributeError, TypeError, ValueError):
        return None


def _counts(m: Member) -> str:
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
        if learner is None or _counts(m) != "frames" or left <= 0:
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
