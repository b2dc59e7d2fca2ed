"""A resume may run at another ``torch_threads`` (README, Resume): it trains on with nothing
lost, but from the first update its sums round otherwise (measured on simple_spread, 1 vs 2
threads: MAPPO, MADDPG and QMIX runs differ from their first update on), so its numbers after
the checkpoint are not those of the run kept at its thread count. The resume says so in one
line instead of silently."""

import logging

import pytest

import populations.experiment as experiment
from populations.experiment import run_experiment
from tests.populations.test_single_resume import (
    TINY,
    _exp,
    _kill_after_first_checkpoint,
    _Killed,
)


def _notes(caplog):
    return [r.getMessage() for r in caplog.records if "torch_threads" in r.getMessage()]


def test_a_resume_at_another_thread_count_says_its_numbers_differ(tmp_path, monkeypatch,
                                                                   caplog):
    with monkeypatch.context() as m:
        _kill_after_first_checkpoint(m, at_call=2)
        with pytest.raises(_Killed):
            run_experiment(_exp(*TINY), tmp_path)
    # what runs after the note is not the point (and 2 threads on a busy 2-core machine
    # take seconds): the resumes stop there
    monkeypatch.setattr(experiment, "_run_experiment", lambda cfg, run_dir: None)
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        run_experiment(_exp(*TINY, "resume=true", "torch_threads=2"), tmp_path)
        assert _notes(caplog) == [
            "resuming with torch_threads=2 (the run had 1): training goes on, but its numbers "
            "from here on differ from the run kept at 1 (sums round otherwise)"]
        caplog.clear()
        run_experiment(_exp(*TINY, "resume=true"), tmp_path)  # the run's own count
        assert _notes(caplog) == []
