"""League database and policy store: schema, migrations, idempotent writes, live readers."""

import sqlite3
import threading

import pytest

import games
from marl.actor_critic import NetConfig
from marl.core import load_policy
from marl.mappo import MAPPO, MAPPOConfig
from populations.db import SCHEMA_VERSION, LeagueDB, LeagueDBError, MatchRow
from populations.store import PolicyStore, StoreError


def test_schema_version_and_wal(tmp_path):
    db = LeagueDB(tmp_path / "l.db")
    assert db.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"runs", "members", "snapshots", "matches", "payoffs", "ratings", "metrics",
            "psro_iterations"} <= tables


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "l.db"
    LeagueDB(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(LeagueDBError, match="schema version .* upgrade selfplay"):
        LeagueDB(path)


def test_missing_or_garbage_database_is_a_clear_error(tmp_path):
    with pytest.raises(LeagueDBError, match="not found"):
        LeagueDB(tmp_path / "none.db", readonly=True)
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(LeagueDBError, match="cannot open league database"):
        LeagueDB(bad)


def test_matches_are_recorded_once(tmp_path):
    db = LeagueDB(tmp_path / "l.db")
    run = db.create_run("r")
    rows = [MatchRow(f"k/{i}", "g", {"a": 1, "b": 2}, {"a": 1.0, "b": -1.0}) for i in range(5)]
    assert db.add_matches(run, rows) == 5
    assert db.add_matches(run, rows[2:] + [MatchRow("k/9", "g", {}, {})]) == 1
    assert db.count_matches(run) == 6
    assert [m.key for m in db.matches(run, "k/")][:2] == ["k/0", "k/1"]


def test_reader_sees_writes_while_writer_is_open(tmp_path):
    path = tmp_path / "l.db"
    writer = LeagueDB(path)
    run = writer.create_run("r")
    reader = LeagueDB(path, readonly=True)
    seen = []

    def write():
        for i in range(20):
            writer.log_metrics(run, i, {"x": float(i)})

    t = threading.Thread(target=write)
    t.start()
    while t.is_alive():
        seen.append(len(reader.metric(run, "x")))
    t.join()
    assert reader.metric(run, "x")[-1] == (19, 19.0)
    assert seen == sorted(seen)  # counts only grow: readers see committed rows


def test_store_publishes_immutable_versions(tmp_path):
    db = LeagueDB(tmp_path / "l.db")
    run = db.create_run("r")
    store = PolicyStore(tmp_path / "snaps", db, run)
    spec = games.make("openspiel/kuhn_poker").spec
    with pytest.raises(StoreError, match="member name"):
        store.member("../evil", "random", ())
    learner = MAPPO(spec, MAPPOConfig(net=NetConfig(critic="local")))
    s0 = store.publish("main", learner.policy())
    s1 = store.publish("main", learner.policy(), parent=s0.id)
    assert (s0.version, s1.version) == (0, 1) and s1.parent_id == s0.id
    assert (tmp_path / "snaps" / "main" / "v0001.json").exists()
    again = store.publish("main", learner.policy(), version=1, parent=s0.id)  # a resumed run
    assert again.id == s1.id and len(store.snapshots("main")) == 2
    loaded = store.load(s1.id)
    assert loaded.meta.kind == "mappo" and loaded.meta.game == "openspiel/kuhn_poker"
    assert load_policy(s1.path).meta == loaded.meta
    assert store.latest("main").id == s1.id
