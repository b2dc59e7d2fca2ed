"""PSRO runs resume: a run stopped after some iterations (cleanly, or inside an iteration
after its best responses were published) and resumed ends with exactly the members,
iterations, NashConv values and matches of an uninterrupted run."""

import csv
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
from populations.experiment import run_experiment
from populations.loggers import CSVLogger, LoggerConfig

ROOT = Path(__file__).resolve().parents[2]
BASE = ["experiment=kuhn_psro", "eval_episodes=2", "progress=false", "logger=none"]


def _run(run_dir, iterations, resume=False, extra=()):
    keys = {e.split("=")[0] for e in extra}
    overrides = [*(o for o in BASE if o.split("=")[0] not in keys),
                 f"population.iterations={iterations}", f"resume={str(resume).lower()}", *extra]
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=overrides))
    return run_experiment(exp, run_dir)


def _state(db_path):
    db = sqlite3.connect(db_path)
    try:
        return {
            "snapshots": sorted(db.execute(
                "SELECT m.name, s.version FROM snapshots s JOIN members m ON s.member_id = m.id"
            ).fetchall()),
            "iterations": [(i, round(n, 12)) for i, n in db.execute(
                "SELECT iteration, nash_conv FROM psro_iterations ORDER BY iteration")],
            "matches": sorted(db.execute("SELECT key, returns FROM matches").fetchall()),
        }
    finally:
        db.close()


def test_resumed_psro_equals_an_uninterrupted_run(tmp_path):
    whole = _state(_run(tmp_path / "whole", 6).database)
    _run(tmp_path / "split", 3)
    split = _state(_run(tmp_path / "split", 6, resume=True).database)
    assert split == whole
    assert len(whole["iterations"]) == 6 and len(whole["snapshots"]) == 2 * 7
    assert whole["iterations"][-1][1] == 0.0  # Kuhn solved (least-exploitable + exploiter)


def test_psro_resumes_from_inside_an_unfinished_iteration(tmp_path):
    whole = _state(_run(tmp_path / "whole", 4).database)
    summary = _run(tmp_path / "cut", 3)
    db = sqlite3.connect(summary.database)  # as if killed after iteration 2 published its
    with db:  # best responses but before it was recorded and played its matches
        db.execute("DELETE FROM psro_iterations WHERE iteration = 2")
        db.execute("DELETE FROM matches WHERE key LIKE 'psro/it0002/%'")
    db.close()
    assert _state(_run(tmp_path / "cut", 4, resume=True).database) == whole


def _metrics(summary):
    """Database rows (timings by key only) and metrics.csv rows (header, then sorted)."""
    db = sqlite3.connect(summary.database)
    rows = [(s, k, None if k == "psro/seconds" else v) for s, k, v in db.execute(
        "SELECT step, key, value FROM metrics ORDER BY step, key")]
    db.close()
    with open(summary.run_dir / "metrics.csv", newline="") as fh:
        lines = list(csv.reader(fh))
    body = sorted((s, k, "t" if k == "psro/seconds" else v) for s, k, v in lines[1:])
    return rows, lines[0], body


class _Killed(Exception):
    pass


def test_psro_metrics_after_a_kill_equal_an_uninterrupted_run(tmp_path, monkeypatch):
    """Killed after iteration 2 reached the database but before metrics.csv: the resumed
    run lost those csv rows for good (it only counts the database's iterations)."""
    csv_logger = ["logger=csv"]
    whole = _metrics(_run(tmp_path / "whole", 4, extra=csv_logger))
    log = CSVLogger.log

    def killed_at_2(self, step, metrics, prefix=""):
        if step == 2 and "psro/nash_conv" in metrics:
            raise _Killed
        log(self, step, metrics, prefix)

    monkeypatch.setattr(CSVLogger, "log", killed_at_2)
    with pytest.raises(_Killed):
        _run(tmp_path / "cut", 4, extra=csv_logger)
    monkeypatch.undo()
    got = _metrics(_run(tmp_path / "cut", 4, resume=True, extra=csv_logger))
    assert got == whole
    assert whole[1] == ["step", "key", "value"] and len(whole[0]) == 4 * 3


def test_metrics_csv_keeps_its_header_after_an_early_kill(tmp_path):
    """Killed before the first metric: the buffered header never reached the file, and the
    resumed run appended rows to an empty file."""
    code = ("import os, signal, sys; from pathlib import Path; "
            "from populations.loggers import CSVLogger, LoggerConfig; "
            "logger = CSVLogger(Path(sys.argv[1]), LoggerConfig(), {}); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == -signal.SIGKILL
    logger = CSVLogger(tmp_path, LoggerConfig(), {})
    logger.log(1, {"a": 1.0})
    logger.close()
    path = tmp_path / "metrics.csv"
    assert path.read_text().splitlines() == ["step,key,value", "1,a,1.0"]
    with open(path, "a", newline="") as fh:  # a kill in the middle of a row
        fh.write("2,b,0.5\r\n3,a,0.")
    logger = CSVLogger(tmp_path, LoggerConfig(), {})
    logger.log(3, {"a": 0.25})
    logger.log(2, {"b": 0.5})  # replayed by the resume: already there
    logger.close()
    assert path.read_text().splitlines() == ["step,key,value", "1,a,1.0", "2,b,0.5",
                                             "3,a,0.25"]
