"""A population's sizes have upper bounds, as ``frames``, ``num_envs`` and ``eval_episodes``:
``population.generations=10**20`` was taken, made its run folder and trained on, its bar
reading ``generation 2/100000000000000000000``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from populations.experiment_config import PopulationConfig
from tests import subprocs

HUGE = 10**20
MAX_ROUNDS = 10**6  # generations, iterations
FRAMES_TOP = 10**12  # as frames (populations.config_checks.MAX_SIZES)


@pytest.mark.parametrize("name, top", [
    ("generations", MAX_ROUNDS), ("frames_per_generation", FRAMES_TOP),
    ("iterations", MAX_ROUNDS), ("oracle_frames", FRAMES_TOP)])
def test_each_population_size_is_refused_past_its_bound_and_taken_at_it(name, top):
    with pytest.raises(ValueError) as err:
        PopulationConfig(**{name: top + 1})
    assert str(err.value).startswith(
        f"{name}={top + 1}; expected an integer in [1, {top}] ("), err.value
    assert "\n" not in str(err.value)
    assert getattr(PopulationConfig(**{name: top}), name) == top  # the bound itself is taken


def test_zero_is_still_refused_in_the_count_checks_words():
    with pytest.raises(ValueError, match=r"^generations=0; expected an integer >= 1$"):
        PopulationConfig(generations=0)


@pytest.mark.parametrize("overrides, key", [
    (["experiment=tag_pfsp_league", f"population.generations={HUGE}"],
     "population.generations"),
    (["experiment=tag_pfsp_league", f"population.frames_per_generation={HUGE}"],
     "population.frames_per_generation"),
    (["population=psro", "game=kuhn", f"population.iterations={HUGE}"],
     "population.iterations"),
    (["population=psro", "game=kuhn", f"population.oracle_frames={HUGE}"],
     "population.oracle_frames"),
])
def test_selfplay_train_refuses_them_in_one_line_before_the_run_folder(overrides, key,
                                                                      tmp_path):
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    train = Path(sys.executable).with_name("selfplay-train")
    # from the test zygote (tests.subprocs): the refusal is the property, not the imports
    done = subprocs.run([str(train), *overrides, f"hydra.run.dir={run}"], cwd=tmp_path,
                        env=env, capture_output=True, text=True, timeout=120)
    err = done.stderr.strip()
    assert done.returncode == 2, (done.returncode, err[-2000:])
    assert err.startswith(f"selfplay-train: bad config: {key}={HUGE}; expected an integer in "
                          "[1, "), err
    assert "\n" not in err and "Traceback" not in err, err
    assert not run.exists() and not (tmp_path / "runs").exists()
