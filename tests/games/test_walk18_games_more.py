"""A user-path walk (session 18) over PettingZoo and OpenSpiel games found three messages that
misled: running out of memory building game copies read as bad arguments, an MPE count below
its bound (``N=-1``) read as numpy's words, and OpenSpiel's "known issues" warning for a game
came once per copy of the game."""

from __future__ import annotations

import gc

import mpe2.simple_spread_v3
import pygame
import pytest

import games

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
