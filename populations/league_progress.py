"""A league's progress bars and lines: how far a bar has come, the time a run has left, what a
member's generation counts (frames, or an LLM team's episodes) and how many it plays, and the
note on learner members whose budget leaves them without an update."""

from __future__ import annotations

import logging
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


def _time_left(seconds: float, done: int, total: int) -> str:
    """``; about 5 min left`` for a run ``done`` of ``total`` generations in after
    ``seconds`` (the mean so far; a generation's evaluation grows with the snapshots, so
    "about"), nothing when none is done or none is left."""
    if done <= 0 or done >= total:
        return ""
    left = seconds / done * (total - done)
    text = (f"{left:.0f}s" if left < 90 else f"{left / 60:.0f} min" if left < 5400
            else f"{left / 3600:.1f} h")
    return f"; about {text} left"


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
