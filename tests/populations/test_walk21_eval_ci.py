"""Walk 21: a single run's ``eval_return`` had no uncertainty (32 episodes by default, while
the spread between seeds, ~1.5 on climbing, is the size of the differences a comparison
studies). The closing table now has ``eval_ci95`` beside it: the half-width of the 95 %
confidence interval of the mean (Student's t over the same evaluation episodes), logged as
``charts/eval_return_ci95``. The evaluation's episodes are read in the order they were played
(the keys sorted as text put ``eval/e100000`` before ``eval/e10001``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from populations.db import LeagueDB, MatchRow
from populations.experiment import run_experiment
from tests.populations.test_single_resume import _exp

# Kuhn poker against random seats: the episodes' returns differ
SMALL = ["algo=mappo", "game=kuhn", "frames=64", "num_envs=4", "mappo.rollout_steps=4",
         "eval_episodes=12", "progress=false", "checkpoint_every_s=0", "logger=csv"]


def _episodes(run: Path) -> list[float]:
    """The learner seats' mean return per evaluation episode, from league.db."""
    db = sqlite3.connect(run / "league.db")
    try:
        rows = db.execute("SELECT seats, returns FROM matches WHERE key LIKE 'eval/e%'")
        return [float(np.mean([json.loads(r)[a] for a in json.loads(s)])) for s, r in rows]
    finally:
        db.close()


def _metric(run: Path, key: str) -> list[tuple[int, float]]:
    db = sqlite3.connect(run / "league.db")
    try:
        return db.execute("SELECT step, value FROM metrics WHERE key = ?", (key,)).fetchall()
    finally:
        db.close()


def _half_width(x: list[float]) -> float:
    """The 95 % half-width by the textbook formula, independently of the code under test."""
    return float(stats.t.interval(0.95, len(x) - 1, loc=0.0, scale=stats.sem(x))[1])


def test_the_table_has_the_eval_returns_95_ci_and_logs_it(tmp_path):
    table = run_experiment(_exp(*SMALL), tmp_path).table
    x = _episodes(tmp_path)
    assert len(x) == 12 and np.std(x) > 0  # the episodes' returns differ
    assert list(table[0]) == ["member", "version", "frames", "seconds", "final_return",
                              "eval_return", "eval_ci95"]
    assert table[0]["eval_ci95"] == round(_half_width(x), 3)
    (got,) = _metric(tmp_path, "charts/eval_return_ci95")
    assert got[0] == table[0]["frames"] and got[1] == pytest.approx(_half_width(x))
    # a finished run's resume shows the same row (read back from the matches)
    again = run_experiment(_exp(*SMALL, "resume=true"), tmp_path).table
    assert again == table


def test_one_evaluation_episode_has_no_interval(tmp_path):
    table = run_experiment(_exp(*SMALL[:-3], "eval_episodes=1", *SMALL[-2:]), tmp_path).table
    assert table[0]["eval_return"] is not None and table[0]["eval_ci95"] is None
    assert _metric(tmp_path, "charts/eval_return_ci95") == []


def _far_rows(tmp_path: Path) -> tuple[LeagueDB, int]:
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("x", experiment="x", game="g")
    db.add_matches(run, [MatchRow(f"eval/e{k:05d}", "g", {"player_0": 7},
                                  {"player_0": float(k)})
                         for k in (10_001, 99_999, 100_000)])
    return db, run


def test_the_first_episodes_are_the_first_played_past_99999(tmp_path):
    from populations.experiment import _eval_return

    db, run = _far_rows(tmp_path)
    assert _eval_return(db, run, 7, 2) == (10_001 + 99_999) / 2  # was (100_000 + 10_001) / 2
    db.close()


def test_the_interval_is_over_the_same_episodes(tmp_path):
    from populations.experiment import _evaluation

    db, run = _far_rows(tmp_path)
    evaluated = _evaluation(db, run, 7)
    assert evaluated.episodes == 3 and evaluated.ci95 == pytest.approx(
        _half_width([10_001.0, 99_999.0, 100_000.0]))
    db.close()
