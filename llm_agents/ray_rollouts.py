"""LLM rollouts on worker engines: the actor-learner split of SPIRAL, MARS and Dr. MAS.

With rollout workers, :meth:`MultiTurnGRPO.collect` no longer plays its episodes with the
trainer's own model. :class:`RayRollouts` holds ``workers`` Ray actors
(:class:`RolloutActor`), each with its own engine built from the same :class:`LLMConfig`
(transformers on CPU; vLLM on a GPU, one per actor; a tiny team from the learner's
vocabulary words, not from the games' texts again). Every iteration:

1. the learner **pushes its weights** to every actor as one ``torch.save`` blob
   (:func:`weights_blob`, loaded there with ``weights_only=True``): the full state dict the
   first time, then the full weights again, or only the LoRA adapter tensors when the
   models carry ``peft`` adapters (the frozen base never changes). Each push has a
   version (the trainer's iteration); an actor asked to play a version it does not hold
   refuses with a one-line error instead of playing stale weights;
2. the driver cuts the iteration's G groups into **shards** of ``groups_per_shard``
   consecutive groups and hands them to the actors round-robin; league opponents travel
   as policy-file bytes, once per actor;
3. each shard is played with its own random streams: the engine's sampling / fallback
   RNG, every backend's sampling generator and each opponent are reseeded from
   ``derive_seed(seed, "rollout_shard", iteration, shard)``, so what a shard plays does
   not depend on which actor plays it, on how many actors there are, or on what that
   actor played before;
4. the shards' records come back and are merged in shard order
   (:func:`~llm_agents.rollout.merge_batches`) for the learner's update.

:class:`LocalRollouts` plays the same shards, with the same seeds, in this process on the
trainer's own modules: for a fixed seed a Ray run and a local run produce identical
records and identical updates (``tests/llm_agents/test_ray_rollouts.py``). The default
trainer path (no workers) stays the fully batched in-process engine, which draws its
random numbers in a different order, so its numbers differ from the sharded ones.

``llm_agents`` never imports ``populations``: the caller passes the function that starts
Ray (``populations.runners.init_ray``: a local instance bound to 127.0.0.1, or a cluster
``address``); without one, an already initialized Ray is used.
"""

from __future__ import annotations

import atexit
import copy
import dataclasses
import hashlib
import importlib
import io
import logging
import os
import shutil
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from games import limits
from games.registry import IMPORTS_ENV
from llm_agents.lora import is_lora
from llm_agents.rollout import EpisodeJob, RolloutBatch, RolloutEngine, merge_batches
from llm_agents.team import Team, TeamModel, backend_for
from marl.configs import COUNT, check_number, did_you_mean
from marl.core import (
    Policy,
    derive_seed,
    policy_bytes,
    policy_from_bytes,
    resolve_device,
)

if TYPE_CHECKING:
    from llm_agents.build import LLMConfig
    from llm_agents.trainer import GRPOConfig, MultiTurnGRPO

log = logging.getLogger(__name__)
KINDS = ("ray", "local")


@dataclass(frozen=True)
class RolloutWorkersConfig:
    """Where an LLM trainer's rollouts run (``runner=ray`` sets ``kind="ray"``)."""

    kind: str = "ray"  # ray: Ray actors | local: the same shards in this process
    workers: int = 2  # actors, each with its own engine
    address: str | None = None  # ray: cluster address (None: a local instance)
    groups_per_shard: int = 4  # GRPO groups per unit of work (results do not depend on workers)
    num_cpus: float = 1.0  # ray: CPUs each actor reserves
    num_gpus: float | None = None  # ray: GPUs per actor (None: 1 with the vLLM backend, else 0)
    torch_threads: int = 1  # torch threads of each actor

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"rollout workers kind {self.kind!r} unknown; choose one of "
                             f"{list(KINDS)}{did_you_mean(self.kind, KINDS)}")
        for name in ("workers", "groups_per_shard", "torch_threads"):  # 2.5 and True too
            check_number(f"rollout {name}", getattr(self, name), **COUNT)


@dataclass(frozen=True)
class WireJob:
    """An :class:`EpisodeJob` with its opponents named by policy key (plain values only)."""

    game: str
    seed: int
    group: int
    game_kwargs: dict[str, Any] = field(default_factory=dict)
    opponents: dict[str, str] = field(default_factory=dict)  # agent -> policy key


@dataclass(frozen=True)
class Shard:
    """Consecutive GRPO groups played together with their own seed."""

    index: int
    seed: int
    jobs: tuple[WireJob, ...]


# ------------------------------------------------------------------ weights on the wire
def weights_blob(team: Team, version: int, adapters_only: bool) -> bytes:
    """``torch.save`` bytes of ``{"version", "adapters_only", "models": {name: state}}``:
    every tensor of each model's state dict, or (``adapters_only``) its LoRA tensors only."""
    models = {}
    for name, model in team.modules():
        sd = model.state_dict()
        models[name] = {k: v.detach().cpu() for k, v in sd.items()
                        if not adapters_only or ".lora_" in k}
    buf = io.BytesIO()
    torch.save({"version": int(version), "adapters_only": bool(adapters_only),
                "models": models}, buf)
    return buf.getvalue()


def load_weights_blob(team: Team, data: bytes) -> int:
    """Load a :func:`weights_blob` into ``team`` (engines synced); returns its version."""
    # No check_torch_zip: the blob comes from this run's own trainer through Ray's object
    # store, which moves task arguments as pickles (whoever can write there runs code here)
    state = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    for name, sd in state["models"].items():
        if name not in team.models:
            raise ValueError(f"weights for unknown team model {name!r}; models: "
                             f"{sorted(team.models)}")
        res = team.models[name].model.load_state_dict(sd, strict=not state["adapters_only"])
        if res.unexpected_keys:
            raise ValueError(f"weights for {name!r} name tensors the model lacks: "
                             f"{res.unexpected_keys[:3]}")
    team.sync()  # engines that keep their own copy (vLLM) get the new weights
    return int(state["version"])


def team_fingerprint(team: Team) -> dict[str, str]:
    """Per team model, a hash of its tokenizer's vocabulary and its tensors' names, shapes
    and dtypes: learner and actors must agree before weights are pushed."""
    out = {}
    for name, tm in team.models.items():
        h = hashlib.sha256()
        vocab = tm.tokenizer.get_vocab() if hasattr(tm.tokenizer, "get_vocab") else {}
        h.update(repr(sorted(vocab.items())).encode())
        for k, v in tm.model.state_dict().items():
            h.update(f"{k}:{tuple(v.shape)}:{v.dtype};".encode())
        out[name] = h.hexdigest()[:16]
    return out


# -------------------------------------------------------------------- shard playing
def _fresh(policy: Policy, seed: int) -> Policy:
    """``policy`` restarted from ``seed``; one that keeps its stream without a ``reseed``
    of its own is copied as loaded instead (its stream then starts where loading left it)."""
    if type(policy).reseed is Policy.reseed:
        return copy.deepcopy(policy)
    policy.reseed(seed)
    return policy


class ShardPlayer:
    """Plays :class:`Shard` s with one team and its own :class:`RolloutEngine`."""

    def __init__(self, team: Team, cfg: GRPOConfig) -> None:
        self.team = team
        self.engine = RolloutEngine(team, cfg.action, cfg.prompt, cfg.max_in_flight, cfg.seed)
        self.blobs: dict[str, bytes] = {}
        self.loaded: dict[str, Policy] = {}

    def add_policies(self, blobs: Mapping[str, bytes], keep: Sequence[str]) -> None:
        """Store opponents' policy files by key; drop the ones not in ``keep``."""
        self.blobs.update(blobs)
        for key in set(self.blobs) - set(keep):
            self.blobs.pop(key)
            self.loaded.pop(key, None)

    def _policy(self, key: str, seed: int) -> Policy:
        if key not in self.loaded:
            if key not in self.blobs:
                raise KeyError(f"rollout shard names opponent {key!r}, which was never sent")
            self.loaded[key] = policy_from_bytes(self.blobs[key])
        return _fresh(self.loaded[key], seed)

    def play(self, shard: Shard) -> RolloutBatch:
        """Every job of ``shard`` from the shard's own seeds."""
        self.engine.rng = np.random.default_rng(shard.seed)
        for name, tm in self.team.models.items():
            if hasattr(tm.backend, "reseed"):
                tm.backend.reseed(derive_seed(shard.seed, "backend", name))
        jobs = []
        for j in shard.jobs:
            opp = {a: self._policy(k, derive_seed(shard.seed, "opponent", j.group, a))
                   for a, k in j.opponents.items()}
            jobs.append(EpisodeJob(j.game, j.seed, j.group, j.game_kwargs, opp))
        return self.engine.run(jobs)


def shards_of(jobs: Sequence[EpisodeJob], keys: Mapping[int, str], seed: int, iteration: int,
              groups_per_shard: int) -> list[Shard]:
    """``jobs`` cut into shards of ``groups_per_shard`` consecutive groups (jobs keep
    their order); ``keys`` maps ``id(policy)`` of each opponent to its key."""
    groups = list(dict.fromkeys(j.group for j in jobs))
    slot = {g: i // groups_per_shard for i, g in enumerate(groups)}
    parts: dict[int, list[WireJob]] = {}
    for j in jobs:
        parts.setdefault(slot[j.group], []).append(WireJob(
            j.game, int(j.seed), int(j.group), dict(j.game_kwargs),
            {a: keys[id(p)] for a, p in j.opponents.items()}))
    return [Shard(i, derive_seed(seed, "rollout_shard", iteration, i), tuple(p))
            for i, p in sorted(parts.items())]


# ----------------------------------------------------------------------- collectors
class _Collector:
    """What both collectors share: the trainer, opponent keys and shard cutting."""

    def __init__(self, trainer: MultiTurnGRPO, cfg: RolloutWorkersConfig) -> None:
        self.trainer, self.cfg = trainer, cfg
        self._keys: dict[int, tuple[Policy, str, bytes]] = {}  # id -> (policy kept, key, file)

    def _opponent_files(self, jobs: Sequence[EpisodeJob]) -> dict[str, bytes]:
        """Key -> policy file of every opponent in ``jobs`` (files made once per policy)."""
        live = {id(p): p for j in jobs for p in j.opponents.values()}
        for pid in set(self._keys) - set(live):
            self._keys.pop(pid)  # a later policy may reuse the id
        for pid, p in live.items():
            if pid not in self._keys:
                data = policy_bytes(p)
                self._keys[pid] = (p, hashlib.sha256(data).hexdigest()[:24], data)
        return {key: data for _, key, data in self._keys.values()}

    def shards(self, jobs: Sequence[EpisodeJob], iteration: int) -> list[Shard]:
        keys = {pid: key for pid, (_, key, _) in self._keys.items()}
        return shards_of(jobs, keys, self.trainer.cfg.seed, iteration, self.cfg.groups_per_shard)

    def close(self) -> None:  # noqa: B027 - the local collector holds nothing to release
        """Release the workers."""


class LocalRollouts(_Collector):
    """The shards of :class:`RayRollouts`, played one after another in this process on the
    trainer's own modules (own backends, so the trainer's sampling stream is untouched)."""

    def __init__(self, trainer: MultiTurnGRPO, cfg: RolloutWorkersConfig | None = None) -> None:
        super().__init__(trainer, cfg or RolloutWorkersConfig(kind="local"))
        models = {}
        for name, tm in trainer.team.models.items():
            backend = tm.backend
            if getattr(backend, "model", None) is tm.model:  # transformers: a second view
                backend = backend_for(tm.model, tm.tokenizer, "transformers",
                                      seed=trainer.cfg.seed)
            models[name] = TeamModel(name, tm.model, tm.tokenizer, backend)
        self.player = ShardPlayer(Team(models, dict(trainer.team.roles)), trainer.cfg)

    def collect(self, jobs: Sequence[EpisodeJob], iteration: int) -> RolloutBatch:
        t0 = time.perf_counter()
        files = self._opponent_files(jobs)
        self.player.add_policies(files, list(files))
        self.trainer.team.sync()
        batches = [self.player.play(s) for s in self.shards(jobs, iteration)]
        return merge_batches(batches, time.perf_counter() - t0)


class ActorWorkdir:
    """A rollout actor's temporary folder ``selfplay-actor-*``: vLLM serves a tiny model from
    files (``llm_agents.build`` writes them to ``<workdir>/models/<name>``), so an actor on
    the vLLM backend (``needed``) makes one; other backends none (``path`` None). It stayed
    in the temp folder after every run. :meth:`close` removes it: :meth:`RolloutActor.close`,
    which :meth:`RayRollouts.close` calls before it kills the actor (``ray.kill``, and Ray
    ending a driver's actors at its exit, run no exit handler of the actor), and otherwise
    the actor process's normal exit (``atexit``). A driver killed hard (``kill -9``) leaves
    it."""

    def __init__(self, needed: bool) -> None:
        self.path = tempfile.mkdtemp(prefix="selfplay-actor-") if needed else None
        if self.path is not None:
            atexit.register(self.close)

    def close(self) -> None:
        """Remove the folder and what it holds (again: nothing)."""
        if self.path is None:
            return
        shutil.rmtree(self.path, ignore_errors=True)  # the served model: already loaded
        atexit.unregister(self.close)
        self.path = None


def needs_workdir(llm: LLMConfig) -> bool:
    """Whether an actor of ``llm``'s team writes its models to files (the vLLM backend)."""
    return llm.backend == "vllm"


def worker_env() -> dict[str, str]:
    """What a rollout actor needs from the driver's environment (a cluster's workers do not
    inherit its variables): the modules a command line imported (``IMPORTS_ENV``), its
    ``PYTHONPATH``, and ``SELFPLAY_GAME_LIMITS=off`` where the driver's own environment lifts
    the games' size limits (:mod:`games.limits`)."""
    env = {k: os.environ[k] for k in (IMPORTS_ENV, "PYTHONPATH") if os.environ.get(k)}
    if limits.switch_on():  # handing the switch on lifts nothing yet: the worker says it
        env[limits.ENV] = "off"
    return env


class RolloutActor:
    """One Ray actor: a team built from the learner's config, playing shards."""

    def __init__(self, llm: LLMConfig, games_: Sequence[str],
                 game_kwargs: Mapping[str, Mapping[str, Any]], device: str,
                 torch_threads: int, env: Mapping[str, str],
                 vocabulary: Sequence[str] | None = None) -> None:
        torch.set_num_threads(torch_threads)
        os.environ.update(env)  # a cluster's workers do not inherit the driver's variables
        for path in reversed(env.get("PYTHONPATH", "").split(os.pathsep)):
            if path and path not in sys.path:  # the driver's folders (a user's modules)
                sys.path.insert(0, path)
        for module in filter(None, env.get(IMPORTS_ENV, "").split(",")):
            importlib.import_module(module)  # a user's games / backends register
        from llm_agents.build import build_team

        grpo = dataclasses.replace(llm.grpo, device=device)
        llm = dataclasses.replace(llm, grpo=grpo)
        self.workdir = ActorWorkdir(needs_workdir(llm))
        # a tiny team's words come from the driver: a temp folder kept none, so each actor
        # played llm.corpus_episodes again on each start (43-73 s for mpe_tag), and built
        # other words than a resumed driver's, read from its run folder
        team = build_team(llm, list(games_), dict(game_kwargs), self.workdir.path,
                          warn=False, vocabulary=vocabulary)  # the driver's team said them
        dev = resolve_device(device)
        for tm in team.models.values():
            tm.model.to(dev)
            if hasattr(tm.backend, "to"):
                tm.backend.to(dev)
        self.player = ShardPlayer(team, grpo)
        self.version = -1

    def fingerprint(self) -> dict[str, str]:
        return team_fingerprint(self.player.team)

    def load_weights(self, data: bytes) -> int:
        self.version = load_weights_blob(self.player.team, data)
        return self.version

    def add_policies(self, blobs: Mapping[str, bytes], keep: Sequence[str]) -> None:
        self.player.add_policies(blobs, keep)

    def play(self, version: int, shard: Shard) -> RolloutBatch:
        if version != self.version:
            raise RuntimeError(f"rollout actor holds weights v{self.version}, asked to play "
                               f"v{version}: a weight push was lost")
        return self.player.play(shard)

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        """Remove this actor's files (:class:`ActorWorkdir`), on its own node."""
        self.workdir.close()


CLOSE_TIMEOUT_S = 10.0
"""How long :meth:`RayRollouts.close` waits for its actors to remove their files (an actor
still playing a shard, after a Ctrl-C, is killed with them after that)."""


class RayRollouts(_Collector):
    """Rollouts on ``cfg.workers`` Ray actors; see the module docstring.

    Args:
        trainer: the learner (its team's weights are pushed; its jobs are played).
        llm: the config the learner's team was built from (with the learner's seed):
            every actor builds its own team from it.
        games_, game_kwargs: what the trainer plays.
        cfg: workers, address, shard size, resources per actor.
        ray_init: ``(address, num_cpus) -> ray`` that starts or joins Ray (the caller's
            ``populations.runners.init_ray``); None: Ray must be initialized already.
    """

    def __init__(self, trainer: MultiTurnGRPO, llm: LLMConfig, games_: Sequence[str],
                 game_kwargs: Mapping[str, Mapping[str, Any]], cfg: RolloutWorkersConfig,
                 ray_init: Callable[[str | None, int], Any] | None = None) -> None:
        super().__init__(trainer, cfg)
        import ray

        if ray_init is not None:
            ray = ray_init(cfg.address, int(np.ceil(cfg.workers * cfg.num_cpus)))
        elif not ray.is_initialized():
            raise ValueError("rollout workers on Ray: Ray is not initialized; pass ray_init "
                             "(populations.runners.init_ray) or call it first")
        self._ray = ray
        gpus = cfg.num_gpus if cfg.num_gpus is not None else (1 if llm.backend == "vllm" else 0)
        device = "auto" if gpus else "cpu"
        env = worker_env()
        actor = ray.remote(num_cpus=cfg.num_cpus, num_gpus=gpus)(RolloutActor)
        from llm_agents.build import tiny_vocabulary

        words = tiny_vocabulary(trainer.team) if llm.model == "tiny" else None
        self.workers = [actor.remote(llm, list(games_), dict(game_kwargs), device,
                                     cfg.torch_threads, env, words) for _ in range(cfg.workers)]
        self._sent: set[str] = set()
        self._full_pushed = False
        mine = team_fingerprint(trainer.team)
        for i, theirs in enumerate(ray.get([w.fingerprint.remote() for w in self.workers])):
            if theirs != mine:
                self.close()
                raise ValueError(f"rollout actor {i} built a different team than the learner "
                                 f"(tokenizer or tensor layout; actor {theirs}, learner {mine})")
        # after ray.init's handler: runs before it. Through a weak reference: a collector
        # dropped unclosed is collected and Ray ends its actors, as before (held by atexit,
        # they kept their CPUs, and the next Ray test's actors waited for them for good)
        ref = weakref.ref(self)

        def at_exit() -> None:
            collector = ref()
            if collector is not None:
                collector.close()

        self._at_exit = at_exit
        atexit.register(at_exit)
        log.info("LLM rollouts on %d ray actors (%s)", cfg.workers, cfg.address or "local ray")

    def __getstate__(self) -> dict[str, Any]:
        """A copy (an LLM league member's trainer, sent to its learner actor) leaves the exit
        hook to this one: a closure over a weak reference, which cannot be pickled."""
        return {k: v for k, v in self.__dict__.items() if k != "_at_exit"}

    def push(self, version: int) -> int:
        """Send the learner's weights to every actor; returns the blob's size in bytes."""
        team = self.trainer.team
        adapters = self._full_pushed and all(is_lora(m) for _, m in team.modules())
        data = weights_blob(team, version, adapters_only=adapters)
        ref = self._ray.put(data)
        got = self._ray.get([w.load_weights.remote(ref) for w in self.workers])
        if got != [version] * len(self.workers):
            raise RuntimeError(f"weight push v{version}: actors hold {got}")
        self._full_pushed = True
        self.last_push_bytes = len(data)
        return len(data)

    def collect(self, jobs: Sequence[EpisodeJob], iteration: int) -> RolloutBatch:
        t0 = time.perf_counter()
        ray = self._ray
        for _, model in self.trainer.team.modules():
            model.eval()  # as an in-process rollout leaves it: the update's forward agrees
        self.push(iteration)
        files = self._opponent_files(jobs)
        new = {k: v for k, v in files.items() if k not in self._sent}
        ray.get([w.add_policies.remote(new, list(files)) for w in self.workers])
        self._sent = set(files)
        shards = self.shards(jobs, iteration)
        refs = [self.workers[s.index % len(self.workers)].play.remote(iteration, s)
                for s in shards]
        batch = merge_batches(ray.get(refs), time.perf_counter() - t0)
        batch.metrics["charts/weight_push_bytes"] = float(self.last_push_bytes)
        return batch

    def close(self) -> None:
        """Each actor removes its files (on its node: a cluster's /tmp is not the driver's),
        then is killed; an actor that died or hangs is killed without. Also run at the
        driver's exit (a run never closes its trainer's collector): before Ray's own exit
        handler, which kills the actors without running theirs."""
        from ray.exceptions import GetTimeoutError, RayActorError

        atexit.unregister(getattr(self, "_at_exit", self.close))
        try:
            if self.workers and self._ray.is_initialized():
                self._ray.get([w.close.remote() for w in self.workers],
                              timeout=CLOSE_TIMEOUT_S)
        except (RayActorError, GetTimeoutError):
            log.debug("a rollout actor did not close; killed as it is")
        for w in self.workers:
            try:
                self._ray.kill(w)
            except Exception:  # noqa: BLE001 - it may be gone already
                log.debug("rollout actor already gone")
        self.workers = []


def make_rollouts(trainer: MultiTurnGRPO, llm: LLMConfig, games_: Sequence[str],
                  game_kwargs: Mapping[str, Mapping[str, Any]], cfg: RolloutWorkersConfig,
                  ray_init: Callable[[str | None, int], Any] | None = None) -> _Collector:
    """The collector ``cfg.kind`` names, attached to ``trainer`` (``trainer.rollouts``)."""
    if cfg.kind == "local":
        out: _Collector = LocalRollouts(trainer, cfg)
    else:
        out = RayRollouts(trainer, llm, games_, game_kwargs, cfg, ray_init)
    trainer.rollouts = out
    return out
