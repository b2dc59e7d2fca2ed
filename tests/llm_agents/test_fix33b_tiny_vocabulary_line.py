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


TINY = LLMConfig(tiny=TinyModelConfig(n_layer=1, n_embd=16, n_head=2), corpus_episodes=3)


def _said(caplog, build) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="llm_agents.build"):
        build()
    return [r.getMessage() for r in caplog.records if LINE in r.getMessage()]


def test_the_line_is_said_once_where_no_caller_said_it(caplog):
    """rfix33b: a league's member line says it before the build (``league member 1/2:
    building llm (llm_grpo; llm=tiny builds its vocabulary ...)``), which said it again; a
    Ray rollout actor's copy of the driver's team (``RolloutActor``, ``warn=False``) would
    say it once per actor."""
    import torch

    from llm_agents.build import build_team, vocabulary_said
    from llm_agents.ray_rollouts import RolloutActor

    game = ["openspiel/kuhn_poker"]
    assert len(_said(caplog, lambda: build_team(TINY, game))) == 1
    with vocabulary_said():  # the caller said it
        assert _said(caplog, lambda: build_team(TINY, game)) == []
    assert len(_said(caplog, lambda: build_team(TINY, game))) == 1  # the block's end
    # the actor's own code, in this process
    actor = lambda: RolloutActor(TINY, game, {}, "cpu", torch.get_num_threads(), {})  # noqa: E731
    assert _said(caplog, actor) == []
