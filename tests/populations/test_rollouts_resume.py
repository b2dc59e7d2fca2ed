"""A single run on rollout workers (``runner.rollout_workers``), stopped by SIGTERM and
resumed, against the uninterrupted run: the same frames, every (step, key) metric row once in
the database and in ``metrics.csv``, and the rows up to the stop's checkpoint bit for bit the
uninterrupted run's. After the checkpoint the runs differ by design: the workers' game copies
(episodes in flight) are not in a checkpoint, so the resumed workers play new copies seeded
from the checkpoint's step, as a resumed in-process run does (README, "Rollout workers")."""

import csv
import dataclasses
import os
import signal
import sqlite3

import pytest

import populations.rollouts
from marl.train import CLOCK_METRICS
from populations import run_folder
from populations.experiment import run_experiment
from tests.populations.test_single_resume import TINY, _exp

# 2 workers x 2 copies, 4 steps a round: an update (one gradient step) every 16 frames
WORKERS = [*TINY, "runner.rollout_workers=2", "checkpoint_every_s=1000", "mappo.epochs=1",
           "mappo.minibatches=1"]


def _metrics(run_dir):
    db = sqlite3.connect(run_dir / "league.db")
    try:
        return db.execute("SELECT step, key, value FROM metrics").fetchall()
    finally:
        db.close()


def _no_clock(row):
    """A metric row ``(step, key, value)``, its value 0 for a wall-clock rate."""
    step, key, value = row
    return step, key, 0.0 if key in CLOCK_METRICS else value


def test_a_stopped_rollout_worker_run_resumes_with_nothing_lost_or_repeated(
        tmp_path, monkeypatch):
    cfg = _exp(*WORKERS)  # composed once (Hydra's compose is most of a run's time here)
    ref = run_experiment(cfg, tmp_path / "ref")
    steps, after_step = [], populations.rollouts.after_step

    def counted(*args, **kwargs):
        after_step(*args, **kwargs)
        steps.append(1)
        if len(steps) == 6:  # inside the second round: it stops at that round's update
            os.kill(os.getpid(), signal.SIGTERM)

    with monkeypatch.context() as m:
        m.setattr(populations.rollouts, "after_step", counted)
        with run_folder.sigterm_as_interrupt(), pytest.raises(run_folder.Terminated):
            run_experiment(cfg, tmp_path / "run")
    assert len(steps) == 7  # the 8th step finished its round and stopped at its update
    assert sorted({s for s, _, _ in _metrics(tmp_path / "run")}) == [16, 32]
    res = run_experiment(dataclasses.replace(cfg, resume=True), tmp_path / "run")
    assert res.table[0]["frames"] == ref.table[0]["frames"] == 64
    a, b = _metrics(tmp_path / "ref"), _metrics(tmp_path / "run")
    assert len(b) == len({(s, k) for s, k, _ in b})  # every (step, key) once
    assert sorted((s, k) for s, k, _ in a) == sorted((s, k) for s, k, _ in b)
    # the same values up to the stop, but for the wall-clock rate (charts/frames_per_second)
    assert sorted(_no_clock(r) for r in a if r[0] <= 32) == \
        sorted(_no_clock(r) for r in b if r[0] <= 32)
    for run in ("ref", "run"):
        with (tmp_path / run / "metrics.csv").open(newline="") as fh:
            rows = [(int(s), k) for s, k, _ in list(csv.reader(fh))[1:]]
        assert sorted(rows) == sorted((s, k) for s, k, _ in a)
