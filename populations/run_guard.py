"""``selfplay-train``'s run folders around its task: what they held before Hydra made them
(:func:`_record_before`, once :func:`hold_folder` holds their lock for
:class:`populations.cli.ConfigCheck`), the guard the task
runs in (:func:`run_folder_guard`: a failed run leaves no half-made folder behind and says how
to go on), and a sweep's failed jobs under ``keep_going=true`` (:func:`failed_jobs_line`).
The words of how a run goes on (the command that resumes it, what refused it before it
started) and ``resume=true`` without a folder refused are :mod:`populations.run_resume`'s
(``forget_started`` and ``refuse_resume_without_folder`` re-exported here, their old home).
:mod:`populations.run_folder` holds a folder's lock and the checks of a resume.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from populations.cli_common import (
    fail,
    interrupted,
    one_line,
    say,
    sigterm_text,
    too_large,
    too_large_line,
    typed,
    user_errors,
)
from populations.command_line import (
    CLIError,
    resume_command,
)
from populations.run_folder_names import (
    CHECKPOINT,
    OWN_INSIDE,
    RUN_NAMES,
    SWEEP_NAMES,
    refuse_planted,
    remove_own,
)
from populations.run_resume import (  # forget_started, refuse_resume_without_folder:
    forget_started,  # noqa: F401 - re-exported, their old home (cli.py)
    is_refusal,
    psro_recorded,
    refuse_resume_without_folder,  # noqa: F401
    resumes_after,
    run_resume_command,
    started_here,
)
from populations.sweeps import (  # importing it registers the job folders' resolvers
    sweep_resume_command,
    sweep_started,
    sweep_stopped,
)

if TYPE_CHECKING:
    from populations.run_folder import RunLock



# ------------------------------------------------------------------------ run folders
_BEFORE: dict[str, frozenset[str] | None] = {}
"""What the folders this process's run or sweep goes to held before Hydra made them
(:class:`~populations.cli.ConfigCheck` records them first): each absolute path's entry names,
``None`` where it did not exist. A sweep's folder is recorded with each folder in it (its
jobs')."""
_START_CWD: list[Path] = []
"""The working folder this command started in (never removed, nor a folder above it)."""
_HELD: list[RunLock] = []
"""The locks this command took on its run (sweep) folder before Hydra wrote in it
(:func:`hold_folder`)."""
_KEPT: dict[str, tuple[dict[str, bytes] | None, dict[str, int | None]]] = {}
"""What Hydra's files in the folders this command goes to held before Hydra rewrote them
(:func:`keep_written`): each absolute path's ``.hydra`` files (``None``: no ``.hydra``) and
the size of Hydra's job log there (``cli.log``; ``None``: none). Other ``*.log`` files are
not Hydra's (a user's ``nohup ... > train.log``, another tool's): never recorded, never
touched."""


_KEPT_SWEEP: dict[str, bytes | None] = {}
"""What each sweep folder's ``multirun.yaml`` held before Hydra rewrote it (``None``: none)."""

_SWEEP_JOB_FOLDERS: dict[str, set[str]] = {}
"""Each sweep folder this process holds (:func:`hold_folder`): the names of the folders its
jobs ran in (:func:`run_folder_guard`), the only folders in it the sweep removes."""
_FOREIGN: dict[str, list[str]] = {}
"""A folder this command made and would have removed, kept because another program wrote
in it meanwhile: the names it keeps (:func:`discard_run_dir`; said in the command's line)."""


def set_start_folder(cwd: Path) -> None:
    """Record the working folder this command started in (:data:`_START_CWD`)."""
    _START_CWD[:] = [cwd]


def forget_folders() -> None:
    """Forget what an earlier command (tests run several in a process) recorded of its folders
    (:data:`_BEFORE`, :data:`_KEPT`): a new command records its own."""
    _BEFORE.clear()
    _KEPT.clear()


def _written_names(folder: Path) -> frozenset[str]:
    """The names at the top of ``folder`` that this command (or Hydra for it) writes:
    :data:`RUN_NAMES`, Hydra's job log (``cli.log``, as recorded by :func:`keep_written`),
    a held sweep folder's :data:`SWEEP_NAMES` and its jobs' folders, and the ``<name>.tmp``
    of each (``atomic_write``'s)."""
    logs = {name for _, held in _KEPT.values() for name in held} or {"cli.log"}
    names = set(RUN_NAMES) | logs
    jobs = _SWEEP_JOB_FOLDERS.get(os.path.abspath(folder))
    if jobs is not None:
        names |= SWEEP_NAMES | jobs
    return frozenset(names | {f"{name}.tmp" for name in names})


def _remove_written(folder: Path, before: frozenset[str]) -> list[str]:
    """Remove from ``folder`` what this command wrote there: the names it writes
    (:func:`_written_names`) that ``folder`` did not hold ``before``, and in such a folder
    what selfplay writes there (:func:`~populations.run_folder_names.remove_own`). The new
    names it keeps (another program's files and folders, ``checkpoints/notes.txt`` for one in
    a folder of ours), sorted."""
    ours, foreign = _written_names(folder), []
    for path in folder.iterdir():
        if path.name in before:
            continue
        if path.name not in ours:
            foreign.append(path.name)
        elif path.is_dir() and not path.is_symlink() and path.name in RUN_NAMES:
            foreign += remove_own(path)
        elif path.is_dir() and not path.is_symlink():  # a sweep's job folder
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return sorted(foreign)


def kept_note(run_dir: Path) -> str:
    """What a command's line adds when the folder it made stays because another program
    wrote in it (:data:`_FOREIGN`): which folder, and the files it keeps (``selfplay-train``'s
    line and ``python -m populations.league``'s)."""
    names = _FOREIGN.pop(os.path.abspath(run_dir), None)
    if not names:
        return ""
    shown = ", ".join(repr(name) for name in names[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return (f"; {run_dir} stays: it holds files this command did not write ({shown}{more}), "
            f"its own went")


def keep_sweep_file(sweep_dir: Path) -> None:
    """Record in :data:`_KEPT_SWEEP` the sweep folder's ``multirun.yaml`` before Hydra's
    sweeper rewrites it (a refused sweep puts it back: :func:`_restore_sweep_file`), in place
    of an earlier command's record (tests run several in a process)."""
    _KEPT_SWEEP.clear()
    path = Path(os.path.abspath(sweep_dir)) / "multirun.yaml"
    try:
        _KEPT_SWEEP[str(path.parent)] = path.read_bytes() if path.is_file() else None
    except OSError:  # unreadable: left as Hydra writes it
        return


def _restore_sweep_file(sweep_dir: Path) -> None:
    """Put back ``multirun.yaml`` as it was before a sweep refused at its first job (none of
    its jobs ran: the file described the sweep that did). A new one goes."""
    from marl.fileio import atomic_write

    folder = os.path.abspath(sweep_dir)
    if folder not in _KEPT_SWEEP:
        return
    data, path = _KEPT_SWEEP[folder], Path(folder) / "multirun.yaml"
    try:
        if data is None:
            path.unlink(missing_ok=True)
        elif path.is_symlink() or not path.is_file() or path.read_bytes() != data:
            atomic_write(path, data)
    except OSError:
        return


def hold_folder(folder: Path, key: str, what: str = "run folder", depth: int = 0) -> None:
    """Take ``folder``'s lock (:class:`~populations.run_folder.RunLock`, making the folder)
    before Hydra writes its ``.hydra`` and log there: a second command into a folder in use is
    refused here, having written and removed nothing (it used to write there, then be refused
    and remove the running command's files). ``key``: the override that names the folder, in
    the line of a folder that cannot be made. What the folder holds (and the folders in it,
    ``depth`` levels down) is recorded once the lock is held (:data:`_BEFORE`): recorded
    before the config check, files another program made during it were taken for this
    command's, and removed with them."""
    from populations.run_folder import LOCK_NAME, RunLock

    path = os.path.abspath(folder)
    existed, locked_before = os.path.isdir(path), os.path.lexists(os.path.join(path, LOCK_NAME))
    if not existed:  # the lock makes the folder and those missing above it: this command's
        refuse_control_characters(folder, key, what)
        _record_above(path)
    lock = RunLock(folder, what)
    try:
        lock.acquire()
    except Exception as err:  # what the lock made goes (mkdir's parents too)
        if not existed:
            _remove_made(Path(path))
        if isinstance(err, OSError):
            raise CLIError(folder_error(folder, err, key, what)) from None
        raise
    try:  # after the lock: a sweep and a run started at once, one of them sees the other
        _refuse_sweep_overlap(folder, key, what)
    except CLIError:  # what the lock made goes (a job folder left with a lock 'started')
        lock_file = Path(path) / LOCK_NAME
        if not locked_before and not lock_file.is_symlink():
            lock_file.unlink(missing_ok=True)
        if not existed:
            _remove_made(Path(path))
        lock.release()
        raise
    _HELD.append(lock)
    from populations.run_folder import SWEEP_FOLDER

    _SWEEP_JOB_FOLDERS.pop(path, None)  # an earlier command's (tests run several)
    if what == SWEEP_FOLDER:  # its jobs' folders, as they run (run_folder_guard)
        _SWEEP_JOB_FOLDERS[path] = set()
    if not existed:  # made by the lock: this command's
        _BEFORE[path] = None
        return
    _record_before(folder, depth)
    held = _BEFORE.get(path)
    if held is not None and not locked_before:  # the lock file is this command's too
        _BEFORE[path] = held - {LOCK_NAME}


def refuse_control_characters(folder: Path, key: str, what: str = "run folder") -> None:
    """Refuse (:class:`CLIError`) to make a folder whose name holds a control character (ESC,
    a newline): the commands printed for it (its resume command, the dashboard's) would hold
    it raw, which a terminal runs instead of showing, and which shell quoting cannot make
    pasteable. Its line shows the name escaped."""
    name = str(folder)
    bad = next((c for c in name if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        shown = name.encode("unicode_escape").decode("ascii")
        raise CLIError(f"{what} name {shown} holds the control character {bad!r}, which the "
                       "commands printed for the folder (its resume command) would hold raw: "
                       f"choose a name without control characters with {key}=<folder>")


def _refuse_sweep_overlap(folder: Path, key: str, what: str) -> None:
    """Refuse (:class:`CLIError`) a run or sweep into a job folder of a sweep another process
    runs (:func:`~populations.run_folder.sweep_holding`), and a sweep into a folder holding a
    run another process runs: Hydra writes a job's ``.hydra`` and log before the job can lock
    its folder, so the sweep reaching that folder rewrote the running run's ``.hydra`` (put
    back as it was when the sweep started, or not at all)."""
    from populations.run_folder import SWEEP_FOLDER, lock_holder, locked_elsewhere, sweep_holding

    found = sweep_holding(folder)
    if found is not None:
        sweep, pid = found
        raise CLIError(f"{what} {folder} is inside the sweep folder {sweep}, in use by process "
                       f"{pid} (its jobs write there); wait for the sweep to end, or choose a "
                       f"folder outside it with {key}=<folder>")
    if what != SWEEP_FOLDER:
        return
    from populations.run_folder import LOCK_NAME

    try:
        inner = sorted(p for p in Path(folder).iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:  # unreadable: Hydra says so
        return
    for sub in inner:
        if locked_elsewhere(sub):
            raise CLIError(f"{what} {folder} holds {sub}, a run in use by process "
                           f"{lock_holder(str(sub / LOCK_NAME))}; wait for it to end, or choose "
                           f"another folder with {key}=<folder>")


def release_folders() -> None:
    """Release the locks :func:`hold_folder` took (the command ends)."""
    while _HELD:
        _HELD.pop().release()


def folder_error(folder: Path, err: OSError, key: str, what: str = "run folder") -> str:
    """The line of a run (sweep) folder that cannot be made or written (a read-only file
    system, no permission): which folder, why, and what to do."""
    reason = err.strerror or str(err)
    where = f" ({err.filename})" if err.filename and str(err.filename) != str(folder) else ""
    done = "write in" if folder.is_dir() else "create"
    return (f"cannot {done} the {what} {folder}: {reason}{where}; choose a folder you can "
            f"write with {key}=<folder>")


def keep_written(folder: Path, depth: int = 0, log_name: str = "cli.log") -> None:
    """Record in :data:`_KEPT` the ``.hydra`` files and the size of Hydra's job log
    ``log_name`` (``${hydra.job.name}.log``) of ``folder`` (and of the folders in it, ``depth``
    levels down) before Hydra rewrites them, so that a refused command puts them back
    (:func:`_restore_written`). First, a link (or a FIFO) where Hydra writes a file is
    refused (:func:`~populations.run_folder_names.refuse_planted`): Hydra wrote through it,
    outside the folder."""
    try:
        refuse_planted(Path(os.path.abspath(folder)), depth, log_name,
                       sweep=os.path.abspath(folder) in _SWEEP_JOB_FOLDERS)
    except CLIError:
        _let_go(folder)
        raise
    _record_kept(folder, depth, log_name)


def _let_go(folder: Path) -> None:
    """Undo :func:`hold_folder` for a command refused right after it: the lock file it made
    in ``folder``, the folder when the lock made it, the locks."""
    from populations.run_folder import LOCK_NAME

    path = os.path.abspath(folder)
    held = _BEFORE.get(path, frozenset({LOCK_NAME}))  # not recorded: not known to be ours
    lock_file = Path(path) / LOCK_NAME
    if (held is None or LOCK_NAME not in held) and not lock_file.is_symlink():
        lock_file.unlink(missing_ok=True)
    if path in _BEFORE and held is None:
        _remove_made(Path(path))
    release_folders()


def _record_kept(folder: Path, depth: int, log_name: str) -> None:
    """:func:`keep_written`'s record, once nothing is refused."""
    path = Path(os.path.abspath(folder))
    hydra = path / ".hydra"
    try:
        if not path.is_dir():
            return
        saved = {p.name: p.read_bytes() for p in hydra.iterdir()
                 if p.is_file() and not p.is_symlink()} if hydra.is_dir() else None
        job_log = path / log_name
        logs = {log_name: job_log.stat().st_size if job_log.is_file() else None}
        inner = [p for p in path.iterdir() if p.is_dir() and not p.is_symlink()] if depth else []
    except OSError:  # unreadable: left unrecorded (nothing of it is rewritten)
        return
    _KEPT[str(path)] = (saved, logs)
    for sub in inner:
        _record_kept(sub, depth - 1, log_name)


def _restore_written(run_dir: Path) -> None:
    """Put back what Hydra rewrote in ``run_dir`` (recorded by :func:`keep_written`) for a
    command that was refused: its ``.hydra`` files as they were (an existing run's
    ``overrides.yaml`` and ``config.yaml`` said the refused command's settings) and Hydra's job
    log (``cli.log``) cut back to its size (it held 'experiment ... in' lines of a run that
    never ran); no other file of the folder (a user's own ``train.log``) is touched.
    A folder another process holds (:func:`~populations.run_folder.locked_elsewhere`) keeps
    what is not ours to remove (new files, the logs that process writes)."""
    from marl.fileio import atomic_write
    from populations.run_folder import locked_elsewhere

    kept = _KEPT.get(os.path.abspath(run_dir))
    if kept is None or not run_dir.is_dir():
        return
    saved, logs = kept
    elsewhere = locked_elsewhere(run_dir)
    hydra = run_dir / ".hydra"
    try:
        if saved is None:
            if hydra.is_dir() and not hydra.is_symlink() and not elsewhere:
                remove_own(hydra)  # another program's file in it stays
        elif hydra.is_dir() and not hydra.is_symlink():
            for p in hydra.iterdir():
                if p.name in saved:
                    if p.is_symlink() or not p.is_file() or p.read_bytes() != saved[p.name]:
                        atomic_write(p, saved[p.name])
                elif not elsewhere and p.is_file() and not p.is_symlink() and \
                        OWN_INSIDE[".hydra"].fullmatch(p.name.removesuffix(".tmp")):
                    p.unlink(missing_ok=True)
        if elsewhere:
            return
        for name, size in logs.items():
            p = run_dir / name
            if p.is_symlink() or not p.is_file():
                continue
            if size is None:
                p.unlink(missing_ok=True)
            elif p.stat().st_size > size:
                os.truncate(p, size)
    except OSError:  # what cannot be put back stays as Hydra wrote it
        return


def to_cli_log(run_dir: Path, text: str) -> None:
    """Write ``text`` to the run's own log (Hydra's ``cli.log`` in ``run_dir``), not the
    terminal: the closing summary and Ctrl-C's resume command are found in the run folder by
    a user who lost the terminal."""
    import logging

    folder = os.path.abspath(run_dir)
    for handler in logging.getLogger().handlers:
        name = getattr(handler, "baseFilename", None)
        if isinstance(handler, logging.FileHandler) and name and \
                os.path.dirname(name) == folder:
            handler.handle(logging.LogRecord("selfplay", logging.INFO, __file__, 0, text,
                                             None, None))


def _record_before(folder: Path, depth: int = 0) -> None:
    """Record in :data:`_BEFORE` what ``folder`` (and the folders in it, ``depth`` levels
    down) holds now, before Hydra makes it."""
    path = os.path.abspath(folder)
    try:
        entries = frozenset(p.name for p in Path(path).iterdir())
    except FileNotFoundError:
        _BEFORE[path] = None
        return
    except OSError:  # not a folder, unreadable: left unrecorded (nothing of it is removed)
        return
    _BEFORE[path] = entries
    if depth > 0:
        for name in entries:
            if (Path(path) / name).is_dir():
                _record_before(Path(path) / name, depth - 1)


def _record_above(path: str) -> None:
    """Record in :data:`_BEFORE` the nearest folder above ``path`` that exists now (what it
    holds), before the lock makes ``path`` and the folders missing between them: those are
    this command's (:func:`folder_before`), that one and the folders above it are not (a folder the
    user made for runs, empty, stays when a refused command removes its own)."""
    for folder in Path(path).parents:
        if os.path.isdir(folder):
            if str(folder) not in _BEFORE:
                _record_before(folder)
            return


def note_run_folder(folder: Path) -> bool:
    """For a command without Hydra's callback (``python -m populations.league``): record what
    ``folder`` and the nearest folder above it that exists hold now, before the command makes
    it, so that :func:`discard_run_dir` removes only the folders it made. Whether ``folder``
    is new (``False`` for one that cannot be read: nothing of it is removed)."""
    _BEFORE.clear()
    path = os.path.abspath(folder)
    _record_before(Path(path))
    if path in _BEFORE and _BEFORE[path] is None:
        _record_above(path)
        return True
    return False


def _remove_made(folder: Path) -> None:
    """Remove ``folder`` and the folders above it this command made (:func:`folder_before`), each
    only when empty; a folder that existed before the command stays, even empty."""
    folder = Path(os.path.abspath(folder))
    while folder != folder.parent and folder_before(folder)[0]:
        try:
            folder.rmdir()  # only when empty
        except OSError:
            return
        folder = folder.parent


def folder_before(run_dir: Path) -> tuple[bool, frozenset[str] | None]:
    """Whether this command made ``run_dir`` (it did not exist before Hydra made it), and
    else what it held before (``None``: not known, as when a config of the user's own runs
    without :class:`~populations.cli.ConfigCheck`; nothing of such a folder is removed)."""
    path = Path(os.path.abspath(run_dir))
    for folder in (path, *path.parents):
        if str(folder) in _BEFORE:
            held = _BEFORE[str(folder)]
            if folder == path:
                return held is None, held
            # an ancestor recorded: the folder is new when that one or its next part was
            part = path.relative_to(folder).parts[0]
            return held is None or part not in held, None
    return False, None


def not_started(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds only what Hydra writes before the task starts (``.hydra``,
    ``*.log``): a sweep job an interrupted sweep never reached. Not the same as made by this
    command (:func:`folder_before`): a resumed sweep's job folders existed before it."""
    return not run_dir.is_dir() or all(p.name == ".hydra" or p.suffix == ".log"
                                       for p in run_dir.iterdir())


def _below_start(run_dir: Path) -> bool:
    """Whether ``run_dir`` is neither the working folder this command started in nor a
    folder above it (those are never removed)."""
    cwd = (_START_CWD[-1] if _START_CWD else Path.cwd()).resolve()
    folder = run_dir.resolve()
    return folder != cwd and folder not in cwd.parents


def _discard_new(run_dir: Path, sweep_dir: Path | None) -> None:
    """Remove a run folder this process created (:func:`discard_run_dir`), and its sweep's
    folder when no job is left in it."""
    if not discard_run_dir(run_dir) or sweep_dir is None or not sweep_dir.is_dir():
        return
    made, before = folder_before(sweep_dir)
    jobs = _SWEEP_JOB_FOLDERS.get(os.path.abspath(sweep_dir))
    if jobs is None or any(os.path.lexists(sweep_dir / name) for name in jobs):
        return  # another job's folder is left (or the sweep is not this command's)
    if made:
        discard_run_dir(sweep_dir)
    elif before is not None:
        _discard_written(sweep_dir, before)  # a sweep folder that existed stays, as it was


def discard_run_dir(run_dir: Path, root: Path | None = None) -> bool:
    """Remove a run folder this process created if it holds nothing worth keeping (no
    checkpoint, no PSRO iteration recorded: :func:`psro_recorded`), and its parents left
    empty below ``root`` (the working directory). A folder another process holds
    (:func:`~populations.run_folder.locked_elsewhere`: a run started beside this command) is
    never removed. Only what this command wrote goes (:func:`_remove_written`): a folder in
    which another program wrote meanwhile stays with its files (:data:`_FOREIGN`)."""
    from populations.run_folder import locked_elsewhere

    if not run_dir.is_dir() or _worth_keeping(run_dir) or not _below_start(run_dir) or \
            locked_elsewhere(run_dir):
        return False
    foreign = _remove_written(run_dir, frozenset())
    if foreign:
        _FOREIGN[os.path.abspath(run_dir)] = foreign
        return False
    try:
        run_dir.rmdir()
    except OSError:  # a file made since: it stays, with the folder
        return False
    root = (root or Path.cwd()).resolve()
    parent = Path(os.path.abspath(run_dir)).parent
    # only the parents this command made (a folder the user made for runs stays, even empty)
    while folder_before(parent)[0] and parent.resolve() != root and \
            root in parent.resolve().parents:
        try:
            parent.rmdir()  # only when empty
        except OSError:
            break
        parent = parent.parent
    return True


def _worth_keeping(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a checkpoint or a recorded PSRO iteration."""
    ckpt = run_dir / "checkpoints"  # another program's file there is no checkpoint
    return (ckpt.is_dir() and any(CHECKPOINT.fullmatch(p.name) for p in ckpt.iterdir())) or \
        psro_recorded(run_dir)


def _discard_written(run_dir: Path, before: frozenset[str] | None) -> None:
    """In a folder that existed before this command (it held ``before``), remove what the
    command wrote there (Hydra's ``.hydra`` and log, a run's first files:
    :func:`_remove_written`) when it holds nothing worth keeping (:func:`discard_run_dir`'s
    test); the folder, what it held and what other programs made in it meanwhile stay.
    ``before`` None (not known), or a folder another process holds: nothing is removed."""
    from populations.run_folder import locked_elsewhere

    if before is None or not run_dir.is_dir() or _worth_keeping(run_dir) or \
            locked_elsewhere(run_dir):
        return
    # the folder stays anyway; said: what stays in the folders the command made in it
    inside = [name for name in _remove_written(run_dir, before) if "/" in name]
    if inside:
        _FOREIGN[os.path.abspath(run_dir)] = inside


@contextmanager
def run_folder_guard(prog: str, run_dir: Path, created: bool,
                     sweep_dir: Path | None = None, job: int | None = None,
                     overrides: Sequence[str] | None = None,
                     flags: Sequence[str] = (), resumed: bool = False,
                     keep_going: bool = False,
                     before: frozenset[str] | None = None) -> Iterator[None]:
    """Report user errors in one line; a folder ``created`` by this run and holding nothing
    to resume (no checkpoint, no PSRO iteration: :func:`discard_run_dir`) is removed first
    (and a sweep's folder left with no job in it), so a failed start leaves nothing
    half-made behind. Any other error (a bug) removes such a folder too, and keeps its
    traceback. In a sweep (job number ``job``) the line says
    that the jobs after it did not run, and how the sweep goes on; a single run that failed
    while running and keeps checkpoints says how it resumes. Ctrl-C's line names the command
    that resumes the run, with the run's ``overrides`` and config ``flags``
    (:func:`resume_command`). ``resumed``: the command line gave ``resume=true``.
    ``keep_going`` (a sweep's ``keep_going=true``): a failed job's line says the sweep goes on,
    and the guard returns (Hydra runs the next job); the sweep's end lists the failed jobs
    (:func:`failed_jobs_line`). Ctrl-C still ends the sweep. A folder that existed before
    this command (holding ``before``) stays: only what the command wrote in it goes
    (:func:`_discard_written`)."""
    if sweep_dir is not None and os.path.abspath(sweep_dir) in _SWEEP_JOB_FOLDERS:
        with contextlib.suppress(ValueError):  # the job's folder: the sweep's to remove
            _SWEEP_JOB_FOLDERS[os.path.abspath(sweep_dir)].add(Path(os.path.abspath(
                run_dir)).relative_to(os.path.abspath(sweep_dir)).parts[0])
    try:
        yield
    except KeyboardInterrupt:  # Ctrl-C: no traceback; say how to go on (exit 130, as a shell)
        def how() -> str:  # in the run's cli.log too (a terminal closed since), as printed
            from populations.run_folder import stop_status

            text = _how_to_go_on(run_dir, created, sweep_dir, overrides, flags, before)
            by_term = stop_status(sys.exc_info()[1]) == 143
            to_cli_log(run_dir, sigterm_text(text) if by_term else text)
            return text

        interrupted(prog, how)
    except Exception as err:
        # refused before its run started (the run had not passed its start checks: its
        # settings, checkpoint, league state); a run that started and then failed (an
        # opponent's snapshot that cannot be loaded hours in) keeps its cli.log and .hydra
        refused = not created and is_refusal(err) and not started_here(run_dir)
        if refused:  # the existing run's .hydra and cli.log as they were before this command
            _restore_written(run_dir)
        if not isinstance(err, user_errors()) and too_large(err) is None:
            # a bug: its traceback (Hydra's report). The folder goes as after a user error
            # (unless it holds a checkpoint or PSRO iterations): one kept would refuse the
            # same command again ('already holds a run') while holding nothing to resume
            if created:
                _discard_new(run_dir, sweep_dir)
            else:
                _discard_written(run_dir, before)
            raise
        going_on = keep_going and sweep_dir is not None and job is not None
        if created:  # the sweep's folder stays for the next jobs (and multirun.yaml in it)
            discard_run_dir(run_dir) if going_on else _discard_new(run_dir, sweep_dir)
        else:
            _discard_written(run_dir, before)
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        line = too_large_line(err, overrides) if too_large(err) is not None else one_line(err)
        line += kept_note(run_dir) + (kept_note(sweep_dir) if sweep_dir is not None else "")
        if sweep_dir is None and type(err).__name__ == "HoldsRunError":  # the command to paste
            line += f"; it resumes with: {run_resume_command(run_dir, overrides, flags)}"
        if not refused:  # a run that failed while running: why, in its cli.log too
            to_cli_log(run_dir, line + resumes_after(err, run_dir, overrides, flags))
        if going_on:
            say(prog, f"{line} (sweep job {job}; keep_going: the sweep goes on with "
                      f"its next job){resumes_after(err, run_dir, overrides, flags)}")
            _FAILED_JOBS.append((job, run_dir))
            return
        if sweep_dir is not None and job is not None:
            if refused and len(_SWEEP_JOBS) == 1:  # no other job of this sweep ran
                _restore_sweep_file(sweep_dir)
            fail(prog, line + sweep_stopped(sweep_dir, job, run_dir, created, resumed,
                                             typed()))
        fail(prog, line + resumes_after(err, run_dir, overrides, flags))


def _how_to_go_on(run_dir: Path, created: bool, sweep_dir: Path | None,
                  overrides: Sequence[str] | None = None, flags: Sequence[str] = (),
                  before: frozenset[str] | None = None) -> str:
    """Ctrl-C's message: the command that resumes the run or sweep, or (stopped before the
    run started) "start again", removing the folder ``created`` for it (in a folder that
    existed, holding ``before``: what the command wrote there)."""
    # a folder holding a run resumes (from its last checkpoint, or from the start when it has
    # none yet: PSRO keeps none, it goes on from league.db); the same command again would be
    # refused ("already holds a run")
    if sweep_dir is not None and sweep_dir.is_dir() and sweep_started(sweep_dir):
        return f"interrupted; the sweep resumes with: " \
            f"{sweep_resume_command(sweep_dir, typed())}"
    from populations.run_folder import holds_run

    if holds_run(run_dir):  # what resume=true accepts (the same test)
        return f"interrupted; {run_dir} resumes with: " \
            f"{resume_command(run_dir, overrides, flags)}"
    if created:  # stopped before the run started: nothing recorded, nothing kept
        _discard_new(run_dir, sweep_dir)
    else:
        _discard_written(run_dir, before)
    return f"interrupted before the run started (start again){kept_note(run_dir)}"


_FAILED_JOBS: list[tuple[int, Path]] = []
"""``(job number, run folder)`` of each job of this process's sweep that failed while
``keep_going=true`` let the sweep go on (:func:`run_folder_guard`)."""
_SWEEP_JOBS: list[int] = []
"""The job numbers of this process's sweep that started."""
_JOB_OVERRIDES: dict[int, list[str]] = {}
"""Each started job's overrides (a failed job's folder may be gone: the summary names them)."""


def forget_jobs() -> None:
    """Forget an earlier sweep's jobs (tests run several in a process): a new sweep starts
    with none started and none failed."""
    _FAILED_JOBS.clear()
    _SWEEP_JOBS.clear()
    _JOB_OVERRIDES.clear()


def record_job(job: int, overrides: Sequence[str]) -> None:
    """Record that job number ``job`` of this process's sweep started, with ``overrides``."""
    _SWEEP_JOBS.append(job)
    _JOB_OVERRIDES[job] = list(overrides)


def failed_jobs() -> list[tuple[int, Path, list[str]]]:
    """``(job number, run folder, overrides)`` of each job of this process's sweep that failed
    under ``keep_going=true``, in the order they failed (empty: none failed)."""
    return [(n, folder, list(_JOB_OVERRIDES.get(n, ()))) for n, folder in _FAILED_JOBS]


def failed_jobs_line(sweep_dir: Path) -> str:
    """The line that ends a sweep whose jobs ``_FAILED_JOBS`` failed under ``keep_going``:
    which (numbers and folders, as their own lines said why), how many jobs ran, and the
    command that resumes the sweep (finished jobs say nothing to do; a failed job with
    checkpoints goes on from its last one, one without starts again)."""
    listed = ", ".join(f"job {n} ({folder}{'' if folder.is_dir() else ', removed: no checkpoint'})"
                       for n, folder in _FAILED_JOBS)
    others = "; the others finished" if len(_FAILED_JOBS) < len(_SWEEP_JOBS) else ""
    return (f"{len(_FAILED_JOBS)} of {len(_SWEEP_JOBS)} sweep jobs failed: {listed} (each "
            f"said why above){others}. Once the cause is fixed, the sweep resumes "
            f"with: "
            f"{sweep_resume_command(sweep_dir, typed())}")
