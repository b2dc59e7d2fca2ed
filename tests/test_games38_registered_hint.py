"""games38 (walk38a L2): a misspelt name of a game registered by the user gets the nearest
registered name, as OpenSpiel's and PettingZoo's names do.

Before: ``game.name=odd_one_ot`` (``odd_one_out`` registered) listed every registered name
and no "did you mean".
"""

from __future__ import annotations

import pytest

import games


@games.register("games38_odd_one_out")
def _odd_one_out():
    return games.make("matrix/climbing")


@pytest.mark.parametrize("typed", ["games38_odd_one_ot", "Games38_Odd_One_Out"])
def test_a_misspelt_registered_name_gets_the_nearest(typed):
    with pytest.raises(games.UnknownGameError, match=(
            rf"^unknown game '{typed}'; did you mean 'games38_odd_one_out'\? registered: ")):
        games.make(typed)


def test_a_name_near_none_gets_no_guess():
    with pytest.raises(games.UnknownGameError) as info:
        games.make("zzzzqqqq")
    assert str(info.value).startswith("unknown game 'zzzzqqqq'; registered: ")
