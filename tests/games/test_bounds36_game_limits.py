"""The games' size limits (bounds36): a switch that lifts them, universal_poker's and nim's
list parameters checked before loading, the range in a wrong kind's refusal, one line for
battleship's list mismatch, and a limit on the entities of a VMAS or MPE scenario in all.

- A researcher who needs a bigger game had no way past the upper limits (goofspiel
  ``num_cards`` 130, a VMAS or MPE count 256); ``SELFPLAY_GAME_LIMITS=off`` in the environment
  lifts them (never a file: a snapshot names only the game), and each refusal names it.
- ``universal_poker(numRounds=3)`` (the lists left with two entries) crashed the process
  inside OpenSpiel (ACPC's reader refused the game and OpenSpiel used it anyway); every
  inconsistency it refuses is now refused first, in one line naming the parameters.
- ``goofspiel(num_cards='abc')`` was refused as "an integer >= 1", without the upper limit.
- nim's ``pile_sizes`` (OpenSpiel's ``'1;3;5;7'``, no brackets) took no list
  (``[1,3,5]``: "accepted: a string") and no check (``'1000000000'`` hung loading).
- battleship's ``ship_sizes=[2,3]`` (five values) let a second line of OpenSpiel's error out.
- Counts each within their limit could together build for minutes (MPE simple_world_comm's
  five at 256).
"""

from __future__ import annotations

import logging
import sys

import pyspiel
import pytest

import games
from games.limits import ENV, HINT
from games.openspiel_params import poker_problem
from games.pettingzoo_params import MAX_MPE_ENTITIES, MPE_ENTITY_TOTALS
from games.vmas_params import ENTITY_TOTALS, MAX_ENTITIES
from tests import subprocs

# a hang guard, not a speed claim: before these fixes some of the values here hung
pytestmark = pytest.mark.timeout(300)

POKER_SPEC = next(g for g in pyspiel.registered_games()
                  if g.short_name == "universal_poker").parameter_specification


@pytest.fixture(autouse=True)
def _limits_on(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)


# --- 1. the switch ---------------------------------------------------------------------------

def test_a_size_just_above_its_limit_is_refused_naming_the_switch():
    with pytest.raises(games.GameError) as info:
        games.make("openspiel/goofspiel", num_cards=131)
    assert str(info.value) == ("bad parameter for openspiel/goofspiel: num_cards=131 is too "
                               f"large; accepted: an integer in [1, 130] ({HINT})")
    assert "SELFPLAY_GAME_LIMITS=off" in HINT


def test_the_switch_builds_it(monkeypatch):
    monkeypatch.setenv(ENV, "off")
    env = games.make("openspiel/goofspiel", num_cards=131)
    env.reset(seed=0)
    assert env.pyspiel_game.get_parameters()["num_cards"] == 131


def test_the_switch_lifts_vmas_and_mpe_counts(monkeypatch):
    for spec, kwargs, line in [
        ("vmas/navigation", {"n_agents": 1, "n_lidar_rays": 257},
         f"vmas/navigation: n_lidar_rays=257 is too large; accepted: an integer in [0, 256] "
         f"({HINT})"),
        ("pettingzoo/mpe2.simple_spread_v3", {"N": 257},
         f"pettingzoo/mpe2.simple_spread_v3: N=257 is too large; accepted: an integer in "
         f"[1, 256] ({HINT})"),
    ]:
        with pytest.raises(games.GameError) as info:
            games.make(spec, **kwargs)
        assert str(info.value) == line
    monkeypatch.setenv(ENV, "off")
    games.make("vmas/navigation", n_agents=1, n_lidar_rays=257).reset(seed=0)
    # a lower limit stays: below it the game crashes whatever its size
    with pytest.raises(games.GameError, match=r"N=0; accepted: an integer >= 1$"):
        games.make("pettingzoo/mpe2.simple_spread_v3", N=0)


def test_a_limit_of_the_games_own_code_is_not_lifted(monkeypatch):
    monkeypatch.setenv(ENV, "off")
    with pytest.raises(games.GameError) as info:
        games.make("openspiel/universal_poker", numRounds=5)
    assert str(info.value) == ("bad parameter for openspiel/universal_poker: numRounds=5 is "
                               "too large; accepted: an integer in [1, 4]")


def test_a_config_cannot_lift_the_limits(tmp_path):
    """Only the environment of the process lifts them: Hydra's ``hydra.job.env_set`` (which
    a config file could hold) does not."""
    args = [sys.executable, "-m", "populations.cli", "game=kuhn",
            "game.name=openspiel/goofspiel", "+game.kwargs.num_cards=131",
            f"+hydra.job.env_set.{ENV}=off", "hydra.run.dir=runs/r1"]
    res = subprocs.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert res.stderr.strip().splitlines() == [
        "selfplay-train: bad parameter for openspiel/goofspiel: num_cards=131 is too large; "
        f"accepted: an integer in [1, 130] ({HINT})"]


@pytest.mark.parametrize("value", ["", "on", "0"])
def test_other_values_of_the_switch_keep_the_limits(monkeypatch, value):
    monkeypatch.setenv(ENV, value)
    with pytest.raises(games.GameError, match="is too large"):
        games.make("openspiel/goofspiel", num_cards=131)


# --- 2. universal_poker's lists --------------------------------------------------------------

@pytest.mark.parametrize(("given", "problem"), [
    ({"numRounds": 3}, "numBoardCards='0 1' has 2 of the 3 entries numRounds=3 needs"),
    ({"numPlayers": 3}, "blind='100 100' has 2 of the 3 entries numPlayers=3 needs, "
                        "stack='1200 1200' has 2 of the 3 entries numPlayers=3 needs"),
    ({"betting": "limit", "raiseSize": "100"},
     "raiseSize='100' has 1 of the 2 entries numRounds=2 needs"),
    ({"firstPlayer": "0 1"}, "firstPlayer='0 1' names a seat outside [1, numPlayers=2]"),
    ({"firstPlayer": "1 -1"}, "firstPlayer='1 -1' names a seat outside [1, numPlayers=2]"),
    ({"numBoardCards": "3 5", "numRanks": 13},
     "numBoardCards='3 5' deals 8 board cards in numRounds=2 (at most 7 in all, none below 0)"),
    ({"numBoardCards": "0 -1"},
     "numBoardCards='0 -1' deals -1 board cards in numRounds=2 (at most 7 in all, none below "
     "0)"),
    ({"numBoardCards": "0 7", "numRanks": 2},
     "numPlayers=2 x numHoleCards=1 + numBoardCards='0 7' deal 9 cards, more than the deck's "
     "numSuits=4 x numRanks=2"),
    ({"blind": "2000 2000"}, "blind='2000 2000' is above stack='1200 1200' for a player"),
    ({"blind": "100 x"}, "blind='100 x' is not whole numbers separated by spaces"),
    # every player all-in at the blinds: games.make hung (fix36)
    ({"stack": "100 100"}, "blind='100 100' equals stack='100 100' for every player: all are "
                           "all-in at the blinds and none can act (at least one stack must be "
                           "above its blind)"),
    ({"numPlayers": 3, "blind": "1 2 3", "stack": "1 2 3", "firstPlayer": "1 1"},
     "blind='1 2 3' equals stack='1 2 3' for every player: all are all-in at the blinds and "
     "none can act (at least one stack must be above its blind)"),
])
def test_inconsistent_poker_parameters_are_named(given, problem):
    """Each of these crashed (segfault) or hung the process inside OpenSpiel: checked here
    without loading them."""
    assert poker_problem(POKER_SPEC, given) == problem


@pytest.mark.parametrize("given", [
    {}, {"numRounds": 3, "numBoardCards": "0 1 1"}, {"numRounds": 1, "numBoardCards": "0"},
    {"numPlayers": 3, "blind": "100 100 100", "stack": "1200 1200 1200"},
    {"betting": "limit", "blind": "2000 2000"}, {"numBoardCards": "0 7", "numRanks": 13},
    {"numRounds": 4, "numBoardCards": "0 1 1 1", "firstPlayer": "2 1 1 1",
     "maxRaises": "3 3 3 3"},
    # all-in at the blinds but one player, who can still act (fix36)
    {"stack": "100 200"}, {"blind": "1 2", "stack": "2 2"},
    {"numPlayers": 3, "blind": "1 2 3", "stack": "1 2 4", "firstPlayer": "1 1"},
    {"betting": "limit", "blind": "100 100", "stack": "100 100"},
])
def test_consistent_poker_parameters_load(given):
    assert poker_problem(POKER_SPEC, given) is None
    games.make("openspiel/universal_poker", **given).reset(seed=0)


@pytest.mark.parametrize(("kwargs", "start"), [
    (["+game.kwargs.numRounds=3"],
     "numBoardCards='0 1' has 2 of the 3 entries numRounds=3 needs; accepted: whole numbers "
     "separated by spaces, numBoardCards, firstPlayer"),
    # every player all-in at the blinds: hung (fix36)
    (["+game.kwargs.stack='100 100'"],
     "blind='100 100' equals stack='100 100' for every player: all are all-in at the blinds "
     "and none can act (at least one stack must be above its blind); accepted: "),
])
def test_selfplay_train_refuses_inconsistent_poker_in_one_line(tmp_path, kwargs, start):
    args = [sys.executable, "-m", "populations.cli", "game=kuhn",
            "game.name=openspiel/universal_poker", *kwargs, "hydra.run.dir=runs/r1"]
    res = subprocs.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(
        "selfplay-train: bad parameters for openspiel/universal_poker: " + start), lines[0]
    assert not (tmp_path / "runs").exists()


# --- 3. the range in a wrong kind's refusal --------------------------------------------------

@pytest.mark.parametrize(("spec", "kwargs", "end"), [
    ("openspiel/goofspiel", {"num_cards": "abc"}, "num_cards='abc'; accepted: an integer in "
                                                  "[1, 130]"),
    ("openspiel/liars_dice", {"numdice": 2.5}, "numdice=2.5; accepted: an integer in [1, 100]"),
    ("vmas/navigation", {"n_agents": "x"}, "n_agents='x'; accepted: an integer in [1, 256]"),
    ("pettingzoo/mpe2.simple_spread_v3", {"N": "x"}, "N='x'; accepted: an integer in [1, 256]"),
])
def test_a_wrong_kind_is_refused_with_the_whole_range(spec, kwargs, end):
    with pytest.raises(games.GameError) as info:
        games.make(spec, **kwargs)
    assert str(info.value).endswith(end), str(info.value)


# --- 4. nim's pile_sizes ---------------------------------------------------------------------

def test_nim_takes_a_list_written_as_openspiel_writes_it():
    listed = games.make("openspiel/nim", pile_sizes=[1, 3, 5])
    written = games.make("openspiel/nim", pile_sizes="1;3;5")
    assert listed.pyspiel_game.get_parameters()["pile_sizes"] == "1;3;5"
    assert listed.spec.name == written.spec.name


NIM_FORM = ("accepted: whole numbers >= 0 separated by ';' like the default '1;3;5;7' "
            "(game.kwargs.pile_sizes=[1,3,5,7] or \"game.kwargs.pile_sizes='1;3;5;7'\")")


@pytest.mark.parametrize(("value", "line"), [
    ("[1;3;5]", f"pile_sizes='[1;3;5]'; {NIM_FORM}"),  # battleship's form: not nim's
    ("1;-2", f"pile_sizes='1;-2'; {NIM_FORM}"),  # built a game with a negative pile
    (5, "pile_sizes=5; accepted: a string like the default '1;3;5;7' "
        "(game.kwargs.pile_sizes=[1,3,5,7] or \"game.kwargs.pile_sizes='1;3;5;7'\")"),
    ("1000000000", f"pile_sizes='1000000000' is too large; {NIM_FORM}, at most 100 piles of "
                   f"at most 100 ({HINT})"),  # hung loading
])
def test_nim_refuses_other_pile_sizes_in_one_line(value, line):
    with pytest.raises(games.GameError) as info:
        games.make("openspiel/nim", pile_sizes=value)
    assert str(info.value) == f"bad parameter for openspiel/nim: {line}"


# --- 5. battleship's mismatch: our line only -------------------------------------------------

def test_battleship_mismatch_logs_no_line_of_openspiels(caplog):
    caplog.set_level(logging.WARNING, logger="games.openspiel")
    with pytest.raises(games.GameError, match="ship_sizes.size"):
        # three sizes (not two: a line once warned is not warned again in this process)
        games.make("openspiel/battleship", ship_sizes=[2, 3, 4])
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_selfplay_train_says_battleships_mismatch_in_one_line(tmp_path):
    args = [sys.executable, "-m", "populations.cli", "game=kuhn",
            "game.name=openspiel/battleship", "+game.kwargs.ship_sizes=[2,3]",
            "hydra.run.dir=runs/r1"]
    res = subprocs.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "ship_sizes.size() == ship_values.size()" in lines[0], lines


# --- 6. entities in all ----------------------------------------------------------------------

def test_mpe_counts_each_within_their_limit_are_refused_together():
    counts = {"num_good": 256, "num_adversaries": 256, "num_obstacles": 256, "num_food": 256,
              "num_forests": 256}
    with pytest.raises(games.GameError) as info:
        games.make("pettingzoo/mpe2.simple_world_comm_v3", **counts)
    assert str(info.value) == (
        "pettingzoo/mpe2.simple_world_comm_v3: num_good=256 + num_adversaries=256 + "
        "num_obstacles=256 + num_food=256 + num_forests=256 = 1280 entities are too many; "
        f"accepted: at most {MPE_ENTITY_TOTALS['simple_world_comm']} in all ({HINT})")


def test_mpe_defaults_count_toward_the_total():
    # num_good 1 (default) + 256 + 256 = 513
    with pytest.raises(games.GameError) as info:
        games.make("pettingzoo/mpe2.simple_tag_v3", num_adversaries=256, num_obstacles=256)
    assert str(info.value).endswith(
        f"num_good=1 + num_adversaries=256 + num_obstacles=256 = 513 entities are too many; "
        f"accepted: at most {MAX_MPE_ENTITIES} in all ({HINT})"), str(info.value)


def test_mpe_world_comm_at_its_total_builds():
    counts = {"num_good": 21, "num_adversaries": 21, "num_obstacles": 0, "num_food": 1,
              "num_forests": 21}
    assert sum(counts.values()) == MPE_ENTITY_TOTALS["simple_world_comm"]
    games.make("pettingzoo/mpe2.simple_world_comm_v3", **counts).reset(seed=0)
    with pytest.raises(games.GameError, match="= 65 entities are too many"):
        games.make("pettingzoo/mpe2.simple_world_comm_v3", **{**counts, "num_food": 2})


def test_vmas_counts_each_within_their_limit_are_refused_together():
    # each within its limit, its scenario's total 32 (fix36: a count alone is bounded by it)
    counts = {"num_good_agents": 20, "num_adversaries": 20, "num_landmarks": 20,
              "num_food": 20, "num_forests": 20}
    with pytest.raises(games.GameError) as info:
        games.make("vmas/simple_world_comm", **counts)
    assert str(info.value) == (
        "vmas/simple_world_comm: num_good_agents=20 + num_adversaries=20 + num_landmarks=20 "
        "+ num_food=20 + num_forests=20 = 100 entities are too many; accepted: at most "
        f"{ENTITY_TOTALS['simple_world_comm']} in all ({HINT})")


def test_vmas_defaults_count_toward_the_total():
    # num_good_agents 1 + num_adversaries 3 (defaults) + 256
    with pytest.raises(games.GameError) as info:
        games.make("vmas/simple_tag", num_landmarks=256)
    assert str(info.value) == (
        "vmas/simple_tag: num_good_agents=1 + num_adversaries=3 + num_landmarks=256 = 260 "
        f"entities are too many; accepted: at most {MAX_ENTITIES} in all ({HINT})")


def test_vmas_counts_that_are_not_entities_are_left_out():
    # lidar rays are a count with a limit of its own, not an entity built per agent
    games.make("vmas/navigation", n_agents=1, n_lidar_rays=256).reset(seed=0)


# --- 7. the total per scenario (fix36) -------------------------------------------------------

def test_vmas_a_cheap_scenario_takes_as_many_entities_as_one_count():
    # a total of 64 for every scenario refused simple_spread's 65 agents (~0.4 s to build)
    assert MAX_ENTITIES == 256
    games.make("vmas/simple_spread", n_agents=65).reset(seed=0)


@pytest.mark.parametrize("value", [100, 300])
def test_vmas_one_count_states_its_scenarios_lower_total(value):
    # flocking's total is 64: n_agents=100 and n_agents=300 state the same maximum
    assert ENTITY_TOTALS["flocking"] == 64
    with pytest.raises(games.GameError) as info:
        games.make("vmas/flocking", n_agents=value)
    assert str(info.value) == (f"vmas/flocking: n_agents={value} is too large; accepted: an "
                               f"integer in [1, 64] ({HINT})")


def test_vmas_a_wrong_kind_states_its_scenarios_lower_total():
    with pytest.raises(games.GameError) as info:
        games.make("vmas/flocking", n_agents="x")
    assert str(info.value).endswith("n_agents='x'; accepted: an integer in [1, 64]")
