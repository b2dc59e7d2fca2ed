"""to_pettingzoo exports pass PettingZoo's own API tests."""

import warnings

import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import games

# Warnings PettingZoo's api_test also raises on its own classic environments, which
# carry their action masks in dict observations exactly as the AEC export does.
DICT_OBS_WARNINGS = ("Observation is not a NumPy array", "Observation space for each agent")


@pytest.fixture(autouse=True, scope="module")
def _register_example():
    import nim  # noqa: F401


def _run(test, env):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        test(env, num_cycles=300)
    return {str(w.message) for w in caught}


@pytest.mark.parametrize(
    ("spec", "kwargs"),
    [
        ("openspiel/kuhn_poker", {}),
        ("openspiel/leduc_poker", {}),
        ("openspiel/tic_tac_toe", {}),
        ("pettingzoo/pettingzoo.classic.connect_four_v3", {}),
        ("nim", {"stones": 12}),
    ],
)
def test_aec_export_passes_api_test(spec, kwargs):
    env = games.to_pettingzoo(games.make(spec, **kwargs))
    assert isinstance(env, games.export.GameAECEnv)
    left = {w for w in _run(api_test, env) if not w.startswith(DICT_OBS_WARNINGS)}
    left -= {"Observation numpy array is all zeros."}  # an empty board is all zeros
    assert not left


@pytest.mark.parametrize(
    ("spec", "kwargs"),
    [
        ("pettingzoo/mpe2.simple_spread_v3", {"N": 3}),
        ("pettingzoo/mpe2.simple_tag_v3", {}),
        ("pettingzoo/mpe2.simple_spread_v3", {"N": 2, "continuous_actions": True}),
        ("openspiel/goofspiel", {"num_cards": 4}),
        ("openspiel/matrix_rps", {}),
    ],
)
def test_parallel_export_passes_parallel_api_test(spec, kwargs):
    env = games.to_pettingzoo(games.make(spec, **kwargs))
    assert isinstance(env, games.export.GameParallelEnv)
    assert not _run(parallel_api_test, env)


def test_exports_are_seeded():
    seed_test(lambda: games.to_pettingzoo(games.make("openspiel/leduc_poker")), num_cycles=50)
    parallel_seed_test(
        lambda: games.to_pettingzoo(games.make("pettingzoo/mpe2.simple_spread_v3", N=3)),
        num_cycles=50,
    )


def test_exported_rewards_match_the_game():
    """Returns collected through the AEC export equal the game's own returns."""
    env = games.to_pettingzoo(games.make("openspiel/kuhn_poker"))
    ref = games.make("openspiel/kuhn_poker")
    for seed in range(20):
        env.reset(seed=seed)
        ts = ref.reset(seed)
        totals = {a: 0.0 for a in env.possible_agents}
        for agent in env.agent_iter():
            _, reward, term, trunc, _ = env.last()
            totals[agent] += reward
            action = None if term or trunc else 1  # always bet / call
            if action is not None:
                ts = ref.step({agent: action})
            env.step(action)
        expected = ts.rewards
        assert totals == pytest.approx(expected)
