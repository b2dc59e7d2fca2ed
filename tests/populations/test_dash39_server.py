"""A large league's first visit (dash39, after walk 38b: 200 members, 50k episodes): the
first cross-play answer of a run of many episodes does not wait on its statistics (they
are computed in the background, the answer says ``pending``), and the server sends only
the cross-play pairs the page draws (``?rows=N``). Real SQLite files, the real app."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from populations.dashboard import create_app, queries
from populations.dashboard.data import CROSSPLAY_ROWS, DashboardData, crossplay_rows_path
from tests.populations.test_dash38_server import small_league


@pytest.fixture(autouse=True)
def empty_cache(monkeypatch):
    monkeypatch.setattr(queries, "_CACHE", {})


def _client(folder: Path) -> tuple[TestClient, str]:
    client = TestClient(create_app([folder]))
    run = client.get("/api/runs").json()["runs"][0]
    return client, f"/api/runs/{run['source']}/{run['id']}"


def test_a_large_runs_first_crossplay_answer_does_not_wait_on_its_statistics(
        tmp_path, monkeypatch):
    folder = small_league(tmp_path / "run", [f"m{i}" for i in range(8)])  # 28 episodes
    monkeypatch.setattr(queries, "CROSSPLAY_INLINE_EPISODES", 10)  # 28 is "many" here
    gate, waited_out = threading.Event(), []
    real = queries.compute_crossplay

    def gated(db, run_id):
        if not gate.wait(10):  # an answer that waited on this comes only after 10 s
            waited_out.append(run_id)
        return real(db, run_id)

    monkeypatch.setattr(queries, "compute_crossplay", gated)
    client, base = _client(folder)
    path = f"{base}/crossplay?compact=1"
    try:
        first = client.get(path).json()
        assert waited_out == [], "the first answer waited on the cross-play statistics"
        assert first == {"pending": True, "stale": True, "updating": True,
                         "as_of": {"matches": 28, "last_match": first["as_of"]["last_match"]}}
        # the other parts of the page answer meanwhile
        assert len(client.get(f"{base}/league").json()) == 8
        assert client.get(path).json()["pending"] is True  # still computing: still pending
    finally:
        gate.set()
        queries.CROSSPLAY_CACHE.wait(60)
    doc = client.get(path).json()
    assert "pending" not in doc and doc["stale"] is False and doc["updating"] is False
    assert doc["episodes"] == 28 and doc["pairs_total"] == 28 and len(doc["pairs"]["row"]) == 28


def test_a_small_runs_first_crossplay_is_answered_whole(tmp_path):
    folder = small_league(tmp_path / "run", ["a", "b", "c"])
    client, base = _client(folder)
    doc = client.get(f"{base}/crossplay?compact=1").json()
    assert "pending" not in doc and doc["stale"] is False and doc["pairs_total"] == 3


def test_the_export_waits_for_a_large_runs_crossplay(tmp_path, monkeypatch):
    folder = small_league(tmp_path / "run", [f"m{i}" for i in range(8)])
    monkeypatch.setattr(queries, "CROSSPLAY_INLINE_EPISODES", 10)
    answers = DashboardData([folder]).snapshot_all()
    docs = [v for k, v in answers.items() if "/crossplay" in k]
    assert len(docs) == 2 and all("pending" not in d and d["episodes"] == 28 for d in docs)


def test_rows_sends_only_the_newest_pairs_and_counts_them_all(tmp_path):
    folder = small_league(tmp_path / "run", [f"m{i:02d}" for i in range(16)])  # 120 pairs
    client, base = _client(folder)
    whole = client.get(f"{base}/crossplay?compact=1").json()
    part = client.get(f"{base}/crossplay?compact=1&rows=7").json()
    assert whole["pairs_total"] == part["pairs_total"] == 120
    assert {k: v[-7:] for k, v in whole["pairs"].items()} == part["pairs"]
    assert {k: v for k, v in whole.items() if k != "pairs"} == {
        k: v for k, v in part.items() if k != "pairs"}
    # the newest snapshots' pairs: the last rows name the highest ids
    assert max(part["pairs"]["col"]) == max(whole["ids"])
    plain = client.get(f"{base}/crossplay?rows=5").json()  # the plain form's rows, too
    assert plain["pairs"] == client.get(f"{base}/crossplay").json()["pairs"][-5:]
    assert len(client.get(f"{base}/crossplay?compact=1&rows=500").json()["pairs"]["row"]) == 120
    for bad in ("0", "-1", "abc", "1e3", "", "\u0661", "9" * 12):
        resp = client.get(f"{base}/crossplay", params={"rows": bad})
        assert resp.status_code == 400 and "rows=N" in resp.json()["error"], bad


def test_the_page_reads_the_rows_the_config_names(tmp_path):
    folder = small_league(tmp_path / "run", ["a", "b"])
    client, base = _client(folder)
    assert client.get("/api/config").json()["crossplay_rows"] == CROSSPLAY_ROWS
    assert crossplay_rows_path(base) == f"{base}/crossplay?compact=1&rows={CROSSPLAY_ROWS}"
    answers = DashboardData([folder]).snapshot_all()
    assert answers["api/config"]["crossplay_rows"] == CROSSPLAY_ROWS
    assert answers[crossplay_rows_path(base.lstrip("/"))] == client.get(
        crossplay_rows_path(base)).json()
