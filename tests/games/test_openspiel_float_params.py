"""An integer where an OpenSpiel parameter's default is a float is that float.

Hydra reads ``game.kwargs.unscaled_move_cost=2`` as the int 2, which OpenSpiel refused in
one line ("Expected type: kDouble, got kInt"). A bool is not a number here: OpenSpiel's
value of another type is refused in one line naming what the parameter takes, so true does
not play as 1.0 (nor 1 as true).
"""

from __future__ import annotations

import numpy as np
import pytest

import games
from games.core import GameError


@pytest.mark.parametrize("name, kwargs, key, want", [
    ("openspiel/deep_sea", {"unscaled_move_cost": 2}, "unscaled_move_cost", 2.0),
    ("openspiel/deep_sea", {"unscaled_move_cost": np.int64(2)}, "unscaled_move_cost", 2.0),
    ("openspiel/deep_sea(unscaled_move_cost=2)", {}, "unscaled_move_cost", 2.0),
    ("openspiel/deep_sea(size=3)", {"unscaled_move_cost": 2}, "unscaled_move_cost", 2.0),
    ("openspiel/go", {"komi": 6, "board_size": 5}, "komi", 6.0),
])
def test_an_int_is_the_float_the_game_declares(name, kwargs, key, want):
    game = games.make(name, **kwargs)
    got = game.game.get_parameters()[key]
    assert type(got) is float and got == want
    assert games.make(game.spec.name).spec == game.spec  # its name makes it again


@pytest.mark.parametrize("kwargs, accepted", [
    ({"unscaled_move_cost": True}, "a number"),  # a bool for a float
    ({"size": True}, "an integer in [1, 100]"),  # a bool for an int
    ({"randomize_actions": 2}, "true or false"),  # an int other than 0 or 1 for a bool
    ({"size": 2.0}, "an integer in [1, 100]"),  # a float for an int: not rounded into one
])
def test_other_types_are_still_refused_in_one_line(kwargs, accepted):
    with pytest.raises(GameError) as info:
        games.make("openspiel/deep_sea", **kwargs)
    ((key, value),) = kwargs.items()
    assert str(info.value) == (f"bad parameter for openspiel/deep_sea: {key}={value!r}; "
                               f"accepted: {accepted}")
