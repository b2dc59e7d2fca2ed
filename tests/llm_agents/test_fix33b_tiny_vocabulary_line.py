"""A single run of a tiny LLM team (``selfplay-train population=none algo=llm_grpo``) says
what its start spends its time on before it builds the model: the text of
``llm.corpus_episodes`` random episodes, the vocabulary (~50 s on liars_dice, loaded, without
a line); a league's member line said it (``building llm (llm_grpo; llm=tiny builds its
vocabulary from llm.corpus_episodes=...``)."""

from __future__ import annotations

import logging

from llm_agents.settings import GRPOConfig, LLMConfig, TinyModelConfig
from populations.experiment import ExperimentConfig, GameConfig, run_experiment

LINE = ("llm=tiny builds its vocabulary from llm.corpus_episodes=3 random episodes of "
        "openspiel/kuhn_poker")


def test_a_single_runs_tiny_team_says_it_builds_its_vocabulary(tmp_path, caplog):
    llm = LLMConfig(tiny=TinyModelConfig(n_layer=1, n_embd=16, n_head=2), corpus_episodes=3,
                    iterations=1, grpo=GRPOConfig(group_size=2, groups_per_step=1))
    cfg = ExperimentConfig(algo="llm_grpo", game=GameConfig(name="openspiel/kuhn_poker"),
                           llm=llm, eval_episodes=1)
    with caplog.at_level(logging.INFO):
        run_experiment(cfg, tmp_path / "run")
    said = [r.getMessage() for r in caplog.records]
    assert any(LINE in line for line in said), said
