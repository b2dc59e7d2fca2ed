"""The dashboard on long leagues: α-Rank bounded to the newest snapshots, cross-play served
stale while a background thread recomputes it, ETag/304 answers, and compact payloads
(filled payoff cells, rating change points, cross-play without its k x k tables)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from starlette.testclient import TestClient

from populations import crossplay as cp
from populations.dashboard import create_app, queries
from populations.db import LeagueDB, MatchRow

SNAPSHOTS = 150
NEWEST = 6  # the newest snapshots all meet each other


def _matches(ids: list[int], tag: str) -> list[MatchRow]:
    """A chain of pairs (each snapshot meets the next) and a round robin of the newest."""
    pairs = list(zip(ids, ids[1:], strict=False))
    pairs += [(a, b) for i, a in enumerate(ids[-NEWEST:]) for b in ids[-NEWEST:][i + 1:]
              if b != a + 1]
    rows = []
    for a, b in pairs:
        for t in range(2):  # role-swapped: a wins one, the newer one wins the other
            win = 1.0 if (t == 0) == (a % 3 == 0) else -1.0
            rows.append(MatchRow(f"{tag}/{a}/{b}/{t}", "g", {"p0": a, "p1": b},
                                 {"p0": win, "p1": -win}))
    return rows


@pytest.fixture
def league(tmp_path) -> tuple[Path, int, list[int]]:
    """A league.db with 150 snapshots of one member, ratings per generation (old snapshots'
    ratings stop changing), a few payoffs and the matches of :func:`_matches`."""
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("long", game="g")
    mid = db.add_member(run, "main", "mappo", ["p0", "p1"])
    ids = [db.add_snapshot(mid, v, f"/x/{v}.pt", "mappo", "g", ["p0", "p1"])
           for v in range(SNAPSHOTS)]
    for step in range(20):  # snapshot k's rating changes until step k, then stays
        db.add_ratings(run, step, [(s, 1000.0 + min(step, k), 25.0, 8.0 - 0.1 * min(step, k), k)
                                   for k, s in enumerate(ids[:30])])
    db.set_payoffs(run, [(a, b, 0.5, 0.75, 2, False) for a, b in zip(ids, ids[1:], strict=False)]
                   + [(b, a, -0.5, 0.25, 2, False) for a, b in zip(ids, ids[1:], strict=False)])
    db.add_matches(run, _matches(ids, "a"))
    db.close()
    return tmp_path, run, ids


def _client(folder: Path) -> tuple[TestClient, str]:
    client = TestClient(create_app([folder]))
    return client, client.get("/api/runs").json()["runs"][0]["source"]


@pytest.fixture(autouse=True)
def empty_cache(monkeypatch):
    monkeypatch.setattr(queries, "_CACHE", {})


def test_alpharank_ranks_at_most_the_newest_k_snapshots(league):
    folder, run, ids = league
    client, s = _client(folder)
    doc = client.get(f"/api/runs/{s}/{run}/crossplay").json()
    assert doc["ids"] == ids  # every snapshot is in the cross-play table
    ar = doc["alpharank"]
    k = queries.ALPHARANK_MAX_SNAPSHOTS
    assert ar["considered"] == ids[-k:] and ar["older_left_out"] == SNAPSHOTS - k
    assert ar["max_snapshots"] == k and len(ar["ids"]) <= k
    assert set(ar["ids"]) == set(ids[-NEWEST:])  # those that all met each other
    # the same numbers as populations.crossplay's functions on those k snapshots
    db = LeagueDB(folder / "league.db", readonly=True)
    table = cp.crossplay(cp.episodes(db.matches(run)), seed=queries.CROSSPLAY_SEED)
    db.close()
    pos = [table.ids.index(x) for x in ids[-k:]]
    want = cp.alpha_rank([[table.table["margin"][i][j] for j in pos] for i in pos], ids[-k:])
    assert ar["ids"] == want["ids"] and ar["pi"] == pytest.approx(want["pi"])
    iv = cp.alpha_rank_interval(table, want, queries.ALPHARANK_RESAMPLES)
    assert ar["pi_lo"] == pytest.approx(iv["pi_lo"]) and ar["top"] == pytest.approx(iv["top"])
    # the ratings rows name the ranked ones; the older ones carry no α-Rank mass
    ranked = {r["snapshot_id"] for r in doc["ratings"] if r["alpharank_pi"] is not None}
    assert ranked == set(ar["ids"])


def test_a_recompute_runs_in_the_background_and_the_last_result_is_served_stale(
        league, monkeypatch):
    folder, run, ids = league
    monkeypatch.setattr(queries, "CROSSPLAY_INLINE_CPU_S", 0.0)  # every recompute: background
    monkeypatch.setattr(queries, "CROSSPLAY_IDLE_FACTOR", 0.0)
    gate = threading.Event()
    gate.set()
    calls: list[int] = []
    real = queries.compute_crossplay

    def gated(db, run_id):
        calls.append(run_id)
        assert gate.wait(60), "test gate never opened"
        return real(db, run_id)

    monkeypatch.setattr(queries, "compute_crossplay", gated)
    client, s = _client(folder)
    path = f"/api/runs/{s}/{run}/crossplay"
    first = client.get(path).json()
    assert first["stale"] is False and first["updating"] is False and len(calls) == 1
    gate.clear()
    writer = LeagueDB(folder / "league.db")
    writer.add_matches(run, _matches(ids[-3:], "b"))
    writer.close()
    try:
        for _ in range(3):  # while it recomputes: the last result, said to be stale
            doc = client.get(path).json()
            assert doc["stale"] is True and doc["updating"] is True
            assert doc["episodes"] == first["episodes"] and doc["as_of"] == first["as_of"]
        assert len(calls) == 2  # one recompute at a time
    finally:
        gate.set()
        queries.CROSSPLAY_CACHE.wait(60)
    doc = client.get(path).json()
    assert doc["stale"] is False and doc["updating"] is False
    assert doc["episodes"] == first["episodes"] + 6 and len(calls) == 2
    assert doc["as_of"]["matches"] == first["as_of"]["matches"] + 6


def test_the_export_never_embeds_a_stale_crossplay(league, monkeypatch):
    folder, run, ids = league
    monkeypatch.setattr(queries, "CROSSPLAY_INLINE_CPU_S", 0.0)
    client, s = _client(folder)
    client.get(f"/api/runs/{s}/{run}/crossplay")
    writer = LeagueDB(folder / "league.db")
    writer.add_matches(run, _matches(ids[-3:], "b"))
    writer.close()
    db = LeagueDB(folder / "league.db", readonly=True)
    try:
        doc = queries.crossplay(db, run, fresh=True)
    finally:
        db.close()
        queries.CROSSPLAY_CACHE.wait(60)
    assert doc["stale"] is False and doc["as_of"]["matches"] == len(_matches(ids, "a")) + 6


@pytest.mark.parametrize("view", ["payoffs?compact=1", "ratings?compact=1", "crossplay",
                                  "league", ""])
def test_an_unchanged_answer_is_304_with_its_etag(league, view):
    folder, run, _ = league
    client, s = _client(folder)
    path = f"/api/runs/{s}/{run}/{view}".replace("/?", "?").rstrip("/")
    first = client.get(path)
    etag = first.headers["etag"]
    assert first.status_code == 200 and first.headers["cache-control"] == "no-cache"
    again = client.get(path, headers={"if-none-match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    writer = LeagueDB(folder / "league.db")
    writer.add_ratings(run, 99, [(1, 1500.0, 30.0, 2.0, 9)])
    writer.add_member(run, "late", "vdn", ["p0"])
    writer.close()
    changed = client.get(path, headers={"if-none-match": etag})
    if view in ("ratings?compact=1", "crossplay", "league"):  # what the write touched
        assert changed.status_code == 200 and changed.headers["etag"] != etag


def test_compact_forms_carry_the_same_data(league):
    folder, run, _ = league
    client, s = _client(folder)
    base = f"/api/runs/{s}/{run}"
    dense = client.get(f"{base}/payoffs").json()
    small = client.get(f"{base}/payoffs?compact=1").json()
    assert "value" not in small
    k = len(dense["ids"])
    grid = {name: [[fill] * k for _ in range(k)]
            for name, fill in (("value", None), ("win_rate", None), ("count", 0))}
    c = small["cells"]
    for t, (i, j) in enumerate(zip(c["i"], c["j"], strict=True)):
        for name in grid:
            grid[name][i][j] = c[name][t]
    for name in grid:
        assert grid[name] == dense[name], name
    # ratings: the same lines through fewer points
    full = client.get(f"{base}/ratings").json()
    few = client.get(f"{base}/ratings?compact=1").json()
    assert [x["snapshot_id"] for x in few] == [x["snapshot_id"] for x in full]
    for a, b in zip(full, few, strict=True):
        assert b["step"][0] == a["step"][0] and b["step"][-1] == a["step"][-1]
        for name in queries.RATING_FIELDS:
            assert np.interp(a["step"], b["step"], b[name]) == pytest.approx(a[name]), name
    assert len(few[0]["step"]) == 2 < len(full[0]["step"]) == 20  # a rating that never moved
    assert sum(len(x["step"]) for x in few) < sum(len(x["step"]) for x in full)
    # cross-play: the pairs without the k x k tables that repeat them
    plain = client.get(f"{base}/crossplay").json()
    compact = client.get(f"{base}/crossplay?compact=1").json()
    assert "n" not in compact and "margin" not in compact and "margin" in plain
    labels = dict(zip(compact["ids"], compact["labels"], strict=True))
    cols = compact["pairs"]
    rows = [{**{k: cols[k][t] for k in cols}, "row_label": labels[cols["row"][t]],
             "col_label": labels[cols["col"][t]]} for t in range(len(cols["row"]))]
    assert rows == plain["pairs"] and compact["ratings"] == plain["ratings"]


def test_inf_alpha_chain_matches_openspiel():
    ar = cp.import_alpharank()
    rng = np.random.default_rng(1)
    for k in (2, 3, 5, 12, 30):
        for _ in range(4):
            a = np.triu(rng.integers(-2, 3, size=(k, k)).astype(float), 1)
            a = a - a.T  # antisymmetric, with ties
            want = np.asarray(ar.compute([a], m=50, use_inf_alpha=True)[2])
            assert np.array_equal(cp.inf_alpha_pi(a), want)


def test_batched_pair_statistics_equal_the_pair_by_pair_ones():
    rng = np.random.default_rng(2)
    margins = {(1, 2): rng.normal(size=2), (1, 3): rng.normal(size=5),
               (2, 3): rng.normal(size=2), (3, 4): np.ones(2), (4, 9): rng.normal(size=40)}
    got = cp.pairs_stats(margins, 0, cp.RESAMPLES, cp.CONFIDENCE, cp.TOL)
    for ab, m in margins.items():
        want = cp.pair_stats(m, cp.pair_rng(0, *ab))
        assert want.keys() == got[ab].keys()
        for key, value in want.items():
            assert np.array_equal(np.asarray(value), np.asarray(got[ab][key])), (ab, key)


def test_recomputes_wait_while_the_dashboard_would_keep_a_core_busy(league, monkeypatch):
    """A background recompute starts no sooner than CROSSPLAY_IDLE_FACTOR times the last
    one's CPU time after it ended: until then the last result is served, stale, with no
    recompute running."""
    folder, run, ids = league
    monkeypatch.setattr(queries, "CROSSPLAY_INLINE_CPU_S", 0.0)
    monkeypatch.setattr(queries, "CROSSPLAY_IDLE_FACTOR", 1e12)  # never idle long enough
    client, s = _client(folder)
    path = f"/api/runs/{s}/{run}/crossplay"
    first = client.get(path).json()
    writer = LeagueDB(folder / "league.db")
    writer.add_matches(run, _matches(ids[-3:], "b"))
    writer.close()
    doc = client.get(path).json()
    assert doc["stale"] is True and doc["updating"] is False
    assert doc["episodes"] == first["episodes"]
    monkeypatch.setattr(queries, "CROSSPLAY_IDLE_FACTOR", 0.0)
    assert client.get(path).json()["updating"] is True
    queries.CROSSPLAY_CACHE.wait(60)
    assert client.get(path).json()["episodes"] == first["episodes"] + 6
