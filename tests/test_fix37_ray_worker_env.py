"""Handing the size-limit switch to Ray rollout workers says nothing (session 37): the LLM
rollouts' ``worker_env`` asked ``limits.lifted()``, which logs "game size limits lifted" though
no game was built past a limit yet (the worker says it where one is); as
``populations.runners.worker_env``, it asks ``limits.switch_on()``."""

import logging

import pytest

from games import limits
from llm_agents.ray_rollouts import worker_env as llm_worker_env
from populations.runners import worker_env as runners_worker_env


@pytest.mark.parametrize("worker_env", [llm_worker_env, runners_worker_env])
def test_the_switch_is_handed_on_without_saying_it(worker_env, monkeypatch, caplog):
    monkeypatch.setenv(limits.ENV, "off")
    monkeypatch.setattr(limits, "_said", False)  # as a fresh driver process
    with caplog.at_level(logging.WARNING, logger=limits.__name__):
        env = worker_env()
    assert env[limits.ENV] == "off"
    assert limits.LIFTED_LINE not in caplog.messages
    assert limits._said is False  # the first game built past a limit still says it


def test_no_switch_is_handed_on_where_it_is_not_set(monkeypatch):
    monkeypatch.delenv(limits.ENV, raising=False)
    assert limits.ENV not in llm_worker_env()
