"""A registered game class that leaves some of games.Game's abstract methods undefined is
refused by ``games.make`` in one line naming the game, the methods and the user's file
(review31: Python's bare "Can't instantiate abstract class" TypeError, a traceback from
selfplay-train)."""

from __future__ import annotations

import pytest

import games


class HalfDone(games.Game):
    def __init__(self):
        pass

    def observe(self, agent):
        return None


def test_a_game_missing_methods_is_one_line(monkeypatch):
    monkeypatch.setattr(games.registry, "_REGISTRY", {**games.registry._REGISTRY,
                                                      "review31_half": HalfDone})
    with pytest.raises(games.GameError) as info:
        games.make("review31_half")
    msg = str(info.value)
    assert msg.startswith("review31_half: HalfDone does not implement _reset, _step, "
                          "acting_agents, legal_actions, text_observation (methods a "
                          "games.Game must define) (at "), msg
    assert "test_review31_abstract_game.py:13)" in msg, msg
