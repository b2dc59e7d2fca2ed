"""review39a M4/M5: a failing background cross-play computation is said on the page (not
"pending" forever) and not started again on every poll until the run's matches change;
more than 64 cached runs do not pile up computation threads. Real SQLite files, the app."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from populations.dashboard import queries
from populations.dashboard.sources import Source, open_source
from tests.populations.test_dash38_server import small_league
from tests.populations.test_dash39_server import _client


@pytest.fixture(autouse=True)
def empty_cache(monkeypatch):
    monkeypatch.setattr(queries, "_CACHE", {})


def test_a_failing_background_computation_is_said_and_retried_on_new_matches(
        tmp_path, monkeypatch):
    folder = small_league(tmp_path / "run", [f"m{i}" for i in range(8)])  # 28 episodes
    monkeypatch.setattr(queries, "CROSSPLAY_INLINE_EPISODES", 10)
    calls = []

    def boom(db, run_id):
        calls.append(run_id)
        raise ValueError("corrupt row\n" + "x" * 5000)

    monkeypatch.setattr(queries, "compute_crossplay", boom)
    client, base = _client(folder)
    path = f"{base}/crossplay?compact=1"
    docs = []
    for _ in range(5):
        docs.append(client.get(path).json())
        queries.CROSSPLAY_CACHE.wait(10)
    assert len(calls) == 1, "each poll started another failing computation"
    assert docs[0]["pending"] is True
    last = docs[-1]
    assert last["pending"] is False and last["updating"] is False
    assert last["error"].startswith("cross-play computation failed: ValueError: corrupt row x")
    assert "\n" not in last["error"] and len(last["error"]) < 300
    (db_path,) = Path(folder).rglob("league.db")
    with sqlite3.connect(db_path) as conn:  # a new match: the run changed, try again
        conn.execute("INSERT INTO matches (run_id, key, game, seats, returns, seed, "
                     "created_at) SELECT run_id, key || '-again', game, seats, returns, "
                     "seed, created_at FROM matches LIMIT 1")
    doc = client.get(path).json()
    queries.CROSSPLAY_CACHE.wait(10)
    assert len(calls) == 2 and doc["pending"] is True and "error" not in doc


def test_more_than_64_runs_keep_the_computation_threads_bounded(tmp_path, monkeypatch):
    folder = small_league(tmp_path / "run", [f"m{i}" for i in range(8)])
    monkeypatch.setattr(queries, "CROSSPLAY_INLINE_EPISODES", 10)
    gate = threading.Event()
    real = queries.compute_crossplay

    def gated(db, run_id):
        gate.wait(20)
        return real(db, run_id)

    monkeypatch.setattr(queries, "compute_crossplay", gated)
    monkeypatch.setattr(queries, "_match_state", lambda db, rid: (100, 7))
    (db_path,) = Path(folder).rglob("league.db")
    before = threading.active_count()
    try:
        with open_source(Source("", db_path)) as db:
            for _ in range(3):
                for rid in range(1, 70):  # 69 runs of many episodes
                    queries.CROSSPLAY_CACHE.get(db, rid)
            live = threading.active_count() - before
        assert live <= 64, f"{live} computation threads"
    finally:
        gate.set()
        queries.CROSSPLAY_CACHE.wait(60)
