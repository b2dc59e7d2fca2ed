"""Where the dashboard's data comes from: league database files named on the command line.

A path is a database file (``*.db``), a run folder (``<dir>/league.db``) or a folder of
runs (every ``league.db`` up to five folders below it, hidden ones, ``/proc``, ``/sys``,
``/dev`` and links to folders left out, though a link to a run folder counts; found again
on every request, so runs started after the dashboard appear). Paths are shown absolute.
Each database gets a stable short id from its resolved path. Databases are opened
read-only for each request and closed after it; any failure (missing, not a database,
locked, newer schema, not yet initialised) becomes a :class:`SourceError` with a one-line
message that names the file and what to do.

Reading leaves a run folder as it was. A reader of a WAL database needs its ``-wal`` and
``-shm`` files, and SQLite creates them when they are missing (and leaves them behind),
which also fails in a folder the user cannot write. A writer keeps its ``-wal`` file while
it has the database open, so a database without one has no writer: it is read as an
immutable file (no locks, nothing created). One with a ``-wal`` file is read through it,
and the files are already there. A writer that opens the database during such a read
can at worst make that one answer fail or be stale; the next refresh reads it normally.
"""

from __future__ import annotations

import hashlib
import os
import reprlib
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from marl.fileio import read_regular  # standard library only: the dashboard stays torch-free
from populations.db import LeagueDB, LeagueDBError

DB_NAME = "league.db"
SCAN_DEPTH = 5  # how deep a folder of runs is searched (multirun/<exp>/<stamp>/<job>: 4)
NO_RUNS = frozenset({"site-packages", "node_modules", "__pycache__", "wandb"})  # not entered
SYSTEM = frozenset({Path("/proc"), Path("/sys"), Path("/dev")})  # no runs; /proc loops back
MAX_OVERRIDES_BYTES = 65_536  # a larger .hydra/overrides.yaml is not read (no job writes one)
MAX_OVERRIDES = 64  # overrides served per run, each cut to MAX_OVERRIDE_CHARS
MAX_OVERRIDE_CHARS = 200
READ_TIMEOUT_S = 1.0  # how long a read waits on a lock before reporting it


class SourceError(RuntimeError):
    """A league database that cannot be read now; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 503) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Source:
    """One league database file (it may not exist yet)."""

    id: str
    path: Path


def source_id(path: Path) -> str:
    """A short id, stable across restarts, from the resolved path."""
    return hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]


def _scan(folder: Path) -> list[Path]:
    """Every ``league.db`` up to :data:`SCAN_DEPTH` folders below ``folder``, shallower ones
    first. Hidden folders (``.venv``, ``.git``, ``.hydra``), a run folder (its snapshots),
    a virtualenv, the folders of :data:`NO_RUNS` and :data:`SYSTEM`, and links to folders
    are not entered: the walk runs on every request, and a link may lead anywhere (every
    ``/proc/<pid>/cwd`` led a scan of ``/`` back into the filesystem). A link to a run
    folder (``runs/b -> ../elsewhere/b`` holding ``league.db``) is a run found all the same;
    a link to a folder of runs is not searched."""
    found: list[Path] = []
    level = [folder]
    for _ in range(SCAN_DEPTH):
        below: list[Path] = []
        linked: list[Path] = []  # links that hold a run: found, never entered
        for d in level:
            try:
                with os.scandir(d) as it:
                    for e in it:
                        if e.name.startswith(".") or e.name in NO_RUNS or Path(e.path) in SYSTEM:
                            continue
                        if e.is_dir(follow_symlinks=False):
                            below.append(Path(e.path))
                        elif e.is_symlink() and (Path(e.path) / DB_NAME).is_file():
                            linked.append(Path(e.path))  # runs/b -> ../elsewhere/b
            except OSError:  # unreadable or gone since
                continue
        runs = {p for p in below if (p / DB_NAME).is_file()}
        found += [p / DB_NAME for p in sorted(runs | set(linked))]
        below.sort()
        # a run folder's snapshots/ and checkpoints/ hold no runs, nor does a virtualenv
        level = [p for p in below if p not in runs and not (p / "pyvenv.cfg").is_file()]
    return found


def resolve(paths: Sequence[str | Path]) -> list[Source]:
    """The databases named by ``paths`` (see the module docstring), without duplicates."""
    files: list[Path] = []
    for raw in paths:
        # absolute (not resolved: a linked run folder keeps its name), so the command's lines
        # and the page name a file one way whatever the working directory
        p = Path(os.path.abspath(Path(raw).expanduser()))
        if p.is_dir() and p.suffix == ".db" and not (p / DB_NAME).is_file():
            files.append(p)  # a database path that is a folder: said so when read
        elif p.is_dir():
            direct = p / DB_NAME
            files += [direct] if direct.is_file() else (_scan(p) or [direct])
        elif p.suffix == ".db" or p.is_file():
            files.append(p)
        else:  # a run folder that does not exist yet
            files.append(p / DB_NAME)
    out: dict[str, Source] = {}
    for f in files:
        sid = source_id(f)
        out.setdefault(sid, Source(sid, f))
    return list(out.values())


def describe(err: BaseException, path: Path) -> str:
    """A one-line message for a failure to read ``path``."""
    text = str(err)
    if path.is_dir():  # "not found" said nothing of why
        return (f"league database {path} is a folder, not a database file; name the run folder "
                "that holds league.db, or the file itself")
    if "locked" in text or "busy" in text:
        return (f"league database {path} is locked by another process; "
                "the dashboard retries at the next refresh")
    if isinstance(err, LeagueDBError):
        if "not found" in text:
            return f"league database not found: {path} (has the run started? is the path right?)"
        return text
    if "no such table" in text or "no such column" in text:
        return (f"league database {path} is not initialised yet or is not a league database "
                f"({text})")
    return f"cannot read league database {path}: {text}"


def has_writer(path: Path) -> bool:
    """Whether a process may have the database open (its ``-wal`` file exists)."""
    return Path(f"{path}-wal").exists()


@contextmanager
def open_source(source: Source) -> Iterator[LeagueDB]:
    """The database of ``source`` opened read-only; every failure is a :class:`SourceError`."""
    try:
        db = LeagueDB(source.path, readonly=True, timeout=READ_TIMEOUT_S,
                      immutable=not has_writer(source.path))
    except (LeagueDBError, sqlite3.Error, OSError) as err:
        status = 404 if "not found" in str(err) else 503
        raise SourceError(describe(err, source.path), status) from None
    try:
        yield db
    except (LeagueDBError, sqlite3.Error) as err:  # a row it cannot read, a locked file
        raise SourceError(describe(err, source.path)) from None
    finally:
        db.close()


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 80


def shown(value: str) -> str:
    """A request's value as an error quotes it: its repr, cut to about 80 characters (a URL
    may name a 10,000-character view or database id)."""
    return _SHOWN.repr(value)


class Sources:
    """The databases the dashboard serves; folders are searched again on each call."""

    def __init__(self, paths: Sequence[str | Path]) -> None:
        self.paths = [Path(p) for p in paths] or [Path(".")]

    def all(self) -> list[Source]:
        return resolve(self.paths)

    def get(self, sid: str) -> Source:
        for s in self.all():
            if s.id == sid:
                return s
        raise SourceError(f"unknown database id {shown(sid)}; see /api/runs for the ids", 404)


def job_overrides(path: Path) -> list[str]:
    """The command-line overrides a Hydra job was started with (``.hydra/overrides.yaml``
    beside the database ``path``: ``seed=1``, ``game=kuhn``), which tell a sweep's jobs
    apart; [] where there is none. The file is untrusted: only a list of strings is used,
    at most :data:`MAX_OVERRIDES` of :data:`MAX_OVERRIDE_CHARS` characters, from a file of
    at most :data:`MAX_OVERRIDES_BYTES` (what the page shows is text, never a path)."""
    f = path.parent / ".hydra" / "overrides.yaml"
    try:  # not open(): a FIFO there blocked the page for good, a link to /dev/zero read on
        items = yaml.safe_load(read_regular(f, "job overrides", max_bytes=MAX_OVERRIDES_BYTES))
    except (OSError, yaml.YAMLError, ValueError, RecursionError):
        return []
    if not isinstance(items, list):
        return []
    return [x[:MAX_OVERRIDE_CHARS] for x in items if isinstance(x, str)][:MAX_OVERRIDES]
