"""A league resumed after its ``settings.json`` was deleted is checked against what its
``league.db`` recorded (session 22).

A folder with a ``league.db`` and no ``settings.json`` was taken for a run from before
settings were recorded: the resume compared nothing and recorded the settings it was given.
Before: ``vdn.lr=0.5`` (a member's setting, recorded in ``members.settings`` since schema 5)
resumed silently; ``mappo.lr=0.5`` was refused by the league's own recorded settings, but
only after ``settings.json`` had been written with the refused value, so the next resume with
the run's own settings was refused in turn (``mappo.lr=0.5 (run) vs 0.001 (now)``)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.populations.test_walk18_cli_more import _train

LEAGUE = ["game=kuhn", "population=pfsp", "population.members=[mappo,vdn]",
          "population.frames_per_generation=64", "num_envs=2", "eval_episodes=2",
          "progress=false"]  # fmt: skip


def _refused(argv, run, monkeypatch, tmp_path, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        _train([*LEAGUE, *argv, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    return err[-1]


def _member_settings(run, name: str) -> dict:
    with sqlite3.connect(run / "league.db") as db:
        (text,) = db.execute("SELECT settings FROM members WHERE name = ?", (name,)).fetchone()
    return json.loads(text)


def test_a_league_without_its_settings_file_is_checked_against_its_database(
        tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    _train([*LEAGUE, "population.generations=1", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    (run / "settings.json").unlink()

    line = _refused(["population.generations=2", "resume=true", "vdn.lr=0.5"], run,
                    monkeypatch, tmp_path, capsys)
    assert line == (
        f"selfplay-train: cannot resume league {run} with other settings (members.vdn.lr="
        "0.0005 (run) vs 0.5 (now)); resume with the run's own settings, or set "
        "resume_override=true to continue with the new ones"), line
    assert not (run / "settings.json").exists()  # the refused settings are not recorded
    assert _member_settings(run, "vdn")["lr"] == 0.0005

    line = _refused(["population.generations=2", "resume=true", "mappo.lr=0.5"], run,
                    monkeypatch, tmp_path, capsys)
    assert "mappo.lr=0.001 (run) vs 0.5 (now)" in line, line
    assert not (run / "settings.json").exists()

    # its own settings resume, and are recorded again
    _train([*LEAGUE, "population.generations=2", "resume=true", f"hydra.run.dir={run}"],
           monkeypatch, tmp_path)
    saved = json.loads((run / "settings.json").read_text())
    assert (saved["mappo"]["lr"], saved["vdn"]["lr"]) == (0.001, 0.0005)


def test_resume_override_goes_on_with_the_new_member_settings(tmp_path, monkeypatch):
    run = tmp_path / "run"
    _train([*LEAGUE, "population.generations=1", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    (run / "settings.json").unlink()
    _train([*LEAGUE, "population.generations=2", "resume=true", "vdn.lr=0.5",
            "resume_override=true", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert _member_settings(run, "vdn")["lr"] == 0.5
    assert json.loads((run / "settings.json").read_text())["vdn"]["lr"] == 0.5
