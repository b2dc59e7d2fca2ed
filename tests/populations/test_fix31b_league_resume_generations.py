"""``python -m populations.league --resume`` goes on to the run's own generation count
unless ``--generations`` is given (walk31 M3: a run started with ``--generations 3`` and
resumed with its other settings repeated trained the default 6, while the resume refused
every other changed setting); a resume that changes the count says so in one line."""

from __future__ import annotations

import logging

from populations.db import LeagueDB

SMALL = ["--game", "openspiel/kuhn_poker", "--frames-per-generation", "64", "--num-envs", "4",
         "--eval-episodes", "2", "--no-progress"]


def _generations(run) -> int:
    db = LeagueDB(run / "league.db", readonly=True)
    try:
        return max(s.version for s in db.snapshots(db.run_id("league")))
    finally:
        db.close()


def test_a_resume_without_generations_keeps_the_runs_count(tmp_path, caplog):
    from populations.league_cli import main

    run = tmp_path / "league"
    main(["--run-dir", str(run), "--generations", "1", *SMALL])
    assert _generations(run) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO):
        main(["--run-dir", str(run), "--resume", *SMALL])
    assert _generations(run) == 1  # the default 6 trained five more before
    assert not [r for r in caplog.records if r.getMessage().startswith("generations:")]
    caplog.clear()
    with caplog.at_level(logging.INFO):
        main(["--run-dir", str(run), "--resume", "--generations", "2", *SMALL])
    assert _generations(run) == 2
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("generations:")]
    assert said == ["generations: the run recorded 1; this resume goes on to 2"], said
