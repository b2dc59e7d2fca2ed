"""An asynchronous league (``sync=False``) killed around a member's "trained" checkpoint
and resumed has each member generation's metrics once, in league.db and metrics.csv.

Before, ``_apply`` logged a finished member's metrics (at the league's frame count plus the
member's own) before its "trained" checkpoint: killed in between, the rows stayed, and the
resume trained that generation again and logged it at other steps (the base step is the
league's frame count when the member finishes, which depends on the finishing order), so
the generation's metrics were there twice. Now the checkpoint holds them and they are
logged after it (the resume logs them again from it: the database replaces a row, the csv
writes each (step, key) once).

Without Ray: the learner actor's own training code runs in this process behind the
LearnerPool's calls (``test_rfix34a_async_restart._InProcessPool``), jobs trained in the
order submitted, so the finishing order is fixed and a resume's differs from the whole
run's."""

from __future__ import annotations

import csv
import dataclasses
from collections import Counter
from pathlib import Path

import pytest

import games
from marl.core import CheckpointError
from marl.mappo import MAPPO
from populations.checkpoint import load_latest
from populations.db import LeagueDB
from populations.league import League, unlogged_metrics
from populations.loggers import CSVLogger, LoggerConfig
from populations.members import MAPPOMember
from tests.populations.test_league import _kuhn
from tests.populations.test_rfix34a_async_restart import _InProcessPool


class Killed(Exception):
    """The process dying at the chosen point."""


def _league(run_dir, resume=False):
    cfg = _kuhn(generations=2, frames_per_generation=64, num_envs=8, eval_episodes=1)
    spec = games.make(cfg.game).spec
    members = [MAPPOMember(name, MAPPO(spec, cfg.mappo, seed=seed))
               for seed, name in enumerate(("a", "b"))]
    league = League(cfg, run_dir, resume=resume, members=members)
    try:
        league.logger = CSVLogger(league.run_dir, LoggerConfig(), {})
        league.cfg = dataclasses.replace(cfg, runner="ray", sync=False)
        league.learners = _InProcessPool(league.members, league.store)
        league.run()
    finally:
        league.learners = None
        league.logger.close()
        league.close()


def _metrics(run_dir):
    """Per key: how many rows league.db and metrics.csv hold, and the csv's (step, key)
    rows written more than once."""
    db = LeagueDB(run_dir / "league.db", readonly=True)
    try:
        rows = db.metric_rows(db.run_id(run_dir.name) or 1)
    finally:
        db.close()
    with (run_dir / "metrics.csv").open(newline="") as fh:
        written = [(int(s), k) for s, k, _ in list(csv.reader(fh))[1:]]
    twice = [r for r, n in Counter(written).items() if n > 1]
    return Counter(k for _, k, _ in rows), Counter(k for _, k in written), twice


def _b_trained(league):
    return league.phase == "async" and league.progress.get("b") == (1, "trained")


def _kill_before_save(monkeypatch):
    save = League._save

    def crash(self):
        if _b_trained(self):  # b's generation 1 trained and applied, not checkpointed
            raise Killed
        save(self)
    monkeypatch.setattr(League, "_save", crash)


def _kill_after_save(monkeypatch):
    save = League._save

    def crash(self):
        save(self)
        if _b_trained(self):  # checkpointed "trained", its metrics not logged yet
            raise Killed
    monkeypatch.setattr(League, "_save", crash)


def _kill_before_done(monkeypatch):
    finish = League._finish_async

    def crash(self, m, g, seq=None):
        if m.name == "b" and g == 1:  # checkpointed "trained" and logged, not evaluated
            raise Killed
        finish(self, m, g, seq)
    monkeypatch.setattr(League, "_finish_async", crash)


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    run = tmp_path_factory.mktemp("fix40e") / "whole"
    _league(run)
    return _metrics(run)


@pytest.mark.parametrize("kill", [_kill_before_save, _kill_after_save, _kill_before_done])
def test_a_killed_async_league_logs_each_generations_metrics_once(tmp_path, monkeypatch,
                                                                  whole, kill):
    db_rows, csv_rows, twice = whole
    assert db_rows and db_rows == csv_rows and not twice
    run = tmp_path / "run"
    kill(monkeypatch)
    with pytest.raises(Killed):
        _league(run)
    monkeypatch.undo()
    _, state = load_latest(run / "checkpoints")
    if kill is not _kill_before_save:  # the checkpoint holds b's generation's metrics
        assert state["progress"]["b"] == [1, "trained"] and state["unlogged"]
    else:
        assert state["progress"]["b"] == [0, "done"] and "unlogged" not in state
    _league(run, resume=True)
    got_db, got_csv, got_twice = _metrics(run)
    assert got_db == db_rows  # each key's rows: every member generation's once
    assert got_csv == csv_rows and not got_twice
    _, state = load_latest(run / "checkpoints")
    assert "unlogged" not in state and state["progress"] == {"a": [2, "done"],
                                                             "b": [2, "done"]}


@pytest.mark.parametrize("entry", [{}, [[1]], [[-1, {}]], [[True, {}]], [[1, {"k": "v"}]],
                                   [[1, {2: 0.5}]], [[2**63, {}]]])
def test_a_checkpoints_unlogged_metrics_are_checked(entry):
    with pytest.raises(CheckpointError, match=r"ckpt_000003\.pt .*unlogged is .*expected a list"):
        unlogged_metrics(Path("ckpt_000003.pt"), {"unlogged": entry})
    assert unlogged_metrics(Path("c"), {}) == []
    assert unlogged_metrics(Path("c"), {"unlogged": [[3, {"k": 1}]]}) == [(3, {"k": 1.0})]
