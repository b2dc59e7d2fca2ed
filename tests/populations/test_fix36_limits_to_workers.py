"""SELFPLAY_GAME_LIMITS=off reaches Ray workers (fix36): a worker on an existing cluster does
not inherit the driver's variables, and the env dict each actor is given held only the
imported modules and PYTHONPATH, so a game above its size limit built on the driver and was
refused on every worker. The switch travels from the driver's own environment only."""

import pytest

from games.limits import ENV
from llm_agents import ray_rollouts
from populations import runners


@pytest.mark.parametrize("worker_env", [runners.worker_env, ray_rollouts.worker_env])
def test_the_switch_travels_to_the_workers(monkeypatch, worker_env):
    monkeypatch.setenv(ENV, " OFF ")
    assert worker_env()[ENV] == "off"


@pytest.mark.parametrize("worker_env", [runners.worker_env, ray_rollouts.worker_env])
@pytest.mark.parametrize("value", [None, "on", "", "0"])
def test_limits_kept_are_not_sent(monkeypatch, worker_env, value):
    if value is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, value)
    assert ENV not in worker_env()
