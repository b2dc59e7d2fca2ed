"""Ratings as steps: a league writes a snapshot's rating only at the steps where it changes
(2c7f023), and the rating holds until the next one. ``api/.../ratings`` (plain and compact)
carries the run's last rating step (``run_last_step``) beside each series' own rows, so the
page can hold each line to it; the league table and cross-play show each snapshot's newest
row, wherever it is. (The page drawing the held steps: ``test_dashboard_browser``.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from populations.dashboard import create_app, queries
from populations.db import LeagueDB, MatchRow

LAST_STEP = 6
# snapshot label → its rating rows (step, elo, mu, sigma, pairs): "main v0" last changes at
# step 3, "other v0" has one row, at step 2; only "main v2" is rated at the run's last step
ROWS = {
    "main v0": [(0, 1000.0, 25.0, 8.0, 0), (1, 1010.0, 26.0, 7.0, 2), (3, 1020.0, 27.0, 6.0, 4)],
    "main v1": [(1, 990.0, 24.0, 7.5, 2), (4, 995.0, 24.5, 7.0, 4), (6, 998.0, 24.8, 6.5, 6)],
    "main v2": [(4, 1005.0, 25.5, 7.9, 2), (6, 1001.0, 25.1, 7.1, 4)],
    "other v0": [(2, 1050.0, 28.0, 5.0, 3)],
}


def step_league(folder: Path) -> Path:
    """``folder/league.db``: a run of :data:`ROWS` (written as a league since 2c7f023 writes
    them: a row where a rating changed) and role-swapped episodes between "main v0" and
    "other v0"."""
    db = LeagueDB(folder / "league.db")
    run = db.create_run("steps", game="g")
    main = db.add_member(run, "main", "mappo", ["p0", "p1"])
    other = db.add_member(run, "other", "mappo", ["p0", "p1"])
    ids = {f"main v{v}": db.add_snapshot(main, v, f"/x/{v}.pt", "mappo", "g", ["p0", "p1"])
           for v in range(3)}
    ids["other v0"] = db.add_snapshot(other, 0, "/x/o.pt", "mappo", "g", ["p0", "p1"])
    by_step: dict[int, list[tuple[int, float, float, float, int]]] = {}
    for label, rows in ROWS.items():
        for step, *values in rows:
            by_step.setdefault(step, []).append((ids[label], *values))
    for step in sorted(by_step):
        db.add_ratings(run, step, by_step[step])
    a, b = ids["main v0"], ids["other v0"]
    db.add_matches(run, [MatchRow(f"m/{t}", "g", {"p0": a, "p1": b} if t % 2 else
                                  {"p0": b, "p1": a}, {"p0": 1.0, "p1": -1.0})
                         for t in range(4)])
    db.close()
    return folder / "league.db"


@pytest.fixture
def client(tmp_path) -> tuple[TestClient, str]:
    step_league(tmp_path)
    queries.CROSSPLAY_CACHE.clear()
    c = TestClient(create_app([tmp_path]))
    (r,) = c.get("/api/runs").json()["runs"]
    return c, f"/api/runs/{r['source']}/{r['id']}"


@pytest.mark.parametrize("form", ["", "?compact=1"])
def test_each_series_holds_to_the_runs_last_rating_step(client, form):
    """Every series says where the run's ratings end, and has only the rows it has: the
    page draws "main v0" flat from step 3 to step 6, not stopping at 3."""
    c, base = client
    series = {s["label"]: s for s in c.get(f"{base}/ratings{form}").json()}
    assert set(series) == set(ROWS)
    for label, rows in ROWS.items():
        s = series[label]
        assert s["run_last_step"] == LAST_STEP, label
        got = list(zip(s["step"], s["elo"], s["mu"], s["sigma"], s["pairs"], strict=True))
        assert got == [tuple(r) for r in rows], label  # no row made up for the held steps


def test_an_empty_run_has_no_series(tmp_path):
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("empty", game="g")
    assert queries.rating_history(db, run) == queries.rating_history(db, run, True) == []
    db.close()


def test_the_tables_show_each_snapshots_newest_row(client):
    """The league table and cross-play's ratings take each snapshot's newest row, also where
    it is older than the run's last rating step ("other v0" at step 2, "main v0" at 3)."""
    c, base = client
    league = {r["member"]: r for r in c.get(f"{base}/league").json()}
    newest = {label: rows[-1] for label, rows in ROWS.items()}
    assert (league["other"]["elo"], league["other"]["mu"], league["other"]["sigma"],
            league["other"]["rated_pairs"]) == newest["other v0"][1:]
    assert league["main"]["rated_version"] == 2
    assert league["main"]["elo"] == newest["main v2"][1]
    for form in ("", "?compact=1"):
        rated = {r["label"]: r for r in c.get(f"{base}/crossplay{form}").json()["ratings"]}
        assert set(rated) == {"main v0", "other v0"}  # the two that played
        for label, r in rated.items():
            assert (r["elo"], r["mu"], r["sigma"]) == newest[label][1:4], (label, form)
