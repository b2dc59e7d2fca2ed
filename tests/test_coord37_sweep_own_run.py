"""A sweep job's table reads the job's own run from its league.db, not a run that
``selfplay-eval --db <job>/league.db`` added after it (walk 37c found the closing summary read
the newest run; the sweep table had the same query)."""
from __future__ import annotations

from pathlib import Path

from populations import sweep_summary
from populations.db import EVAL_EXPERIMENT, LeagueDB


def test_a_jobs_settings_and_status_come_from_its_own_run(tmp_path: Path) -> None:
    db = LeagueDB(tmp_path / "league.db")
    own = db.create_run("single", experiment="default", game="openspiel/kuhn_poker",
                        config={"frames": 1600, "algo": "mappo"})
    db.set_run_status(own, "finished")
    db.create_run("eval", experiment=EVAL_EXPERIMENT, game="openspiel/kuhn_poker",
                  config={"policies": {"a": "a.pt"}})  # stays 'running'
    settings = sweep_summary._settings(tmp_path, db)  # no settings.json: the database's
    assert settings == {"frames": 1600, "algo": "mappo"}
    job = sweep_summary.JobResult(tmp_path, 0, {}, "unreadable")
    sweep_summary._read(job, db, settings)
    assert job.status == "finished", job
    db.close()
