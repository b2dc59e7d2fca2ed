"""A user-path walk (session 18) over PettingZoo and OpenSpiel games found three messages that
misled: running out of memory building game copies read as bad arguments, an MPE count below
its bound (``N=-1``) read as numpy's words, and OpenSpiel's "known issues" warning for a game
came once per copy of the game."""

from __future__ import annotations

import gc
import logging

import mpe2.simple_spread_v3
import pygame
import pytest

import games
from games import openspiel as os_adapter

SPREAD = "pettingzoo/mpe2.simple_spread_v3"


# -- out of memory while building copies --------------------------------------------------


@pytest.mark.parametrize("err", [MemoryError(), pygame.error("Out of memory")],
                         ids=["MemoryError", "pygame"])
def test_out_of_memory_building_a_copy_says_so_and_not_bad_arguments(monkeypatch, err):
    # selfplay-train game=mpe_spread num_envs=20000 under a memory cap: "bad arguments for
    # pettingzoo/mpe2.simple_spread_v3 {'N': 3, 'max_cycles': 25}: error: Out of memory"
    gc.collect()  # copies other tests left behind
    kept = [games.make(SPREAD, N=3, max_cycles=25) for _ in range(2)]  # copies 1 and 2

    def out_of_memory(**kwargs):
        raise err

    monkeypatch.setattr(mpe2.simple_spread_v3, "parallel_env", out_of_memory)
    with pytest.raises(games.GameError) as info:
        games.make(SPREAD, N=3, max_cycles=25)
    msg = str(info.value)
    assert "bad arguments" not in msg and "accepted" not in msg and "\n" not in msg
    assert msg.startswith(f"out of memory building copy 3 of {SPREAD} {{'N': 3, 'max_cycles': 25}}")
    assert msg.endswith("; lower num_envs")
    assert type(err).__name__ in msg
    del kept


def test_bad_arguments_still_read_as_bad_arguments():
    with pytest.raises(games.GameError) as info:
        games.make(SPREAD, local_ratio=5)
    assert str(info.value).startswith(f"bad arguments for {SPREAD} {{'local_ratio': 5}}")


# -- MPE counts below their bound ---------------------------------------------------------

BELOW = [  # (scenario, argument, lowest value the env plays a sensible game with)
    ("simple_spread_v3", "N", 1),
    ("simple_spread_v3", "num_agent_neighbors", 1),
    ("simple_spread_v3", "num_landmark_neighbors", 1),
    ("simple_adversary_v3", "N", 1),
    ("simple_formation_v1", "N", 1),
    ("simple_line_v1", "N", 1),
    ("simple_tag_v3", "num_good", 1),  # 0: no prey, every reward 0
    ("simple_tag_v3", "num_adversaries", 1),
    ("simple_tag_v3", "num_obstacles", 0),
    ("simple_world_comm_v3", "num_good", 1),
    ("simple_world_comm_v3", "num_adversaries", 1),  # 0: a good agent named leadadversary_0
    ("simple_world_comm_v3", "num_obstacles", 0),
    ("simple_world_comm_v3", "num_food", 1),
    ("simple_world_comm_v3", "num_forests", 0),
    ("collect_treasure_v1", "num_collectors", 1),
    ("collect_treasure_v1", "num_deposits", 1),
    ("collect_treasure_v1", "num_treasures", 1),
]


@pytest.mark.parametrize(("scenario", "arg", "low"), BELOW)
@pytest.mark.parametrize("offset", [-1, -2])
def test_an_mpe_count_below_its_bound_is_refused_in_one_line(scenario, arg, low, offset):
    # N=-1: "bad arguments ... ValueError: zero-size array to reduction operation maximum";
    # num_good=-1 in simple_tag built a game of two adversaries, silently
    value = low + offset
    with pytest.raises(games.GameError) as info:
        games.make(f"pettingzoo/mpe2.{scenario}", **{arg: value})
    assert str(info.value) == (f"bad parameter for pettingzoo/mpe2.{scenario}: {arg}={value!r}; "
                               f"accepted: an integer in [{low}, 256]")


@pytest.mark.parametrize("value", [True, 2.5, "3"])
def test_an_mpe_count_that_is_not_an_integer_is_refused(value):
    # N=True built a one-agent game, silently
    with pytest.raises(games.GameError) as info:
        games.make(SPREAD, N=value)
    assert str(info.value) == (f"bad parameter for {SPREAD}: N={value!r}; "
                               "accepted: an integer in [1, 256]")


@pytest.mark.parametrize(("scenario", "arg", "low"), BELOW)
def test_an_mpe_count_at_its_bound_builds(scenario, arg, low):
    game = games.make(f"pettingzoo/mpe2.{scenario}", **{arg: low})
    game.reset(0)
    game.close()


def test_the_neighbour_counts_may_be_left_unset():
    assert games.make(SPREAD, num_agent_neighbors=None).spec.agents


# -- OpenSpiel's "known issues" warning, once per game ------------------------------------


def test_openspiel_warns_about_a_game_once_per_process(monkeypatch, caplog):
    # 'game.name="openspiel/quoridor(board_size=5)"' printed it once per game copy (67 times)
    monkeypatch.setattr(os_adapter, "_warned_cpp", set(), raising=False)
    with caplog.at_level(logging.WARNING, logger="games.openspiel"):
        for _ in range(3):
            games.make("openspiel/quoridor(board_size=5)")
    known = [r for r in caplog.records if "known issues" in r.getMessage()]
    assert len(known) == 1 and known[0].levelno == logging.WARNING
    assert "'quoridor'" in known[0].getMessage()
