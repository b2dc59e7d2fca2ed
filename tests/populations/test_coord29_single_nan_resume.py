"""A resumed single run (``population=none``) whose newest checkpoint (hash recomputed: the
crafter writes it too) holds NaN weights said "does not fit this mappo learner (ValueError:
learner state holds NaN ...); resume with the run's settings": the settings were the run's,
the file is what is wrong. It now says so, as a league's resume does (fix29c)."""

import re

import pytest

from populations.checkpoint import checkpoint_files, load_latest, save_checkpoint
from populations.experiment import run_experiment
from tests.populations.test_single_resume import TINY, _exp, _kill_after_first_checkpoint, _Killed


def test_a_single_runs_checkpoint_with_nan_weights_names_the_tensor_and_the_file(tmp_path,
                                                                                 monkeypatch):
    from marl.core import CheckpointError

    _kill_after_first_checkpoint(monkeypatch, at_call=2)  # an interrupted run: it resumes
    with pytest.raises(_Killed):
        run_experiment(_exp(*TINY), tmp_path)
    monkeypatch.undo()
    path, state = load_latest(tmp_path / "checkpoints")
    for p in checkpoint_files(tmp_path / "checkpoints"):
        p.unlink()
    actors = state["learner"]["actors"]
    key = next(iter(actors))
    actors[key].view(-1)[0] = float("nan")
    save_checkpoint(tmp_path / "checkpoints", state["step"], state)
    with pytest.raises(CheckpointError) as err:
        run_experiment(_exp(*TINY, "resume=true"), tmp_path)
    said = str(err.value)
    assert re.fullmatch(rf"checkpoint \S+ckpt_\d+\.pt holds NaN in actors\[{re.escape(repr(key))}"
                        r"\]; a checkpoint's tensors must be finite real numbers \(the file is "
                        r"damaged or was edited\)", said), said
