"""A resumed single run's progress bar shows its place in the whole run: it starts at the
checkpoint's frames and counts to the run's total (it counted the frames left from 0: a run
resumed at frame 16 of 64 showed 0/48). With ``runner.rollout_workers`` the bar is
``train_with_workers``'s, which ``single_run`` gives the checkpoint's frames too."""

import io

import pytest

import marl.train
import populations.rollouts
from populations.experiment import run_experiment
from tests.populations.test_single_resume import TINY, _exp, _kill_after_first_checkpoint


@pytest.mark.parametrize("extra, module", [
    ((), marl.train),
    (("runner.rollout_workers=2",), populations.rollouts),  # local workers: in this process
], ids=["train", "rollout_workers"])
def test_a_resumed_runs_bar_starts_at_its_checkpoint(tmp_path, monkeypatch, extra, module):
    overrides = [*TINY, *extra]
    _kill_after_first_checkpoint(monkeypatch, at_call=2)  # checkpoint at 16; killed at 32
    with pytest.raises(Exception, match="killed at step 32"):
        run_experiment(_exp(*overrides), tmp_path)
    monkeypatch.undo()
    bars = []

    class Recorded(module.tqdm):  # the real bar, written to a string
        def __init__(self, *args, **kwargs):
            self.text = kwargs["file"] = io.StringIO()
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(module, "tqdm", Recorded)
    run_experiment(_exp(*[o for o in overrides if o != "progress=false"], "progress=true",
                        "resume=true"), tmp_path)
    (bar,) = bars
    assert (bar.initial, bar.n, bar.total) == (16, 64, 64)
    shown = bar.text.getvalue().replace("\r", "\n").split("\n")
    first = next(line for line in shown if "/64" in line)
    assert " 16/64 " in first, first
    assert " 64/64 " in shown[-1] or any(" 64/64 " in line for line in shown)
