"""The learners an experiment builds through the registry (``marl.registry``): a single
run's learner (:func:`make_learner`) and the trainer of a learner that plays its own episodes,
an LLM team (:func:`rollout_trainer`), each seeded from the run's seed tree
(:mod:`populations.seeds`), and the block that closes such trainers' rollout workers
(:func:`rollouts_closed`). Below :mod:`populations.experiment` and
:mod:`populations.single_run`, which both build them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import games
from marl import registry
from marl.core import Learner
from marl.registry import LearnerEntry
from populations.learner_sections import settings
from populations.seeds import RunSeeds

if TYPE_CHECKING:
    from populations.experiment import ExperimentConfig


def make_learner(cfg: ExperimentConfig, spec: games.GameSpec,
                 agents: tuple[str, ...] | None = None, seed: int | None = None) -> Learner:
    """The learner ``cfg.algo`` names, for ``agents`` of ``spec`` (all by default), built
    through the registry; ``seed`` defaults to the run tree's ``learner/<algo>`` stream."""
    entry = registry.get(cfg.algo)
    if seed is None:
        seed = RunSeeds(cfg.seed).learner(cfg.algo)
    return entry.build(spec, settings(cfg, entry), agents, cfg.device, seed)


def rollout_trainer(cfg: ExperimentConfig, entry: LearnerEntry, spec: games.GameSpec,
                    run_dir: Path, seed: int, config: Any = None) -> Any:
    """The trainer of a learner that plays its own episodes (an LLM team), with ``config``
    (default: its section of ``cfg``); ``runner=ray`` (or ``runner.rollout_workers``) plays
    its rollouts on workers (llm_agents.ray_rollouts)."""
    run, extra = cfg.runner, {}
    if run.kind == "ray" or run.rollout_workers:
        from llm_agents.learner import RolloutWorkersConfig
        from populations.learner_actors import connect_ray  # init_ray; 127.0.0.1 kept

        extra = {"rollouts": RolloutWorkersConfig(run.kind, run.rollout_workers or run.workers,
                                                  run.address),
                 # a local instance also seats the match workers and the league's learners
                 "ray_init": lambda address, cpus: connect_ray(address, cpus + run.workers + max(
                     run.learners, len(cfg.population.members or [cfg.algo])))}
    config = settings(cfg, entry) if config is None else config
    return entry.build(spec, config, None, cfg.device, seed, game=cfg.game.name,
                       game_kwargs=dict(cfg.game.kwargs), workdir=run_dir, **extra)


@contextlib.contextmanager
def rollouts_closed(trainers: Sequence[Any]) -> Iterator[None]:
    """Close the rollout workers (:mod:`llm_agents.ray_rollouts`) of each trainer in
    ``trainers`` when the block ends, however it ends (a list the block appends to: those
    built before an error or a stop are closed too). Left to the garbage collector, a
    trainer and its collector hold each other, so their Ray actors kept their CPUs in a
    process that goes on (a notebook, a test session) and the next Ray actors waited."""
    with contextlib.ExitStack() as stack:  # each one closed even if another's close fails
        try:
            yield
        finally:
            for trainer in trainers:
                rollouts = getattr(trainer, "rollouts", None)
                if rollouts is not None:
                    stack.callback(rollouts.close)
