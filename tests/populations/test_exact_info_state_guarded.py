"""The exact tools key a pyspiel game's information states by ``information_state_string``,
which a user's Python game computes in its own observer: a bug there is one line naming the
game, the call, the history and the user's line (``games.GameCodeError``), as the views asked
right after it (``observe``, ``text_observation``) already were through ``Game.guarded``.

Before: the walk asked it unguarded, and the user's KeyError came out as a traceback through
``game_tree`` (``selfplay-train population=psro`` ended in it, exit 1)."""

from __future__ import annotations

import sys

import pytest

import games

# Kuhn poker whose observer's string breaks once a bet is made (its tensors are fine).
SOURCE = '''
import pyspiel
from open_spiel.python.games import kuhn_poker as kp

_TYPE = pyspiel.GameType(
    short_name="python_w24_kuhn_str", long_name="w24 kuhn str",
    dynamics=kp._GAME_TYPE.dynamics, chance_mode=kp._GAME_TYPE.chance_mode,
    information=kp._GAME_TYPE.information, utility=kp._GAME_TYPE.utility,
    reward_model=kp._GAME_TYPE.reward_model, max_num_players=2, min_num_players=2,
    provides_information_state_string=True, provides_information_state_tensor=True,
    provides_observation_string=True, provides_observation_tensor=True,
    parameter_specification={})


class Observer(kp.KuhnPokerObserver):
    def string_from(self, state, player):
        if state.bets:
            raise KeyError("no words after a bet")  # the user's line
        return super().string_from(state, player)


class Game(kp.KuhnPokerGame):
    def __init__(self, params=None):
        pyspiel.Game.__init__(self, _TYPE, kp._GAME_INFO, params or dict())

    def make_py_observer(self, iig_obs_type=None, params=None):
        return Observer(iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False), params)


if "python_w24_kuhn_str" not in pyspiel.registered_names():
    pyspiel.register_game(_TYPE, Game)
'''
MODULE = "w24_kuhn_str"
LINE = (r"^openspiel/python_w24_kuhn_str step 0: information_state_string\(1\) at history "
        r"\[0, 1, 0\] raised KeyError: 'no words after a bet' \(at .*w24_kuhn_str\.py:\d+ in "
        r"string_from\); HYDRA_FULL_ERROR=1 shows the traceback$")


@pytest.fixture()
def user_kuhn(tmp_path, monkeypatch):
    """The game above, importable from ``tmp_path`` (pyspiel keeps its registration)."""
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(MODULE, None)
    __import__(MODULE)
    yield "openspiel/python_w24_kuhn_str"
    sys.modules.pop(MODULE, None)


def test_a_raising_information_state_string_is_one_line(user_kuhn):
    from populations.exploitability import game_tree

    with pytest.raises(games.GameCodeError, match=LINE) as err:
        game_tree(user_kuhn)  # deal 0, deal 1, player_0 passes: player_1's key
    assert isinstance(err.value.__cause__, KeyError)
    assert "\n" not in str(err.value)


def test_kuhn_poker_is_keyed_as_before():
    """The guard changes nothing for a game whose strings work: Kuhn's 12 information
    states, by their strings."""
    from populations.exploitability import game_tree

    tree = game_tree("openspiel/kuhn_poker")
    assert [len(s.keys) for s in tree.players] == [6, 6]
    assert {"0", "1pb"} <= set(tree.players[0].keys)
