"""A league rated an LLM member whose evaluation moves were all fallbacks like any other
member (fix 26i): in ``experiment=mixed_league`` an untrained generate-mode team named no
legal action (training's ``llm/charts/legal_rate`` 0.0), yet its snapshots' ratings came
with no hint that its fallback, not the model, played their matches. Each new snapshot's
share of legal evaluation moves is now logged as ``eval_legal_rate/<member>``, with one
warning per member below 0.5."""

import logging
import sqlite3

from populations.experiment import run_experiment
from tests.populations.test_llm_experiments import TINY_LLM, _experiment

LEAGUE = ["experiment=mixed_league", "population.generations=1",
          "population.frames_per_generation=64", "population.nash_conv=false", *TINY_LLM]
# generate mode, one token a move on tic-tac-toe: every action (x(1,2)) is six tokens of the
# tiny model's word-level tokenizer, so every output is invalid and the random fallback plays
# (a Kuhn action, Pass or Bet, is one token: an untrained model names one now and then)
INVALID = ["game=tictactoe", "llm.grpo.action.mode=generate",
           "llm.grpo.action.sampling.max_new_tokens=1"]


def _metrics(db_path):
    db = sqlite3.connect(db_path)
    try:
        return db.execute("SELECT key, step, value FROM metrics WHERE key LIKE "
                          "'%legal_rate%' ORDER BY key, step").fetchall()
    finally:
        db.close()


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "fallback moves" in r.getMessage()]


def test_an_untrained_generating_member_is_logged_at_0_and_warned_once(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="populations.league"):
        summary = run_experiment(_experiment([*LEAGUE, *INVALID]), tmp_path)
    rows = _metrics(summary.database)
    assert ("llm/charts/legal_rate", 72, 0.0) in rows  # training's: the premise
    # generation 0 (v0 vs v0) at step 0, generation 1 at the league's step (mappo's frames)
    assert [r for r in rows if r[0].startswith("eval_legal_rate/")] == [
        ("eval_legal_rate/llm", 0, 0.0), ("eval_legal_rate/llm", 64, 0.0)]
    (warned,) = _warnings(caplog)  # both generations below 0.5: said once
    assert warned.startswith("league member 'llm' (snapshot v0) named a legal action in 0% "
                             "of its "), warned
    assert "its rating measures mostly the fallback moves" in warned
    assert "llm.grpo.action.fallback=random" in warned


def test_a_scoring_member_is_logged_at_1_and_not_warned(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="populations.league"):
        summary = run_experiment(_experiment(LEAGUE), tmp_path)
    assert [r for r in _metrics(summary.database) if r[0].startswith("eval_legal_rate/")] == [
        ("eval_legal_rate/llm", 0, 1.0), ("eval_legal_rate/llm", 64, 1.0)]
    assert not _warnings(caplog)



def test_the_closing_table_explains_eval_legal_rate(capsys):
    """A single LLM run's table has an eval_legal_rate column (fix 26f) that no legend line
    explained, and a sweep summary put it after nash_conv, away from eval_return's."""
    from populations.sweep_summary import ORDER
    from tests.populations.test_walk21_cli import ROW, _closing

    out = _closing([{**ROW, "eval_return": 0.5, "eval_ci95": 0.25, "eval_legal_rate": 0.0}],
                   capsys)
    assert ("\neval_legal_rate: share of the LLM team's evaluation moves that named a legal "
            "action (the rest were its fallback's, also with on_invalid=end; eval_return "
            "measures those too)\n") in out, out
    assert ORDER.index("eval_legal_rate") == ORDER.index("eval_ci95") + 1
