"""Walk 20: a single run's greedy evaluation was recorded (``eval/e*`` matches) and never
shown. The closing table's ``final_return`` is the mean of the last 50 exploring training
episodes (VDN on Kuhn, 6000 frames: 0.14, while the snapshot's 32 greedy episodes averaged
0.656). Now the table has ``eval_return`` beside it (the learner team's mean return over the
evaluation episodes, a seat mean as ``final_return`` counts it), the log says what each is,
``charts/eval_return`` is a metric at the final step, and a finished run's resume shows it."""

from __future__ import annotations

import csv
import json
import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import populations.single_run as single_run
from populations.experiment import run_experiment
from tests.populations.test_db_store import garble
from tests.populations.test_single_resume import TINY, TINY_LLM, _exp
from tests.populations.test_walk18_cli_more import _train

VDN = ["algo=vdn", "game=kuhn", "frames=300", "num_envs=4", "vdn.learning_starts=64",
       "eval_episodes=8", "progress=false", "logger=csv", "checkpoint_every_s=0"]


def _eval_mean(run: Path) -> float:
    """The learner seats' mean return over the run's evaluation matches, from league.db."""
    db = sqlite3.connect(run / "league.db")
    try:
        rows = db.execute("SELECT seats, returns FROM matches WHERE key LIKE 'eval/e%'")
        per_episode = [np.mean([json.loads(r)[a] for a in json.loads(s)]) for s, r in rows]
    finally:
        db.close()
    assert per_episode
    return round(float(np.mean(per_episode)), 3)


def _table(out: str) -> dict[str, str]:
    """The closing table's one row, by column."""
    lines = out.splitlines()
    (i,) = [k for k, line in enumerate(lines) if line.split()[:1] == ["member"]]
    return dict(zip(lines[i].split(), lines[i + 1].split(), strict=True))


def _metric(run: Path, key: str) -> list[tuple[int, float]]:
    db = sqlite3.connect(run / "league.db")
    try:
        return db.execute("SELECT step, value FROM metrics WHERE key = ?", (key,)).fetchall()
    finally:
        db.close()


def test_the_closing_table_shows_the_evaluation_beside_the_training_return(
        tmp_path, monkeypatch, capsys):
    run = tmp_path / "vdn"
    _train([*VDN, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    captured = capsys.readouterr()
    out, logged = captured.out, captured.out + captured.err  # Hydra's log handler
    row = _table(out)
    assert list(row) == ["member", "version", "frames", "seconds", "final_return",
                         "eval_return", "eval_ci95"]
    assert float(row["eval_return"]) == _eval_mean(run)
    # the log says what each figure is
    assert f"evaluation: mean return {_eval_mean(run):.3f} over 8 greedy episodes of the " \
        "snapshot against random seats (the table's eval_return)" in logged, logged
    assert f"training: mean return {float(row['final_return']):.3f} over the last " in logged
    assert "training episodes (exploring; the table's final_return)" in logged
    assert "eval_return: mean return over the evaluation episodes" in out
    # a metric at the final frame, in league.db and metrics.csv alike
    frames = int(row["frames"])
    (got,) = _metric(run, "charts/eval_return")
    assert got[0] == frames and round(got[1], 3) == _eval_mean(run)
    with open(run / "metrics.csv", newline="") as fh:
        csv_rows = [(int(r["step"]), float(r["value"])) for r in csv.DictReader(fh)
                    if r["key"] == "charts/eval_return"]
    assert csv_rows == [got]
    # a finished run's resume prints the same row (read back, not replayed)
    played = []
    monkeypatch.setattr(single_run, "evaluate_single", played.append)
    _train([*VDN, "resume=true", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    again = _table(capsys.readouterr().out)
    assert played == [] and again == row


def test_a_mappo_run_evaluates_by_sampling_and_says_so(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        table = run_experiment(_exp(*TINY), tmp_path).table
    assert table[0]["eval_return"] == _eval_mean(tmp_path)
    assert any(m.startswith("evaluation: mean return") and "2 sampled episodes" in m
               for m in caplog.messages), caplog.messages


@pytest.mark.parametrize("after", [False, True])
def test_a_run_killed_around_its_evaluation_resumes_to_the_same_eval_return(
        tmp_path, monkeypatch, after):
    """Killed before the evaluation (a resume evaluates) or after its matches were recorded
    but before the run was marked finished (a resume evaluates again: the same matches)."""
    ref = run_experiment(_exp(*VDN), tmp_path / "ref").table
    real = single_run.evaluate_single

    def killed(*args, **kw):
        if after:
            real(*args, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(single_run, "evaluate_single", killed)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(_exp(*VDN), tmp_path / "run")
    monkeypatch.setattr(single_run, "evaluate_single", real)
    resumed = run_experiment(_exp(*VDN, "resume=true"), tmp_path / "run").table
    assert resumed[0]["eval_return"] == ref[0]["eval_return"] == _eval_mean(tmp_path / "ref")
    assert _metric(tmp_path / "run", "charts/eval_return") == \
        _metric(tmp_path / "ref", "charts/eval_return")


def test_a_damaged_last_checkpoint_still_shows_the_recorded_evaluation(tmp_path):
    run_experiment(_exp(*TINY), tmp_path)
    garble(sorted((tmp_path / "checkpoints").glob("ckpt_*.pt"))[-1])
    table = run_experiment(_exp(*TINY, "resume=true"), tmp_path).table
    assert table == [{"member": "mappo", "version": 0, "frames": 64,
                      "eval_return": _eval_mean(tmp_path), "eval_ci95": table[0]["eval_ci95"]}]
    assert isinstance(table[0]["eval_ci95"], float)  # read back from the matches too


def test_an_llm_team_run_shows_its_evaluation_too(tmp_path):
    first = run_experiment(_exp(*TINY_LLM), tmp_path).table
    assert first[0]["eval_return"] == _eval_mean(tmp_path)
    # the evaluation's cells last (an LLM team's legal rate over its evaluated moves, fix 26f)
    assert list(first[0])[-1] == "eval_legal_rate" or "win_rate" in list(first[0])[-1]
    assert run_experiment(_exp(*TINY_LLM, "resume=true"), tmp_path).table == first
    (got,) = _metric(tmp_path, "charts/eval_return")
    assert got[0] == 2 and round(got[1], 3) == _eval_mean(tmp_path)


def test_a_row_without_a_recorded_evaluation_says_so(capsys):
    from populations.cli import print_summary
    from populations.experiment import RunSummary

    run = Path("/nowhere/run")
    print_summary(RunSummary(run, run / "league.db", run / "snapshots", None, [
        {"member": "vdn", "version": 0, "frames": 64, "seconds": 0.1, "final_return": 0.5,
         "eval_return": None}]))
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.lstrip().startswith("vdn")]
    assert row.endswith("  not recorded") and "None" not in out
    assert "final_return: mean return of the last (up to) 50 training episodes" in out


def test_eval_return_reads_its_snapshots_first_episodes_only(tmp_path):
    """A resume with another ``eval_episodes``, or of a run retrained after its evaluation,
    finds rows recorded before (INSERT OR IGNORE): the mean was over all of them (review)."""
    from populations.db import LeagueDB, MatchRow
    from populations.experiment import mean_eval_return

    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("x", experiment="x", game="g")
    rows = [MatchRow(f"eval/e{k:05d}", "g", {"player_0": 7}, {"player_0": float(k),
                                                               "player_1": -1.0})
            for k in range(6)]
    rows.append(MatchRow("eval/e00006", "g", {"player_0": 8}, {"player_0": 100.0}))
    db.add_matches(run, rows)
    assert mean_eval_return(db, run, 7) == 2.5  # 0..5
    assert mean_eval_return(db, run, 7, 4) == 1.5  # 0..3
    assert mean_eval_return(db, run, 8) == 100.0
    assert mean_eval_return(db, run, 9) is None
    db.close()
