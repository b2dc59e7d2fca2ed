"""Games adapted from PettingZoo with dict observations (action masks), our own exports included."""

import numpy as np
import pytest

import games

USER_MODULE = '''
import games


def kuhn():
    return games.to_pettingzoo(games.make("openspiel/kuhn_poker"))


def goofspiel(num_cards=4):
    return games.to_pettingzoo(games.make("openspiel/goofspiel", num_cards=num_cards))


def env():
    return games.to_pettingzoo(games.make("openspiel/leduc_poker"))
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A user's module that exports built-in games with ``games.to_pettingzoo``."""
    (tmp_path / "user_pz_exports.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "user_pz_exports"


def _same_spec(a: games.GameSpec, b: games.GameSpec) -> None:
    assert a.agents == b.agents and a.zero_sum == b.zero_sum and a.max_steps == b.max_steps
    assert a.simultaneous == b.simultaneous and dict(a.obs_shapes) == dict(b.obs_shapes)
    assert dict(a.action_spaces) == dict(b.action_spaces)


@pytest.mark.parametrize(
    ("path", "original", "kwargs"),
    [
        (":kuhn", "openspiel/kuhn_poker", {}),  # AEC export: turn-based, masks
        (".kuhn", "openspiel/kuhn_poker", {}),  # <module>.<function> works too
        (":goofspiel", "openspiel/goofspiel", {"num_cards": 4}),  # Parallel export, dict obs
        ("", "openspiel/leduc_poker", {}),  # the module's own env()
    ],
)
def test_exported_game_loads_back_through_the_prefix(user_module, path, original, kwargs):
    game = games.make(f"pettingzoo/{user_module}{path}", **kwargs)
    base = games.make(original, **kwargs)
    _same_spec(game.spec, base.spec)  # teams, roles, zero-sum and limits come back declared
    assert game.sides.source == "metadata"
    games.check_game(game, episodes=10, seed=1)


def test_roundtrip_masks_and_observations_match_the_original(user_module):
    game = games.make(f"pettingzoo/{user_module}:goofspiel", num_cards=4)
    base = games.make("openspiel/goofspiel", num_cards=4)
    ts, ref = game.reset(seed=5), base.reset(seed=5)
    rng = np.random.default_rng(0)
    while not ref.done:
        assert ts.acting == ref.acting
        for a in ref.acting:
            np.testing.assert_array_equal(ts.obs[a], ref.obs[a])
            np.testing.assert_array_equal(ts.legal[a], ref.legal[a])  # the mask, not all-legal
        actions = {a: int(rng.choice(np.flatnonzero(ref.legal[a]))) for a in ref.acting}
        ts, ref = game.step(actions), base.step(actions)
        assert ts.rewards == pytest.approx(ref.rewards)
    assert ts.done


def test_parallel_export_masks_are_used_as_legal_actions(user_module):
    game = games.make(f"pettingzoo/{user_module}:goofspiel", num_cards=4)
    ts = game.reset(seed=0)
    a = ts.acting[0]
    ts = game.step({b: 0 for b in ts.acting})  # card 0 is played: no longer legal
    assert not ts.legal[a][0] and list(game.legal_actions(a)) == [1, 2, 3]
    with pytest.raises(games.IllegalActionError, match="illegal action 0"):
        game.step({b: 0 for b in ts.acting})


def test_classic_game_action_mask_is_the_legal_mask():
    game = games.make("pettingzoo/pettingzoo.classic.connect_four_v3")
    ts = game.reset(seed=0)
    for _ in range(6):  # fill column 0
        ts = game.step({ts.acting[0]: 0})
    assert not ts.legal[ts.acting[0]][0] and ts.legal[ts.acting[0]][1:].all()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_such_module_xyz", "cannot import PettingZoo module"),
        ("user_pz_exports:missing", "has no function 'missing'"),
        ("user_pz_exports.missing", "cannot import PettingZoo module"),
    ],
)
def test_bad_paths_are_one_line_errors(user_module, path, message):
    with pytest.raises(games.UnknownGameError, match=message) as info:
        games.make(f"pettingzoo/{path}")
    assert "\n" not in str(info.value)


def test_bad_kwargs_of_a_user_function_name_its_parameters(user_module):
    with pytest.raises(games.GameError, match=r"accepted: \['num_cards'\]"):
        games.make(f"pettingzoo/{user_module}:goofspiel", cards=3)


def test_an_agent_removed_mid_episode_keeps_its_last_observation_for_the_episode_end():
    # knights_archers_zombies drops a dead archer from env.agents and from later observation
    # dicts; the episode goes on. Before, the episode end (VectorGame records every agent's
    # final observation) raised KeyError: 'archer_0'. The adapter keeps its last observation;
    # VectorGame's final_obs holds zeros for it at the episode end, as obs since it died.
    name = "pettingzoo/pettingzoo.butterfly.knights_archers_zombies_v11"
    vg = games.VectorGame(name, 1, seed=1, spawn_delay=1, max_zombies=30, num_knights=0)
    game, rng = vg.games[0], np.random.default_rng(1)
    vs, gone, last = vg.reset(), set(), {}
    while not vs.done[0]:
        acts = {a: np.array([rng.choice(np.flatnonzero(vs.legal[a][0])) if vs.acting[a][0]
                             else 0]) for a in vs.acting}
        vs = vg.step(acts)
        if not vs.done[0]:
            gone |= set(game.spec.agent_ids) - set(game.env.agents)
            last = {a: game.observe(a).copy() for a in gone}
    assert gone, "no archer died before the episode ended: pick another seed"
    for a in gone:
        assert last[a].any()
        np.testing.assert_array_equal(vs.final_obs[a][0], np.zeros_like(last[a]))


def test_a_module_whose_dependency_is_missing_names_the_package_to_install(tmp_path,
                                                                          monkeypatch):
    # like pettingzoo.butterfly.pistonball_v6 without pymunk: the hint to use another module
    # path was wrong, the module path was right
    (tmp_path / "user_pz_needs_dep.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(games.UnknownGameError) as info:
        games.make("pettingzoo/user_pz_needs_dep")
    assert str(info.value) == ("'pettingzoo/user_pz_needs_dep' needs the package "
                               "'no_such_dependency_xyz', which is not installed "
                               "(pip install no_such_dependency_xyz)")
