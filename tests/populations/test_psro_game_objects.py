"""PSRO takes a game as a name, a built ``games.Game`` or its ``GameSpec`` (it failed with
``AttributeError: ... 'startswith'``), refuses objects its name does not rebuild, and refuses
imperfect-recall games for exact payoffs with the one error the exact tools give."""

import numpy as np
import pytest

import games
from populations.psro import (
    PSRO,
    ExactBestResponse,
    PSROConfig,
    RLOracle,
    SampledPayoffs,
    resolve_game,
)

KUHN, GOOF4 = "openspiel/kuhn_poker", "openspiel/goofspiel(num_cards=4)"


def _run(game):
    psro = PSRO(game, ExactBestResponse(game), PSROConfig(seed=0))
    return [it.nash_conv for it in psro.run(2)], psro


def test_game_objects_and_specs_run_like_names():
    by_name, _ = _run(KUHN)
    by_object, psro = _run(games.make(KUHN))
    by_spec, _ = _run(games.make(KUHN).spec)
    np.testing.assert_allclose(by_object, by_name, atol=1e-12)
    np.testing.assert_allclose(by_spec, by_name, atol=1e-12)
    assert psro.game == KUHN
    goof = games.make("openspiel/goofspiel", num_cards=3)  # parameters live in the name
    assert resolve_game(goof) == ("openspiel/goofspiel(num_cards=3)", {})
    assert SampledPayoffs(goof, episodes=2, num_envs=1).spec == goof.spec


def test_objects_their_name_does_not_rebuild_are_refused_in_one_line():
    from games.tool.relay import RelayTask

    relay = RelayTask(max_value=2)  # made directly: games.make's name would hold max_value=2
    with pytest.raises(TypeError, match=r"cannot rebuild copies of the game 'tool/relay' .* "
                                        "pass the name and game_kwargs instead"):
        SampledPayoffs(relay)
    with pytest.raises(TypeError, match="cannot rebuild"):
        RLOracle(games.make(KUHN), game_kwargs={"players": 3})
    with pytest.raises(TypeError, match=r"a name \('openspiel/kuhn_poker'\), a games.Game or a "
                                        r"GameSpec; got int"):
        PSRO(3, ExactBestResponse(KUHN))


def test_imperfect_recall_games_are_refused_for_exact_payoffs():
    with pytest.raises(ValueError, match=r"goofspiel\(num_cards=4\) has imperfect recall"):
        ExactBestResponse(GOOF4)
    with pytest.raises(ValueError, match="has imperfect recall"):
        PSRO(GOOF4, RLOracle(GOOF4), PSROConfig(payoffs="exact"))
    # sampled payoffs still work; the exact NashConv is left out (logged), not wrong
    psro = PSRO(games.make(GOOF4), RLOracle(GOOF4),
                PSROConfig(payoffs="sampled", episodes_per_entry=4, num_envs=2, nash_conv=True))
    assert psro.tree is None and psro.payoffs.shape == (2, 1, 1)


def test_sampled_payoffs_on_imperfect_recall_do_not_advise_sampled_payoffs(caplog):
    """goofspiel(num_cards=4) with sampled payoffs: the warning that exact NashConv is left
    out advised 'use sampled payoffs (payoffs='sampled', ...)', which the run already did."""
    import logging

    with caplog.at_level(logging.WARNING, logger="populations.psro"):
        PSRO(GOOF4, RLOracle(GOOF4), PSROConfig(payoffs="sampled", episodes_per_entry=1,
                                                num_envs=1, nash_conv=True))
    (line,) = [r.getMessage() for r in caplog.records if "no exact NashConv" in r.getMessage()]
    assert "has imperfect recall" in line and "use sampled payoffs" not in line
    assert line.endswith("(payoffs are sampled; nash_conv=False leaves this check out)")
