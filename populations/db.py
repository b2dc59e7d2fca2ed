"""The league database: one SQLite file per run (WAL mode, so the dashboard reads while
training writes).

Tables: ``runs``, ``members``, ``snapshots``, ``matches`` (every evaluated episode with its
seats, snapshots and returns), ``payoffs`` (estimates between snapshots), ``ratings``
(history), ``metrics`` (learner scalars), ``psro_iterations``, ``exploitability`` (NashConv
of a snapshot, exact or by trained best responses, with its interval) and ``generations``
(when each league member finished each generation, in order). A member's ``settings`` are
the learner settings it trains with (plain JSON; NULL for a learner without a config or a
member recorded before version 5); read back they are informational only, so an unreadable
value is reported beside the member instead of refusing the row. Writes are idempotent
where a resumed run may repeat them: a snapshot is keyed by (member, version) and a match
by a caller-chosen key, a metric by (run, member, step, key), so replaying work after a
crash records nothing twice. A metric that is undefined (NaN) is not stored: a missing row
means "no value" (±inf is a value SQLite keeps; the dashboard shows it as a gap).
Snapshot paths are stored relative to the database's folder (the run folder) with the
SHA-256 of the file, and come back resolved against that folder, so a run reads its own
snapshots whatever the working directory.

A write waits for a lock another connection holds (a user's ``sqlite3`` shell inside a
transaction, a tool) up to :data:`LOCK_TIMEOUT` seconds (5 minutes; a warning is logged once
it has waited :data:`LOCK_WARN` seconds), then raises :class:`LeagueDBError` naming the file
and the lock; a write that finds the disk full raises :class:`marl.fileio.NoSpaceError`
naming it. Recording the status of a run that an error stops
(:meth:`LeagueDB.set_run_status_quietly`, :func:`lock_budget_after`) waits
:data:`QUIET_LOCK_TIMEOUT` seconds at most, and not at all after that error was this file's
lock: a locked database ends a run after one wait. A read-only connection closed last
removes the ``-wal``/``-shm`` files it made (:meth:`LeagueDB.close`), so a finished run's
folder holds the database alone.

The schema (its migrations, the check that a file holds nothing else, what each JSON column
holds) is :mod:`populations.db_schema`'s; ``MIGRATIONS`` and ``SCHEMA_VERSION`` are
importable from here too. Opening a file (links refused, the schema read under limits and
checked, migrations applied) is :mod:`populations.db_open`'s; ``refuse_link`` and
``sqlite_uri`` are importable from here too.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marl.fileio import NoSpaceError
from populations.db_open import (  # refuse_link: re-exported, its old home
    open_connection,
    refuse_link,  # noqa: F401
    shown,
    sqlite_uri,
)
from populations.db_schema import (  # MIGRATIONS, SCHEMA_VERSION: re-exported
    META_STRATEGY,
    MIGRATIONS,  # noqa: F401
    OBJECT,
    RETURNS,
    ROLES,
    SCHEMA_VERSION,  # noqa: F401
    SEATS,
)

log = logging.getLogger(__name__)
LOCK_TIMEOUT = 300.0  # seconds a write waits for a lock another connection holds
LOCK_WARN = 10.0  # seconds of waiting after which a warning says who it waits for
QUIET_LOCK_TIMEOUT = 5.0  # seconds recording a failing run's status waits for a lock
LOCK_RETRY_S = 0.1  # seconds between tries of a write SQLite found locked
# runs.experiment of the runs selfplay-eval adds to a database (a run folder's league.db too):
# a run's closing summary and a sweep's table read the run's own, not these
EVAL_EXPERIMENT = "selfplay-eval"



class LeagueDBError(RuntimeError):
    """The league database cannot be opened, is locked, is newer than this code, holds a
    row this code cannot read, or refuses a write (another file for a recorded snapshot)."""


class LeagueDBLockedError(LeagueDBError):
    """A write waited ``lock_timeout`` for the lock another connection holds on ``path``."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


def lock_budget_after(err: BaseException, path: str | Path) -> float:
    """Seconds a best-effort write to league database ``path`` (the failed status of a run
    ``err`` stops) may wait for a lock: none when ``err`` (or an error it was raised from)
    is that file's lock, already waited for; :data:`QUIET_LOCK_TIMEOUT` otherwise."""
    path, seen = Path(os.path.abspath(path)), set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, LeagueDBLockedError) and e.path == path:
            return 0.0
        e = e.__cause__ or e.__context__
    return QUIET_LOCK_TIMEOUT


_BUSY, _LOCKED, _READONLY, _IOERR, _FULL = 5, 6, 8, 10, 13  # SQLite's primary result codes


def _writes(method: Any) -> Any:
    """A :class:`LeagueDB` method that writes (one transaction, idempotent): while another
    connection holds the write lock it is tried again, up to the database's
    ``lock_timeout`` (a warning after :data:`LOCK_WARN` seconds), then a
    :class:`LeagueDBError` names the file and the lock; a full disk is a
    :class:`~marl.fileio.NoSpaceError` naming the file, an I/O error a
    :class:`LeagueDBError`. Both end a run in one line with the command that resumes it."""
    @functools.wraps(method)
    def write(self: LeagueDB, *args: Any, **kwargs: Any) -> Any:
        if getattr(self._writing, "on", False):  # called by another writing method: its
            return method(self, *args, **kwargs)  # caller retries
        # rows given as a generator are read once: a retry writes the same ones
        args = tuple(list(a) if isinstance(a, Iterator) else a for a in args)
        kwargs = {k: list(v) if isinstance(v, Iterator) else v for k, v in kwargs.items()}
        began, warned = time.monotonic(), False
        self._writing.on = True
        try:
            while True:
                try:
                    return method(self, *args, **kwargs)
                except sqlite3.OperationalError as err:
                    code = getattr(err, "sqlite_errorcode", 0) & 0xFF
                    waited = time.monotonic() - began
                    if code in (_BUSY, _LOCKED) and waited < self.lock_timeout:
                        if not warned and waited >= min(LOCK_WARN, self.lock_timeout / 2):
                            log.warning("league database %s is locked by another connection "
                                        "(a sqlite3 shell or tool inside a transaction?): "
                                        "waiting up to %.0f s for it", self.path,
                                        self.lock_timeout)
                            warned = True
                        # SQLite returns some busy results without waiting in its busy
                        # handler (BUSY_SNAPSHOT, a table locked on this connection)
                        time.sleep(min(LOCK_RETRY_S, self.lock_timeout - waited))
                        continue
                    raise self._write_error(err, code, waited) from err
        finally:
            self._writing.on = False
    return write



@dataclass(frozen=True)
class SnapshotRow:
    """One snapshot as stored: ids, member, version, file and lineage."""

    id: int
    member_id: int
    member: str
    version: int
    path: str
    kind: str
    game: str
    roles: tuple[str, ...]
    parent_id: int | None
    learner_step: int
    created_at: float
    sha256: str | None = None  # of the .pt file; None for snapshots of older databases


@dataclass(frozen=True)
class MatchRow:
    """One evaluated episode: ``seats`` maps agent id → snapshot id, ``returns`` agent → return."""

    key: str
    game: str
    seats: dict[str, int]
    returns: dict[str, float]
    seed: int | None = None


class LeagueDB:
    """A league database file; safe to open from a reader while a writer holds it."""

    def __init__(self, path: str | Path, readonly: bool = False, timeout: float = 10.0,
                 immutable: bool = False, lock_timeout: float | None = None) -> None:
        """``timeout``: seconds one statement waits for a lock; ``lock_timeout``: seconds a
        write waits in all before it fails (default :data:`LOCK_TIMEOUT`)."""
        # absolute at opening: relative snapshot paths resolve against this folder later,
        # whatever the working directory is then
        self.path = Path(os.path.abspath(path))
        readonly = readonly or immutable
        self.lock_timeout = LOCK_TIMEOUT if lock_timeout is None else lock_timeout
        self.timeout = timeout
        # whether a write is under way, per thread: a writing method called by another is not
        # retried on its own. (Two threads writing on one LeagueDB would share its
        # connection's transaction; none does: the dashboard's threads read on their own.)
        self._writing = threading.local()
        # a read-only connection that opens a WAL database without its -wal file makes one,
        # which it cannot remove when it closes (see close)
        self._made_wal = readonly and not immutable and not os.path.exists(f"{self.path}-wal")
        if readonly and not self.path.is_file():
            raise LeagueDBError(f"league database not found: {self.path}")
        if not readonly:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = open_connection(self.path, readonly, immutable,
                                    min(timeout, self.lock_timeout), LeagueDBError)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection inside one transaction: committed when the block ends, rolled
        back when it raises."""
        with self.conn:
            yield self.conn

    def close(self) -> None:
        """Close the connection. A read-only one that made the ``-wal``/``-shm`` files
        (none was there when it opened: no writer had the file open) has a read-write
        connection close after it, which SQLite lets remove them when no other connection
        has the file open (the dashboard reads a database without ``-wal`` as immutable)."""
        self.conn.close()
        if self._made_wal and os.path.exists(f"{self.path}-wal"):
            try:
                conn = sqlite3.connect(sqlite_uri(self.path), uri=True, timeout=0)
                try:
                    conn.execute("PRAGMA user_version").fetchone()  # opens the WAL to close it
                finally:
                    conn.close()
            except sqlite3.Error as err:  # a read-only folder, a writer just starting
                log.debug("left the -wal file of %s: %s", self.path, err)

    def _write_error(self, err: sqlite3.OperationalError, code: int,
                     waited: float) -> Exception:
        """The one-line error for a write SQLite refused with ``code`` after ``waited``
        seconds; ``err`` itself where it is not the storage's (a bug)."""
        if code in (_BUSY, _LOCKED):
            return LeagueDBLockedError(
                f"league database {self.path} is locked: another connection held its write "
                f"lock for {waited:.0f} s (LeagueDB.lock_timeout {self.lock_timeout:.0f} s); "
                "end that connection's transaction (a sqlite3 shell, a tool) and resume",
                self.path)
        if code == _FULL:
            return NoSpaceError(self.path, "league database ")
        if code == _IOERR:
            return LeagueDBError(f"cannot write league database {self.path}: {err}")
        if code == _READONLY:  # the file (or its folder, its -wal/-shm files) is read-only
            return LeagueDBError(
                f"cannot write league database {self.path}: it is read-only ({err}); make the "
                "file, its -wal and -shm files and its folder writable")
        return err

    @contextmanager
    def lock_budget(self, seconds: float) -> Iterator[None]:
        """Writes in the block wait at most ``seconds`` for a lock (its connection's busy
        handler too), then the database's own budget is back."""
        saved = self.lock_timeout
        self.lock_timeout = min(saved, seconds)
        self._busy_timeout(self.lock_timeout)
        try:
            yield
        finally:
            self.lock_timeout = saved
            self._busy_timeout(saved)

    def _busy_timeout(self, lock_timeout: float) -> None:
        ms = int(min(self.timeout, lock_timeout) * 1000)
        self.conn.execute(f"PRAGMA busy_timeout = {ms}")

    def set_run_status_quietly(self, run_id: int, status: str, error: str | None) -> bool:
        """:meth:`set_run_status` for a run stopped by an error being raised: a failure to
        record it (the disk that filled up, the lock that was held) is logged, never
        raised over that error; returns whether it was recorded (a run left ``running``
        is recorded afresh by ``resume=true``). It waits :data:`QUIET_LOCK_TIMEOUT` at most
        for a lock, and tries once without waiting when the error being raised is this
        file's lock (:func:`lock_budget_after`): a locked database's run ends after the one
        wait of the write that failed."""
        stopping = sys.exc_info()[1]
        budget = QUIET_LOCK_TIMEOUT if stopping is None else lock_budget_after(stopping,
                                                                               self.path)
        try:
            with self.lock_budget(budget):
                self.set_run_status(run_id, status, error)
            return True
        except (LeagueDBError, OSError, sqlite3.Error) as err:
            log.error("cannot record run %d as %s in %s: %s", run_id, status, self.path, err)
            return False

    def _decode(self, text: Any, table: str, row: str, column: str,
                kind: tuple[Any, str]) -> Any:
        """A JSON column's value, decoded and checked; a row a crafted or damaged file holds
        (not JSON, nested too deep for the parser, another type) is a one-line
        :class:`LeagueDBError` naming the table, the row and the column."""
        check, expected = kind
        where = f"league database {self.path}: {table} {row}, column {column}"
        try:
            value = json.loads(text)
        except RecursionError:
            raise LeagueDBError(f"{where}: nested too deep to read; expected "
                                f"{expected}") from None
        except (TypeError, ValueError) as err:
            raise LeagueDBError(f"{where}: {shown(text)} is not JSON ({err}); expected "
                                f"{expected}") from None
        if not check(value):
            raise LeagueDBError(f"{where}: {shown(text)} is not {expected}")
        return value

    # ------------------------------------------------------------------ runs, members
    @_writes
    def create_run(self, name: str, experiment: str = "", game: str = "",
                   config: dict[str, Any] | None = None) -> int:
        """Record a new run ``name`` (status ``running``) of ``experiment`` on ``game`` with
        its settings ``config`` (JSON); returns its id."""
        now = time.time()
        with self.conn:
            cur = self.conn.execute(
                "INSERT INTO runs (name, experiment, game, config, started_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (name, experiment, game, json.dumps(config or {}), now, now),
            )
        return int(cur.lastrowid)

    def run_id(self, name: str) -> int | None:
        """The id of the newest run named ``name`` (None: no such run)."""
        row = self.conn.execute("SELECT id FROM runs WHERE name = ? ORDER BY id DESC LIMIT 1",
                                (name,)).fetchone()
        return None if row is None else int(row[0])

    def run_status(self, run_id: int) -> str | None:
        """The status of run ``run_id`` (running, finished, failed, interrupted; None: no
        such run)."""
        row = self.conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        return None if row is None else str(row[0])

    @_writes
    def drop_metrics_after(self, run_id: int, step: int) -> int:
        """Delete run ``run_id``'s metric rows past ``step`` (what an interrupted process
        logged after the checkpoint a resume starts from); returns how many."""
        with self.conn:
            cur = self.conn.execute("DELETE FROM metrics WHERE run_id = ? AND step > ?",
                                    (run_id, step))
        return cur.rowcount

    @_writes
    def set_run_status(self, run_id: int, status: str, error: str | None = None) -> None:
        """Set ``status`` (running, finished, failed, interrupted: stopped by Ctrl-C) and the
        error that ended the run."""
        with self.conn:
            self.conn.execute("UPDATE runs SET status = ?, error = ?, updated_at = ? "
                              "WHERE id = ?", (status, error, time.time(), run_id))

    def run_config(self, run_id: int) -> dict[str, Any] | None:
        """The settings recorded when run ``run_id`` was created (None if none were)."""
        row = self.conn.execute("SELECT config FROM runs WHERE id = ?", (run_id,)).fetchone()
        return None if row is None or row[0] is None else self._decode(
            row[0], "runs", f"row {run_id}", "config", OBJECT)

    @_writes
    def set_run_config(self, run_id: int, config: dict[str, Any]) -> None:
        """Replace run ``run_id``'s recorded settings (a resume's, once accepted)."""
        with self.conn:
            self.conn.execute("UPDATE runs SET config = ?, updated_at = ? WHERE id = ?",
                              (json.dumps(config), time.time(), run_id))

    def running_runs(self) -> set[int]:
        """The ids of the runs whose status is ``running``."""
        return {int(r[0]) for r in
                self.conn.execute("SELECT id FROM runs WHERE status = 'running'")}

    @_writes
    def fail_running(self, error: str, status: str = "failed",
                     spare: Iterable[int] = ()) -> int:
        """Mark every run still ``running`` but those in ``spare`` as ``status`` (failed, or
        interrupted) with ``error`` (the caller holds the run folder's lock, so none of them
        is running any more); returns how many."""
        spare = sorted(set(spare))
        with self.conn:
            cur = self.conn.execute(
                "UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE status = 'running'"
                f" AND id NOT IN ({', '.join('?' * len(spare))})",
                (status, error, time.time(), *spare))
        return cur.rowcount

    @_writes
    def add_member(self, run_id: int, name: str, kind: str, roles: Iterable[str]) -> int:
        """Record member ``name`` of ``kind`` (or find it). A member recorded as its
        snapshots' policy kind (leagues from before members were recorded by their learner:
        an IPPO member as ``mappo``) takes ``kind``, the learner's name, from then on."""
        with self.conn:
            self.conn.execute(
                "INSERT OR IGNORE INTO members (run_id, name, kind, roles, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (run_id, name, kind, json.dumps(list(roles)), time.time()),
            )
            self.conn.execute(
                "UPDATE members SET kind = ? WHERE run_id = ? AND name = ? AND kind <> ? "
                "AND kind IN (SELECT s.kind FROM snapshots s WHERE s.member_id = members.id)",
                (kind, run_id, name, kind),
            )
        row = self.conn.execute("SELECT id FROM members WHERE run_id = ? AND name = ?",
                                (run_id, name)).fetchone()
        return int(row[0])

    @_writes
    def set_member_settings(self, run_id: int, name: str,
                            settings: dict[str, Any] | None) -> bool:
        """Record the learner settings member ``name`` trains with (plain JSON: a ``dict``
        of JSON values; None: it has none); recording again replaces them. Returns whether
        the member is recorded (a member is recorded when it first publishes)."""
        text = None if settings is None else json.dumps(settings, allow_nan=False)
        with self.conn:
            cur = self.conn.execute("UPDATE members SET settings = ? WHERE run_id = ? AND "
                                    "name = ?", (text, run_id, name))
        return cur.rowcount > 0

    def members(self, run_id: int) -> list[dict[str, Any]]:
        """Every member of run ``run_id`` in recording order: its row, with ``roles`` and
        ``settings`` (a dict, or None: none recorded) decoded. Settings are informational:
        an unreadable value (a crafted or damaged row) is None with the one-line reason in
        ``settings_error`` rather than an error, so the league tables still read."""
        rows = self.conn.execute("SELECT * FROM members WHERE run_id = ? ORDER BY id", (run_id,))
        out = []
        for r in rows:
            m = {**dict(r), "roles": self._decode(r["roles"], "members", f"row {r['id']}",
                                                  "roles", ROLES), "settings": None}
            text = r["settings"] if "settings" in r.keys() else None  # noqa: SIM118 (< v5)
            if text is not None:
                try:
                    m["settings"] = self._decode(text, "members", f"row {r['id']}",
                                                 "settings", OBJECT)
                except LeagueDBError as err:
                    m["settings_error"] = str(err)
            out.append(m)
        return out

    # ------------------------------------------------------------------ snapshots
    @_writes
    def add_snapshot(self, member_id: int, version: int, path: str | Path, kind: str, game: str,
                     roles: Iterable[str], parent_id: int | None = None, learner_step: int = 0,
                     meta: dict[str, Any] | None = None, sha256: str | None = None,
                     replace: bool = False) -> int:
        """Record a snapshot; recording the same (member, version) again keeps one row.

        ``path`` is stored relative to the database's folder when it lies inside it. A
        version recorded with another file (another ``sha256``) is refused unless
        ``replace`` (the policy store's repair of a missing or damaged file): its matches
        and ratings were played by the recorded one.

        Raises:
            LeagueDBError: the version is recorded with another SHA-256 and not ``replace``.
        """
        row = self.conn.execute("SELECT sha256 FROM snapshots WHERE member_id = ? AND "
                                "version = ?", (member_id, version)).fetchone()
        if row is not None and not replace and row[0] != sha256:
            raise LeagueDBError(
                f"snapshot version {version} of member id {member_id} is recorded with SHA-256 "
                f"{str(row[0])[:16]}...; not replacing it with {str(sha256)[:16]}... (its "
                "matches and ratings were played by the recorded file): record a new version")
        with self.conn:
            self.conn.execute(
                "INSERT INTO snapshots (member_id, version, path, kind, game, roles, parent_id, "
                "learner_step, meta, created_at, sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (member_id, version) DO UPDATE SET path = excluded.path, "
                "learner_step = excluded.learner_step, meta = excluded.meta, "
                "sha256 = excluded.sha256",
                (member_id, version, self._relative(path), kind, game, json.dumps(list(roles)),
                 parent_id, learner_step, json.dumps(meta or {}), time.time(), sha256),
            )
        row = self.conn.execute("SELECT id FROM snapshots WHERE member_id = ? AND version = ?",
                                (member_id, version)).fetchone()
        return int(row[0])

    def snapshots(self, run_id: int, member: str | None = None) -> list[SnapshotRow]:
        """Run ``run_id``'s snapshots (``member``'s only, when given) in recording order,
        their paths absolute."""
        sql = ("SELECT s.*, m.name AS member FROM snapshots s JOIN members m ON s.member_id = m.id "
               "WHERE m.run_id = ?")
        args: list[Any] = [run_id]
        if member is not None:
            sql += " AND m.name = ?"
            args.append(member)
        rows = self.conn.execute(sql + " ORDER BY s.id", args).fetchall()
        # a schema-1 file opened read-only has no hashes (Row "in" tests values, not keys)
        hashed = bool(rows) and "sha256" in rows[0].keys()  # noqa: SIM118
        return [
            SnapshotRow(r["id"], r["member_id"], r["member"],
                        self._integer(r["version"], "snapshots", f"row {r['id']}", "version"),
                        self._absolute(r["path"]), r["kind"], r["game"],
                        tuple(self._decode(r["roles"], "snapshots", f"row {r['id']}", "roles",
                                           ROLES)), r["parent_id"],
                        self._integer(r["learner_step"], "snapshots", f"row {r['id']}",
                                      "learner_step"),
                        r["created_at"], r["sha256"] if hashed else None)
            for r in rows
        ]

    def _integer(self, value: Any, table: str, row: str, column: str) -> int:
        """An INTEGER column's value: SQLite keeps whatever a crafted file put there (text, a
        float), which sorted against numbers fails far from the file; a one-line
        :class:`LeagueDBError` naming the table, the row and the column instead."""
        if type(value) is not int:
            raise LeagueDBError(f"league database {self.path}: {table} {row}, column {column}: "
                                f"{shown(value)} is not an integer")
        return value

    def _relative(self, path: str | Path) -> str:
        """``path`` relative to the database's folder (POSIX form) if inside it."""
        full = Path(os.path.abspath(path))
        try:
            return full.relative_to(self.path.parent).as_posix()
        except ValueError:
            return str(full)

    def _absolute(self, stored: str) -> str:
        """A stored snapshot path resolved against the database's folder."""
        return str(self.path.parent / stored) if not os.path.isabs(stored) else stored

    # ------------------------------------------------------------------ matches, payoffs
    @_writes
    def add_matches(self, run_id: int, matches: Iterable[MatchRow]) -> int:
        """Insert matches whose key is new; returns how many were inserted. A NaN or
        infinite return is refused (:class:`LeagueDBError`): nothing is inserted."""
        matches = list(matches)
        for m in matches:
            bad = [a for a, r in m.returns.items() if not math.isfinite(r)]
            if bad:
                raise LeagueDBError(f"match {m.key}: non-finite return {m.returns[bad[0]]} of "
                                    f"agent {bad[0]!r}; no match of this batch was recorded")
        now = time.time()
        rows = [(run_id, m.key, m.game, json.dumps(m.seats), json.dumps(m.returns), m.seed, now)
                for m in matches]
        with self.conn:
            before = self.conn.total_changes
            self.conn.executemany(
                "INSERT OR IGNORE INTO matches (run_id, key, game, seats, returns, seed, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            return self.conn.total_changes - before

    def matches(self, run_id: int, prefix: str = "") -> list[MatchRow]:
        """Run ``run_id``'s recorded episodes whose key starts with ``prefix`` (all by
        default), in recorded order."""
        rows = self.conn.execute(
            "SELECT * FROM matches WHERE run_id = ? AND key LIKE ? ORDER BY id",
            (run_id, prefix.replace("%", r"\%") + "%"))
        return [MatchRow(r["key"], r["game"],
                         self._decode(r["seats"], "matches", f"row {r['id']}", "seats", SEATS),
                         self._decode(r["returns"], "matches", f"row {r['id']}", "returns",
                                      RETURNS), r["seed"]) for r in rows]

    def matches_after(self, run_id: int, after: int) -> list[tuple[int, float, MatchRow]]:
        """The matches recorded after row id ``after``, in recorded order, with their row ids
        and times recorded: what an incremental reader (``populations.evaluation.Standings``)
        has not seen."""
        rows = self.conn.execute(
            "SELECT * FROM matches WHERE run_id = ? AND id > ? ORDER BY id", (run_id, after))
        return [(int(r["id"]), float(r["created_at"]), MatchRow(
            r["key"], r["game"],
            self._decode(r["seats"], "matches", f"row {r['id']}", "seats", SEATS),
            self._decode(r["returns"], "matches", f"row {r['id']}", "returns", RETURNS),
            r["seed"])) for r in rows]

    def matches_mark(self, run_id: int, upto: int) -> tuple[int, float | None]:
        """How many matches of run ``run_id`` have a row id up to ``upto``, and when row
        ``upto`` was recorded (None: it is gone): an incremental reader's check that none it
        read was deleted since. The count alone misses rows deleted and recorded again:
        without AUTOINCREMENT, SQLite gives new rows the ids of deleted highest ones."""
        count, at = self.conn.execute(
            "SELECT COUNT(*), (SELECT created_at FROM matches WHERE run_id = ? AND id = ?) "
            "FROM matches WHERE run_id = ? AND id <= ?", (run_id, upto, run_id, upto)).fetchone()
        return int(count), None if at is None else float(at)

    @_writes
    def delete_matches(self, run_id: int, prefix: str) -> int:
        """Delete the matches whose key starts with ``prefix``; returns how many."""
        with self.conn:
            cur = self.conn.execute(  # not LIKE: its _ and % would match other keys
                "DELETE FROM matches WHERE run_id = ? AND substr(key, 1, ?) = ?",
                (run_id, len(prefix), prefix))
            return cur.rowcount

    def count_matches(self, run_id: int) -> int:
        """How many episodes run ``run_id`` recorded."""
        return int(self.conn.execute("SELECT COUNT(*) FROM matches WHERE run_id = ?",
                                     (run_id,)).fetchone()[0])

    @_writes
    def set_payoffs(self, run_id: int, entries: Iterable[tuple[int, int, float, float | None,
                                                                int, bool]]) -> None:
        """Upsert ``(row, col, value, win_rate, count, exact)`` payoff estimates."""
        now = time.time()
        with self.conn:
            self.conn.executemany(
                "INSERT INTO payoffs (run_id, row_snapshot, col_snapshot, value, win_rate, count, "
                "exact, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, "
                "row_snapshot, col_snapshot) DO UPDATE SET value = excluded.value, "
                "win_rate = excluded.win_rate, count = excluded.count, exact = excluded.exact, "
                "updated_at = excluded.updated_at",
                [(run_id, r, c, v, w, n, int(e), now) for r, c, v, w, n, e in entries])

    def payoffs(self, run_id: int) -> list[dict[str, Any]]:
        """Run ``run_id``'s payoff table: one dict per (row, column) snapshot pair with its
        ``value`` (the row snapshot's mean payoff against the column's), ``win_rate``,
        ``count`` and ``exact`` (computed, not sampled)."""
        rows = self.conn.execute("SELECT * FROM payoffs WHERE run_id = ?", (run_id,))
        return [dict(r) for r in rows]

    def payoff_rows(self, run_id: int, rows: Iterable[int]) -> list[dict[str, Any]]:
        """The payoff entries whose row snapshot is one of ``rows``, found by the table's
        key: a matchmaking draw reads a few rows, not the whole N x N table."""
        found = self.conn.execute(
            "SELECT * FROM payoffs WHERE run_id = ? AND row_snapshot IN "
            "(SELECT value FROM json_each(?))", (run_id, json.dumps([int(r) for r in rows])))
        return [dict(r) for r in found]

    # ------------------------------------------------------------------ ratings, metrics
    @_writes
    def add_ratings(self, run_id: int, step: int,
                    rows: Iterable[tuple[int, float, float, float, int]]) -> None:
        """Record ``(snapshot_id, elo, mu, sigma, matches)`` at ``step`` (idempotent)."""
        now = time.time()
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO ratings (run_id, snapshot_id, step, elo, mu, sigma, "
                "matches, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, s, step, e, m, sg, n, now) for s, e, m, sg, n in rows])

    def latest_ratings(self, run_id: int) -> dict[int, dict[str, float]]:
        """Each rated snapshot's newest rating row (``elo``, ``mu``, ``sigma``, ``matches``,
        ``step``), by snapshot id."""
        rows = self.conn.execute(
            "SELECT r.* FROM ratings r JOIN (SELECT snapshot_id, MAX(step) AS step FROM ratings "
            "WHERE run_id = ? GROUP BY snapshot_id) l ON r.snapshot_id = l.snapshot_id AND "
            "r.step = l.step WHERE r.run_id = ?", (run_id, run_id))
        return {r["snapshot_id"]: dict(r) for r in rows}

    @_writes
    def log_metrics(self, run_id: int, step: int, metrics: dict[str, float],
                    member_id: int | None = None) -> None:
        """Record scalars at ``step``; logging a (member, step, key) again replaces its value
        (a resumed run replaying a step), and undefined values (NaN) are left out."""
        with self.conn:
            self._insert_metrics(run_id, step, metrics, member_id)

    def _insert_metrics(self, run_id: int, step: int, metrics: dict[str, float],
                        member_id: int | None) -> None:
        now = time.time()
        rows = [(run_id, member_id, step, k, float(v), now) for k, v in metrics.items()
                if v is not None and not math.isnan(float(v))]
        self.conn.executemany(
            "INSERT OR REPLACE INTO metrics (run_id, member_id, step, key, value, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)", rows)

    def metric(self, run_id: int, key: str) -> list[tuple[int, float]]:
        """The ``(step, value)`` rows of metric ``key`` of run ``run_id``, by step."""
        rows = self.conn.execute(
            "SELECT step, value FROM metrics WHERE run_id = ? AND key = ? ORDER BY step, id",
            (run_id, key))
        return [(int(s), float(v)) for s, v in rows]

    def metric_rows(self, run_id: int) -> list[tuple[int, str, float]]:
        """Every ``(step, key, value)`` of a run, by step then key."""
        rows = self.conn.execute(
            "SELECT step, key, value FROM metrics WHERE run_id = ? ORDER BY step, key, id",
            (run_id,))
        return [(int(s), str(k), float(v)) for s, k, v in rows]

    @_writes
    def add_psro_iteration(self, run_id: int, iteration: int, meta_strategy: Any,
                           nash_conv: float | None, seconds: float | None,
                           metrics: dict[str, float] | None = None) -> None:
        """Record a finished iteration and its ``metrics`` (at step ``iteration``) in one
        transaction: a resumed run counts finished iterations, so one must never be
        recorded without its metrics."""
        with self.conn:
            if metrics:
                self._insert_metrics(run_id, iteration, metrics, None)
            self.conn.execute(
                "INSERT OR REPLACE INTO psro_iterations (run_id, iteration, meta_strategy, "
                "nash_conv, seconds, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, iteration, json.dumps(meta_strategy), nash_conv, seconds, time.time()))

    @_writes
    def add_exploitability(self, run_id: int, snapshot_id: int | None, label: str, method: str,
                           value: float, low: float | None = None, high: float | None = None,
                           details: dict[str, Any] | None = None) -> None:
        """Record the NashConv of a snapshot (or of ``label``, e.g. a meta-mixture, when
        ``snapshot_id`` is None) by ``method`` (``exact``, ``approx/<algo>/<frames>``) with
        its interval ``[low, high]``; recording (label, method) again replaces it."""
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO exploitability (run_id, snapshot_id, label, method, "
                "value, low, high, details, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, snapshot_id, label, method, float(value), low, high,
                 json.dumps(details or {}), time.time()))

    def exploitability(self, run_id: int) -> list[dict[str, Any]]:
        """Every recorded exploitability of a run, oldest first."""
        rows = self.conn.execute(
            "SELECT * FROM exploitability WHERE run_id = ? ORDER BY id", (run_id,))
        return [{**dict(r), "details": self._decode(r["details"] or "{}", "exploitability",
                                                     f"row {r['id']}", "details", OBJECT)}
                for r in rows]

    @_writes
    def add_generation(self, run_id: int, member: str, version: int, frames: int,
                       started_at: float | None, finished_at: float,
                       worker: str | None = None) -> int:
        """Record that ``member`` finished training snapshot ``version`` (wall-clock times,
        where it trained); returns its place in the run's finishing order (1, 2, ...). A
        resumed run recording it again keeps its place and takes the new times. The run's
        ``updated_at`` is set to now: a running league's heartbeat, once a member generation
        (it moved only with the run's status)."""
        with self.conn:
            self.conn.execute("UPDATE runs SET updated_at = ? WHERE id = ?",
                              (time.time(), run_id))
            self.conn.execute(
                "INSERT INTO generations (run_id, member, version, seq, frames, started_at, "
                "finished_at, worker) VALUES (?, ?, ?, (SELECT IFNULL(MAX(seq), 0) + 1 FROM "
                "generations WHERE run_id = ?), ?, ?, ?, ?) ON CONFLICT (run_id, member, "
                "version) DO UPDATE SET frames = excluded.frames, started_at = "
                "excluded.started_at, finished_at = excluded.finished_at, worker = "
                "excluded.worker", (run_id, member, version, run_id, frames, started_at,
                                    finished_at, worker))
        row = self.conn.execute("SELECT seq FROM generations WHERE run_id = ? AND member = ? "
                                "AND version = ?", (run_id, member, version)).fetchone()
        return int(row[0])

    def generations(self, run_id: int) -> list[dict[str, Any]]:
        """Every recorded member generation of a run, in finishing order."""
        rows = self.conn.execute("SELECT * FROM generations WHERE run_id = ? ORDER BY seq",
                                 (run_id,))
        return [dict(r) for r in rows]

    def psro_iterations(self, run_id: int) -> list[dict[str, Any]]:
        """Run ``run_id``'s finished PSRO iterations in order, each with its
        ``meta_strategy`` decoded, ``nash_conv`` and ``seconds``."""
        rows = self.conn.execute(
            "SELECT * FROM psro_iterations WHERE run_id = ? ORDER BY iteration", (run_id,))
        return [{**dict(r), "meta_strategy": self._decode(
                    r["meta_strategy"], "psro_iterations", f"iteration {shown(r['iteration'])}",
                    "meta_strategy", META_STRATEGY)} for r in rows]
