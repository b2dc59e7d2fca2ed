"""The two callers of resume36's checks outside its files: ``selfplay-eval`` checks a run
folder's snapshot against the SHA-256 its ``.json`` recorded (it played an overwritten one
silently), and a refused ``resume_override`` resume of a run whose ``settings.json`` was
deleted (its settings restored from ``league.db``) leaves the run's recorded settings too."""

from __future__ import annotations

import json

from tests.populations.test_db_store import garble
from tests.populations.test_resume36_refusals import (
    SINGLE,
    _eval,
    _interrupted_run,
    _refused,
    _sql,
)
from tests.populations.user_modules import train_here


def test_selfplay_eval_refuses_an_overwritten_snapshot_in_one_line(tmp_path, capsys):
    import games
    from marl import registry
    from populations.db import LeagueDB
    from populations.store import PolicyStore

    spec = games.make("openspiel/kuhn_poker").spec
    db = LeagueDB(tmp_path / "league.db")
    try:
        store = PolicyStore(tmp_path / "snapshots", db, db.create_run("r"))
        for seed in (0, 1):
            store.publish("main", registry.get("mappo").build(spec, seed=seed).policy())
    finally:
        db.close()
    a, b = (tmp_path / "snapshots" / "main" / f"v000{v}.pt" for v in (0, 1))
    garble(b)
    code, _, err = _eval(["--db", str(tmp_path / "e.db"), str(a), str(b)], capsys)
    assert code == 2, err
    assert err.startswith(f"selfplay-eval: snapshot file {b} is damaged or was replaced: "), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "e.db").exists()


def test_a_refused_override_without_settings_json_keeps_the_recorded_settings(
        tmp_path, monkeypatch, capsys):
    run = _interrupted_run(tmp_path, monkeypatch)
    recorded = json.loads((run / "settings.json").read_text())
    (run / "settings.json").unlink()
    config = _sql(run, "SELECT config FROM runs")
    line = _refused([*SINGLE, "algo=ippo", "resume=true", "resume_override=true"], run,
                    monkeypatch, tmp_path, capsys)
    assert "does not fit this ippo learner" in line, line
    assert json.loads((run / "settings.json").read_text()) == recorded  # it said algo: ippo
    assert _sql(run, "SELECT config FROM runs") == config
    train_here([*SINGLE, "resume=true", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert _sql(run, "SELECT status FROM runs") == [("finished",)]
