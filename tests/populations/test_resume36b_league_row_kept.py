"""A league resume refused at its checkpoint or snapshots leaves the run's row as the run left
it: a finished league resumed with more generations while a snapshot is damaged stays
``finished`` with its recorded settings (walk36b: the row became ``failed`` and ``runs.config``
took the refused resume's generations, since League._open marked the run running and wrote
the settings before _restore checked the snapshots)."""

from __future__ import annotations

import sqlite3

import pytest

from populations.league import League
from populations.store import StoreError
from tests.populations.test_db_store import garble
from tests.populations.test_league import _kuhn


def _row(run):
    with sqlite3.connect(run / "league.db") as con:
        status, config = con.execute(
            "SELECT status, config FROM runs WHERE name = 'league'").fetchone()
    return status, config


def test_a_refused_resume_keeps_the_runs_status_and_settings(tmp_path):
    league = League(_kuhn(generations=1), tmp_path)
    league.run()
    league.close()
    before = _row(tmp_path)
    assert before[0] == "finished"
    garble(tmp_path / "snapshots" / "main" / "v0000.pt")
    with pytest.raises(StoreError):
        League(_kuhn(generations=2), tmp_path, resume=True)
    assert _row(tmp_path) == before


def test_an_accepted_resume_marks_the_run_running_and_records_its_settings(tmp_path):
    league = League(_kuhn(generations=1), tmp_path)
    league.run()
    league.close()
    status, config = _row(tmp_path)
    more = League(_kuhn(generations=2), tmp_path, resume=True)
    try:
        now_status, now_config = _row(tmp_path)
        assert now_status == "running"
        assert now_config != config and '"generations": 2' in now_config
    finally:
        more.close()
