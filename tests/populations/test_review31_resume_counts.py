"""A league resume that changes a setting a resume may change (its generation count) records
it, so the next plain resume goes on to it (review31: after ``--resume --generations 2`` the
database still said 1, and a plain ``--resume`` of that run, interrupted in generation 2,
would have stopped at 1 without a word)."""

from __future__ import annotations

import logging

from populations.db import LeagueDB

SMALL = ["--game", "openspiel/kuhn_poker", "--frames-per-generation", "64", "--num-envs", "4",
         "--eval-episodes", "2", "--no-progress"]


def _recorded(run, experiment="league"):
    db = LeagueDB(run / "league.db", readonly=True)
    try:
        return db.run_config(db.run_id(experiment))
    finally:
        db.close()


def test_a_raised_generation_count_is_the_one_a_plain_resume_goes_on_to(tmp_path, caplog):
    from populations.league_cli import main

    run = tmp_path / "league"
    main(["--run-dir", str(run), "--generations", "1", *SMALL])
    main(["--run-dir", str(run), "--resume", "--generations", "2", *SMALL])
    assert _recorded(run)["generations"] == 2
    caplog.clear()
    with caplog.at_level(logging.INFO):
        main(["--run-dir", str(run), "--resume", *SMALL])
    said = [r.getMessage() for r in caplog.records]
    assert not [m for m in said if m.startswith("generations:")], said
    assert any("generation 2/2" in m or "(generation 2, done)" in m for m in said), said
    assert not any("/1 " in m or m.endswith("/1") for m in said), said


def test_a_recorded_count_out_of_range_is_not_blamed_on_the_flag(tmp_path):
    """An edited or damaged league.db whose generations is -1 was read as the resume's count
    and refused as ``--generations -1``, a flag the user never typed: such a value is not
    taken (the default count goes on, as for a run that recorded none)."""
    import json
    import sqlite3

    from populations.league_cli import _recorded_generations, main

    run = tmp_path / "league"
    main(["--run-dir", str(run), "--generations", "1", *SMALL])
    assert _recorded_generations(run) == 1
    for bad in (-1, 0, 10**20, True, "3", 2.0):
        conn = sqlite3.connect(run / "league.db")
        config = json.loads(conn.execute("SELECT config FROM runs").fetchone()[0])
        with conn:
            conn.execute("UPDATE runs SET config = ?",
                         (json.dumps({**config, "generations": bad}),))
        conn.close()
        assert _recorded_generations(run) is None, bad
