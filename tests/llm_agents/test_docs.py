"""The runnable examples in the docstrings of ``llm_agents`` and the tool tasks stay true."""

import doctest
import importlib

import pytest

MODULES = [
    "llm_agents.backends", "llm_agents.backends.hf", "llm_agents.prompts", "llm_agents.tiny",
    "llm_agents.team", "llm_agents.rollout", "llm_agents.policy", "llm_agents.trainer",
    "llm_agents.lora",
    "games.tool", "games.tool.relay", "games.tool.lookup",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
