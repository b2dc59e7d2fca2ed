"""A single LLM run's evaluation says how many of its moves were fallbacks (fix 26f): an
untrained model named no legal action (training's legal_rate 0.0), yet its eval_return was
reported (0.125) as the model's, earned by the random fallback moves it played instead."""

import logging
import sqlite3

from populations.experiment import run_experiment
from tests.populations.test_llm_experiments import TINY_LLM, _experiment

# generate mode, one token a move: no relay action is one token, so every output is invalid
INVALID = ["experiment=tool_team_llm", *TINY_LLM, "eval_episodes=4",
           "llm.grpo.action.mode=generate", "llm.grpo.action.sampling.max_new_tokens=1"]


def _metric(db_path, key):
    db = sqlite3.connect(db_path)
    try:
        return [v for (v,) in db.execute("SELECT value FROM metrics WHERE key = ?", (key,))]
    finally:
        db.close()


def test_an_llm_runs_evaluation_records_and_warns_of_its_legal_rate(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        summary = run_experiment(_experiment(INVALID), tmp_path)
    (row,) = summary.table
    assert row["legal_rate"] == 0.0  # training's
    assert row["eval_legal_rate"] == 0.0 and row["eval_return"] is not None
    assert _metric(summary.database, "charts/eval_legal_rate") == [0.0]
    info = [r.getMessage() for r in caplog.records if r.getMessage().startswith("evaluation:")]
    assert any("legal rate 0.000 over its " in m and "eval_legal_rate" in m for m in info), info
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
              and "fallback moves" in r.getMessage()]
    assert len(warned) == 1 and "0% of its" in warned[0], warned
    assert "eval_return measures mostly the fallback moves" in warned[0]


def test_on_invalid_end_is_said_to_be_a_training_rule(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="populations.experiment"):
        summary = run_experiment(_experiment([*INVALID, "llm.grpo.action.on_invalid=end"]),
                                 tmp_path)
    assert summary.table[0]["eval_legal_rate"] == 0.0
    (warned,) = [r.getMessage() for r in caplog.records if "fallback moves" in r.getMessage()]
    assert "on_invalid=end ends episodes in training only" in warned, warned


def test_a_scoring_team_is_all_legal_and_not_warned(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="populations.experiment"):
        summary = run_experiment(_experiment(["experiment=tool_team_llm", *TINY_LLM]), tmp_path)
    assert summary.table[0]["eval_legal_rate"] == 1.0
    assert _metric(summary.database, "charts/eval_legal_rate") == [1.0]
    assert not [r for r in caplog.records if "fallback moves" in r.getMessage()]
