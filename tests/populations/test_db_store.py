"""League database and policy store: schema, migrations, idempotent writes, live readers."""

import json
import sqlite3
import struct
import threading
import zipfile
from pathlib import Path

import pytest
import torch

import games
from marl.actor_critic import NetConfig
from marl.core import load_policy
from marl.mappo import MAPPO, MAPPOConfig
from populations.db import MIGRATIONS, SCHEMA_VERSION, LeagueDB, LeagueDBError, MatchRow
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


@pytest.mark.parametrize("names", [("exp#1", "exp#2"), ("%41", "a?mode=ro", "sp ace", "50%")])
def test_any_folder_name_opens_its_own_database(tmp_path, names):
    """'#' ended the URI's path (exp#1 and exp#2 both opened a file 'exp'), '%41' decoded."""
    for name in names:
        db = LeagueDB(tmp_path / name / "league.db")
        db.create_run(name)
        db.close()
    for name in names:
        assert (tmp_path / name / "league.db").is_file()
        db = LeagueDB(tmp_path / name / "league.db", readonly=True)
        assert [r[0] for r in db.conn.execute("SELECT name FROM runs")] == [name]
        db.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)  # nothing outside


def test_snapshot_paths_are_relative_to_the_run_folder(tmp_path, monkeypatch):
    """Paths were stored as given (relative to the first working directory): a resume from
    another directory loaded whatever lay at that relative path there."""
    spec = games.make("openspiel/kuhn_poker").spec
    for where, seed in (("a", 0), ("b", 1)):
        (tmp_path / where).mkdir()
        monkeypatch.chdir(tmp_path / where)
        db = LeagueDB("run/league.db")
        store = PolicyStore("run/snapshots", db, db.create_run("r"))
        store.publish("main", MAPPO(spec, MAPPOConfig(net=NetConfig(critic="local")),
                                    seed=seed).policy())
        db.close()
    db = LeagueDB(tmp_path / "a" / "run" / "league.db")  # cwd: b
    (stored,) = db.conn.execute("SELECT path FROM snapshots").fetchone()
    assert stored == "snapshots/main/v0000.pt"
    store = PolicyStore(tmp_path / "a" / "run" / "snapshots", db, db.run_id("r"))
    (snap,) = store.snapshots()
    assert Path(snap.path) == tmp_path / "a" / "run" / "snapshots" / "main" / "v0000.pt"
    mine = load_policy(tmp_path / "a" / "run" / "snapshots" / "main" / "v0000.pt")
    got, theirs = store.load(snap.id), load_policy(tmp_path / "b/run/snapshots/main/v0000.pt")
    mine, got, theirs = (p.payload()["actors"] for p in (mine, got, theirs))
    assert all(torch.equal(got[k], mine[k]) for k in mine)
    assert not all(torch.equal(got[k], theirs[k]) for k in mine)


def garble(path, n=64):
    """Flip ``n`` bytes in the middle of the largest tensor inside a torch zip file: the
    file still unpickles (torch does not check the zip CRC), with other weights."""
    with zipfile.ZipFile(path) as z:
        info = max(z.infolist(), key=lambda i: i.file_size)
    data = bytearray(Path(path).read_bytes())
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:
                                                    info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len + info.file_size // 2
    assert info.file_size >= 2 * n
    for i in range(start, start + n):
        data[i] ^= 0x5A
    Path(path).write_bytes(bytes(data))


def test_a_garbled_snapshot_is_refused_naming_the_file(tmp_path):
    db = LeagueDB(tmp_path / "league.db")
    store = PolicyStore(tmp_path / "snapshots", db, db.create_run("r"))
    spec = games.make("openspiel/kuhn_poker").spec
    snap = store.publish("main", MAPPO(spec, MAPPOConfig(net=NetConfig(critic="local"))).policy())
    info = json.loads(Path(snap.path).with_suffix(".json").read_text())
    assert snap.sha256 == info["sha256"] and len(snap.sha256) == 64
    garble(snap.path)
    torch.load(snap.path, weights_only=True)  # loads silently: only the hash tells
    with pytest.raises(StoreError, match=r"snapshot file .*v0000\.pt is damaged") as err:
        PolicyStore(tmp_path / "snapshots", db, db.run_id("r")).load(snap.id)
    assert "\n" not in str(err.value)


def test_metrics_are_keyed_and_undefined_values_left_out(tmp_path):
    """A replayed step replaces its rows instead of adding more; NaN (explained variance of
    constant targets) is left out instead of failing the NOT NULL constraint; inf is kept."""
    db = LeagueDB(tmp_path / "l.db")
    run = db.create_run("r")
    db.log_metrics(run, 10, {"losses/explained_variance": float("nan"), "x": 1.0,
                             "y": float("inf")})
    db.log_metrics(run, 10, {"x": 1.0})
    db.log_metrics(run, 20, {"x": 2.0})
    assert db.metric_rows(run) == [(10, "x", 1.0), (10, "y", float("inf")), (20, "x", 2.0)]
    assert db.metric(run, "losses/explained_variance") == []


def test_a_psro_iteration_and_its_metrics_commit_together(tmp_path):
    """A kill between the iteration row and its metrics lost the metrics for good (a resume
    counts iterations); an interrupted write now leaves neither."""
    db = LeagueDB(tmp_path / "l.db")
    run = db.create_run("r")
    db.conn.execute("CREATE TRIGGER killed BEFORE INSERT ON psro_iterations "
                    "BEGIN SELECT RAISE(ABORT, 'killed'); END")
    with pytest.raises(sqlite3.DatabaseError, match="killed"):
        db.add_psro_iteration(run, 0, {"a": [1.0]}, 0.5, 0.1, {"psro/nash_conv": 0.5})
    assert db.metric_rows(run) == [] and db.psro_iterations(run) == []
    db.conn.execute("DROP TRIGGER killed")
    db.add_psro_iteration(run, 0, {"a": [1.0]}, 0.5, 0.1, {"psro/nash_conv": 0.5})
    assert db.metric_rows(run) == [(0, "psro/nash_conv", 0.5)]


def test_schema_1_files_are_migrated(tmp_path):
    """A file written before hashes and keyed metrics: duplicated replayed rows collapse."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0] + "PRAGMA user_version = 1;")
    conn.execute("INSERT INTO runs (name, started_at, updated_at) VALUES ('r', 0, 0)")
    for value in (1.0, 1.0, 2.0):
        conn.execute("INSERT INTO metrics (run_id, step, key, value, created_at) "
                     "VALUES (1, 5, 'x', ?, 0)", (value,))
    conn.commit()
    conn.close()
    db = LeagueDB(path)
    assert db.metric_rows(1) == [(5, "x", 2.0)]
    db.set_run_status(1, "failed", "boom")
    assert tuple(db.conn.execute("SELECT status, error FROM runs").fetchone()) == ("failed", "boom")
