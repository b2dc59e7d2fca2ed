"""Game arguments of the wrong kind are refused at make time in one line naming what is
accepted (fix 32a, walk32 H1, H2, M5, L2, L11):

* a boolean parameter given a string (``continuous_actions='false'``, a quoted YAML value)
  built PettingZoo's MPE and VMAS games with continuous actions, without a word;
* rlcard's hold'em ``num_players=1`` hung selfplay-train's start check forever;
* VMAS scenario parameters failed inside the scenario (``n_agents='x'``: range()'s
  TypeError; ``n_agents=0``: an assert about ``agents_with_same_goal``);
* an OpenSpiel parameter of the wrong type listed the game's parameter names as accepted;
* ``python -m games`` listed PettingZoo modules that cannot be made for a missing package.
"""

import importlib.util
import sys

import pytest

import games
from games import GameError
from tests import subprocs


def _refused(name, **kwargs):
    with pytest.raises(GameError) as err:
        games.make(name, **kwargs)
    return str(err.value)


# ------------------------------------------------------------------ PettingZoo (H1, H2)
@pytest.mark.parametrize("value", ["maybe", "false", 2])  # 0 and 1: test_fix32d_params
def test_mpe_boolean_parameter_takes_true_or_false_only(value):
    pytest.importorskip("mpe2")
    assert _refused("pettingzoo/mpe2.simple_spread_v3", continuous_actions=value) == (
        f"bad parameter for pettingzoo/mpe2.simple_spread_v3: continuous_actions={value!r}; "
        "accepted: true or false")


def test_mpe_boolean_parameter_true_still_builds_continuous_actions():
    pytest.importorskip("mpe2")
    game = games.make("pettingzoo/mpe2.simple_spread_v3", continuous_actions=True)
    assert game.spec.action_spaces["agent_0"].kind == "continuous"
    game = games.make("pettingzoo/mpe2.simple_spread_v3", continuous_actions=False)
    assert game.spec.action_spaces["agent_0"].kind == "discrete"


@pytest.mark.parametrize("module, key, value, accepted", [
    ("mpe2.simple_spread_v3", "local_ratio", "x", "a number"),  # annotated 'float'
    ("pettingzoo.classic.go_v5", "komi", "x", "a number"),  # failed at an episode's end
    ("pettingzoo.classic.go_v5", "board_size", 0, "an integer >= 1"),  # only 'pass' to play
    ("pettingzoo.classic.go_v5", "board_size", 2.0, "an integer >= 1"),
])
def test_pettingzoo_parameter_of_the_wrong_kind_names_what_is_accepted(module, key, value,
                                                                       accepted):
    pytest.importorskip(module.rpartition(".")[0])
    assert _refused(f"pettingzoo/{module}", **{key: value}) == (
        f"bad parameter for pettingzoo/{module}: {key}={value!r}; accepted: {accepted}")


def test_pettingzoo_parameter_of_the_right_kind_still_builds():
    pytest.importorskip("mpe2")
    game = games.make("pettingzoo/mpe2.simple_spread_v3", local_ratio=1, N=2)
    assert game.spec.name == "pettingzoo/mpe2.simple_spread_v3(N=2,local_ratio=1)"


@pytest.mark.parametrize("module", ["texas_holdem_v4", "texas_holdem_no_limit_v6"])
@pytest.mark.parametrize("players", [1, True, 0, 24, "two"])
def test_rlcard_holdem_player_count_is_refused_at_make_time(module, players):
    """num_players=1 (and true, which is 1) hung no_limit's start check in rlcard's round
    loop; 24 players need more cards than a deck has."""
    pytest.importorskip("rlcard")
    name = f"pettingzoo/pettingzoo.classic.{module}"
    assert _refused(name, num_players=players) == (
        f"bad parameter for {name}: num_players={players!r}; accepted: an integer in [2, 23]")


def test_rlcard_holdem_three_players_still_play():
    pytest.importorskip("rlcard")
    game = games.make("pettingzoo/pettingzoo.classic.texas_holdem_no_limit_v6", num_players=3)
    assert len(game.spec.agents) == 3
    games.check_game(game, episodes=2)


# ------------------------------------------------------------------ VMAS (H1, M5)
@pytest.mark.parametrize("scenario, key, value, accepted", [
    ("navigation", "n_agents", 0, "an integer in [1, 256]"),
    ("simple_spread", "n_agents", "x", "an integer in [1, 256]"),
    ("navigation", "n_agents", 2.5, "an integer in [1, 256]"),
    ("navigation", "n_lidar_rays", -1, "an integer in [0, 256]"),
    ("give_way", "mirror_passage", "notabool", "true or false"),
    ("navigation", "lidar_range", "far", "a number"),
    ("navigation", "continuous_actions", "false", "true or false"),
])
def test_vmas_parameter_of_the_wrong_kind_names_what_is_accepted(scenario, key, value,
                                                                 accepted):
    pytest.importorskip("vmas")
    assert _refused(f"vmas/{scenario}", **{key: value}) == (
        f"bad parameter for vmas/{scenario}: {key}={value!r}; accepted: {accepted}")


def test_vmas_rules_come_from_every_scenarios_defaults_which_they_accept():
    """The rules are read from each scenario's source (``kwargs.pop("n_agents", 4)``), not
    listed by hand: every scenario's own defaults pass them."""
    pytest.importorskip("vmas")
    from games.vmas import SCENARIOS
    from games.vmas_params import check_scenario_kwargs, scenario_defaults

    assert scenario_defaults("navigation")["n_agents"] == 4
    assert scenario_defaults("give_way")["mirror_passage"] is False
    for scenario in SCENARIOS:
        check_scenario_kwargs(scenario, scenario_defaults(scenario))


def test_vmas_parameter_of_the_right_kind_still_builds():
    pytest.importorskip("vmas")
    game = games.make("vmas/navigation", n_agents=2, lidar_range=1)
    assert len(game.spec.agents) == 2 and game.spec.name == \
        "vmas/navigation(lidar_range=1,n_agents=2)"


# ------------------------------------------------------------------ OpenSpiel (L2)
@pytest.mark.parametrize("game, key, value, accepted", [
    ("kuhn_poker", "players", "three", "an integer in [2, 10]"),
    ("goofspiel", "num_cards", "abc", "an integer in [1, 130]"),
    ("deep_sea", "randomize_actions", "yes", "true or false"),
    ("deep_sea", "unscaled_move_cost", "x", "a number"),
])
def test_openspiel_parameter_of_the_wrong_type_names_its_kind(game, key, value, accepted):
    pytest.importorskip("pyspiel")
    assert _refused(f"openspiel/{game}", **{key: value}) == (
        f"bad parameter for openspiel/{game}: {key}={value!r}; accepted: {accepted}")


# ------------------------------------------------------------------ python -m games (L11)
def test_missing_packages_follow_a_modules_imports(tmp_path, monkeypatch):
    """A module whose package imports a package that is not installed is found without
    importing it; an optional import (in a try) does not count."""
    pkg = tmp_path / "fam_fix32a"
    (pkg / "inner").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "inner" / "__init__.py").write_text("")
    (pkg / "inner" / "base.py").write_text("import os\nimport nosuchpkg_fix32a.sub\n")
    (pkg / "game_v1.py").write_text("from fam_fix32a.inner.base import thing\n")
    (pkg / "other_v1.py").write_text(
        "from .inner import __name__ as n\ntry:\n    import nosuchpkg_fix32a\n"
        "except ImportError:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from games.__main__ import missing_packages

    assert missing_packages("fam_fix32a.game_v1") == ("nosuchpkg_fix32a",)
    assert missing_packages("fam_fix32a.other_v1") == ()
    assert "fam_fix32a" not in sys.modules


def test_the_listing_marks_a_pettingzoo_module_whose_package_is_missing():
    pytest.importorskip("pettingzoo.sisl")
    out = subprocs.run([sys.executable, "-m", "games", "pettingzoo"], capture_output=True,
                       text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    walker = next(line for line in lines if "sisl.multiwalker_v9" in line)
    if importlib.util.find_spec("Box2D") is None:
        assert walker == ("  pettingzoo/pettingzoo.sisl.multiwalker_v9  (needs Box2D, not "
                          "installed: pip install 'pettingzoo[sisl]')")
        assert "need a package that is not installed, marked" in lines[0]
    else:
        assert walker == "  pettingzoo/pettingzoo.sisl.multiwalker_v9"
    assert "  pettingzoo/mpe2.simple_spread_v3" in lines  # installed: unmarked
