"""Walk 25's progress findings on bars and lines outside PSRO:

* the rollout workers' bar and a single LLM team's iteration bar show the overall rate
  (tqdm ``smoothing=0``), as a single learner's and the league's bars do; before, tqdm's
  moving average;
* an LLM team's bar in a league counts to the episodes of its generation (before: no total,
  ``generation 1/1 llm: 16episode [00:59, 3.73s/episode]``, no percent nor ETA);
* a league says which member it builds as it starts (an LLM team's model, a replay
  buffer: walk 25's mixed_algo_league said nothing for minutes before its first bar);
* a league's ``generation N/M done`` line says about how long the rest of the run takes
  (the mean generation so far); the last one says nothing of it.
"""

from __future__ import annotations

import logging
import re

from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import marl.progress
import populations.cli  # noqa: F401  (registers the schema)
import populations.league as league_module
import populations.rollouts as rollouts_module
from populations.experiment import run_experiment
from populations.league import League
from populations.league_progress import time_left
from tests.populations.test_rollouts import _collector, _learner


def _experiment(run_dir, overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=overrides))
    return run_experiment(exp, run_dir)


def test_the_rollout_workers_bar_shows_the_overall_rate(recorded_bars):
    bars = recorded_bars(rollouts_module)
    learner = _learner()
    collector = _collector(learner, "local")
    try:
        rollouts_module.train_with_workers(learner, collector, 200, progress=True)
    finally:
        collector.close()
    assert [(b.unit, b.total, b.smoothing) for b in bars] == [("frame", 200, 0)]


def test_a_single_llm_teams_bar_shows_the_overall_rate(tmp_path, recorded_bars):
    bars = recorded_bars(marl.progress)
    _experiment(tmp_path / "run", [
        "algo=llm_grpo", "llm=tiny_kuhn", "game=kuhn", "llm.iterations=2",
        "llm.grpo.groups_per_step=2", "llm.grpo.group_size=2", "eval_episodes=1",
        "logger=none", "progress=true"])
    iters = [b for b in bars if b.unit == "iter"]
    assert [(b.total, b.n, b.smoothing) for b in iters] == [(2, 2, 0)]


def test_an_llm_member_counts_to_its_generation_and_the_league_says_the_time_left(
        tmp_path, recorded_bars, caplog):
    bars = recorded_bars(league_module)
    caplog.set_level(logging.INFO, "populations.league")
    caplog.set_level(logging.INFO, "populations.experiment")
    _experiment(tmp_path / "run", [
        "experiment=mixed_league", "population.generations=2",
        "population.frames_per_generation=16", "num_envs=2", "mappo.rollout_steps=8",
        "population.nash_conv=false", "llm.iterations=2", "llm.grpo.groups_per_step=2",
        "llm.grpo.group_size=2", "eval_episodes=2", "logger=none", "progress=true"])
    llm = [b for b in bars if b.unit == "episode"]
    assert [(b.desc, b.total, b.n) for b in llm] == [
        ("generation 1/2 llm", 8, 8), ("generation 2/2 llm", 8, 8)]
    lines = [r.getMessage() for r in caplog.records if " done, " in r.getMessage()]
    assert len(lines) == 2
    assert re.fullmatch(r"generation 1/2 done, 16 frames, \d+s; about .+ left", lines[0])
    assert re.fullmatch(r"generation 2/2 done, 32 frames, \d+s", lines[1])
    built = [r.getMessage() for r in caplog.records if r.name == "populations.experiment"
             and r.getMessage().startswith("league member")]
    assert built[:2] == ["league member 1/2: building mappo (mappo)",
                         "league member 2/2: building llm (llm_grpo; llm=tiny builds its "
                         "vocabulary from llm.corpus_episodes=200 random episodes of "
                         "openspiel/kuhn_poker)"], built
    assert re.fullmatch(r"league members built in \d+s", built[2])


def test_the_time_left_is_the_mean_generation_times_those_left():
    assert time_left(20, 1, 4) == "; about 60s left"
    assert time_left(30, 1, 4) == "; about 2 min left"
    assert time_left(600, 2, 4) == "; about 10 min left"
    assert time_left(7200, 1, 4) == "; about 6.0 h left"
    assert time_left(30, 0, 4) == time_left(30, 4, 4) == ""


def test_a_resume_says_it_loads_before_it_has_loaded(tmp_path, caplog):
    from tests.populations.test_league import _kuhn

    run = tmp_path / "run"
    League(_kuhn(generations=1, frames_per_generation=8, num_envs=1), run).run()
    caplog.set_level(logging.INFO, "populations.league")
    League(_kuhn(generations=1, frames_per_generation=8, num_envs=1), run, resume=True).close()
    lines = [r.getMessage() for r in caplog.records if "resum" in r.getMessage()]
    assert lines[0] == f"resuming: loading the latest checkpoint in {run / 'checkpoints'}"
    assert lines[1].startswith("resumed from ckpt_")


def test_async_members_on_learner_actors_say_when_each_generation_is_trained(
        tmp_path, caplog, ray_local):
    from tests.populations.test_league_ray import _cfg, _run

    caplog.set_level(logging.INFO, "populations.league")
    _run(_cfg(runner="ray", sync=False, generations=1), tmp_path / "run")
    trained = sorted(r.getMessage() for r in caplog.records if " trained " in r.getMessage())
    assert len(trained) == 2, trained
    for member, line in zip("ab", trained, strict=True):
        assert re.fullmatch(rf"generation 1: {member} trained 256 frames in \d+s \(.+\)", line)
