"""One process per run folder, and resumes that continue the same run.

* :class:`RunLock` holds an exclusive ``flock`` on ``<run>/.lock`` (holding the PID) while a
  run writes to its folder; a second process is refused with a one-line error naming the
  PID that holds it. The kernel drops the lock when its process dies, even by SIGKILL, so
  a stale lock never blocks a resume. Within one process the lock is re-entrant
  (``run_experiment`` holds it, and the league it starts takes it again).
* :func:`new_folder` names the folder of a run (sweep) started with selfplay-train's default
  folder (``runs/<experiment>/<second>``): one that no folder holds and no other process
  claimed, so runs started in the same second each get their own (``<second>_1``...).
* :func:`check_settings` compares the settings a run was started with to those of a resume:
  a resume with other settings, or a resume of a folder that holds no run, fails in one
  line unless ``override`` is set. Keys in ``may_change`` (where it runs, how it logs, how
  long it goes on) may differ.
* :func:`refuse_lost_history`: a resume that finds no checkpoint while the run's database
  records what only a checkpointed run records (its checkpoints deleted) fails in one line
  unless ``override`` is set: starting over would replace that history.
* :func:`sigterm_as_interrupt` (the CLIs' entry points only) makes SIGTERM end a run the way
  Ctrl-C does: recorded ``interrupted``, resumable, workers released. Inside
  :func:`deferred_stop` (a single run's training) the first Ctrl-C or SIGTERM only asks the
  loop to stop: it finishes its update, writes a checkpoint and stops (:func:`stop_requested`,
  :func:`stop_now`); a second one stops at once.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import signal
import socket
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marl.fileio import atomic_write
from populations.db import LeagueDB, LeagueDBError, lock_budget_after, refuse_link

log = logging.getLogger(__name__)
LOCK_NAME = ".lock"
SWEEP_FOLDER = "sweep folder"
"""What a sweep's lock (``RunLock(folder, SWEEP_FOLDER)``) names its folder; its lock file
says ``<pid> sweep``."""
SETTINGS_NAME = "settings.json"

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no flock; locking is POSIX only
    fcntl = None  # type: ignore[assignment]


_STARTED: set[str] = set()
"""The run folders (absolute paths) whose run started in this process: its start checks
passed (:func:`mark_started`). selfplay-train's guard puts a folder back as it was before the
command (its ``.hydra``, its job log) only for a command refused before its run started; a
run that started and then failed keeps what it wrote, whatever the error's type."""


_ON_START: dict[str, list[Callable[[], None]]] = {}
"""What to do once the run in a folder (absolute path) starts (:func:`when_started`)."""


def mark_started(run_dir: str | Path) -> None:
    """Record that the run in ``run_dir`` passed its start checks (settings, checkpoint,
    league state) and started: an error from here on is a failure of the run, not a refusal
    of the command (:data:`_STARTED`). What :func:`when_started` left for it is done now."""
    path = os.path.abspath(run_dir)
    _STARTED.add(path)
    for call in _ON_START.pop(path, []):
        call()


def when_started(run_dir: str | Path, call: Callable[[], None]) -> None:
    """Call ``call`` once the run in ``run_dir`` starts (:func:`mark_started`; at once when it
    has): selfplay-train's 'experiment ... in <run>' line, which a command refused before
    its run started (a folder holding another run, a resume with other settings) printed
    before its refusal, as if the run had started."""
    path = os.path.abspath(run_dir)
    if path in _STARTED:
        call()
    else:
        _ON_START.setdefault(path, []).append(call)


def forget_started() -> None:
    """Forget the runs this process started and what :func:`when_started` left for them: a
    new command (tests run several in a process) starts none yet."""
    _STARTED.clear()
    _ON_START.clear()


def run_started(run_dir: str | Path) -> bool:
    """Whether :func:`mark_started` was called for ``run_dir`` in this process."""
    return os.path.abspath(run_dir) in _STARTED


@dataclass(frozen=True)
class ResumeWords:
    """How the user spells the resume options and a game's keyword argument where they
    started the run, so messages name what they would type: ``set resume_override=true``
    (selfplay-train), ``add --resume-override`` (``python -m populations.league``), ``pass
    resume_override=True`` (the Python API, the default)."""

    verb: str
    resume: str
    override: str
    game_kwarg: str  # "{key}" and "{value}" filled in

    def kwarg(self, key: str, value: str) -> str:
        return self.game_kwarg.format(key=key, value=value)


PYTHON_WORDS = ResumeWords("pass", "resume=True", "resume_override=True",
                           "game_kwargs={{'{key}': {value}}}")
HYDRA_WORDS = ResumeWords("set", "resume=true", "resume_override=true",
                          "game.kwargs.{key}={value}")
LEAGUE_CLI_WORDS = ResumeWords("add", "--resume", "--resume-override",
                               "--game-kwargs '{{\"{key}\": {value}}}'")
_words: ContextVar[ResumeWords] = ContextVar("selfplay_resume_words", default=PYTHON_WORDS)


def resume_words() -> ResumeWords:
    """The spelling of resume options in this context's messages (:func:`spelled`)."""
    return _words.get()


@contextmanager
def spelled(words: ResumeWords) -> Iterator[None]:
    """Messages inside name the resume options as ``words`` spells them (an entry point)."""
    token = _words.set(words)
    try:
        yield
    finally:
        _words.reset(token)


class RunFolderError(ValueError):
    """A run folder that is in use, holds no run to resume, or was started with other
    settings; the message is one line."""


class HoldsRunError(RunFolderError):
    """A fresh run refused in a folder that already holds a run (``selfplay-train`` adds the
    command that resumes it)."""


_held: dict[str, tuple[int, int]] = {}  # lock path -> (fd, depth), this process's locks
_held_guard = threading.Lock()


class RunLock:
    """An exclusive lock on a run folder for this process (re-entrant, released by
    :meth:`release` or process exit)."""

    def __init__(self, run_dir: str | Path, what: str = "run folder") -> None:
        self.run_dir = Path(run_dir)
        self.what = what  # how the refusal names the folder ("sweep folder")
        # the real path: one key per folder however it is named (symlinks, "..")
        self.path = str(Path(os.path.realpath(self.run_dir)) / LOCK_NAME)
        self.held = False

    def acquire(self) -> RunLock:
        """Take the lock; raises :class:`RunFolderError` naming the holder's PID."""
        if self.held:
            return self
        with _held_guard:
            if self.path in _held:
                fd, depth = _held[self.path]
                _held[self.path] = (fd, depth + 1)
                self.held = True
                return self
            self.run_dir.mkdir(parents=True, exist_ok=True)
            refuse_link(self.path, "run folder lock", RunFolderError)  # it is truncated
            # a directory there said "Is a directory; choose a folder you can write"
            if os.path.exists(self.path) and not os.path.isfile(self.path):
                kind = "a directory" if os.path.isdir(self.path) else "not a regular file"
                raise RunFolderError(
                    f"the lock {self.path} of {self.what} {self.run_dir} is {kind}, not the "
                    "file selfplay locks: remove it")
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            if fcntl is not None:
                try:
                    taken = _flock_exclusive(fd)
                except OSError:
                    os.close(fd)
                    raise
                if not taken:
                    os.close(fd)
                    raise RunFolderError(
                        f"{self.what} {self.run_dir} is in use by process {lock_holder(self.path)} "
                        f"(lock {self.path}); wait for it to end or stop it") from None
            os.ftruncate(fd, 0)
            # a sweep's lock says so: no run starts in its job folders (sweep_holding)
            mark = " sweep" if self.what == SWEEP_FOLDER else ""
            os.write(fd, f"{os.getpid()}{mark}\n".encode())
            _held[self.path] = (fd, 1)
        release_claim(self.run_dir)  # the folder is there and locked: others skip it
        self.held = True
        return self

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        with _held_guard:
            fd, depth = _held[self.path]
            if depth > 1:
                _held[self.path] = (fd, depth - 1)
                return
            del _held[self.path]
            os.close(fd)  # closing the only descriptor drops the flock

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


# ----------------------------------------------------------- a new folder for each run
NEW_FOLDER_TRIES = 1000
"""How many names :func:`new_folder` tries (``base``, ``base_1``... ``base_999``)."""
_CLAIMS: dict[str, socket.socket | None] = {}
"""The folders (real paths) :func:`new_folder` claimed for this process and no lock of it
holds yet: the socket that claims each (None where no socket could claim it)."""


def new_folder(base: str) -> str:
    """``base``, else ``base_1``, ``base_2``...: the first name that no file or folder holds
    and no other live process claimed (the resolver ``new_folder`` of ``configs/config.yaml``:
    the default run and sweep folders, ``runs/<experiment>/<second>``). Runs started in the
    same second shared one folder, which they never chose: all but the first were refused,
    'in use by process N' (or 'already holds a run' after it ended).

    The claim is an abstract Unix socket named after the folder's real path (Linux): it makes
    no file, and the kernel drops it when the process ends; it is held until this process
    locks the folder (:class:`RunLock`, which makes it: then the folder itself says the name
    is taken). Elsewhere the first name no folder holds (two starts in the same instant may
    still meet there). A name this process claimed is its own: returned again (Hydra's
    ``use_cache`` keeps one config's folder anyway). All names taken: ``base``, whose
    command is then refused naming the process that holds it."""
    for n in range(NEW_FOLDER_TRIES):
        name = base if n == 0 else f"{base}_{n}"
        key = os.path.realpath(name)
        if os.path.lexists(name):
            continue
        if key in _CLAIMS:
            return name
        if _claim(key):
            # a run that claimed it, made and locked it and dropped its claim between the look
            # above and this claim: the folder now says so (review40b)
            if not os.path.lexists(name):
                return name
            release_claim(name)
    return base


def _claim(key: str) -> bool:
    """Claim the folder ``key`` (a real path) for this process (:data:`_CLAIMS`): False when
    another live process holds its claim."""
    if not sys.platform.startswith("linux"):  # no abstract sockets: the name alone
        _CLAIMS[key] = None
        return True
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:  # no Unix sockets here (a sandbox): the name alone
        _CLAIMS[key] = None
        return True
    try:
        sock.bind(f"\0selfplay-folder/{digest}".encode())
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            return False
        _CLAIMS[key] = None
        return True
    _CLAIMS[key] = sock
    return True


def release_claim(folder: str | Path) -> None:
    """Drop this process's claim on ``folder`` (:func:`new_folder`): its lock holds it now,
    or this process does not use it."""
    sock = _CLAIMS.pop(os.path.realpath(folder), None)
    if sock is not None:
        sock.close()


_BUSY = (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)
PROBE_TRIES = 50
"""How many times :func:`_flock_exclusive` tries again while only probes hold shared locks."""


def _wait_out_probe(attempt: int) -> None:
    """Let a probe's shared lock go (it is held for the few microseconds of a test)."""
    import time

    time.sleep(0.001 * min(attempt + 1, 10))


def _flock_exclusive(fd: int) -> bool:
    """Take ``fd``'s exclusive ``flock`` without waiting for a holder: True when taken, False
    when another process holds the lock exclusively (a run in the folder).

    :func:`locked_elsewhere` tests a lock by taking it shared for an instant, so a first
    exclusive try can fail while nothing holds the folder: a start beside a refused command's
    clean-up was refused 'in use by process <the last run's PID>'. A failed try is followed by
    a shared one on this descriptor, granted only when no process holds the lock exclusively;
    then only probes (or starts doing the same) held it, and the exclusive try is repeated
    after a pause, at most :data:`PROBE_TRIES` times."""
    for attempt in range(PROBE_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as err:
            if err.errno not in _BUSY:
                raise
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in _BUSY:
                raise
            return False  # held exclusively: a run
        fcntl.flock(fd, fcntl.LOCK_UN)
        _wait_out_probe(attempt)
    return False


def locked_elsewhere(run_dir: str | Path) -> bool:
    """Whether another live process holds ``run_dir``'s lock (:class:`RunLock`): a folder in
    use, in which a refused command removes and rewrites nothing. False for this process's
    own locks and for a folder without a lock file."""
    path = str(Path(os.path.realpath(run_dir)) / LOCK_NAME)
    if fcntl is None:
        return False
    with _held_guard:
        if path in _held:
            return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:  # no lock file (or a link planted there): no run holds it
        return False
    try:  # held shared for an instant: a start meanwhile tries again (_flock_exclusive)
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # dropped as the probe closes
    except OSError as err:
        return err.errno in _BUSY
    finally:
        os.close(fd)
    return False


def one_line(err: BaseException) -> str:
    """``Type: first line of the message``: the error recorded with a failed run."""
    if _by_sigterm(err):  # Ray re-raises a Terminated met in ray.get as a KeyboardInterrupt
        return "Terminated: SIGTERM"
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0]}" if text else type(err).__name__


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, SLURM, Kubernetes) in a CLI, raised in the main thread:
    a ``KeyboardInterrupt``, so every path that handles Ctrl-C handles it the same way (the
    run recorded ``interrupted``, workers closed, one line naming the resume), exit 143."""


_sigterm_seen = threading.Event()  # Ray's ray.get turns any KeyboardInterrupt into a plain one
_deferring = False  # inside deferred_stop() of a CLI: the first signal only asks to stop
_requested: int | None = None  # the signal that asked (SIGINT or SIGTERM), not yet obeyed
# where the loop inside deferred_stop() stops, in the note a first signal prints
UPDATE = "at the next update (a replay learner: the next step)"
GRPO_ITERATION = "after the current GRPO iteration"  # an LLM team's single run (minutes each)
_where = UPDATE


def _raise_terminated(signum: int, frame: object) -> None:
    _sigterm_seen.set()
    if _defer(signum):
        return
    raise Terminated("SIGTERM")


def _raise_interrupt(signum: int, frame: object) -> None:
    """Ctrl-C in a CLI: Python's own KeyboardInterrupt, or a stop request (deferred_stop)."""
    if _defer(signum):
        return
    raise KeyboardInterrupt


def _defer(signum: int) -> bool:
    """Whether this signal only asks the loop to stop (the first one inside deferred_stop)."""
    global _requested
    if not _deferring or _requested is not None:
        return False
    _requested = signum
    name = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
    # os.write: print() here could re-enter a write to stderr the signal interrupted
    with contextlib.suppress(OSError):  # no stderr (closed): the stop goes on all the same
        os.write(2, f"\n{name}: stopping with a checkpoint {_where}, which the run resumes "
                    f"from; {name} again stops at once\n".encode())
    return True


def stop_deferred() -> bool:
    """Whether a first Ctrl-C or SIGTERM would only ask to stop (inside a CLI's
    deferred_stop): loops then cut long work into parts they can stop between."""
    return _deferring


def stop_requested() -> bool:
    """Whether a Ctrl-C or SIGTERM asked the running loop to stop (inside deferred_stop)."""
    return _requested is not None


def stop_now() -> None:
    """Obey a stop request (the checkpoint is written): raise what the signal would have
    raised (:class:`Terminated` after SIGTERM, ``KeyboardInterrupt`` after Ctrl-C)."""
    global _deferring, _requested
    signum, _requested = _requested, None
    if signum is None:
        return
    _deferring = False  # obeyed: a signal during the clean-up the stop unwinds through stops
    if signum == signal.SIGTERM:
        raise Terminated("SIGTERM")
    raise KeyboardInterrupt


@contextmanager
def deferred_stop(where: str = UPDATE, obey_at_end: bool = True) -> Iterator[None]:
    """While inside, a CLI's first Ctrl-C or SIGTERM (the handlers
    :func:`sigterm_as_interrupt` installs) sets :func:`stop_requested` instead of raising:
    the loop inside finishes its update, writes a checkpoint and calls :func:`stop_now`. A
    second signal raises at once, as outside. A request still pending when the block ends
    (the signal came after the loop's last check) is obeyed then. In a program that imports
    selfplay (its own handlers) nothing changes: signals raise where they arrive. ``where``:
    where the loop stops, in the note the first signal prints. ``obey_at_end=False`` (a
    league, PSRO: nothing is left to do after their loop) drops such a late request: the
    run has finished and is recorded so."""
    global _deferring, _requested, _where
    ours = threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGTERM) is _raise_terminated
    if not ours or _deferring:
        yield
        return
    _deferring, _requested, _where = True, None, where
    try:
        yield
    except BaseException:
        _deferring, _requested = False, None
        raise
    _deferring = False
    if obey_at_end or _requested is None:
        stop_now()
        return
    if _requested == signal.SIGTERM:  # a later plain Ctrl-C is no SIGTERM (exit 130)
        _sigterm_seen.clear()
    _requested = None
    print("the run finished before it could stop: nothing left to resume", file=sys.stderr)


def _by_sigterm(err: BaseException | None) -> bool:
    return isinstance(err, Terminated) or (
        isinstance(err, KeyboardInterrupt) and _sigterm_seen.is_set())


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Terminated` in the main thread (the previous
    handler is put back after). For the command-line entry points only: a program that
    imports selfplay as a library keeps its own SIGTERM handling."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _sigterm_seen.clear()
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    # Ctrl-C: Python's KeyboardInterrupt, or a stop request inside deferred_stop()
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if previous_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, previous_int)
        _sigterm_seen.clear()


@contextmanager
def kept_sigterm() -> Iterator[None]:
    """Around ``ray.init()``, which puts its own SIGTERM handler (``sys.exit(15)``: the run
    stayed ``running``) in the driver: :func:`sigterm_as_interrupt`'s is put back."""
    handler = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if handler is _raise_terminated and threading.current_thread() is \
                threading.main_thread():
            signal.signal(signal.SIGTERM, handler)


def stop_status(err: BaseException | None) -> int:
    """Exit status of a CLI stopped by ``err``: 143 after SIGTERM, 130 after Ctrl-C (a
    shell's 128 + the signal's number)."""
    return 143 if _by_sigterm(err) else 130


def end_status(err: BaseException) -> str:
    """The status a run stopped by ``err`` is recorded with: ``interrupted`` after Ctrl-C or
    SIGTERM (it resumes as a failed one does; not a crash), ``failed`` otherwise."""
    return "interrupted" if isinstance(err, KeyboardInterrupt) else "failed"


def lock_holder(lock_path: str) -> str:
    """The PID written in a lock file (``unknown`` while the holder is still writing it)."""
    try:
        words = Path(lock_path).read_text().split()
    except OSError:
        words = []
    return words[0] if words and words[0].isdigit() else "unknown"


def sweep_holding(folder: str | Path) -> tuple[Path, str] | None:
    """The folder above ``folder`` that another process holds as a sweep's (its lock file says
    ``<pid> sweep``: :data:`SWEEP_FOLDER`), with that process's PID; None when there is none.
    Hydra writes a job's ``.hydra`` and log before the job can lock its folder, so a run
    started in a job folder of a running sweep had them rewritten when the sweep reached it
    (and put back as they were when the sweep started): such a run is refused instead."""
    for parent in Path(os.path.realpath(folder)).parents:
        lock = parent / LOCK_NAME
        if not lock.is_file() or not locked_elsewhere(parent):
            continue
        try:
            words = lock.read_text().split()
        except OSError:
            continue
        if words[1:] == ["sweep"]:
            return parent, lock_holder(str(lock))
    return None


# ------------------------------------------------------------------ settings of a resume
WHOLE = ("game_kwargs", "game.kwargs")
"""Settings compared as one value: a game's arguments (one given at the start and left out on
a resume is a change the user made, not a key another selfplay version added)."""


def flatten(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists and :data:`WHOLE` keys stay values)."""
    out: dict[str, Any] = {}
    for k, v in settings.items():
        if isinstance(v, Mapping) and v and f"{prefix}{k}" not in WHOLE:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def settings_diff(saved: Mapping[str, Any], current: Mapping[str, Any],
                  may_change: Iterable[str] = ()) -> list[str]:
    """``key: saved -> current`` for each setting that differs, except ``may_change`` keys
    (a key, or a prefix ending in ``.``). A key only one side has is a setting another
    selfplay version added or removed, not a change the user made: it is not compared."""
    free = tuple(may_change)
    a, b = flatten(json.loads(json.dumps(saved))), flatten(json.loads(json.dumps(current)))
    return [f"{k}={a[k]!r} (run) vs {b[k]!r} (now)" for k in sorted(set(a) & set(b))
            if a[k] != b[k] and not any(k == f or (f.endswith(".") and k.startswith(f))
                                        for f in free)]


def check_settings(where: str, saved: Mapping[str, Any] | None, current: Mapping[str, Any],
                   may_change: Iterable[str] = (), override: bool = False) -> bool:
    """Refuse a resume whose settings differ from the run's (``saved``) unless ``override``.

    Returns True when the saved settings should be replaced by ``current`` (they differed
    and the user overrode). Raises :class:`RunFolderError` (one line) otherwise.
    """
    if saved is None:
        return True
    return refuse_changes(where, settings_diff(saved, current, may_change), override)


def refuse_changes(where: str, diff: Sequence[str], override: bool = False) -> bool:
    """:func:`check_settings` for differences found otherwise (``key=... (run) vs ... (now)``
    each): True when there are some and ``override``; else refused in one line."""
    if not diff:
        return False
    shown = "; ".join(diff[:4]) + (f"; and {len(diff) - 4} more" if len(diff) > 4 else "")
    if not override:
        w = resume_words()
        raise RunFolderError(
            f"cannot resume {where} with other settings ({shown}); resume with the run's own "
            f"settings, or {w.verb} {w.override} to continue with the new ones")
    log.warning("resuming %s with other settings (resume_override): %s", where, shown)
    return True


def refuse_lost_history(checkpoints: str | Path, held: str | None, override: bool = False,
                        replaced: str = "its snapshots and metrics") -> None:
    """A resume that finds no checkpoint in ``checkpoints`` starts its run over. Refuse that
    (:class:`RunFolderError`, one line) when the run's ``league.db`` already records
    ``held`` (what only a checkpointed run records: ``"generation 2's snapshots"``,
    ``"metrics up to step 4096"``; the caller decides): the checkpoints were deleted or
    lost, and training again would replace that history. Raise before changing anything
    (the run's status included). ``held`` empty or None: nothing would be lost, go on.
    ``override`` (resume_override): go on, with a warning; ``replaced``: what starting over
    replaces, as the message says it."""
    if not held:
        return
    w = resume_words()
    if override:
        log.warning("resume_override: %s has no checkpoint but league.db holds %s; starting "
                    "the run over (%s are replaced)", checkpoints, held, replaced)
        return
    raise RunFolderError(
        f"{checkpoints} has no checkpoint but league.db holds {held}: a resume would start the "
        f"run over; nothing was changed; restore the checkpoints, or {w.verb} {w.override} to "
        f"start the run over ({replaced} are replaced)")


def holds_run(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a run that ``resume=true`` goes on with: its settings (written
    first, before ``league.db`` and any checkpoint), or a ``league.db`` from before settings
    were recorded. Checkpoints alone are not a run (``resume=true`` refuses them)."""
    return (Path(run_dir) / SETTINGS_NAME).is_file() or (Path(run_dir) / "league.db").is_file()


def resume_settings(run_dir: str | Path, current: Mapping[str, Any], resume: bool,
                    override: bool = False, may_change: Iterable[str] = (),
                    finished: Callable[[], bool] | None = None,
                    checked_later: bool = False) -> None:
    """Check (or record, for a fresh run) ``<run>/settings.json``.

    * fresh run (``resume`` false) in a folder that already holds a run: refused;
    * resume of a folder with no run (empty or mistyped): refused unless ``override``
      (then it starts fresh);
    * resume with settings that differ outside ``may_change``: refused unless ``override``,
      and always when ``finished()`` says the run cannot go on (a finished single run: its
      settings would be replaced while nothing trains);
    A folder with a ``league.db`` and no ``settings.json`` (from before settings were
    recorded, or the file was deleted) is resumed as what its database recorded allows:
    ``checked_later``, the caller compares them (a league: its own settings and each
    member's, ``League``) and records the settings once they pass (:func:`record_settings`),
    so refused ones are never recorded; else the current settings are recorded at once.
    """
    run_dir = Path(run_dir)
    path = run_dir / SETTINGS_NAME
    has_run = holds_run(run_dir)
    w = resume_words()
    if not resume and has_run:
        raise HoldsRunError(f"run folder {run_dir} already holds a run; {w.verb} {w.resume} to "
                             "continue it or choose a new folder")
    if resume and not has_run:
        if not override:
            raise RunFolderError(
                f"{w.resume} but {run_dir} holds no run (no {SETTINGS_NAME} or league.db): "
                f"check the folder name, or {w.verb} {w.override} to start a new run there")
        log.warning("resume_override: %s holds no run; starting a new one", run_dir)
    saved = None
    refuse_link(path, "run settings", RunFolderError)
    if path.is_file():
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError, RecursionError) as err:  # RecursionError: nested too deep
            raise RunFolderError(f"cannot read {path}: {err}; {UNREAD_SETTINGS}") from None
        if not isinstance(saved, dict):  # `[1, 2]`, `5`: flatten() raised AttributeError
            raise RunFolderError(f"cannot read {path}: it holds {type(saved).__name__} "
                                 f"{_shown_value(saved)}, not the run's settings (a JSON "
                                 f"object); {UNREAD_SETTINGS}")
    diff = settings_diff(saved, current, may_change) if resume and saved is not None else []
    if diff and finished is not None and finished():
        raise RunFolderError(
            f"run {run_dir} has finished and cannot continue with other settings "
            f"({'; '.join(diff[:4])}); resume it with its own settings, or start a new folder")
    if saved is None and resume and checked_later and (run_dir / "league.db").is_file():
        return
    if saved is None:
        atomic_write(path, json.dumps(current, indent=1, sort_keys=True))
    elif check_settings(str(run_dir), saved, current, may_change, override):
        # overridden: recorded once the run starts (its checkpoint loaded), so a resume refused
        # after this check (a checkpoint of another learner) leaves the run's own settings
        when_started(run_dir, lambda: _accept_settings(run_dir, saved, current))


UNREAD_SETTINGS = ("delete it to resume: the resume is then checked against the settings the "
                   "run's league.db records")
"""What a refusal of an unreadable ``settings.json`` says to do (``populations.cli``'s
``recorded_run_settings`` and ``League`` check a folder without one against league.db)."""


def _shown_value(value: Any) -> str:
    """A value read from a file, in a message: its start, on one line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _accept_settings(run_dir: Path, saved: Mapping[str, Any],
                     current: Mapping[str, Any]) -> None:
    """Record ``current``, the settings of a ``resume_override`` resume that started, in
    ``<run>/settings.json``, and in ``league.db``'s ``runs.config`` of the run named
    ``current["experiment"]`` where that held the replaced ``saved`` ones (a league records
    its own settings there: ``League``)."""
    atomic_write(run_dir / SETTINGS_NAME, json.dumps(current, indent=1, sort_keys=True))
    db_path, name = run_dir / "league.db", current.get("experiment")
    if not db_path.is_file() or not isinstance(name, str):
        return
    db = LeagueDB(db_path)
    try:
        run_id = db.run_id(name)
        if run_id is not None and db.run_config(run_id) == json.loads(json.dumps(saved)):
            db.set_run_config(run_id, json.loads(json.dumps(current)))
    finally:
        db.close()


def _running_rows(db_path: Path) -> set[int]:
    """The runs ``db_path`` records as ``running`` (none where it cannot be read: the command
    fails on it, or makes it)."""
    if not db_path.is_file():
        return set()
    try:
        db = LeagueDB(db_path, readonly=True)
        try:
            return db.running_runs()
        finally:
            db.close()
    except (LeagueDBError, sqlite3.Error, OSError):
        return set()


def record_settings(run_dir: str | Path, current: Mapping[str, Any]) -> None:
    """Write ``<run>/settings.json`` when the folder has none (a resume that
    :func:`resume_settings` left to its caller's checks, once they passed)."""
    path = Path(run_dir) / SETTINGS_NAME
    refuse_link(path, "run settings", RunFolderError)
    if not path.is_file():
        atomic_write(path, json.dumps(current, indent=1, sort_keys=True))


@contextmanager
def open_run(run_dir: str | Path, settings: Mapping[str, Any], resume: bool,
             override: bool = False, may_change: Iterable[str] = (),
             finished: Callable[[], bool] | None = None,
             checked_later: bool = False) -> Iterator[Path]:
    """Hold ``run_dir``'s lock, check the resume's settings (:func:`resume_settings`), and on
    an error mark the folder's runs still ``running`` as ``failed`` with it (``interrupted``
    after Ctrl-C). A command whose run did not start (refused, or finished already) drops what
    :func:`when_started` left for it (its start lines and overridden settings: done for a
    later command in this process, they would be this one's)."""
    run_dir = Path(run_dir)
    try:
        with _checked_run(run_dir, settings, resume, override, may_change, finished,
                          checked_later):
            yield run_dir
    finally:  # a run that never started (a finished one) records no overridden settings
        if not run_started(run_dir):
            _ON_START.pop(os.path.abspath(run_dir), None)


@contextmanager
def _checked_run(run_dir: Path, settings: Mapping[str, Any], resume: bool, override: bool,
                 may_change: Iterable[str], finished: Callable[[], bool] | None,
                 checked_later: bool) -> Iterator[Path]:
    """:func:`open_run` but for what it leaves of a refused command."""
    if resume and not override and not run_dir.is_dir():  # a mistyped name: create nothing
        w = resume_words()
        raise RunFolderError(f"{w.resume} but run folder {run_dir} does not exist: check its "
                             f"name, or {w.verb} {w.override} to start a new run there")
    fresh = not (run_dir / SETTINGS_NAME).exists()
    with RunLock(run_dir):
        resume_settings(run_dir, settings, resume, override, may_change, finished,
                        checked_later)
        db_path = run_dir / "league.db"
        # rows of a process that died (kill -9): a command refused before its run started
        # leaves them as they were (its message is about itself, not about that run)
        stale = _running_rows(db_path)
        try:
            yield run_dir
        except BaseException as err:
            if db_path.is_file():
                try:  # waits briefly for a lock, not at all for the one `err` waited for
                    db = LeagueDB(db_path, lock_timeout=lock_budget_after(err, db_path))
                    try:
                        db.fail_running(one_line(err), end_status(err),
                                        spare=() if run_started(run_dir) else stale)
                    finally:
                        db.close()
                except (LeagueDBError, sqlite3.Error, OSError) as db_err:  # keep the first error
                    log.error("cannot record the failure in %s: %s", db_path, db_err)
            elif fresh:  # nothing was recorded: the folder holds no run to resume
                (run_dir / SETTINGS_NAME).unlink(missing_ok=True)
            raise
