"""Training rollouts collected by workers: in this process or on Ray actors.

Each :class:`RolloutWorker` owns ``num_envs`` copies of the game, kept between rounds (an
episode goes on across rounds, as in one long ``VectorGame``). Every round the learner
publishes its policy, sends it to all workers as policy-file bytes (loaded with
``weights_only=True`` there, so a Ray cluster needs no shared disk), and each worker plays
``steps`` steps sampling from it -- uniformly random play in seats the learner does not
hold -- and returns what the policy saw, chose, and the behaviour log-probabilities of its
choices. :func:`train_with_workers` stacks the workers' copies into one batch and replays
it through the learner (``learner.act(vs, actions=..., logp=...)``,
``learner.observe(next)``); PPO's ratios use the workers' log-probabilities, which equal the
learner's own because each round's policy is the learner's fresh snapshot.

With ``kind="ray"`` the workers are Ray actors (``ray.init()`` locally, or a cluster
address); ``kind="local"`` runs the same workers in this process. For a fixed seed both
give the same rollouts, hence the same training.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

import games
from games import VecStep
from marl.configs import did_you_mean
from marl.core import Learner, Policy, derive_seed, policy_bytes, policy_from_bytes
from marl.progress import tqdm
from marl.train import RandomPolicy, TrainResult, after_step, learner_sides
from populations.config_checks import check_rollout_copies

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RolloutSpec:
    """What every worker plays: the game, its copies, and the seats the learner holds."""

    game: str
    learner_agents: tuple[str, ...]
    num_envs: int = 8  # copies per worker
    seed: int = 0
    game_kwargs: dict[str, Any] = field(default_factory=dict)
    vector_kwargs: dict[str, bool] = field(default_factory=dict)  # with_state, with_graphs...


Segment = tuple[list[VecStep], list[dict[str, np.ndarray]], list[dict[str, np.ndarray]]]
"""``steps + 1`` VecSteps (the first is where the round started), and per step the learner
seats' actions and their behaviour log-probabilities (0 where a seat does not act)."""


class RolloutWorker:
    """``spec.num_envs`` game copies stepped with the policy of each round.

    On a Ray actor, ``env`` is the driver's :func:`populations.runners.worker_env` (the
    user's modules, ``imports=``, and its ``PYTHONPATH``): the worker imports them at its
    first round, then makes its game copies, since the game or the learner's policy kind
    may be one only those modules register (a cluster's workers do not inherit the
    driver's variables). In the first round, not the constructor: a job's error reaches
    the driver as itself, a constructor's as a dead actor."""

    def __init__(self, spec: RolloutSpec, index: int, env: dict[str, str] | None = None) -> None:
        torch.set_num_threads(1)
        self.spec, self.index, self.round = spec, index, 0
        self.env = env or None  # None: nothing (left) to import
        self.vg: games.VectorGame | None = None
        if self.env is None:
            self._start()

    def _start(self) -> None:
        spec, index = self.spec, self.index
        self.vg = games.VectorGame(spec.game, spec.num_envs, seed=spec.seed + 7919 * index,
                                   **spec.vector_kwargs, **spec.game_kwargs)
        others = [a for a in self.vg.spec.agent_ids if a not in spec.learner_agents]
        self.others = {a: RandomPolicy(self.vg.spec, seed=spec.seed + index) for a in others}
        self.vs = self.vg.reset()

    def collect(self, data: bytes, steps: int) -> Segment:
        if self.env is not None:
            from populations.runners import enter_worker_env

            enter_worker_env(self.env)
            self._start()
            self.env = None
        assert self.vg is not None
        policy = policy_from_bytes(data)
        # sampling is seeded per (worker, round): a policy's own stream (MAPPO's generator,
        # seeded alike by every load) reseeded, the global one on a forked RNG; the same
        # rollouts in any process, and an in-process worker leaves the learner's stream alone.
        # Without the reseed every worker drew the same numbers, in every round
        policy.reseed(derive_seed(self.spec.seed, "rollout", self.index, self.round))
        seen, chosen, logps = [self.vs], [], []
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.spec.seed * 1_000_003 + 7919 * self.index + self.round)
            for _ in range(steps):
                actions, logp = {}, {}
                for a in self.spec.learner_agents:
                    actions[a] = policy.act(a, self.vs)
                    probs = policy.action_probs(a, self.vs)
                    p = np.take_along_axis(probs, actions[a][:, None], 1)[:, 0]
                    with np.errstate(divide="ignore"):
                        logp[a] = np.where(self.vs.acting[a], np.log(p), 0.0).astype(np.float32)
                mine = dict(actions)
                actions.update({a: p.act(a, self.vs) for a, p in self.others.items()})
                self.vs = self.vg.step(actions)
                seen.append(self.vs)
                chosen.append(mine)
                logps.append(logp)
        self.round += 1
        return seen, chosen, logps

    def close(self) -> None:
        if self.vg is not None:
            self.vg.close()


class RolloutCollector:
    """``num_workers`` workers in this process (``kind="local"``) or on Ray actors. Each
    plays ``spec.num_envs`` copies, or, given ``num_envs`` (the copies of all of them), a
    share of it: 5 over 2 workers are 3 + 2."""

    def __init__(self, spec: RolloutSpec, num_workers: int = 2, kind: str = "local",
                 address: str | None = None, num_envs: int | None = None) -> None:
        if kind not in ("local", "ray"):
            raise ValueError(f"rollout worker kind {kind!r} unknown; choose one of "
                             f"['local', 'ray']{did_you_mean(kind, ('local', 'ray'))}")
        if num_workers < 1:
            raise ValueError(f"rollout workers={num_workers}; expected an integer >= 1")
        if num_envs is not None:  # selfplay-train refuses it before torch, in these words
            check_rollout_copies(num_envs, num_workers)
        self.spec, self.kind, self.num_workers = spec, kind, num_workers
        share = [spec.num_envs] * num_workers if num_envs is None else [
            num_envs // num_workers + (i < num_envs % num_workers) for i in range(num_workers)]
        specs = [spec if n == spec.num_envs else dataclasses.replace(spec, num_envs=n)
                 for n in share]
        self.copies = share  # each worker's copies
        if kind == "local":
            self.workers: list[Any] = [RolloutWorker(s, i) for i, s in enumerate(specs)]
            return
        from populations.runners import init_ray, worker_env

        self._ray = ray = init_ray(address, num_workers)
        actor = ray.remote(num_cpus=1)(RolloutWorker)
        env = worker_env()  # the user's modules (imports=), imported by every worker
        self.workers = [actor.remote(s, i, env) for i, s in enumerate(specs)]
        log.info("collecting rollouts on %d ray actors", num_workers)

    @property
    def num_envs(self) -> int:
        return sum(self.copies)

    def collect(self, policy: Policy, steps: int) -> list[Segment]:
        data = policy_bytes(policy)
        if self.kind == "local":
            return [w.collect(data, steps) for w in self.workers]
        from ray.exceptions import RayTaskError

        ref = self._ray.put(data)
        try:
            return list(self._ray.get([w.collect.remote(ref, steps) for w in self.workers]))
        except RayTaskError as err:  # the round itself failed: its own error, unwrapped
            raise (err.cause if isinstance(err.cause, Exception) else err) from None

    def close(self) -> None:
        if self.kind == "local":
            for w in self.workers:
                w.close()
        else:
            for w in self.workers:
                self._ray.kill(w)
        self.workers = []


def stack_steps(steps: Sequence[VecStep]) -> VecStep:
    """One VecStep whose copies are those of ``steps`` in order (same game, same views).

    An optional field that some steps leave ``None`` and others fill (``final_state``: a
    worker none of whose copies ended an episode at this step has none) is filled with zeros
    for the copies of the former, as one VectorGame fills the copies that did not end."""
    sizes = [len(s.done) for s in steps]

    def cat(values: list[Any]) -> Any:
        first = next((v for v in values if v is not None), None)
        if first is None:
            return None
        if isinstance(first, np.ndarray):
            return np.concatenate([v if v is not None else
                                   np.zeros((n, *first.shape[1:]), first.dtype)
                                   for v, n in zip(values, sizes, strict=True)], 0)
        if isinstance(first, list):
            return [x for v in values for x in v]
        if isinstance(first, dict):
            return {k: cat([v[k] for v in values]) for k in first}
        return first

    out: dict[str, Any] = {}
    for f in dataclasses.fields(VecStep):
        if f.name != "info":
            values = [getattr(s, f.name) for s in steps]
            out[f.name] = values[0] if f.name == "agent_node" else cat(values)
    out["info"], first = {}, 0  # {copy: its ended episode's info}: copies renumbered
    for s in steps:
        out["info"].update({first + b: info for b, info in s.info.items()})
        first += len(s.done)
    return VecStep(**out)


def _check_learner(learner: Learner) -> None:
    from marl.mappo import MAPPO

    if not isinstance(learner, MAPPO):
        raise ValueError(f"rollout workers train MAPPO/IPPO learners (on-policy replay); got "
                         f"{type(learner).__name__}: use rollout_workers=0")
    if learner.cfg.net.recurrent:
        raise ValueError("rollout workers do not carry GRU states between rounds yet; use "
                         "rollout_workers=0 with a recurrent MAPPO")
    if any(g.continuous for g in learner.groups):
        raise ValueError("rollout workers replay discrete actions only (their policies' "
                         "action_probs); use runner.rollout_workers=0 on a game of continuous "
                         "actions")


def train_with_workers(learner: Learner, collector: RolloutCollector, frames: int,
                       progress: bool = True,
                       on_update: Callable[[int, dict[str, float]], None] | None = None,
                       resumed_at: int = 0) -> TrainResult:
    """Train ``learner`` for ``frames`` frames of rollouts collected by ``collector``; one
    round is ``learner.cfg.rollout_steps`` steps of every worker's copies. ``resumed_at``:
    frames trained before this call (a resumed run's checkpoint), where the progress bar
    starts, counting to the whole run's end (as :func:`marl.train.train`'s); ``frames`` and
    the result count this call's."""
    _check_learner(learner)
    steps = learner.cfg.rollout_steps  # type: ignore[attr-defined]
    mine = learner.agents
    result = TrainResult(0, 0, 0.0)
    start = time.perf_counter()
    # smoothing=0: the overall rate (frames over the wall time so far, updates included), as
    # marl.train.train's bar and the league's
    bar = tqdm(total=resumed_at + frames, initial=resumed_at, disable=not progress,
               unit="frame", dynamic_ncols=True, smoothing=0)
    spec = getattr(learner, "spec", None)  # self-play: the bar shows each side's return
    sides = learner_sides(spec, learner.agents) if spec is not None else {}
    while result.frames < frames:
        segments = collector.collect(learner.policy(), steps)
        for t in range(steps):
            vs = stack_steps([seg[0][t] for seg in segments])
            actions = {a: np.concatenate([seg[1][t][a] for seg in segments]) for a in mine}
            logp = {a: np.concatenate([seg[2][t][a] for seg in segments]) for a in mine}
            learner.act(vs, actions=actions, logp=logp)  # type: ignore[call-arg]
            nxt = stack_steps([seg[0][t + 1] for seg in segments])
            learner.observe(nxt)
            after_step(learner, nxt, result, bar, on_update, sides)
    bar.close()
    result.seconds = time.perf_counter() - start
    log.info("trained %d frames from %d %s worker%s in %.1fs (%d update%s)", result.frames,
             collector.num_workers, collector.kind, "" if collector.num_workers == 1 else "s",
             result.seconds, result.updates, "" if result.updates == 1 else "s")
    return result
