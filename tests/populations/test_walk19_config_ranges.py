"""Values of an experiment's own sections that were accepted with no meaning (walk 19):
``population.exploiter_reset_win_rate=2`` (the exploiter never restarted), PSRO's
``episodes_per_entry=0`` (a traceback after the run folder) and ``num_envs<1``,
``runner.learner_gpus=nan`` (Ray's refusal, after the folder) and ``torch_threads=100000``
(SIGSEGV after the run folder, settings and database were written). ``selfplay-train`` refuses
them in one line before Hydra composes, and writes nothing."""

from __future__ import annotations

import pytest

import populations.cli as cli
from populations.config_checks import MAX_THREADS, check_run_values
from populations.experiment_config import PopulationConfig, RunnerConfig
from populations.psro_config import PSROConfig
from tests.populations.test_walk18_cli_more import _train

REFUSED = [
    ("population.exploiter_reset_win_rate=2", "population.exploiter_reset_win_rate=2.0; "
     "expected a number in (0, 1]"),
    ("population.exploiter_reset_win_rate=0", "population.exploiter_reset_win_rate=0.0; "
     "expected a number in (0, 1]"),
    ("population.exploiter_reset_win_rate=nan", "population.exploiter_reset_win_rate=nan; "
     "expected a number in (0, 1]"),
    ("population.psro.episodes_per_entry=0", "population.psro.episodes_per_entry=0; "
     "expected an integer >= 1"),
    ("population.psro.num_envs=-1", "population.psro.num_envs=-1; expected an integer >= 1"),
    ("runner.learner_gpus=nan", "runner.learner_gpus=nan; expected 0 or a finite number >= "
     "0.0001"),
    ("runner.learner_gpus=0.00001", "runner.learner_gpus=1e-05; expected 0 or a finite "
     "number >= 0.0001"),
    ("torch_threads=100000", "torch_threads=100000; expected an integer from 1 to 1024"),
]


@pytest.mark.parametrize(("override", "words"), REFUSED)
def test_a_meaningless_value_is_refused_in_one_line_before_any_folder(
        override, words, tmp_path, monkeypatch, capsys):
    started = []  # Hydra's task (a missed refusal would train: torch_threads=100000 crashed)
    monkeypatch.setattr(cli, "_train_task", started.append)
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        _train(["population=psro" if "psro" in override else "population=pfsp", override,
                f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert stop.value.code == 2 and started == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"selfplay-train: bad config: {words}"), err
    assert not run.exists() and list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("rate", [0.0, 1.5, float("nan"), float("inf")])
def test_population_config_refuses_a_win_rate_outside_0_1(rate):
    with pytest.raises(ValueError, match=r"^exploiter_reset_win_rate=.*; expected a number "
                                         r"in \(0, 1\]$"):
        PopulationConfig(exploiter_reset_win_rate=rate)


@pytest.mark.parametrize("rate", [1e-3, 0.7, 1.0])
def test_population_config_takes_a_win_rate_in_0_1(rate):
    assert PopulationConfig(exploiter_reset_win_rate=rate).exploiter_reset_win_rate == rate


@pytest.mark.parametrize("field", ["episodes_per_entry", "num_envs"])
def test_population_config_refuses_psro_counts_below_one(field):
    with pytest.raises(ValueError, match=rf"^population\.psro\.{field}=0; expected an integer "
                                         r">= 1$"):
        PopulationConfig(psro=PSROConfig(**{field: 0}))


@pytest.mark.parametrize("gpus", [float("nan"), float("inf"), 1e-5, -1.0])
def test_runner_config_refuses_gpu_shares_ray_cannot_take(gpus):
    with pytest.raises(ValueError, match=r"^learner_gpus=.*; expected 0 or a finite number"):
        RunnerConfig(learner_gpus=gpus)


@pytest.mark.parametrize("gpus", [None, 0.0, 1e-4, 0.5, 2.0])
def test_runner_config_takes_gpu_shares(gpus):
    assert RunnerConfig(learner_gpus=gpus).learner_gpus == gpus


def test_torch_threads_past_the_cap_are_refused():
    check_run_values({"torch_threads": MAX_THREADS})
    with pytest.raises(ValueError, match=rf"^torch_threads={MAX_THREADS + 1}; expected an "
                                         rf"integer from 1 to {MAX_THREADS} "):
        check_run_values({"torch_threads": MAX_THREADS + 1})
