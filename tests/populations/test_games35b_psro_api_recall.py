"""PSRO built through the Python API (not selfplay-train) walked a game of imperfect recall
whole before refusing it: e69ed57's early stop (``exact_check``) served only the command
line's checks. ``PSRO``, ``why_not_exact`` and ``ExactBestResponse`` now walk in it too, and
a perfect-recall game's tree is the same."""

import pytest

import games
from populations import exploitability as ex
from populations.psro import PSRO, ExactBestResponse, PSROConfig, RLOracle, psro_players
from populations.psro_config import why_not_exact
from tests.populations import exact_helpers

FORGETFUL = "openspiel/goofspiel(num_cards=4)"  # imperfect recall, ~10^5 histories


steps = exact_helpers.steps  # the walk's and the counts' spies, trees forgotten


def _psro(game: str, **cfg) -> PSRO:
    return PSRO(game, RLOracle(game), PSROConfig(**cfg))


def test_auto_payoffs_are_sampled_without_walking_the_tree(steps):
    psro = _psro(FORGETFUL, payoffs="auto")
    assert psro.config.payoffs == "sampled" and psro.tree is None
    assert "has imperfect recall (" in psro.no_exact
    assert steps["walk"] == 0 and steps["counts"] == []


def test_exact_payoffs_are_refused_without_walking_the_tree(steps):
    with pytest.raises(ValueError, match=r"has imperfect recall \("):
        _psro(FORGETFUL, payoffs="exact")
    assert steps["walk"] == 0 and steps["counts"] == []


def test_exact_nash_conv_is_left_out_without_walking_the_tree(steps):
    psro = _psro(FORGETFUL, payoffs="sampled", nash_conv=True)
    assert psro.tree is None and "has imperfect recall (" in psro.no_exact
    assert steps["walk"] == 0 and steps["counts"] == []


def test_why_not_exact_and_an_exact_oracle_stop_early_too(steps):
    game = games.make(FORGETFUL)
    why = why_not_exact(game, psro_players(game.spec, "seats"))
    assert "has imperfect recall (" in why
    with pytest.raises(ValueError, match=r"has imperfect recall \("):
        ExactBestResponse(FORGETFUL)
    assert steps["walk"] == 0 and steps["counts"] == []


def test_a_perfect_recall_game_is_walked_whole_and_says_why(steps):
    psro = _psro("openspiel/kuhn_poker", payoffs="exact")
    assert psro.tree is not None and psro.tree.perfect_recall
    assert len(psro.tree.terminals.chance) == 30
    assert steps["counts"] == [
        ": for PSRO's exact tools (payoffs='exact', nash_conv=True: they need a small game "
        "of perfect recall); payoffs='sampled' nash_conv=False skip this walk"]


def test_a_callers_own_reason_stands(steps):
    """selfplay-train builds PSRO inside its own exact_check, whose reason names its keys."""
    with ex.exact_check("the caller's reason"):
        _psro("openspiel/kuhn_poker", payoffs="exact")
    assert steps["counts"] == [": the caller's reason"]
