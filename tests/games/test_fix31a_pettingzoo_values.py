"""PettingZoo argument values an env refuses are named as values (walk31 M5).

``chess_v6 render_mode='bogus'`` said "AssertionError: no message; accepted: ['render_mode',
'screen_height']" (the key was right, its value was not) and ``cooperative_pong_v6
ball_speed='fast'`` said "accepted: ['kwargs']" (its env's signature is ``**kwargs``).
"""

from __future__ import annotations

import pytest

import games


# ------------------------------------------------------------------------------- M5
def test_a_value_pettingzoo_refuses_names_the_value_not_a_key_list():
    pytest.importorskip("pettingzoo.classic")
    with pytest.raises(games.GameError) as info:
        games.make("pettingzoo/pettingzoo.classic.chess_v6", render_mode="bogus")
    assert str(info.value) == (
        "bad arguments for pettingzoo/pettingzoo.classic.chess_v6 {'render_mode': 'bogus'}: "
        "the env refused the value render_mode='bogus' (AssertionError with no message); the "
        "key is one it takes, the value is not")
    with pytest.raises(games.GameError, match=r"unexpected keyword argument 'bogus'; accepted: "
                                              r"\['render_mode', 'screen_height'\]$"):
        games.make("pettingzoo/pettingzoo.classic.chess_v6", bogus=1)


def test_an_env_taking_only_kwargs_does_not_list_kwargs_as_accepted():
    pytest.importorskip("pettingzoo.butterfly")
    module = "pettingzoo/pettingzoo.butterfly.cooperative_pong_v6"
    with pytest.raises(games.GameError) as info:
        games.make(module, ball_speed="fast")
    assert str(info.value) == (
        f"bad arguments for {module} {{'ball_speed': 'fast'}}: the env refused the value "
        "ball_speed='fast' (TypeError: '>' not supported between instances of 'str' and 'int')")
    with pytest.raises(games.GameError) as info:
        games.make(module, bogus=1)
    msg = str(info.value)
    assert "unexpected keyword argument 'bogus'" in msg and "['kwargs']" not in msg
    assert msg.endswith("passes on through **kwargs, which its signature cannot list"), msg
