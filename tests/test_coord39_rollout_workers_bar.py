"""A resumed single run with ``runner.rollout_workers`` shows its place in the whole run too:
``single_run`` passes the checkpoint's frames to ``train_with_workers`` (its bar counted the
frames left from 0, as ``train``'s did before 75efd88)."""

import io

import pytest

import populations.rollouts
from populations.experiment import run_experiment
from tests.populations.test_single_resume import TINY, _exp, _kill_after_first_checkpoint

WORKERS = [*TINY, "runner.rollout_workers=2"]  # local workers: in this process


def test_a_resumed_runs_bar_with_rollout_workers_starts_at_its_checkpoint(tmp_path,
                                                                          monkeypatch):
    _kill_after_first_checkpoint(monkeypatch, at_call=2)  # checkpoint at 16; killed at 32
    with pytest.raises(Exception, match="killed at step 32"):
        run_experiment(_exp(*WORKERS), tmp_path)
    monkeypatch.undo()
    bars = []

    class Recorded(populations.rollouts.tqdm):  # the real bar, written to a string
        def __init__(self, *args, **kwargs):
            self.text = kwargs["file"] = io.StringIO()
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(populations.rollouts, "tqdm", Recorded)
    run_experiment(_exp(*[o for o in WORKERS if o != "progress=false"], "progress=true",
                        "resume=true"), tmp_path)
    (bar,) = bars
    assert (bar.initial, bar.n, bar.total) == (16, 64, 64)
