"""Runners play evaluation matches: in this process (``LocalRunner``, the default) or on Ray
actors (``RayRunner``: ``ray.init()`` locally, or a cluster address).

A :class:`MatchJob` is self-contained — game, seats as policy files, episodes, seed — so a
job gives the same returns wherever it runs: the local and Ray runners agree exactly for
a fixed seed. Episodes are reported in the order they finish (copy order within a step).
"""

from __future__ import annotations

import abc
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

import games
import llm_agents.learner  # noqa: F401 - registers the llm policy kind (load_policy, Ray workers)
from marl.core import Policy, load_policy
from marl.train import RandomPolicy

log = logging.getLogger(__name__)
RANDOM = "random"  # seat value for a uniformly random policy instead of a file


@dataclass(frozen=True)
class MatchJob:
    """``episodes`` episodes of ``game`` with ``seats[agent]`` = policy file (or ``"random"``)."""

    key: str
    game: str
    seats: dict[str, str]
    episodes: int
    seed: int
    game_kwargs: dict[str, Any] = field(default_factory=dict)
    num_envs: int = 8
    greedy: bool = False


@dataclass(frozen=True)
class MatchResult:
    """Returns of each finished episode, in order: ``returns[e][agent]``."""

    key: str
    returns: list[dict[str, float]]


def _vector_kwargs(policies: list[Policy]) -> dict[str, bool]:
    inputs = {i for p in policies for i in p.meta.inputs}
    return {"with_graphs": "graph" in inputs, "with_text": "text" in inputs,
            "with_state": "state" in inputs}


def play_job(job: MatchJob, cache: dict[str, Policy] | None = None) -> MatchResult:
    """Play one job deterministically (seeds torch and numpy from ``job.seed``), leaving the
    caller's global torch and numpy random states as they were: an in-process match must not
    move a learner's random stream, or a run resumed after its matches were recorded (and
    are not replayed) would train differently from one that was never interrupted."""
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    np_state = np.random.get_state()
    try:
        with torch.random.fork_rng(devices=cuda):
            return _play_job(job, cache)
    finally:
        np.random.set_state(np_state)


def _play_job(job: MatchJob, cache: dict[str, Policy] | None) -> MatchResult:
    cache = {} if cache is None else cache
    spec = games.make(job.game, **job.game_kwargs).spec
    seats: dict[str, Policy] = {}
    for agent, path in job.seats.items():
        if path == RANDOM:
            seats[agent] = RandomPolicy(spec, seed=job.seed)
        else:
            if path not in cache:
                cache[path] = load_policy(path)
            seats[agent] = cache[path]
    torch.manual_seed(job.seed)  # after loading: results must not depend on what was cached
    np.random.seed(job.seed % 2**32)
    missing = set(spec.agent_ids) - set(seats)
    if missing:
        raise ValueError(f"match {job.key}: no policy for seats {sorted(missing)}")
    vg = games.VectorGame(job.game, min(job.num_envs, job.episodes), seed=job.seed,
                          **_vector_kwargs(list(seats.values())), **job.game_kwargs)
    vs = vg.reset()
    out: list[dict[str, float]] = []
    while len(out) < job.episodes:
        vs = vg.step({a: p.act(a, vs, greedy=job.greedy) for a, p in seats.items()})
        for b in np.flatnonzero(vs.done):
            out.append({a: float(vs.episode_return[a][b]) for a in spec.agent_ids})
    vg.close()
    return MatchResult(job.key, out[: job.episodes])


class Runner(abc.ABC):
    """Plays match jobs; results come back in job order."""

    @abc.abstractmethod
    def play(self, jobs: list[MatchJob]) -> list[MatchResult]:
        """Play every job."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release workers."""


class LocalRunner(Runner):
    """Plays jobs one after another in this process (policies cached across jobs)."""

    def __init__(self) -> None:
        self._cache: dict[str, Policy] = {}

    def play(self, jobs: list[MatchJob]) -> list[MatchResult]:
        return [play_job(j, self._cache) for j in jobs]


def init_ray(address: str | None, num_cpus: int) -> Any:
    """The ``ray`` module, initialized once per process: a cluster at ``address``, or a local
    instance with ``num_cpus`` CPUs (no dashboard, quiet logs)."""
    import ray

    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "configure_logging": False}
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=num_cpus, **kwargs)
    return ray


class RayRunner(Runner):
    """Plays jobs on ``num_workers`` Ray actors (each caches the policies it loaded)."""

    def __init__(self, num_workers: int = 2, address: str | None = None,
                 num_cpus: int | None = None) -> None:
        self._ray = ray = init_ray(address, num_cpus or num_workers)

        @ray.remote(num_cpus=1)
        class MatchWorker:
            def __init__(self) -> None:
                torch.set_num_threads(1)
                self.cache: dict[str, Policy] = {}

            def play(self, job: MatchJob) -> MatchResult:
                return play_job(job, self.cache)

        self.workers = [MatchWorker.remote() for _ in range(num_workers)]
        log.info("ray runner with %d workers", num_workers)

    def play(self, jobs: list[MatchJob]) -> list[MatchResult]:
        refs = [self.workers[i % len(self.workers)].play.remote(j) for i, j in enumerate(jobs)]
        return list(self._ray.get(refs))

    def close(self) -> None:
        for w in self.workers:
            self._ray.kill(w)
        self.workers = []


def make_runner(kind: str, **kwargs: Any) -> Runner:
    """``"local"`` or ``"ray"`` (kwargs: num_workers, address, num_cpus)."""
    if kind == "local":
        return LocalRunner()
    if kind == "ray":
        return RayRunner(**kwargs)
    raise ValueError(f"runner {kind!r} unknown; choose one of ['local', 'ray']")
