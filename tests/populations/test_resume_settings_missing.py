"""A single or PSRO run resumed after its ``settings.json`` was deleted is checked against the
settings its ``league.db`` recorded (``runs.config``), as a league is against its members'
(``test_walk22_resume_without_settings``).

Before: a single or PSRO folder with a ``league.db`` and no ``settings.json`` was taken for a
run from before settings were recorded: ``mappo.lr=0.5`` (single) or
``population.oracle_frames`` (PSRO) resumed silently, and ``runs.config`` kept the settings
the run was created with after a ``resume_override`` changed them, so nothing reliable was
left to compare with."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.populations.test_walk18_cli_more import _train

SINGLE = ["game=kuhn", "frames=32", "num_envs=4", "mappo.rollout_steps=4", "eval_episodes=2",
          "progress=false", "checkpoint_every_s=0", "logger=none"]
PSRO = ["experiment=kuhn_psro", "eval_episodes=2", "progress=false", "logger=none"]


def _refused(argv, run, monkeypatch, tmp_path, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        _train([*argv, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert "Traceback" not in "\n".join(err)
    return err[-1]


def _run_config(run, name) -> dict:
    with sqlite3.connect(run / "league.db") as db:
        (text,) = db.execute("SELECT config FROM runs WHERE name = ?", (name,)).fetchone()
    return json.loads(text)


def _interrupted(run) -> None:
    """Mark the run interrupted, as a Ctrl-C before its last update would have left it (a
    finished single run refuses any other settings, resume_override or not)."""
    with sqlite3.connect(run / "league.db") as db:
        db.execute("UPDATE runs SET status = 'interrupted'")


def test_a_single_run_without_its_settings_file_is_checked_against_its_database(
        tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    _train([*SINGLE, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    (run / "settings.json").unlink()

    line = _refused([*SINGLE, "resume=true", "mappo.lr=0.5"], run, monkeypatch, tmp_path,
                    capsys)
    assert line == (
        f"selfplay-train: run {run} has finished and cannot continue with other settings "
        "(mappo.lr=0.001 (run) vs 0.5 (now)); resume it with its own settings, or start a "
        "new folder"), line
    _interrupted(run)
    (run / "settings.json").unlink(missing_ok=True)
    line = _refused([*SINGLE, "resume=true", "mappo.lr=0.5"], run, monkeypatch, tmp_path,
                    capsys)
    assert line == (
        f"selfplay-train: cannot resume {run} with other settings (mappo.lr=0.001 (run) vs "
        "0.5 (now)); resume with the run's own settings, or set resume_override=true to "
        "continue with the new ones"), line
    # the folder records the run's own settings again, not the refused ones
    assert json.loads((run / "settings.json").read_text())["mappo"]["lr"] == 0.001

    (run / "settings.json").unlink()
    _train([*SINGLE, "resume=true", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert json.loads((run / "settings.json").read_text())["mappo"]["lr"] == 0.001


def test_an_overridden_single_run_records_the_settings_in_force(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    _train([*SINGLE, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    _interrupted(run)
    _train([*SINGLE, "resume=true", "mappo.lr=0.5", "resume_override=true",
            f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert _run_config(run, "default")["mappo"]["lr"] == 0.5  # it kept 0.001
    _interrupted(run)
    (run / "settings.json").unlink()

    # the settings in force resume; the ones it was started with are a change
    line = _refused([*SINGLE, "resume=true"], run, monkeypatch, tmp_path, capsys)
    assert "(mappo.lr=0.5 (run) vs 0.001 (now))" in line, line
    (run / "settings.json").unlink()
    _train([*SINGLE, "resume=true", "mappo.lr=0.5", f"hydra.run.dir={run}"], monkeypatch,
           tmp_path)


def test_a_psro_run_without_its_settings_file_is_checked_against_its_database(
        tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    _train([*PSRO, "population.iterations=1", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    (run / "settings.json").unlink()
    recorded = _run_config(run, "kuhn_psro")["population"]["oracle_frames"]

    line = _refused([*PSRO, "population.iterations=2", "resume=true",
                     f"population.oracle_frames={recorded + 1}"], run, monkeypatch, tmp_path,
                    capsys)
    assert f"population.oracle_frames={recorded} (run) vs {recorded + 1} (now)" in line, line

    (run / "settings.json").unlink()
    _train([*PSRO, "population.iterations=2", "resume=true", f"hydra.run.dir={run}"],
           monkeypatch, tmp_path)
    with sqlite3.connect(run / "league.db") as db:
        assert db.execute("SELECT COUNT(*) FROM psro_iterations").fetchone()[0] == 2
