"""Game arguments fix32a's kind rules refused although they were right (review32 M1, M2, L1):

* VMAS football ``n_red_agents=0`` (a blue-only scoring drill) built and passed
  ``check_game`` before, then was refused as "an integer >= 1": only the total agent count
  (``n_agents`` / ``num_agents``) needs one agent, a team's count may be 0;
* VMAS refused numpy numbers and bools (``n_agents=np.int64(3)``: "accepted: an integer
  >= 1"), which the PettingZoo and OpenSpiel rules accept;
* a game flag given 0 or 1 was refused in all three adapters, while top-level flags
  (``progress=1``) take them, and a run recorded with ``shared_rew=0`` before could not be
  resumed or evaluated from its recorded name. The game gets the bool; the name keeps the
  value as given, so a recorded name makes the same name again.
"""

import numpy as np
import pytest

import games
from games import GameError
from games.registry import split_name


def _refused(name, **kwargs):
    with pytest.raises(GameError) as err:
        games.make(name, **kwargs)
    return str(err.value)


# ------------------------------------------------------------------ M1
def test_vmas_football_without_red_agents_builds_and_checks():
    pytest.importorskip("vmas")
    game = games.make("vmas/football", n_red_agents=0, max_steps=20)
    assert [a.id for a in game.spec.agents] == [f"agent_blue_{i}" for i in range(3)]
    assert game.spec.name == "vmas/football(max_steps=20,n_red_agents=0)"
    games.check_game(game, episodes=1)


@pytest.mark.parametrize("scenario, key", [("navigation", "n_agents"),
                                           ("football", "n_blue_agents"),
                                           ("football", "n_red_agents")])
def test_vmas_agent_counts_below_their_floor_are_still_refused(scenario, key):
    pytest.importorskip("vmas")
    low = 1 if key == "n_agents" else 0
    assert _refused(f"vmas/{scenario}", **{key: low - 1}) == (
        f"bad parameter for vmas/{scenario}: {key}={low - 1}; accepted: an integer in "
        f"[{low}, 256]")


@pytest.mark.parametrize("kwargs", [{"n_blue_agents": 0}, {"n_blue_agents": 0, "n_red_agents": 0}])
def test_vmas_football_without_the_agents_it_needs_names_the_count(kwargs):
    """VMAS fails on these with "stack expects a non-empty TensorList" (before fix32a too)."""
    pytest.importorskip("vmas")
    given = ", ".join(f"{k}=0" for k in kwargs)
    verb, some = ("leaves", "") if len(kwargs) == 1 else ("leave", " for one of them")
    assert _refused("vmas/football", **kwargs) == (
        f"bad parameter for vmas/football: {given} {verb} the scenario without agents it needs "
        "(RuntimeError: stack expects a non-empty TensorList); accepted: an integer >= 1"
        f"{some}")


# ------------------------------------------------------------------ M2
@pytest.mark.parametrize("kwargs, name", [
    ({"n_agents": np.int64(2)}, "vmas/navigation(n_agents=2)"),
    ({"n_agents": 2, "lidar_range": np.float32(0.5)},
     "vmas/navigation(lidar_range=0.5,n_agents=2)"),
    ({"n_agents": 2, "shared_rew": np.bool_(True)}, "vmas/navigation(n_agents=2,shared_rew=True)"),
])
def test_vmas_takes_numpy_numbers_and_bools(kwargs, name):
    pytest.importorskip("vmas")
    assert games.make("vmas/navigation", **kwargs).spec.name == name


@pytest.mark.parametrize("value", [np.int64(-1), np.float64(2.0)])
def test_vmas_numpy_values_of_the_wrong_kind_are_still_refused(value):
    pytest.importorskip("vmas")
    assert _refused("vmas/navigation", n_agents=value) == (
        f"bad parameter for vmas/navigation: n_agents={value!r}; accepted: an integer in "
        "[1, 256]")


# ------------------------------------------------------------------ L1
def _remade(name):
    base, kwargs = split_name(name)
    return games.make(base, **kwargs)


@pytest.mark.parametrize("value", [0, 1, np.int64(1)])
def test_vmas_flag_takes_0_and_1_and_a_recorded_name_stays_the_same(value):
    pytest.importorskip("vmas")
    game = games.make("vmas/navigation", n_agents=2, shared_rew=value)
    assert game.spec.name == f"vmas/navigation(n_agents=2,shared_rew={int(value)})"
    assert game.kwargs["shared_rew"] is bool(value)  # the scenario gets the bool
    assert game._sim.env.scenario.shared_rew is bool(value)
    assert _remade(game.spec.name).spec.name == game.spec.name


@pytest.mark.parametrize("value", [0, 1])
def test_vmas_adapter_flags_take_0_and_1(value):
    pytest.importorskip("vmas")
    game = games.make("vmas/navigation", n_agents=2, continuous_actions=value,
                      memory_check=value)
    kind = "continuous" if value else "discrete"
    assert game.spec.action_spaces["agent_0"].kind == kind
    assert game.memory_check is bool(value)


@pytest.mark.parametrize("game, key", [("vmas/navigation", "shared_rew"),
                                       ("vmas/navigation", "continuous_actions"),
                                       ("pettingzoo/mpe2.simple_spread_v3", "continuous_actions"),
                                       ("openspiel/deep_sea", "randomize_actions")])
@pytest.mark.parametrize("value", ["false", "maybe", 2, -1, 0.0])
def test_a_flag_still_refuses_words_and_other_numbers(game, key, value):
    pytest.importorskip({"vmas": "vmas", "pettingzoo": "mpe2", "openspiel": "pyspiel"}[
        game.split("/")[0]])
    assert _refused(game, **{key: value}) == (
        f"bad parameter for {game}: {key}={value!r}; accepted: true or false")


@pytest.mark.parametrize("value", [0, 1])
def test_pettingzoo_flag_takes_0_and_1_and_a_recorded_name_stays_the_same(value):
    pytest.importorskip("mpe2")
    game = games.make("pettingzoo/mpe2.simple_spread_v3", N=2, continuous_actions=value)
    assert game.spec.action_spaces["agent_0"].kind == ("continuous" if value else "discrete")
    assert game.env.unwrapped.continuous_actions is bool(value)  # the env gets the bool
    assert game.spec.name == (
        f"pettingzoo/mpe2.simple_spread_v3(N=2,continuous_actions={value})")
    assert _remade(game.spec.name).spec.name == game.spec.name


@pytest.mark.parametrize("value", [0, 1])
def test_openspiel_flag_takes_0_and_1_as_the_bool(value):
    """OpenSpiel itself refused an int for a bool ("Wrong type"), so no name was ever
    recorded with 0 or 1: the game and its name get the bool, the name of true / false; a
    game string is named as given, as ever."""
    pytest.importorskip("pyspiel")
    game = games.make("openspiel/deep_sea", randomize_actions=value)
    assert game.spec.name == games.make("openspiel/deep_sea",
                                        randomize_actions=bool(value)).spec.name
    assert game.game.get_parameters()["randomize_actions"] is bool(value)
    in_string = games.make(f"openspiel/deep_sea(randomize_actions={value})")  # named as given
    assert in_string.game.get_parameters()["randomize_actions"] is bool(value)
