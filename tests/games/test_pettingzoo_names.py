"""A PettingZoo game module named with an old version, no version, no package or a typo
gets the modules that exist in its one-line error (the walk of a new user's path met
``cooperative_pong_v5``, installed as ``_v6``)."""

import pytest

import games


@pytest.mark.parametrize(("path", "named"), [
    ("pettingzoo.butterfly.cooperative_pong_v5",
     "close matches: ['pettingzoo.butterfly.cooperative_pong_v6']"),
    ("mpe2.simple_spread_v2", "close matches: ['mpe2.simple_spread_v3']"),  # another version
    ("mpe2.simple_spread", "close matches: ['mpe2.simple_spread_v3']"),  # its package
    ("simple_spread_v3", "close matches: ['mpe2.simple_spread_v3'"),  # no package
    ("tictactoe_v3", "close matches: ['pettingzoo.classic.tictactoe_v3']"),
    ("mpe2.simple_sprad_v3", "close matches: ['mpe2.simple_spread_v3'"),  # a typo
    ("pettingzoo.sisl.waterworld_v4", "pettingzoo.sisl has ['multiwalker_v9', 'pursuit_v5']"),
])
def test_a_missing_module_names_the_ones_that_exist(path, named):
    with pytest.raises(games.UnknownGameError) as info:
        games.make(f"pettingzoo/{path}")
    msg = str(info.value)
    assert named in msg and "\n" not in msg


def test_nothing_close_names_nothing():
    with pytest.raises(games.UnknownGameError) as info:
        games.make("pettingzoo/no_such_module_xyz")
    assert "close matches" not in str(info.value)


@pytest.mark.parametrize(("kwargs", "why"), [
    # a type the env fails on deep inside (N=0, numpy's zero-size error before, and
    # local_ratio='x', are now refused up front: tests/games/test_walk18_games_more.py,
    # tests/games/test_fix32a_params.py)
    ({"local_ratio": 5}, "AssertionError: local_ratio is a proportion"),
])
def test_a_value_the_env_rejects_names_the_argument_and_the_accepted_ones(kwargs, why):
    with pytest.raises(games.GameError) as info:
        games.make("pettingzoo/mpe2.simple_spread_v3", **kwargs)
    msg = str(info.value)
    # the key is right, so the value is named, not the keys (walk31 M5)
    value = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    assert str(kwargs) in msg and why in msg and f"the env refused the value {value}" in msg
    assert "accepted: [" not in msg and "\n" not in msg
