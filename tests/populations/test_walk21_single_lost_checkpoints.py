"""A single run resumed after its checkpoints were deleted (walk 21): ``no checkpoint in R:
training from the start``, then every metric past step 0 was dropped from ``league.db`` and
``metrics.csv`` (33,630 rows of a run stopped at frame 56,050 became 2,040). Now refused in
one line, nothing changed, when the checkpoint folder exists (``save_checkpoint`` made it)
but holds none; a run stopped before its first checkpoint still starts over."""

import shutil

import pytest

from populations.experiment import run_experiment
from populations.run_folder import RunFolderError
from tests.populations.test_single_resume import TINY, _exp, _kill_after_first_checkpoint, _rows

METRICS = "SELECT step, key, value FROM metrics ORDER BY id"


def _interrupted(tmp_path, monkeypatch):
    """A run killed after its first checkpoint, metrics logged past it."""
    from tests.populations.test_single_resume import _Killed

    _kill_after_first_checkpoint(monkeypatch)
    with pytest.raises(_Killed):
        run_experiment(_exp(*TINY), tmp_path)
    monkeypatch.undo()


def test_deleted_checkpoints_are_refused_and_nothing_changes(tmp_path, monkeypatch):
    _interrupted(tmp_path, monkeypatch)
    for p in (tmp_path / "checkpoints").iterdir():
        p.unlink()
    before = _rows(tmp_path / "league.db", METRICS)
    csv = (tmp_path / "metrics.csv").read_text()
    assert max(s for s, *_ in before) > 0
    with pytest.raises(RunFolderError, match=r"checkpoints has no checkpoint but league.db "
                       r"holds metrics up to step \d+: a resume would start the run over; "
                       r"nothing was changed"):
        run_experiment(_exp(*TINY, "resume=true"), tmp_path)
    assert _rows(tmp_path / "league.db", METRICS) == before
    assert (tmp_path / "metrics.csv").read_text() == csv
    # resume_override starts it over (the dead run's metrics past step 0 are replaced)
    run_experiment(_exp(*TINY, "resume=true", "resume_override=true"), tmp_path)
    assert _rows(tmp_path / "league.db", "SELECT status FROM runs") == [("finished",)]


def test_a_run_stopped_before_its_first_checkpoint_starts_over(tmp_path, monkeypatch):
    _interrupted(tmp_path, monkeypatch)
    shutil.rmtree(tmp_path / "checkpoints")  # as if no checkpoint had been written yet
    run_experiment(_exp(*TINY, "resume=true"), tmp_path)
    assert _rows(tmp_path / "league.db", "SELECT status FROM runs") == [("finished",)]
