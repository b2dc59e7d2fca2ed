"""A PettingZoo ``max_cycles`` that is not an integer >= 1 is refused at make time: 0, a
negative or ``true`` would truncate every episode after its first step, silently."""

import pytest

import games


@pytest.mark.parametrize("value", [0, -3, True, False, 2.5, "10", None])
def test_a_bad_max_cycles_is_refused_in_one_line(value):
    with pytest.raises(games.GameError) as info:
        games.make("pettingzoo/mpe2.simple_spread_v3", max_cycles=value)
    msg = str(info.value)
    assert msg == (f"bad parameter for pettingzoo/mpe2.simple_spread_v3: max_cycles={value!r}; "
                   "accepted: an integer >= 1")


def test_a_good_max_cycles_sets_the_episode_limit():
    assert games.make("pettingzoo/mpe2.simple_spread_v3", max_cycles=7).spec.max_steps == 7


@pytest.mark.parametrize("value", [0, -3, True, 2.5, "10"])
def test_a_bad_max_steps_is_refused_in_one_line(value):
    # max_steps=0 fell through `or` to the env's own limit (25), silently
    with pytest.raises(games.GameError) as info:
        games.make("pettingzoo/mpe2.simple_spread_v3", max_steps=value)
    assert str(info.value) == (f"bad parameter for pettingzoo/mpe2.simple_spread_v3: "
                               f"max_steps={value!r}; accepted: an integer >= 1")


def test_max_steps_overrides_the_episode_limit():
    assert games.make("pettingzoo/mpe2.simple_spread_v3", max_steps=3).spec.max_steps == 3
    assert games.make("pettingzoo/pettingzoo.classic.tictactoe_v3", max_steps=4).spec.max_steps == 4
