"""Tiny word-level tokenizers and models built in code (no downloads), shared by the tests."""

import pytest

import games
from llm_agents.prompts import PromptConfig
from llm_agents.tiny import TinyModelConfig, build_model, build_tokenizer, game_corpus

KUHN = "openspiel/kuhn_poker"
RELAY = {"max_value": 2, "ops": "+"}
COMPACT = PromptConfig(system="{role}", user="{observation} : {legal}", generate_instruction="",
                       score_instruction="", legal_separator=" ")
"""Short prompts keep tiny CPU models fast: role, observation, legal actions."""


def corpus(*specs):
    texts = [COMPACT.static_text(), PromptConfig().static_text()]
    for spec in specs:
        name, kwargs = spec if isinstance(spec, tuple) else (spec, {})
        texts += game_corpus(games.make(name, **kwargs), episodes=200)
    return texts


@pytest.fixture(scope="session")
def kuhn_tok():
    return build_tokenizer(corpus(KUHN))


@pytest.fixture(scope="session")
def multi_tok():
    """Covers Kuhn poker and both tool tasks."""
    return build_tokenizer(corpus(KUHN, ("tool/relay", RELAY), "tool/lookup"))


@pytest.fixture
def make_model():
    def make(tok, seed=0, **kw):
        return build_model(tok, TinyModelConfig(seed=seed, **kw))

    return make
