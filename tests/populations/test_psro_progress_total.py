"""PSRO's per-iteration line counts against the planned iterations, as a league's
``generation 3/10 done`` does: it said ``PSRO iteration 2: ...`` with no total, so a long
run's progress had to be read off the command line. The iteration's own number (0-based,
as the database and the dashboard number it) stays first."""

import logging

import pytest

from populations.psro import PSRO, ExactBestResponse

KUHN = "openspiel/kuhn_poker"


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("PSRO iteration")]


def test_run_counts_against_its_iterations(caplog):
    psro = PSRO(KUHN, ExactBestResponse(KUHN))
    with caplog.at_level(logging.INFO, logger="populations.psro"):
        psro.run(2)
        psro.run(1)  # a later call counts against what it adds
        psro.iteration()  # no plan given: no total
    lines = _lines(caplog)
    assert [x.split(": population ")[0] for x in lines] == [
        "PSRO iteration 0 (1/2)", "PSRO iteration 1 (2/2)", "PSRO iteration 2 (3/3)",
        "PSRO iteration 3"]
    assert lines[0].startswith("PSRO iteration 0 (1/2): population [2, 2], NashConv "), lines


@pytest.mark.parametrize("resume", [False, True])
def test_an_experiment_counts_against_population_iterations(tmp_path, caplog, resume):
    """A resumed run goes on counting against the planned total."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    import populations.cli  # noqa: F401  (registers the schema)
    from populations.experiment import run_experiment

    def cfg(iterations: int, again: bool):
        overrides = ["experiment=kuhn_psro", f"population.iterations={iterations}",
                     "eval_episodes=2", "progress=false", "logger=none",
                     *(["resume=true"] if again else [])]
        with initialize_config_module(config_module="configs", version_base=None):
            return OmegaConf.to_object(compose(config_name="config", overrides=overrides))

    if resume:
        run_experiment(cfg(1, False), tmp_path / "run")
        caplog.clear()
    with caplog.at_level(logging.INFO):
        run_experiment(cfg(3, resume), tmp_path / "run")
    heads = [x.split(": population ")[0] for x in _lines(caplog)]
    assert heads == (["PSRO iteration 1 (2/3)", "PSRO iteration 2 (3/3)"] if resume else
                     ["PSRO iteration 0 (1/3)", "PSRO iteration 1 (2/3)",
                      "PSRO iteration 2 (3/3)"])
