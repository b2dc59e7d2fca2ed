"""``games.make("openspiel/...")`` names a bug of a game written in Python in one line ("when
made", the game's method and line), and only that: a bug of our own code while the game is
made (``_obs_shape``, ``_check_legal_ids``, ``_first_tensor_size``), for a built-in C++ game
or a Python one, raises as it is, with its traceback. Before: any exception there was the
game's, ``GameCodeError | openspiel/kuhn_poker when made: bad raised KeyError: 'our bug'``."""

from __future__ import annotations

import pytest

import games
from games import openspiel as gos


def _our_bug(*args, **kwargs):
    raise KeyError("our bug")


@pytest.mark.parametrize("name, ours", [("kuhn_poker", "_obs_shape"),  # built-in (C++)
                                        ("python_kuhn_poker", "_obs_shape"),
                                        ("python_kuhn_poker", "_check_legal_ids"),
                                        ("python_kuhn_poker", "_first_tensor_size")])
def test_our_bug_when_a_game_is_made_is_not_the_games(name, ours, monkeypatch):
    monkeypatch.setattr(gos, ours, _our_bug)
    with pytest.raises(KeyError, match="our bug") as err:
        games.make(f"openspiel/{name}")
    assert not isinstance(err.value, games.GameError)


def test_a_games_bug_when_made_is_still_one_line_without_a_file(monkeypatch):
    """A game defined where its module has no file (a notebook's cell, ``exec``) is still
    told from our code by its module: its bug is one line naming its method."""
    import sys
    import types

    from tests.populations.test_exact_info_state_guarded import source

    module = types.ModuleType("w24_kuhn_nofile")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(source("nofile", "legal_actions", "not state.bets"), module.__dict__)
    with pytest.raises(games.GameCodeError, match=r"^openspiel/python_w24_kuhn_nofile when "
                                                  r"made: _legal_actions raised KeyError"):
        games.make("openspiel/python_w24_kuhn_nofile")
