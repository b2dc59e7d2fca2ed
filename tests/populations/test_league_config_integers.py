"""``LeagueConfig`` (a league's Python API) checked its counts by their range only:
``generations=2.5`` and ``generations=True`` were taken (a float count failed later, deep in
the run; ``True`` ran as 1), as were the same for the other counts and the seed. Hydra's
typed schema refuses them on the command line; the dataclass now refuses them too, in one
line naming the value and the integers accepted."""

import numpy as np
import pytest

from populations.league import LeagueConfig

LEAST = {"generations": 1, "frames_per_generation": 1, "num_envs": 1, "eval_episodes": 1,
         "eval_window": 0, "ray_workers": 1, "ray_learners": 0, "max_learner_restarts": 0,
         "seed": 0, "torch_threads": 1}


@pytest.mark.parametrize("value", [2.5, True, False, 2.0, "3", None])
@pytest.mark.parametrize("name", LEAST)
def test_a_count_that_is_not_an_integer_is_refused(name, value):
    with pytest.raises(ValueError) as err:
        LeagueConfig(**{name: value})
    assert str(err.value) == f"{name}={value!r}; expected an integer >= {LEAST[name]}"


@pytest.mark.parametrize("name", LEAST)
def test_a_count_below_its_least_is_refused(name):
    below = LEAST[name] - 1
    with pytest.raises(ValueError) as err:
        LeagueConfig(**{name: below})
    assert str(err.value) == f"{name}={below}; expected an integer >= {LEAST[name]}"


@pytest.mark.parametrize("name", LEAST)
def test_integers_are_taken_numpy_ones_too(name):
    assert getattr(LeagueConfig(**{name: LEAST[name]}), name) == LEAST[name]
    assert getattr(LeagueConfig(**{name: np.int64(LEAST[name] + 1)}), name) == LEAST[name] + 1


MOST = {"generations": 10**6, "frames_per_generation": 10**12, "num_envs": 10**9,
        "eval_episodes": 10**6, "torch_threads": 1024}


@pytest.mark.parametrize("name", MOST)
def test_a_count_past_its_most_is_refused_as_selfplay_train_refuses_it(name):
    """``LeagueConfig(generations=10**20)`` (``python -m populations.league --generations``)
    was taken, and its bar read 2/10**20; ``selfplay-train`` bounds the same sizes."""
    if name != "num_envs":  # a stepped game (the default's) takes at most 65,536 copies
        assert getattr(LeagueConfig(**{name: MOST[name]}), name) == MOST[name]
    with pytest.raises(ValueError) as err:
        LeagueConfig(**{name: 10**20})
    assert str(err.value) == (f"{name}={10**20}; expected an integer from {LEAST[name]} to "
                              f"{MOST[name]}")
