"""Opening a league database file (:class:`populations.db.LeagueDB` opens through
:func:`open_connection`): its links refused (:func:`refuse_link`: a run folder from elsewhere
may plant them), its path percent-encoded into a SQLite URI (:func:`sqlite_uri`), its schema
read under limits (16 KiB a value, :data:`~populations.db_schema.SCHEMA_STEPS` steps: a
crafted ``sqlite_stat1`` runs generated columns while it loads) and compared with the one
:data:`~populations.db_schema.MIGRATIONS` create (:func:`check_schema`), then migrated to
:data:`~populations.db_schema.SCHEMA_VERSION` (:func:`migrate`) when opened to write. What it
refuses is raised as the caller's ``error`` class (``LeagueDBError`` for a league database), in
one line naming the file.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from pathlib import Path
from typing import Any

from populations.db_schema import (
    MIGRATIONS,
    SCHEMA_STEPS,
    SCHEMA_VERSION,
    expected_schema,
    schema_of,
)


def shown(text: Any) -> str:
    """A stored value in a message: its start, on one line."""
    r = repr(text)
    return r if len(r) <= 40 else r[:37] + "..."


def refuse_link(path: str | Path, what: str,
                error: type[Exception] = ValueError) -> None:
    """Raise ``error`` (one line) when ``path`` is a symbolic link: a run folder from
    elsewhere may hold links planted so that a run reads or writes files outside it."""
    if os.path.islink(path):
        raise error(f"{what} {path} is a link (to {os.readlink(path)}); a run folder's files "
                    "must be its own: remove the link")


def sqlite_uri(path: str | Path, readonly: bool = False, immutable: bool = False) -> str:
    """The SQLite URI of file ``path``: every character a folder name may hold (``#``,
    ``?``, ``%``, spaces...) percent-encoded, so ``exp#1`` and ``exp#2`` are two files.
    ``immutable`` (read-only): no locks and no ``-wal``/``-shm`` files, for a database no
    process writes (see ``populations.dashboard.sources``)."""
    uri = "file:" + urllib.parse.quote(os.path.abspath(path), safe="/")
    if immutable:
        return uri + "?mode=ro&immutable=1"
    return uri + "?mode=ro" if readonly else uri


def open_connection(path: Path, readonly: bool, immutable: bool, timeout: float,
                    error: type[Exception]) -> sqlite3.Connection:
    """A connection to the league database at ``path`` (absolute), its schema checked
    (:func:`check_schema`) and, unless ``readonly``, in WAL mode and migrated
    (:func:`migrate`); ``immutable`` (read-only): no locks, no ``-wal``/``-shm`` files.
    ``timeout``: seconds one statement waits for a lock. A link where the file (or its
    ``-wal``/``-shm``/``-journal`` file) should be, a file SQLite cannot open, one newer
    than :data:`~populations.db_schema.SCHEMA_VERSION` or with a schema selfplay does not
    create is an ``error`` naming the file; the connection is closed then."""
    if not immutable:  # SQLite writes through links: a read-only open of a WAL database
        # makes -wal/-shm too, beside the link's target (a run folder's league.db linked
        # to a database elsewhere got them on a refused resume); immutable makes none
        for suffix in ("", "-wal", "-shm", "-journal"):
            refuse_link(f"{path}{suffix}", "league database file", error)
    uri = sqlite_uri(path, readonly, immutable)
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False)
    except sqlite3.DatabaseError as err:
        raise error(f"cannot open league database {path}: {err}") from None
    checked = False
    try:
        # Reading the schema loads ANALYZE's statistics, evaluating any generated column
        # a crafted sqlite_stat1 holds (300 MB per row were allocated before the check
        # refused it; 20,000 rows of 1 MiB took 11 s CPU): until the schema is checked,
        # no string or blob may exceed 16 KiB and SQLite may run at most SCHEMA_STEPS
        # instructions (a league database's schema and sqlite_stat1 load in ~354; with
        # SQLITE_ENABLE_STAT4, sqlite_stat4's ~24 samples per index add a few thousand).
        length = conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 2**14)
        steps = iter(range(SCHEMA_STEPS // 1000))
        conn.set_progress_handler(lambda: next(steps, None) is None, 1000)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA trusted_schema = OFF")  # no side-effect functions in it
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise error(
                f"{path} has schema version {version}; this selfplay reads up to "
                f"{SCHEMA_VERSION}: upgrade selfplay")
        check_schema(conn, path, version, error)
        checked = True
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, length)
        conn.set_progress_handler(None, 1000)
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            migrate(conn)
    except sqlite3.DatabaseError as err:
        conn.close()
        why = ""
        if not checked and isinstance(err, sqlite3.DataError):  # only a crafted file
            why = " (its schema holds a value over 16 KiB: a crafted file)"
        elif not checked and str(err) == "interrupted":
            why = (f" (its schema took over {SCHEMA_STEPS:,} steps to load, a league "
                   "database's takes under 10,000: a crafted file)")
        raise error(f"cannot open league database {path}: {err}{why}") from None
    except error:
        conn.close()
        raise
    return conn


def check_schema(conn: sqlite3.Connection, path: Path, version: int,
                 error: type[Exception]) -> None:
    """Refuse (``error``) a file whose schema differs from the one :data:`MIGRATIONS`
    create: a league database from elsewhere may hold views, triggers, generated columns or
    CHECK constraints that run on every read or write (an endless recursive query
    hung the dashboard and resuming; one generated column can allocate a gigabyte per
    row). Objects missing (a file still being created) are left to the queries."""
    if version < 0:
        raise error(f"{path} has schema version {version}; selfplay writes "
                    f"0 to {SCHEMA_VERSION}: not a league database")
    order = {"view": 0, "trigger": 1, "table": 2}  # what runs code first
    extra = sorted(schema_of(conn) - expected_schema(version),
                   key=lambda o: (order.get(o[0], 3), str(o[1])))
    if extra:
        kind, name, _, sql = extra[0]
        raise error(
            f"league database {path}: its schema holds {kind} {shown(name)}"
            f"{f' ({shown(sql)})' if sql else ''}, which selfplay does not create (a "
            "crafted or edited file); not opening it")


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the file from its ``user_version`` to :data:`SCHEMA_VERSION`, one migration a
    transaction."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for v in range(version, SCHEMA_VERSION):
        with conn:
            conn.executescript(f"BEGIN; {MIGRATIONS[v]} PRAGMA user_version = {v + 1};"
                               " COMMIT;")
