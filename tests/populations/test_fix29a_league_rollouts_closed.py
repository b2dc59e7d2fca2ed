"""A league's LLM member plays its GRPO rollouts on Ray actors with ``runner=ray``
(``llm_agents.ray_rollouts.RayRollouts``, built by ``populations.learner_build``). Its
trainer and collector hold each other, so a league that left them to the garbage collector
kept those actors, and their CPUs, in a process that goes on (a notebook, a test session):
the next Ray actors waited for them. The league closes each member's collector when it
ends, however it ends, as the single LLM run does, and ends the match workers and learner
actors it made before an error in its own start. Uses the session's Ray (``ray_local``);
the garbage collector is off while the run ends, so only closing frees the CPUs."""

import gc
import sqlite3
import time

from populations.experiment import run_experiment
from tests.populations.test_llm_experiments import TINY_LLM, _experiment

LEAGUE = ["experiment=mixed_league", "population.members=[llm_grpo]", "population.generations=1",
          "population.nash_conv=false", "runner=ray", "runner.workers=1", *TINY_LLM]


def _free_cpus_after(ray, deadline_s):
    """The local Ray's free CPUs once they are all free again, or at ``deadline_s`` (Ray
    ends killed actors asynchronously: a bounded wait)."""
    total = ray.cluster_resources()["CPU"]
    deadline = time.monotonic() + deadline_s
    while ray.available_resources().get("CPU", 0.0) < total and time.monotonic() < deadline:
        time.sleep(0.5)
    return ray.available_resources().get("CPU", 0.0)


def test_a_ray_llm_league_frees_its_rollout_actors_when_it_ends(tmp_path, ray_local):
    total = ray_local.cluster_resources()["CPU"]
    gc.collect()  # earlier tests' actors left in cycles
    assert _free_cpus_after(ray_local, 120) == total
    gc.disable()
    try:
        summary = run_experiment(_experiment(LEAGUE), tmp_path / "run")
        db = sqlite3.connect(summary.database)
        try:
            assert db.execute("SELECT status FROM runs").fetchall() == [("finished",)]
        finally:
            db.close()
        # before: 3 of 4 (the rollout actor kept its CPU)
        assert _free_cpus_after(ray_local, 60) == total
    finally:
        gc.enable()
