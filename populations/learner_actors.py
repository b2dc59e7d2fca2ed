"""League members' learners on Ray actors: every member trains its generation at once.

The league (``populations.league``, ``runner="ray"``) keeps matchmaking, evaluation,
ratings, the policy store and checkpoints in the driver; only training moves. For each
member and generation the driver sends a :class:`LearnerJob` to a free learner actor:

* the member's whole trainer state (``state_dict``) as ``torch.save`` bytes, so any actor
  can train any member (a pool of M actors serves N members) and a restarted actor starts
  from the member's last checkpoint, which is exactly that state;
* its :class:`~populations.members.TrainPlan` and :class:`~populations.members.OpponentDraw`
  (candidate snapshot ids, probabilities, the seed of its own draw stream);
* the bytes of every candidate snapshot (Ray object refs, put once per snapshot), checked on
  the actor against the SHA-256 the store recorded and loaded like a snapshot file
  (``weights_only``), so a second node needs no shared file system.

The actor trains the member through a :class:`~populations.members.GenerationMatchmaker`
whose metrics it buffers, and returns a :class:`LearnerResult`: frames, the buffered
metrics, and the new state as bytes (loaded in the driver with ``weights_only=True``). The
driver loads that state into its own copy of the member, and publishes and checkpoints
from it as the in-process league does; a member's opponent draws come from its own seeded
stream, so the snapshots, matches and ratings equal the in-process runner's.

Before its first job an actor imports the user's modules (``imports=``), from the module list
and ``PYTHONPATH`` the driver gives its constructor (``populations.runners.worker_env``): the
member it trains may play snapshots of a policy kind, or normalize advantages with an
adv_norm, that only those modules register (a ``mappo`` member against ``my_algo``'s
snapshots), and a cluster's workers do not inherit the driver's variables.

An actor that dies (killed, out of memory, its node lost) is replaced and the job sent
again, from the same state, at most ``max_restarts`` times per job.

While members train, the driver logs a line every :data:`PROGRESS_EVERY_S` seconds naming
the members still training (each with its generation and time so far) and those queued for
a free actor: a generation can take many minutes, and the league's own lines come only as
each member finishes (in-process, a bar shows each member's frames).

Bit-equal numbers need the driver to set its torch thread count before its first torch
computation (``selfplay-train`` and ``python -m populations.league`` do): a process that
computed with several threads first keeps other CPU kernels after ``set_num_threads(1)``,
and its floats differ from a fresh actor's in the last bits (seen on simple_adversary).

Costs: each generation ships a member's state twice (a small MLP learner: ~100 kB; an
off-policy learner's replay rows: megabytes); snapshots travel once per actor.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from marl.core import Policy, PolicyLoadError, policy_from_bytes
from populations.members import GenerationMatchmaker, Member, OpponentDraw, TrainPlan
from populations.runners import enter_worker_env, init_ray, worker_env

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 30.0
"""Seconds between :class:`LearnerPool`'s lines naming the members still training."""


class LearnerActorError(RuntimeError):
    """A member's generation could not be trained: its learner actor kept dying."""


def state_bytes(state: dict[str, Any]) -> bytes:
    """A trainer state as ``torch.save`` bytes (what travels to and from an actor)."""
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


def load_state_bytes(data: bytes) -> dict[str, Any]:
    """The inverse of :func:`state_bytes`, with ``weights_only=True`` (on the CPU)."""
    # No check_torch_zip: these bytes pass only between this run's driver and its own Ray
    # actors, through Ray's object store, which moves task arguments and results as pickles;
    # whoever can put bytes there already runs code on both ends. Files (checkpoints, policy
    # and snapshot bytes: load_policy) are checked where they enter.
    state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    if not isinstance(state, dict):
        raise ValueError("a learner actor returned a state that is not a dict")
    return state


@dataclass(frozen=True)
class LearnerJob:
    """One member's generation: its state, plan, opponent draw and candidate snapshots
    (``snapshots[id] = (sha256, [bytes ref])``: the ref in a list, so Ray hands it over
    unresolved and an actor fetches only snapshots it has not loaded yet)."""

    name: str
    plan: TrainPlan
    draw: OpponentDraw
    state: bytes
    snapshots: dict[int, tuple[str, list[Any]]] = field(default_factory=dict)


@dataclass(frozen=True)
class LearnerResult:
    """What an actor sends back: frames trained, metrics ``[(frames, {key: value})]`` in
    order (names already prefixed), the new state, and the wall-clock start and end."""

    name: str
    frames: int
    metrics: list[tuple[int, dict[str, float]]]
    state: bytes
    started_at: float
    finished_at: float
    worker: str  # "<node id> pid <pid>"


class _LearnerActor:
    """One Ray actor: trains whichever member a job names (members cached by name)."""

    def __init__(self, torch_threads: int, env: dict[str, str] | None = None) -> None:
        self.threads = torch_threads
        self.env: dict[str, str] | None = env or {}  # the user's modules; None once imported
        self.members: dict[str, Member] = {}
        self.policies: dict[tuple[int, str], Policy] = {}  # (snapshot id, sha256) -> policy

    def where(self) -> str:
        """``<node id prefix> pid <pid>``: which node and process trains here."""
        import ray

        return f"{ray.get_runtime_context().get_node_id()[:12]} pid {os.getpid()}"

    def train(self, member: list[Any], job: LearnerJob) -> LearnerResult:
        import ray

        started = time.time()
        if self.env is not None:  # in the job, not __init__: its error reaches the driver as is
            enter_worker_env(self.env)
            self.env = None
        # OpenMP's thread count belongs to the calling thread: set it where the work runs
        torch.set_num_threads(self.threads)
        if job.name not in self.members:
            self.members[job.name] = ray.get(member[0])
        m = self.members[job.name]
        m.load_state_dict(load_state_bytes(job.state))
        metrics: list[tuple[int, dict[str, float]]] = []
        mm = GenerationMatchmaker(job.name, job.plan, job.draw,
                                  lambda sid: self._policy(job, sid),
                                  lambda f, values: metrics.append((f, dict(values))))
        frames = m.train_generation(mm)
        return LearnerResult(job.name, frames, metrics, state_bytes(m.state_dict()), started,
                             time.time(), self.where())

    def _policy(self, job: LearnerJob, sid: int) -> Policy:
        """Snapshot ``sid`` from its bytes, checked against the store's hash, loaded like the
        store loads its files (``policy_from_bytes``: ``weights_only``, sizes checked), from a
        temporary file removed at once: an actor ends by ``ray.kill``, where no cleanup runs,
        so a folder it kept would stay in the node's temp directory after every league."""
        import ray

        sha, ref = job.snapshots[sid]
        if (sid, sha) not in self.policies:
            data = ray.get(ref[0])
            got = hashlib.sha256(data).hexdigest()
            if got != sha:
                raise ValueError(f"snapshot {sid} arrived damaged: SHA-256 {got[:16]}... "
                                 f"differs from the {sha[:16]}... recorded when published")
            try:
                self.policies[(sid, sha)] = policy_from_bytes(data)
            except PolicyLoadError as err:
                raise PolicyLoadError(f"snapshot {sid} ({sha[:16]}...): {err}") from None
        return self.policies[(sid, sha)]


def connect_ray(address: str | None, num_cpus: int) -> Any:
    """:func:`populations.runners.init_ray` (the league's and the LLM rollout workers' name
    for it): it checks ``address`` and keeps a loopback-only cluster's ``127.0.0.1``."""
    return init_ray(address, num_cpus)


def learner_gpus(device: str, requested: float | None) -> float:
    """GPUs per learner actor: ``requested``, or 1 when the league trains on CUDA and this
    machine has it, else 0 (CPU actors)."""
    if requested is not None:
        if requested < 0:
            raise ValueError(f"learner_gpus={requested}; expected a number >= 0")
        return float(requested)
    return 1.0 if device.startswith("cuda") and torch.cuda.is_available() else 0.0


class LearnerPool:
    """``num_actors`` Ray learner actors training league members' generations.

    Jobs are queued with :meth:`submit`; :meth:`wait` returns the next finished result
    (completion order). A job whose actor dies is sent again to a fresh actor, from the same
    state, at most ``max_restarts`` times (then :class:`LearnerActorError`); an error raised
    by training itself is raised here as it was. ``restarts`` counts replacements.

    While :meth:`wait` waits, a line every ``progress_every_s`` seconds (None: none) names
    the jobs running, each with its time so far, and those queued.
    """

    def __init__(self, members: Sequence[Member], num_actors: int, num_gpus: float = 0.0,
                 num_cpus: float = 1.0, torch_threads: int = 1, max_restarts: int = 2,
                 progress_every_s: float | None = PROGRESS_EVERY_S) -> None:
        import ray

        if num_actors < 1 or max_restarts < 0:
            raise ValueError(f"LearnerPool: num_actors={num_actors} (expected >= 1), "
                             f"max_restarts={max_restarts} (expected >= 0)")
        if not ray.is_initialized():
            raise RuntimeError("LearnerPool needs Ray initialized (populations.runners.init_ray)")
        self._ray = ray
        # SPREAD: learners go to different nodes while there are any (their own GPUs)
        self._actor = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus,
                                 scheduling_strategy="SPREAD")(_LearnerActor)
        self._threads, self.max_restarts, self.restarts = torch_threads, max_restarts, 0
        # each member's skeleton travels once per actor; its state travels with every job
        self._members = {m.name: ray.put(m) for m in members}
        self._snapshots: dict[int, tuple[str, Any]] = {}
        self._env = worker_env()  # the user's modules (imports=), imported by every actor
        self.actors = [self._actor.remote(torch_threads, self._env) for _ in range(num_actors)]
        self._idle = list(range(num_actors))
        self._queue: list[LearnerJob] = []
        self._running: dict[Any, tuple[LearnerJob, int, int]] = {}  # ref -> (job, slot, tries)
        self._since: dict[Any, float] = {}  # ref -> when its job was sent (time.monotonic)
        self._took: dict[str, float] = {}  # member -> seconds its last finished job took
        self.progress_every_s = progress_every_s
        self._last_line = time.monotonic()  # the last progress line, or result returned
        log.info("%d learner actors (%.2g GPUs each) for %d members", num_actors, num_gpus,
                 len(members))

    def snapshot(self, sid: int, path: str, sha256: str) -> tuple[str, list[Any]]:
        """The (hash, [ref]) of snapshot ``sid``'s bytes, put in the object store once."""
        if sid not in self._snapshots or self._snapshots[sid][0] != sha256:
            self._snapshots[sid] = (sha256, self._ray.put(Path(path).read_bytes()))
        sha, ref = self._snapshots[sid]
        return sha, [ref]

    @property
    def busy(self) -> int:
        """Jobs queued or running."""
        return len(self._queue) + len(self._running)

    def submit(self, job: LearnerJob) -> None:
        if not self._running:  # the pool was idle (the league evaluated): lines count anew
            self._last_line = time.monotonic()
        self._queue.append(job)
        self._dispatch()

    def _dispatch(self, retry: tuple[LearnerJob, int] | None = None) -> None:
        if retry is not None:
            job, tries = retry
            self._start(job, self._idle.pop(0), tries)
        while self._queue and self._idle:
            self._start(self._queue.pop(0), self._idle.pop(0), 0)

    def _start(self, job: LearnerJob, slot: int, tries: int) -> None:
        ref = self.actors[slot].train.remote([self._members[job.name]], job)
        self._running[ref] = (job, slot, tries)
        self._since[ref] = time.monotonic()

    def wait(self) -> LearnerResult:
        """The next job to finish (restarting dead actors on the way)."""
        from ray.exceptions import RayActorError, RayTaskError

        while True:
            if not self._running:
                raise RuntimeError("LearnerPool.wait: no job running")
            every = self.progress_every_s
            timeout = None if every is None else max(0.0, self._last_line + every -
                                                     time.monotonic())
            ready, _ = self._ray.wait(list(self._running), num_returns=1, timeout=timeout)
            if not ready:  # nothing finished in progress_every_s: say what is training
                log.info("%s", self.progress_line())
                self._last_line = time.monotonic()
                continue
            (ref,) = ready
            job, slot, tries = self._running.pop(ref)
            since = self._since.pop(ref, None)
            self._last_line = time.monotonic()  # the caller logs what finished
            try:
                result = self._ray.get(ref)
            except RayTaskError as err:  # training itself failed: its own error, unwrapped
                self._idle.append(slot)
                raise (err.cause if isinstance(err.cause, Exception) else err) from None
            except RayActorError as err:
                first = (str(err).strip().splitlines() or [type(err).__name__])[0]
                if tries + 1 > self.max_restarts:
                    self._replace(slot)
                    self._idle.append(slot)
                    raise LearnerActorError(
                        f"member {job.name!r}, generation {job.plan.generation}: its learner "
                        f"actor died {tries + 1} times (max_restarts={self.max_restarts}); "
                        f"last: {first}") from None
                log.warning("member %s: learner actor died (%s); restarting it from the "
                            "member's last checkpoint (restart %d of %d)", job.name, first,
                            tries + 1, self.max_restarts)
                self._replace(slot)
                self.restarts += 1
                self._idle.insert(0, slot)
                self._dispatch(retry=(job, tries + 1))
                continue
            if since is not None:  # the next generation's estimate in progress_line
                self._took[job.name] = time.monotonic() - since
            self._idle.append(slot)
            self._dispatch()
            return result

    def progress_line(self) -> str:
        """``learner actors: training main (generation 3, 95s, about 25s left), exploiter
        (generation 3, 95s); queued: llm (generation 3)``: the jobs running, each with the
        seconds since it was sent to its actor and, once the member has finished a job, the
        time left if this generation takes as long as its last (or, past that, how long the
        last took), and those waiting for a free actor."""
        now = time.monotonic()

        def running_job(ref: Any, job: LearnerJob) -> str:
            spent, took = now - self._since[ref], self._took.get(job.name)
            eta = ("" if took is None else f", about {took - spent:.0f}s left" if spent < took
                   else f"; its last took {took:.0f}s")
            return f"{job.name} (generation {job.plan.generation}, {spent:.0f}s{eta})"

        running = ", ".join(running_job(ref, job) for ref, (job, _, _) in self._running.items())
        queued = ", ".join(f"{job.name} (generation {job.plan.generation})"
                           for job in self._queue)
        return f"learner actors: training {running or 'nothing'}" + (
            f"; queued: {queued}" if queued else "")

    def _replace(self, slot: int) -> None:
        with contextlib.suppress(Exception):  # it may be gone already
            self._ray.kill(self.actors[slot])
        self.actors[slot] = self._actor.remote(self._threads, self._env)

    def close(self) -> None:
        for a in self.actors:
            with contextlib.suppress(Exception):
                self._ray.kill(a)
        self.actors, self._running, self._queue, self._since = [], {}, [], {}
