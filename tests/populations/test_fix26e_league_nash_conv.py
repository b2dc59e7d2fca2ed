"""A league with ``nash_conv=True`` (experiment=mixed_league) logged ``nash_conv/<member>`` to
its metrics but recorded nothing in league.db's ``exploitability`` table: the dashboard's
``/api/runs/S/R/exploitability`` returned [] and the league table's nash_conv was null for
every member. Each new snapshot's exact NashConv is recorded there now (method ``exact``),
the value the metric holds, once per snapshot also after a crash and resume."""

from __future__ import annotations

import sqlite3

import pytest

from populations.dashboard import queries
from populations.db import LeagueDB
from populations.league import League
from tests.populations.test_league import _Crash, _crash_before_done, _kuhn


def _metrics(run_dir):
    db = sqlite3.connect(run_dir / "league.db")
    rows = db.execute("SELECT step, key, value FROM metrics WHERE key LIKE 'nash_conv/%' "
                      "ORDER BY step").fetchall()
    db.close()
    return rows


def test_the_league_records_each_snapshots_exact_nash_conv_once(tmp_path, monkeypatch):
    cfg = _kuhn(generations=2, nash_conv=True)
    _crash_before_done(monkeypatch, 2)  # generation 2's NashConv recorded, not "done"
    league = League(cfg, tmp_path)
    with pytest.raises(_Crash):
        league.run()
    league.close()
    monkeypatch.undo()
    resumed = League(cfg, tmp_path, resume=True)
    resumed.run()  # computes generation 2's NashConv again
    run_id = resumed.run_id
    resumed.close()
    db = LeagueDB(tmp_path / "league.db")
    try:
        rows = queries.exploitability(db, run_id)
        table = queries.league_table(db, run_id)
    finally:
        db.close()
    assert [(r["snapshot"], r["method"]) for r in rows] == [
        ("main v0", "exact"), ("main v1", "exact"), ("main v2", "exact")]
    logged = [v for _, _, v in _metrics(tmp_path)]
    assert len(logged) == 3
    assert [r["value"] for r in rows] == pytest.approx(logged)
    (main,) = table
    assert main["nash_conv"] == pytest.approx(logged[-1])
    assert (main["nash_conv_method"], main["nash_conv_version"]) == ("exact", 2)
