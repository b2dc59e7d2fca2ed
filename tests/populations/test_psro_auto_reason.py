"""``payoffs=auto`` falling back to sampled payoffs says why once: the reason the exact tools
cannot serve the game also rules out exact NashConv, and was logged twice (the decision,
then the NashConv warning) in the experiment and in the library."""

import logging

import pytest

import populations.psro as psro_mod
from populations.experiment import run_experiment
from populations.psro import PSRO, PSROConfig
from populations.psro_run import make_oracle
from tests.populations.test_single_resume import _exp

REASON = "more than 2000000 histories"  # nim: about 1e8, refused from an estimate


class _Stop(Exception):
    """Ends the run once PSRO is built."""


def _reasons(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if REASON in r.getMessage()]


def test_an_auto_experiment_on_a_large_game_says_why_once(tmp_path, monkeypatch, caplog):
    def iteration(self, *args):  # (total=): the planned iterations
        raise _Stop

    monkeypatch.setattr(psro_mod.PSRO, "iteration", iteration)
    cfg = _exp("game=kuhn", "population=psro", "game.name=openspiel/nim", "progress=false",
               "logger=none")
    with caplog.at_level(logging.INFO), pytest.raises(_Stop):
        run_experiment(cfg, tmp_path)
    assert len(_reasons(caplog)) == 1, _reasons(caplog)
    assert any("payoffs=sampled" in r.getMessage() for r in caplog.records)
    assert any("no exact NashConv" in m for m in _reasons(caplog))


def test_a_psro_with_auto_payoffs_on_a_large_game_says_why_once(caplog):
    cfg = _exp("game=kuhn", "population=psro", "game.name=openspiel/nim", "population.oracle=rl")
    with caplog.at_level(logging.INFO):
        psro = PSRO("openspiel/nim", make_oracle(cfg), PSROConfig(payoffs="auto"))
    assert psro.config.payoffs == "sampled" and psro.tree is None
    assert len(_reasons(caplog)) == 1, _reasons(caplog)
    assert "no exact NashConv" in _reasons(caplog)[0]
    with pytest.raises(ValueError, match=REASON):  # what the exact tools say they cannot do
        psro.nash_conv()
