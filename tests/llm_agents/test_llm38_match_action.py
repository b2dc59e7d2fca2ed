"""``match_action`` refuses a reply that is not text as ``Game.parse_action`` does (walk38d
L4): ``match_action(None, legal)`` raised a bare TypeError from the tag reader."""

import pytest

import games
from games import InvalidAction
from llm_agents.actions import game_parser, match_action


@pytest.mark.parametrize("reply", [None, b"Bet", 3])
def test_match_action_names_a_reply_that_is_not_text(reply):
    with pytest.raises(InvalidAction, match=r"cannot parse .* as an action \(not a str\); "
                                            r"legal: \['Pass', 'Bet'\]"):
        match_action(reply, ["Pass", "Bet"])


def test_game_parser_says_the_same_as_the_game():
    g = games.make("openspiel/kuhn_poker")
    g.reset(0)
    legal_ids = list(g.legal_actions("player_0"))
    parse = game_parser(g, "player_0", legal_ids, g.legal_action_texts("player_0"))
    with pytest.raises(InvalidAction, match=r"cannot parse None as an action \(not a str\)"):
        parse(None)
    assert parse("<action>Bet</action>") == 1
