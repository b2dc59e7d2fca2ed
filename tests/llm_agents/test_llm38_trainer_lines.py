"""Lines the GRPO trainer says about its own run (walk38d M1, M2) and a chat template that
fails at render (sec38 LOW).

* M1: the unknown-token warning guessed only "built from another game's texts?"; README's
  llm=hf recipe had the game's words but none of the preset's prompt words.
* M2: ``selfplay-train algo=llm_grpo`` without ``game=`` ran simple_spread at ~389 s per
  iteration on a CPU with nothing said about it; a slow first iteration now says how long it
  took, what it played and what makes it faster.
* LOW: a template's jinja2 SecurityError (or its own raise_exception) went up as a traceback.
"""

import logging

import pytest

import llm_agents.trainer as trainer_module
from llm_agents import ActionConfig, GRPOConfig, MultiTurnGRPO, Team
from llm_agents.prompts import REAL_MODEL_PROMPT, PromptBuilder, PromptConfig
from llm_agents.tiny import TinyModelConfig, build_model, build_tokenizer, game_corpus

KUHN = "openspiel/kuhn_poker"
SMALL = TinyModelConfig(n_layer=1, n_embd=16, n_head=2)


def _trainer(prompt: PromptConfig, texts: list[str]) -> MultiTurnGRPO:
    tok = build_tokenizer(texts)
    cfg = GRPOConfig(group_size=2, groups_per_step=2, action=ActionConfig(mode="score"),
                     prompt=prompt, device="cpu")
    return MultiTurnGRPO(Team.shared(build_model(tok, SMALL), tok), KUHN, cfg)


def test_unknown_token_warning_also_names_missing_prompt_words(caplog):
    trainer = _trainer(REAL_MODEL_PROMPT, game_corpus(KUHN, 20))  # the game's words only
    with caplog.at_level(logging.WARNING, logger="llm_agents.trainer"):
        trainer.step()
    (line,) = [r.getMessage() for r in caplog.records if "unknown token" in r.getMessage()]
    assert "another game's texts, or texts without this preset's prompt words?" in line, line


def test_a_slow_first_iteration_says_what_it_played_once(caplog, monkeypatch):
    monkeypatch.setattr(trainer_module, "SLOW_ITERATION_S", 0.0)  # every iteration is "slow"
    trainer = _trainer(PromptConfig(), game_corpus(KUHN, 20) + [PromptConfig().static_text()])
    with caplog.at_level(logging.INFO, logger="llm_agents.trainer"):
        trainer.step()
        trainer.step()
    said = [r.getMessage() for r in caplog.records if "GRPO iteration took" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0], said
    assert "4 episodes of openspiel/kuhn_poker" in said[0] and "turns" in said[0], said[0]
    assert "groups_per_step" in said[0] and "a smaller game" in said[0], said[0]


def test_a_fast_iteration_says_nothing(caplog):
    trainer = _trainer(PromptConfig(), game_corpus(KUHN, 20) + [PromptConfig().static_text()])
    with caplog.at_level(logging.INFO, logger="llm_agents.trainer"):
        trainer.step()
    assert not [r for r in caplog.records if "GRPO iteration took" in r.getMessage()]


@pytest.mark.parametrize("template, said", [
    ("{{ ''.__class__.__mro__ }}", "SecurityError"),
    ("{{ raise_exception('Conversation roles must alternate') }}", "roles must alternate"),
])
def test_a_chat_template_that_fails_is_one_line(template, said):
    tok = build_tokenizer(["a b"], chat_template=template)
    with pytest.raises(ValueError) as err:
        PromptBuilder().build(tok, game=KUHN, agent="player_0", role="player_0",
                              role_prompt="", observation="1", legal=["Pass", "Bet"],
                              instruction="")
    line = str(err.value)
    assert "\n" not in line and said in line and "chat template" in line, line
    assert "llm.grpo.prompt.chat_template=false" in line
