"""The schema of a league database (:mod:`populations.db`): the migrations that create its
tables, the check that a file from elsewhere holds nothing else, and what each JSON column
holds.

Schema versions are SQLite's ``user_version``; ``MIGRATIONS[i]`` upgrades version i to
i + 1 and runs in one transaction when an older file is opened. A file whose schema holds an
object the migrations do not create (a view, a trigger, a generated column: code SQLite runs
on every read or write) is refused by :class:`populations.db.LeagueDB` as it opens, by
comparing :func:`schema_of` the file with :func:`expected_schema` of its version. Rows are
checked as they are read: a JSON column's value must be what its ``(test, description)``
pair below says, or the read fails in one line naming the table, the row and the column.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import Any

MIGRATIONS: list[str] = [
    # 0 -> 1
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL, experiment TEXT, game TEXT,
        config TEXT, status TEXT NOT NULL DEFAULT 'running',
        started_at REAL NOT NULL, updated_at REAL NOT NULL);
    CREATE TABLE members (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
        kind TEXT NOT NULL, roles TEXT NOT NULL, created_at REAL NOT NULL,
        UNIQUE (run_id, name));
    CREATE TABLE snapshots (
        id INTEGER PRIMARY KEY, member_id INTEGER NOT NULL REFERENCES members(id),
        version INTEGER NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL, game TEXT,
        roles TEXT NOT NULL, parent_id INTEGER REFERENCES snapshots(id),
        learner_step INTEGER NOT NULL DEFAULT 0, meta TEXT, created_at REAL NOT NULL,
        UNIQUE (member_id, version));
    CREATE TABLE matches (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), key TEXT NOT NULL,
        game TEXT NOT NULL, seats TEXT NOT NULL, returns TEXT NOT NULL, seed INTEGER,
        created_at REAL NOT NULL, UNIQUE (run_id, key));
    CREATE TABLE payoffs (
        run_id INTEGER NOT NULL REFERENCES runs(id), row_snapshot INTEGER NOT NULL,
        col_snapshot INTEGER NOT NULL, value REAL NOT NULL, win_rate REAL, count INTEGER NOT NULL,
        exact INTEGER NOT NULL DEFAULT 0, updated_at REAL NOT NULL,
        PRIMARY KEY (run_id, row_snapshot, col_snapshot));
    CREATE TABLE ratings (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
        snapshot_id INTEGER NOT NULL REFERENCES snapshots(id), step INTEGER NOT NULL,
        elo REAL NOT NULL, mu REAL NOT NULL, sigma REAL NOT NULL, matches INTEGER NOT NULL,
        created_at REAL NOT NULL, UNIQUE (run_id, snapshot_id, step));
    CREATE TABLE metrics (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
        member_id INTEGER REFERENCES members(id), step INTEGER NOT NULL, key TEXT NOT NULL,
        value REAL NOT NULL, created_at REAL NOT NULL);
    CREATE INDEX metrics_by_key ON metrics (run_id, key, step);
    CREATE TABLE psro_iterations (
        run_id INTEGER NOT NULL REFERENCES runs(id), iteration INTEGER NOT NULL,
        meta_strategy TEXT NOT NULL, nash_conv REAL, seconds REAL, created_at REAL NOT NULL,
        PRIMARY KEY (run_id, iteration));
    """,
    # 1 -> 2: why a run failed; snapshot content hashes; metrics keyed like matches (rows
    # replayed by a resumed run before this version are collapsed to the newest one)
    """
    ALTER TABLE runs ADD COLUMN error TEXT;
    ALTER TABLE snapshots ADD COLUMN sha256 TEXT;
    DELETE FROM metrics WHERE id NOT IN (
        SELECT MAX(id) FROM metrics GROUP BY run_id, IFNULL(member_id, -1), step, key);
    CREATE UNIQUE INDEX metrics_once ON metrics (run_id, IFNULL(member_id, -1), step, key);
    """,
    # 2 -> 3: approximate (trained best response) and exact exploitability per snapshot
    """
    CREATE TABLE exploitability (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
        snapshot_id INTEGER REFERENCES snapshots(id), label TEXT NOT NULL,
        method TEXT NOT NULL, value REAL NOT NULL, low REAL, high REAL, details TEXT,
        created_at REAL NOT NULL, UNIQUE (run_id, label, method));
    """,
    # 3 -> 4: when each league member finished each generation, in wall-clock order (an
    # asynchronous league's members publish whenever they finish; this audits the order)
    """
    CREATE TABLE generations (
        run_id INTEGER NOT NULL REFERENCES runs(id), member TEXT NOT NULL,
        version INTEGER NOT NULL, seq INTEGER NOT NULL, frames INTEGER NOT NULL,
        started_at REAL, finished_at REAL NOT NULL, worker TEXT,
        PRIMARY KEY (run_id, member, version));
    """,
    # 4 -> 5: the learner settings each member trains with (members of one run may differ:
    # population.members=[mappo, {name: gnn, algo: mappo, mappo: {...}}])
    """
    ALTER TABLE members ADD COLUMN settings TEXT;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
SCHEMA_STEPS = 100_000  # SQLite instructions reading a schema may take (see LeagueDB)


# The statistics tables ``ANALYZE`` creates, exactly as SQLite writes them: they only steer
# the query planner. Anything else so named (a trigger, or the table redefined with a
# generated column SQLite evaluates as it loads the statistics) is a crafted schema.
_ANALYZE_TABLES = frozenset(
    ("table", name, name, f"CREATE TABLE {name}({columns})")
    for name, columns in (("sqlite_stat1", "tbl,idx,stat"),
                          ("sqlite_stat4", "tbl,idx,neq,nlt,ndlt,sample")))


def schema_of(conn: sqlite3.Connection) -> frozenset[tuple[str, str, str, str | None]]:
    """The objects of a database's schema: (type, name, table, SQL with whitespace
    collapsed), less the statistics tables of ``ANALYZE`` (:data:`_ANALYZE_TABLES`)."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return frozenset((t, n, tb, " ".join(q.split()) if isinstance(q, str) else q)
                     for t, n, tb, q in rows) - _ANALYZE_TABLES


@functools.cache
def expected_schema(version: int) -> frozenset[tuple[str, str, str, str | None]]:
    """The schema :data:`MIGRATIONS` create up to ``version`` (built once, in memory)."""
    conn = sqlite3.connect(":memory:")
    try:
        for migration in MIGRATIONS[:version]:
            conn.executescript(migration)
        return schema_of(conn)
    finally:
        conn.close()


def _is_number(x: Any) -> bool:
    return type(x) in (int, float)


def _is_str_list(x: Any) -> bool:
    return isinstance(x, list) and all(type(v) is str for v in x)


def _is_dict_of(check: Any) -> Any:
    return lambda x: isinstance(x, dict) and all(check(v) for v in x.values())


# what each JSON column holds, as (test, description) for the one-line error
# (LeagueDB._decode): roles, seats, returns, an object (config, settings, details) and a
# PSRO iteration's meta_strategy
ROLES = (_is_str_list, "a list of role names")
SEATS = (_is_dict_of(lambda v: type(v) is int), "an object of agent -> snapshot id")
RETURNS = (_is_dict_of(_is_number), "an object of agent -> return")
OBJECT = (lambda x: isinstance(x, dict), "an object")
META_STRATEGY = (_is_dict_of(lambda v: isinstance(v, list) and all(map(_is_number, v))),
                 "an object of player -> list of weights")
