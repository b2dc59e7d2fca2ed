"""A league whose start fails after it made its match workers and learner actors (Ray
actors) closes them before the error leaves ``League(...)``. It left them to the garbage
collector, and a traceback that holds the league's frames (a notebook keeps the last one)
kept them and their CPUs: the next Ray actors in that process waited for them. Uses the
session's Ray (``ray_local``); the garbage collector is off, so only closing frees them."""

import dataclasses
import gc

import pytest

from populations.checkpoint import CheckpointError
from populations.league import League, LeagueConfig
from tests.populations.test_fix29a_league_rollouts_closed import _free_cpus_after

GAME = "openspiel/kuhn_poker"


def test_a_refused_resume_closes_the_ray_workers_and_learner_actors(tmp_path, ray_local):
    """Resumed with ``runner=ray`` and only a damaged checkpoint: the league refuses it in
    its start, after its match worker and learner actor are up (the checkpoint is read once
    the members' actors exist). Before: 2 of 4 CPUs free while the error was held."""
    run = tmp_path / "run"
    cfg = LeagueConfig(game=GAME, game_kwargs={}, generations=1, frames_per_generation=64,
                       num_envs=4, eval_episodes=1)
    League(cfg, run).close()  # a run row, no checkpoint yet (in-process runner)
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "ckpt_000002.pt").write_bytes(b"not a checkpoint")
    total = ray_local.cluster_resources()["CPU"]
    gc.collect()  # earlier tests' actors left in cycles
    assert _free_cpus_after(ray_local, 120) == total
    gc.disable()
    try:
        with pytest.raises(CheckpointError, match="no readable checkpoint") as refused:
            League(dataclasses.replace(cfg, runner="ray", ray_workers=1), run, resume=True)
        assert refused.value.__traceback__ is not None  # the league's frames are held
        assert _free_cpus_after(ray_local, 60) == total
    finally:
        gc.enable()
    with pytest.raises(CheckpointError, match="no readable checkpoint"):  # not locked
        League(cfg, run, resume=True)
