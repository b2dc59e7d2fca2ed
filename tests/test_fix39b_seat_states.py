"""review39a M3/L7: a checkpoint whose random seats' RNG states name other seats (or hold
a float where numpy's PCG64 state holds integers) is refused in one short line naming the
file, before the resume drops a metric row (metrics.csv, league.db)."""
import csv
import sqlite3

import pytest

from marl.core import CheckpointError
from populations.checkpoint import checkpoint_files, read_checkpoint, save_checkpoint
from populations.experiment import run_experiment
from tests.populations.test_single_resume import _exp, _kill_after_first_checkpoint
from tests.test_resume39_exact_resume import BASE, RUNS

RUN = [*BASE, *RUNS["mappo"]]


def _killed(tmp_path, monkeypatch):
    _kill_after_first_checkpoint(monkeypatch, at_call=2)
    with pytest.raises(Exception, match="killed at step"):
        run_experiment(_exp(*RUN), tmp_path)
    monkeypatch.undo()
    (path,) = checkpoint_files(tmp_path / "checkpoints")
    return path, read_checkpoint(path)


def _rows(folder):
    with open(folder / "metrics.csv", newline="") as fh:
        csv_rows = [r["step"] for r in csv.DictReader(fh)]
    with sqlite3.connect(folder / "league.db") as conn:
        db_rows = conn.execute("SELECT COUNT(*) FROM metrics").fetchone()[0]
    return csv_rows, db_rows


def _refused(tmp_path, st):
    path = save_checkpoint(tmp_path / "checkpoints", st["step"], st)
    before = _rows(tmp_path)
    with pytest.raises(CheckpointError) as err:
        run_experiment(_exp(*RUN, "resume=true"), tmp_path)
    assert _rows(tmp_path) == before  # nothing dropped
    line = str(err.value)
    assert "\n" not in line and len(line) < 400 and str(path) in line, line
    return line


def test_other_seats_refused_before_a_row_is_dropped(tmp_path, monkeypatch):
    _, st = _killed(tmp_path, monkeypatch)
    assert max(int(s) for s in _rows(tmp_path)[0]) > st["step"]  # rows past it to keep
    st["opponents"] = {"x\n" * 3 + "y" * 5000: st["opponents"]["player_1"]}
    line = _refused(tmp_path, st)
    assert "holds random seats 'x\\nx\\nx\\nyyy" in line and "this run 'player_1'" in line


def test_a_float_state_is_refused(tmp_path, monkeypatch):
    _, st = _killed(tmp_path, monkeypatch)
    st["opponents"]["player_1"]["state"]["state"] = 1.5
    line = _refused(tmp_path, st)
    assert "holds a random seat 'player_1' state numpy refuses" in line
