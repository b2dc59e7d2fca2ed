"""PSRO's messages about its settings, in the words the user typed them.

* The warning that exact NashConv is left out named the Python field ``nash_conv=False``
  on the command line too, where the key is ``population.psro.nash_conv=false``; a caller
  that names its settings as keys (``PSRO(..., keys="population.psro.")``) gets the key, a
  Python caller the field, as before.
* ``population.psro.episodes_per_entry=`` (and ``population.psro.num_envs=``) with exact
  payoffs (``payoffs=auto`` choosing them on liars_dice; kuhn_poker here, quicker to walk)
  was read by nothing and warned of by nothing, while ``population.oracle_frames=`` beside it
  was.
"""

from __future__ import annotations

import logging

import pytest

from populations.experiment import ExperimentConfig, GameConfig, PopulationConfig
from populations.psro import PSRO, PSROConfig, RLOracle
from populations.train_overrides import unused_overrides

GOOF4 = "openspiel/goofspiel(num_cards=4)"  # imperfect recall: sampled payoffs, no NashConv


def _nash_conv_line(caplog, **kw) -> str:
    with caplog.at_level(logging.WARNING, logger="populations.psro"):
        PSRO(GOOF4, RLOracle(GOOF4), PSROConfig(payoffs="sampled", episodes_per_entry=1,
                                                num_envs=1, nash_conv=True), **kw)
    (line,) = [r.getMessage() for r in caplog.records if "no exact NashConv" in r.getMessage()]
    return line


def test_the_no_nash_conv_warning_names_the_command_line_key(caplog):
    line = _nash_conv_line(caplog, keys="population.psro.")
    assert line.endswith("(payoffs are sampled; population.psro.nash_conv=false leaves this "
                         "check out)")


def test_a_python_caller_keeps_the_field_name(caplog):
    assert _nash_conv_line(caplog).endswith(
        "(payoffs are sampled; nash_conv=False leaves this check out)")


def _notes(game: str, overrides: list[str], oracle: str = "auto",
           payoffs: str = "auto") -> list[str]:
    cfg = ExperimentConfig(game=GameConfig(name=game), population=PopulationConfig(
        kind="psro", oracle=oracle, psro=PSROConfig(payoffs=payoffs)))
    return unused_overrides(cfg, overrides)


def test_episodes_per_entry_with_payoffs_auto_choosing_exact_is_warned_of():
    notes = _notes("openspiel/kuhn_poker", ["population.oracle_frames=2000",
                                            "population.psro.episodes_per_entry=50"])
    assert notes == [
        "population.oracle_frames=2000 is not used with population.oracle=auto, which chose "
        "exact here: exact best responses train nothing; only an RL oracle "
        "(population.oracle=rl or a learner's name) reads it",
        "population.psro.episodes_per_entry=50 is not used with population.psro.payoffs=auto, "
        "which chose exact here: exact payoffs are computed from the game tree, no episode is "
        "sampled; only population.psro.payoffs=sampled reads it"]


@pytest.mark.parametrize("oracle", ["exact", "rl"])
def test_explicit_exact_payoffs_warn_of_both_sampled_only_keys(oracle):
    """An explicit oracle: payoffs=auto is still resolved (an RL oracle's members have
    probabilities, so exact payoffs serve kuhn_poker), and payoffs=exact explicit too."""
    keys = ["population.psro.episodes_per_entry=50", "population.psro.num_envs=8"]
    for payoffs, how in (("auto", "population.psro.payoffs=auto, which chose exact here"),
                         ("exact", "population.psro.payoffs=exact")):
        notes = _notes("openspiel/kuhn_poker", keys, oracle=oracle, payoffs=payoffs)
        assert notes == [f"{k} is not used with {how}: exact payoffs are computed from the "
                         "game tree, no episode is sampled; only "
                         "population.psro.payoffs=sampled reads it" for k in keys], payoffs


def test_sampled_payoffs_read_them():
    """connect four is no OpenSpiel game: payoffs=auto samples, and reads both settings."""
    assert _notes("pettingzoo/pettingzoo.classic.connect_four_v3",
                  ["population.psro.episodes_per_entry=50", "population.psro.num_envs=8"]) == []
    assert _notes("openspiel/kuhn_poker", ["population.psro.episodes_per_entry=50"],
                  oracle="rl", payoffs="sampled") == []


@pytest.mark.parametrize("game, ran", [("openspiel/kuhn_poker", "nash"),
                                       ("openspiel/first_sealed_auction", "prd")])
def test_each_iteration_names_the_solver_meta_solver_auto_ran(game, ran, caplog):
    """``meta_solver=auto`` is nash on a constant-sum empirical game, prd otherwise (a
    first-price auction: the seller's revenue leaves the bidders); the iteration's line said
    neither."""
    from populations.psro import ExactBestResponse

    psro = PSRO(game, ExactBestResponse(game), PSROConfig(meta_solver="auto", nash_conv=False))
    with caplog.at_level(logging.INFO, logger="populations.psro"):
        psro.iteration(total=1)
    (line,) = [m for m in caplog.messages if m.startswith("PSRO iteration 0 (1/1)")]
    assert line.endswith(f"; meta_solver=auto ran {ran}")
    assert psro.meta_ran == ran


def test_a_one_team_game_is_told_that_psro_plays_teammates():
    """vmas/dispersion population=psro ran per-seat populations of one team without a word
    (a league refuses the game); psro_run logs this note at start."""
    import games
    from populations.psro_config import one_team_note

    spread = games.make("pettingzoo/mpe2.simple_spread_v3").spec
    assert one_team_note(spread) == (
        "PSRO on pettingzoo/mpe2.simple_spread_v3: its 3 seats are one team ('team'), so each "
        "seat's population best-responds to its teammates' mixtures, not to opponents; "
        "population=none trains the team's seats together")
    assert one_team_note(games.make("openspiel/kuhn_poker").spec) is None
