"""An experiment's PSRO (``selfplay-train experiment=kuhn_psro``) shows the sampled-payoff bar
of :class:`populations.psro.PSRO` when ``progress=true``: the run built its PSRO without
``progress``, so the bar the Python API shows never reached the command line (fix25a)."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
import populations.payoffs as payoffs_module
from populations.experiment import run_experiment


@pytest.fixture
def bars(recorded_bars):
    return recorded_bars(payoffs_module)


@pytest.mark.parametrize("progress", [True, False])
def test_an_experiments_sampled_psro_shows_its_payoff_bar(tmp_path, bars, progress):
    overrides = ["experiment=kuhn_psro", "eval_episodes=2", "logger=none",
                 f"progress={str(progress).lower()}", "population.iterations=1",
                 "population.psro.payoffs=sampled", "population.psro.episodes_per_entry=6",
                 "population.psro.meta_solver=nash", "population.psro.response_target=meta"]
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=overrides))
    run_experiment(exp, tmp_path / "run")
    payoff_bars = [(b.desc, b.total, b.n) for b in bars  # a disabled bar has no desc
                   if "payoffs" in (getattr(b, "desc", None) or "")]
    if progress:  # the initial members' entry, then the 3 new entries of a 2x2 population
        assert payoff_bars == [("PSRO initial payoffs", 6, 6), ("PSRO iteration 0 payoffs", 18, 18)]
    else:
        assert payoff_bars == []
