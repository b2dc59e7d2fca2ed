"""Action texts that differ only by case name different actions (review35): chess has both
``bxc3`` (a pawn takes) and ``Bxc3`` (the bishop takes), and ``parse_action("Bxc3")`` played
the pawn's capture because :meth:`Game.parse_action` and ``match_action`` compared
lower-cased texts. Texts now match with whitespace removed and case kept; case is ignored
only when that names exactly one legal action, and a text that names several once case is
ignored is refused (``BXC3``)."""

from __future__ import annotations

import numpy as np
import pytest

import games
from llm_agents.actions import match_action

FEN = "4k3/8/8/8/8/2p5/1P6/4B1K1 w - - 0 1"  # white: pawn b2, bishop e1; black pawn on c3


def _chess_position():
    g = games.make("openspiel/chess")
    g.reset(seed=0)
    g.state_ = g.game.new_initial_state(FEN)
    (agent,) = g.acting_agents()
    return g, agent


@pytest.mark.parametrize(("text", "move"), [
    ("Bxc3", "Bxc3"), ("bxc3", "bxc3"), ("<action>Bx c3</action>", "Bxc3"),
    ("I play <action> b x c 3 </action>", "bxc3"),
])
def test_exact_case_names_the_move(text, move):
    g, agent = _chess_position()
    texts = g.legal_action_texts(agent)
    assert {"bxc3", "Bxc3"} <= set(texts)
    at = match_action(text, texts)
    assert at is not None and texts[at] == move
    assert g.parse_action(agent, text) == g.legal_actions(agent)[at]


@pytest.mark.parametrize("text", ["BXC3", "<action>bXc3</action>"])
def test_a_text_naming_several_once_case_is_ignored_is_refused(text):
    g, agent = _chess_position()
    assert match_action(text, g.legal_action_texts(agent)) is None
    with pytest.raises(games.InvalidAction, match=r"several actions once case is ignored: "
                                                  r"\['bxc3', 'Bxc3'\]"):
        g.parse_action(agent, text)


def test_case_is_still_ignored_for_a_unique_text():
    g, agent = _chess_position()
    texts = g.legal_action_texts(agent)
    king = next(t for t in texts if t.startswith("K"))
    for said in (king.lower(), king.upper(), f"<action>{king.swapcase()}</action>"):
        assert texts[match_action(said, texts)] == king
        assert g.action_text(agent, g.parse_action(agent, said)) == king


class _Moves(games.Game):
    """One player picks one of ``texts`` twice; every action is legal."""

    def __init__(self, texts):
        self.texts = texts
        self.spec = games.GameSpec(
            name="moves", agents=(games.AgentSpec("p0", "p0", "p0"),),
            obs_shapes={"p0": (1,)},
            action_spaces={"p0": games.ActionSpace("discrete", n=len(texts))}, max_steps=2)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        return games.Transition({"p0": 0.0}, {"p0": self.t == 2}, {"p0": False})

    def acting_agents(self):
        return () if self.t == 2 else ("p0",)

    def observe(self, agent):
        return np.array([self.t], dtype=np.float32)

    def legal_actions(self, agent):
        return range(len(self.texts))

    def text_observation(self, agent):
        return f"step {self.t}"

    def action_text(self, agent, action):
        return self.texts[action]


def test_check_game_accepts_texts_equal_only_once_case_is_ignored():
    """games.check refused ``bxc3`` beside ``Bxc3``; exact case tells them apart."""
    games.check_game(_Moves(["bxc3", "Bxc3", "Kf1", "Kf2"]), episodes=2)


def test_check_game_refuses_texts_equal_once_spacing_is_ignored():
    with pytest.raises(games.GameCheckError,
                       match=r"'Bx c3' and 'Bxc3' are the same once spacing is ignored"):
        games.check_game(_Moves(["bxc3", "Bx c3", "Kf1", "Bxc3"]), episodes=1)
