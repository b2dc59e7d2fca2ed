"""What a league resume reads back and checks before it continues a run
(:meth:`populations.league.League._open` and ``_restore``).

* :func:`check_folder`: whether ``run_dir`` holds a league to resume, or may start one;
* :func:`member_changes`: how a resume's members differ from those ``league.db`` recorded;
* :func:`note_generations`: a resume that goes on to another generation count says so;
* :func:`recorded_history`: what only a checkpointed league records (a resume that finds no
  checkpoint while the database holds it refuses to start over);
* :func:`checked_state`: a checkpoint's entries, each checked for type and range (the file is
  untrusted), as one :class:`LeagueState`;
* :func:`check_snapshots`: the database holds every snapshot that state has published, each
  matching its recorded hash;
* :func:`load_members`: the members' states loaded from it, each failure one line.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marl.core import CheckpointError, ModelChangedError, nonfinite_tensor
from populations.checkpoint import checkpoint_files
from populations.members import Member, member_settings
from populations.run_folder import RunFolderError, resume_words, settings_diff

if TYPE_CHECKING:
    from populations.db import LeagueDB
    from populations.store import PolicyStore

log = logging.getLogger("populations.league")  # the league's log, as before the move

# keys of a member's recorded settings a resume may change: the seeds a member is given by
# the run's seed tree (the run's seed is compared with the league's settings; members recorded
# before them hold their section's 0) and the device an LLM team's trainer is built on (the
# run's device, which may change)
MEMBER_MAY_CHANGE = ("seed", "grpo.seed", "grpo.device")

PHASES = ("new", "training", "trained", "done", "async")  # a league's, in a checkpoint
_MISSING = object()


@dataclass(frozen=True)
class LeagueState:
    """A league checkpoint's entries, checked (:func:`checked_state`)."""

    generation: int  # the generation the league is at
    phase: str  # one of PHASES
    frames: int  # the league's step (its learner members' frames, or LLM teams' episodes)
    seconds: float  # wall-clock seconds of the run up to the checkpoint
    members: dict[str, Any]  # member name -> its state_dict
    progress: dict[str, tuple[int, str]]  # asynchronous: name -> (generation, trained|done)
    trained: tuple[str, ...]  # phase "training": the members whose generation is trained


def _shown(value: Any) -> str:
    """A checkpoint's value in a message: its start, on one line."""
    r = repr(value)
    return r if len(r) <= 40 else r[:37] + "..."


def _first_lines(err: BaseException) -> str:
    """``Type: message`` with its lines joined (torch's load_state_dict error names the
    mismatched tensor on its second line), at most 300 characters."""
    text = " ".join(line.strip() for line in str(err).strip().splitlines() if line.strip())
    text = f"{type(err).__name__}: {text}" if text else type(err).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def check_folder(run_dir: Path, resume: bool, override: bool) -> bool:
    """Whether there is a run to resume; refuses what cannot be continued or started."""
    db_path = run_dir / "league.db"
    ckpts = checkpoint_files(run_dir / "checkpoints")
    w = resume_words()
    if not resume and (db_path.exists() or ckpts):
        raise FileExistsError(
            f"run folder {run_dir} already holds a league; {w.verb} {w.resume} to "
            "continue it or choose a new folder")
    if resume and not db_path.exists():
        if ckpts:
            raise RunFolderError(
                f"cannot resume {run_dir}: it has checkpoints ({ckpts[0].name}...) but "
                "no league.db, which holds the snapshots and matches they refer to; restore "
                "the database or start a new run in another folder")
        if not override:
            raise RunFolderError(
                f"{w.resume} but {run_dir} holds no league (no league.db): check the "
                f"folder name, or {w.verb} {w.override} to start a new run there")
        log.warning("resume_override: %s holds no league; starting a new one", run_dir)
        return False
    return resume


def note_generations(recorded: dict[str, Any] | None, generations: int) -> None:
    """A resume whose generation count differs from the run's (a setting a resume may change)
    says so in one line: the count sets how long the run goes on, and a resume that changed
    it without a word trained a run started with 3 generations to the default 6."""
    before = (recorded or {}).get("generations")
    if isinstance(before, int) and not isinstance(before, bool) and before != generations:
        log.info("generations: the run recorded %d; this resume goes on to %d", before,
                 generations)


def member_changes(db: LeagueDB, run_id: int, members: Sequence[Member]) -> list[str]:
    """How a resume's ``members`` differ from those ``league.db`` recorded (their
    ``members.settings``, schema 5, re-recorded at each start): a recorded member not
    among them, and each setting of one that differs (outside
    :data:`MEMBER_MAY_CHANGE`), as ``members.<name>.<key>=... (run) vs ... (now)``. The
    run's ``settings.json`` says the same when it is there; this is what a folder
    without it (deleted, or from before it was written) is checked against. A member not
    recorded yet (none published) or without settings is not compared."""
    recorded = {m["name"]: m["settings"] for m in db.members(run_id)}
    names = [m.name for m in members]
    diff = [f"members={list(recorded)} (run) vs {names} (now)"] \
        if any(n not in names for n in recorded) else []
    now = {m.name: member_settings(m) for m in members if recorded.get(m.name)}
    free = [f"members.{n}.{k}" for n in now for k in MEMBER_MAY_CHANGE]
    return diff + settings_diff({"members": {n: recorded[n] for n in now}},
                                {"members": {n: v for n, v in now.items() if v}}, free)


def recorded_history(db: LeagueDB, run_id: int) -> str | None:
    """What the database holds of this run that only a checkpointed league records, or
    None: generation 0 (its snapshots, their matches, ratings and NashConv at step 0) is
    recorded before the first checkpoint and published again the same by a resume that
    finds none (a stop inside it resumes so); a later snapshot, match or metric is not."""
    last = max((s.version for s in db.snapshots(run_id)), default=0)
    if last > 0:
        return f"generation {last}'s snapshots (v{last:04d}, with their matches and metrics)"
    if db.count_matches(run_id) > len(db.matches(run_id, "g0000/")):
        return "matches after generation 0"
    step = max((s for s, _, _ in db.metric_rows(run_id)), default=0)
    return f"metrics up to step {step}" if step > 0 else None


def checked_state(path: Path, state: dict[str, Any], names: Sequence[str]) -> LeagueState:
    """A league checkpoint's entries (``names``: the league's members), each checked for
    type and range before anything uses it (the file is untrusted: generation=inf or
    frames=10**30 were OverflowError tracebacks, a member missing from an asynchronous run's
    progress a KeyError).

    Raises:
        CheckpointError: one line naming the file, the entry and what is expected.
    """
    def bad(entry: str, value: Any, expected: str) -> CheckpointError:
        shown = "missing" if value is _MISSING else f"{_shown(value)}"
        return CheckpointError(f"checkpoint {path} does not hold a league state this "
                               f"selfplay reads: {entry} is {shown}; expected {expected}")

    def count(entry: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            raise bad(entry, value, "a count >= 0 below 2**63 (SQLite's integers)")
        return value

    def phase(entry: str, value: Any, allowed: tuple[str, ...]) -> str:
        if not (isinstance(value, str) and value in allowed):
            raise bad(entry, value, f"one of {', '.join(allowed)}")
        return value

    generation = count("generation", state.get("generation", _MISSING))
    frames = count("frames", state.get("frames", _MISSING))
    seconds = state.get("seconds", 0.0)  # a checkpoint from before: none
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) \
            or not 0 <= seconds < 1e15:  # 10**400: float() an OverflowError traceback
        raise bad("seconds", seconds, "a finite number of seconds >= 0")
    now = phase("phase", state.get("phase", _MISSING), PHASES)
    members = state.get("members", _MISSING)
    if not isinstance(members, dict) or not all(
            isinstance(k, str) and isinstance(v, dict) for k, v in members.items()):
        raise bad("members", members, "an object of member name -> its state")
    raw = state.get("progress", {})
    if not isinstance(raw, dict) or not all(
            isinstance(k, str) and isinstance(v, list | tuple) and len(v) == 2
            for k, v in raw.items()):
        raise bad("progress", raw, "an object of member name -> [generation, phase]")
    progress = {k: (count(f"progress[{k!r}] generation", g),
                    phase(f"progress[{k!r}] phase", p, ("trained", "done")))
                for k, (g, p) in raw.items()}
    if now == "async":
        for name in names:
            if name not in progress:
                raise bad(f"progress[{name!r}]", _MISSING, "[generation, phase]")
    trained = state.get("trained", [])  # a checkpoint from before stops within a phase
    if not isinstance(trained, list) or not all(t in names for t in trained) \
            or len(set(trained)) != len(trained) or (trained and now != "training"):
        raise bad("trained", trained, "a list of distinct member names (phase training)")
    return LeagueState(generation, now, frames, float(seconds), members, progress,
                       tuple(trained))


def published(snaps: Sequence[Any], progress: dict[str, Any], last: int = -1,
              newest: bool = False) -> list[Any]:
    """The snapshots a checkpoint counts as published: each member's versions up to its
    own generation (``progress``: asynchronous runs) or up to ``last``; ``newest``: only
    each member's newest of those."""
    def top(member: str) -> int:
        if member not in progress:
            return last
        g, p = progress[member]
        return int(g) if p == "done" else int(g) - 1

    out = [s for s in snaps if s.version <= top(s.member)]
    if newest:
        out = [s for s in out if s.version == max(t.version for t in out
                                                  if t.member == s.member)]
    return out


def check_snapshots(path: Path, state: LeagueState, names: Sequence[str],
                    store: PolicyStore, db_path: Path) -> None:
    """The database (``db_path``, behind ``store``) must hold every snapshot the checkpoint
    at ``path`` has published, each matching its recorded hash (a damaged file stops the
    resume, naming it). Later versions, left by an interrupted publish, are published again
    before any use."""
    generation, progress = state.generation, state.progress
    last = generation if state.phase == "done" else generation - 1
    for name in names:
        if progress and name in progress:  # asynchronous: the member's own generation
            g, p = progress[name]
            last = int(g) if p == "done" else int(g) - 1
        have = {s.version for s in store.snapshots(name)}
        # the first version missing, found within the database's versions: a checkpoint's
        # generation is untrusted and must not size anything (range(10**12))
        missing = next((v for v in range(last + 1) if v not in have), None)
        if missing is not None:
            raise RunFolderError(
                f"checkpoint {path} is at generation {generation} but {db_path} has "
                f"no snapshot v{missing} of {name!r}: the database and the checkpoints "
                "are from different runs")
    from populations.store import StoreError

    for s in published(store.snapshots(), progress or {}, last):
        try:
            store.verify(s)
        except StoreError as err:  # what to do: the league plays its published snapshots
            raise StoreError(f"{err}; the league plays it again: restore the run folder's "
                             "snapshots from a copy, or start a new run in another folder"
                             ) from None


def load_members(path: Path, members: Sequence[Member], states: dict[str, Any]) -> None:
    """Load each member's state from the checkpoint at ``path`` (``states``: name -> its
    state_dict); a member it lacks, another model, or a state that does not fit is one
    line naming the member. NaN or inf in a member's tensors (a damaged or crafted file:
    its hash is the crafter's too) is refused, naming the tensor."""
    for m in members:
        if m.name not in states:
            raise ValueError(f"checkpoint {path} has no member {m.name!r} (it holds "
                             f"{_shown(sorted(states))}); resume with the same members")
        bad = nonfinite_tensor(states[m.name])
        if bad is not None:  # else the member acts on NaN logits: torch's error mid-match
            raise CheckpointError(f"checkpoint {path} holds {bad} of member {m.name!r}; a "
                                  "checkpoint's tensors must be finite real numbers (the file is "
                                  "damaged or was edited)")
        try:
            m.load_state_dict(states[m.name])
        except ModelChangedError as err:  # an LLM member's model folder changed since
            raise CheckpointError(
                f"checkpoint {path} holds another model than member {m.name!r} has now "
                f"({err}): its model (the llm.model folder, or the tiny model's sizes) "
                "changed since the checkpoint; put back the model and tokenizer the run "
                "trained, or start a new run in another folder") from None
        except Exception as err:  # noqa: BLE001 - a file of other settings, or a crafted one
            raise CheckpointError(
                f"checkpoint {path} does not fit member {m.name!r} "
                f"({_first_lines(err)}); resume with the run's settings") from None
