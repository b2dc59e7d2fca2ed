"""A PSRO resume that changes ``population.iterations`` says so in one line, as a league's
resume that changes its generation count does (5f64107): a run started with 2 iterations
and resumed with 3 went on to 3 without a word (the count is a setting a resume may change,
so the resume's settings check says nothing of it)."""

from __future__ import annotations

import sqlite3

from tests.populations.user_modules import train_here

ARGS = ["game=kuhn", "population=psro", "population.oracle=exact",
        "population.psro.payoffs=exact", "eval_episodes=2", "progress=false", "logger=none"]


def _iterations(run) -> int:
    conn = sqlite3.connect(run / "league.db")
    try:
        return conn.execute("SELECT COUNT(*) FROM psro_iterations").fetchone()[0]
    finally:
        conn.close()


def _said(capfd) -> list[str]:
    """The ``iterations:`` lines the command logged (Hydra's handler writes to the terminal)."""
    out, err = capfd.readouterr()
    lines = [line.split(" - ", 1)[-1] for line in (out + err).splitlines()]
    return [m for m in lines if m.startswith("iterations:")]


def test_a_psro_resume_that_changes_iterations_says_so(monkeypatch, tmp_path, capfd):
    run = tmp_path / "run"
    train_here([*ARGS, "population.iterations=2", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert _iterations(run) == 2
    assert _said(capfd) == []
    # the same count: nothing to say
    train_here([*ARGS, "population.iterations=2", "resume=true", f"hydra.run.dir={run}"],
               monkeypatch, tmp_path)
    assert _said(capfd) == []
    train_here([*ARGS, "population.iterations=3", "resume=true", f"hydra.run.dir={run}"],
               monkeypatch, tmp_path)
    assert _iterations(run) == 3
    assert _said(capfd) == ["iterations: the run recorded 2; this resume goes on to 3"]
