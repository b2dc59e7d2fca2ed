"""A single run resumed after its checkpoints were deleted (walk 21): ``no checkpoint in R:
training from the start``, then every metric past step 0 was dropped from ``league.db`` and
``metrics.csv`` (33,630 rows of a run stopped at frame 56,050 became 2,040). Now refused in
one line, nothing changed, when the run's ``.checkpointed`` marker (written beside
``checkpoints/`` once its first checkpoint is whole) says one was written; a run stopped
before its first checkpoint, or killed while writing it, still starts over."""

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


def test_the_checkpoints_folder_deleted_too_is_refused(tmp_path, monkeypatch):
    """``rm -r checkpoints`` (review: only the files' deletion was caught)."""
    _interrupted(tmp_path, monkeypatch)
    shutil.rmtree(tmp_path / "checkpoints")
    before = _rows(tmp_path / "league.db", METRICS)
    with pytest.raises(RunFolderError, match="has no checkpoint but league.db holds metrics"):
        run_experiment(_exp(*TINY, "resume=true"), tmp_path)
    assert _rows(tmp_path / "league.db", METRICS) == before


@pytest.mark.parametrize("empty_folder", [False, True])
def test_a_run_stopped_before_its_first_checkpoint_starts_over(tmp_path, monkeypatch,
                                                              empty_folder):
    """No checkpoint was ever whole: none written yet, or killed while writing the first
    (save_checkpoint had made the folder: it was refused as lost, review)."""
    import populations.single_run as single_run
    from tests.populations.test_single_resume import _Killed

    def killed(folder, *args, **kwargs):
        folder.mkdir(parents=True, exist_ok=True)  # as save_checkpoint does first
        if not empty_folder:
            folder.rmdir()
        raise _Killed("killed writing the first checkpoint")

    monkeypatch.setattr(single_run, "save_checkpoint", killed)
    with pytest.raises(_Killed):
        run_experiment(_exp(*TINY), tmp_path)
    monkeypatch.undo()
    assert (tmp_path / "checkpoints").is_dir() == empty_folder
    run_experiment(_exp(*TINY, "resume=true"), tmp_path)
    assert _rows(tmp_path / "league.db", "SELECT status FROM runs") == [("finished",)]
