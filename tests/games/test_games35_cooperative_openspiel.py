"""OpenSpiel games that pay every seat the same though declared GENERAL_SUM are one
cooperative team (``lewis_signaling``: mappo trained team 'player_0' against uniformly
random players); ``teams=`` still overrides."""

import pyspiel
import pytest

import games
from games.openspiel import COOPERATIVE


def _equal_pay_everywhere(game: pyspiel.Game) -> int:
    """Terminal histories of ``game``, each checked to pay every player the same."""
    stack, terminals = [game.new_initial_state()], 0
    while stack:
        state = stack.pop()
        if state.is_terminal():
            returns = state.returns()
            assert max(returns) == min(returns), (state.history(), returns)
            terminals += 1
        elif state.is_chance_node():
            stack.extend(state.child(a) for a, _ in state.chance_outcomes())
        else:
            stack.extend(state.child(a) for a in state.legal_actions())
    return terminals


@pytest.mark.parametrize("name, small", [("lewis_signaling", "lewis_signaling"),
                                         ("trade_comm", "trade_comm(num_items=2)")])
def test_cooperative_games_are_one_team(name, small):
    assert name in COOPERATIVE
    game = pyspiel.load_game(small)
    assert game.get_type().utility == pyspiel.GameType.Utility.GENERAL_SUM
    assert _equal_pay_everywhere(game) > 0
    spec = games.make(f"openspiel/{name}").spec
    assert len(spec.teams) == 1, spec.teams
    assert len({a.team for a in spec.agents}) == 1, spec.agents


def test_teams_still_override():
    spec = games.make("openspiel/lewis_signaling", teams=[["player_0"], ["player_1"]]).spec
    assert len({a.team for a in spec.agents}) == 2, spec.agents
