"""Runners play evaluation matches: in this process (``LocalRunner``, the default) or on Ray
actors (``RayRunner``: a local Ray instance listening on 127.0.0.1 only, or a cluster address).
A Ray worker that dies mid-evaluation is replaced by a fresh actor and its jobs replayed
(at most ``max_retries`` times per job); jobs are deterministic, so the results are the same.

A :class:`MatchJob` is self-contained — game, seats as policy files, episodes, seed — so a
job gives the same returns wherever it runs: the local and Ray runners agree exactly for
a fixed seed. Episodes are reported in the order they finish (copy order within a step).
A seat whose policy is a snapshot of an off-policy learner (VDN, QMIX, MADDPG: they explore
only while training) plays its argmax, the other seats sample, as PSRO and ``population=none``
evaluation play them: league ratings and ``selfplay-eval`` read the policies they rate.

The modules a command line imported for the user (``imports=``: their games, learners, policy
kinds, adv_norms) reach every actor the same way, whether the worker process inherited the
driver's variables (a local instance) or not (a cluster joined by address): the actor gets
the module list and the driver's ``PYTHONPATH`` in its constructor (:func:`worker_env`) and
imports the modules before its first job (:func:`enter_worker_env`). Unpickling reaches only
the modules a job's objects name, and ``games.make`` only on an unknown game: a learner actor
training ``mappo`` loads a ``my_algo`` member's snapshot by its policy kind, and a ``mappo``
learner finds ``adv_norm=median`` by name, so those registries need the imports done first.

A job plays ``min(num_envs, episodes)`` copies of a stepped (PettingZoo, OpenSpiel) game at
once; a natively batched game (VMAS) plays every episode of the job at once, as copies of
one batch (``games.vector.episode_copies``), so a pair's match costs one episode's steps.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import glob
import importlib
import logging
import os
import re
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

import games
from games import limits
from games.registry import IMPORTS_ENV
from games.vector import episode_copies, episode_success
from marl import registry
from marl.configs import did_you_mean
from marl.core import Policy, derive_seed, load_policy
from marl.train import RandomPolicy, check_episode_lengths
from populations.approx_exploit import evaluated_greedy, policy_vector_kwargs
from populations.lru import POLICY_CACHE, LRUCache

log = logging.getLogger(__name__)
# load_policy imports the LLM stack when a seat's file is an LLM team's (here and on each Ray
# worker, which imports this module): a match of numeric learners never loads it, and an
# import error in llm_agents breaks only the runs that play an LLM
registry.register_policy_module("llm", "llm_agents.learner")
RANDOM = "random"  # seat value for a uniformly random policy instead of a file


@dataclass(frozen=True)
class MatchJob:
    """``episodes`` episodes of ``game`` with ``seats[agent]`` = policy file (or ``"random"``).

    Each seat plays as the league evaluates its policy (the rule of PSRO and of
    ``population=none`` evaluation too, :func:`populations.approx_exploit.evaluated_greedy`):
    a snapshot of an off-policy learner by its argmax, any other by sampling;
    ``greedy=True`` has every seat play its argmax."""

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
    """Returns of each finished episode, in order: ``returns[e][agent]``; ``copies`` game
    copies stepped together ``steps`` times to play them; ``moves[path]``: for each policy
    file whose policy counts its moves (an LLM team's, ``legal_stats()``), the moves it chose
    in this job and how many of them were its fallback's (output naming no legal action),
    counted where the job ran (a Ray worker's come back with the result); ``successes[e]``:
    whether episode ``e`` succeeded, as the game reported at its end
    (:func:`games.vector.episode_success`; None where it reported nothing)."""

    key: str
    returns: list[dict[str, float]]
    copies: int = 0
    steps: int = 0
    moves: dict[str, tuple[int, int]] = field(default_factory=dict)
    successes: list[bool | None] = field(default_factory=list)


class GameCache:
    """The game copies a runner's jobs played, kept for its next jobs of the same game (name
    and arguments), ``max_games`` of them at most: making a game for every evaluation pair
    (an OpenSpiel game loads, checks its name and parameters) was 24 % of a Kuhn league's
    time at many snapshots. A job resets every copy it plays with its own seeds, and the
    game contract has a seeded reset replay its episode whatever was played before
    (``games.check_game`` checks it), so a cached copy plays what a fresh one does.
    Of a natively batched game only the copy that gives the spec is kept: each job builds
    its own batch."""

    def __init__(self, max_games: int = 64) -> None:
        self.max_games = max_games
        self._games: dict[str, list[games.Game]] = {}  # oldest key first

    def take(self, name: str, kwargs: dict[str, Any], n: int) -> list[games.Game]:
        """``n`` copies of ``games.make(name, **kwargs)``: the kept ones first, then new
        ones (kept too, while ``max_games`` allows; the oldest game's copies leave first)."""
        key = self._key(name, kwargs)
        kept = self._games.pop(key, [])
        while len(kept) < n:
            kept.append(games.make(name, **kwargs))
        self._games[key] = kept  # the newest now
        while sum(map(len, self._games.values())) > self.max_games and len(self._games) > 1:
            self._close(self._games.pop(next(iter(self._games))))
        if len(kept) > self.max_games:  # one job wider than the whole cache: not kept
            self._games.pop(key)
        return kept[:n]

    def keeps(self, name: str, kwargs: dict[str, Any]) -> bool:
        """Whether copies of this game are kept (a job wider than the cache's are not: its
        caller closes them)."""
        return self._key(name, kwargs) in self._games

    @staticmethod
    def _key(name: str, kwargs: dict[str, Any]) -> str:
        return f"{name} {sorted(kwargs.items(), key=lambda kv: kv[0])!r}"

    def close(self) -> None:
        """Close every kept game."""
        while self._games:
            self._close(self._games.pop(next(iter(self._games))))

    @staticmethod
    def _close(copies: list[games.Game]) -> None:
        for g in copies:
            with contextlib.suppress(Exception):  # a game's close must not fail a run
                g.close()


def play_job(job: MatchJob, cache: MutableMapping[str, Policy] | None = None,
             game_cache: GameCache | None = None,
             tick: Callable[[int], None] | None = None) -> MatchResult:
    """Play one job deterministically (seeds torch and numpy from ``job.seed``), leaving the
    caller's global torch and numpy random states as they were: an in-process match must not
    move a learner's random stream, or a run resumed after its matches were recorded (and
    are not replayed) would train differently from one that was never interrupted.
    ``cache``: policies loaded by earlier jobs, by file; ``game_cache``: the games they
    played (None: the job makes its own); ``tick``: called with the count of the job's
    episodes that ended, each time some end (a bar of episodes: selfplay-eval's one-team
    games, where one job plays all of a file's episodes)."""
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    np_state = np.random.get_state()
    try:
        with torch.random.fork_rng(devices=cuda):
            return _play_job(job, cache, game_cache, tick)
    finally:
        np.random.set_state(np_state)


def _play_job(job: MatchJob, cache: MutableMapping[str, Policy] | None,
              game_cache: GameCache | None = None,
              tick: Callable[[int], None] | None = None) -> MatchResult:
    cache = {} if cache is None else cache
    kept = None if game_cache is None else game_cache.take(job.game, job.game_kwargs, 1)
    game = games.make(job.game, **job.game_kwargs) if kept is None else kept[0]
    spec = game.spec
    seats: dict[str, Policy] = {}
    for agent, path in job.seats.items():
        if path == RANDOM:
            seats[agent] = RandomPolicy(spec, seed=job.seed)
        else:
            if path not in cache:
                cache[path] = load_policy(path)
            seats[agent] = cache[path]
    counted = {p: seats[a] for a, p in job.seats.items()  # an LLM team's moves: (moves,
               if callable(getattr(seats[a], "legal_stats", None))}  # fallbacks) of this job
    before = {p: q.legal_stats() for p, q in counted.items()}
    torch.manual_seed(job.seed)  # after loading: results must not depend on what was cached
    np.random.seed(job.seed % 2**32)
    for agent, policy in seats.items():  # nor on what a cached policy played in other jobs
        policy.reseed(derive_seed(job.seed, "seat", agent))
    greedy = {a: job.greedy or evaluated_greedy(p) for a, p in seats.items()}  # per seat
    missing = set(spec.agent_ids) - set(seats)
    if missing:
        raise ValueError(f"match {job.key}: no policy for seats {sorted(missing)}")
    copies = episode_copies(game, job.episodes, job.num_envs)
    flags = policy_vector_kwargs(seats.values())
    if kept is not None and not callable(getattr(game, "batched", None)):
        made = iter(game_cache.take(job.game, job.game_kwargs, copies))  # type: ignore[union-attr]
        vg = games.VectorGame(made.__next__, copies, seed=job.seed, **flags)
    else:
        vg = games.VectorGame(job.game, copies, seed=job.seed, **flags, **job.game_kwargs)
    vs = vg.reset()
    out: list[dict[str, float]] = []
    successes: list[bool | None] = []
    steps = 0
    t = np.zeros(copies, np.int64)  # [B] steps of each copy's running episode
    while len(out) < job.episodes:
        vs = vg.step({a: p.act(a, vs, greedy=greedy[a]) for a, p in seats.items()})
        steps += 1
        t += 1
        _check_finite(job, spec, vs, t)
        check_episode_lengths(vs, spec, f"match {job.key}")
        t[_host(vs.done)] = 0
        ended = np.flatnonzero(vs.done)
        for b in ended:
            out.append({a: float(vs.episode_return[a][b]) for a in spec.agent_ids})
            successes.append(episode_success(vs.info.get(int(b), {})))
        if tick is not None and ended.size:
            tick(min(len(out), job.episodes))
    if vg.native is not None or game_cache is None or \
            not game_cache.keeps(job.game, job.game_kwargs):  # kept copies stay open
        vg.close()
    moves = {p: q.legal_stats() - before[p] for p, q in counted.items()}
    return MatchResult(job.key, out[: job.episodes], copies, steps,
                       {p: (int(m.decisions), int(m.invalid)) for p, m in moves.items()},
                       successes[: job.episodes])


class NonFiniteMatchError(games.GameError):
    """A game gave a match a NaN or infinite reward; nothing of the match was returned (the
    wording of ``marl.guards.NonFiniteError``, which training raises).

    ``key`` is the job's key and ``detail`` the message without the seats, so that a
    caller knowing which snapshots the files hold can name them instead."""

    def __init__(self, message: str, key: str = "", detail: str = "") -> None:
        super().__init__(message)  # args: the message alone (pickled through Ray)
        self.key, self.detail = key, detail


def _host(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _seats_text(seats: dict[str, str]) -> str:
    """``b0, b1: A.pt; r0, r1: B.pt``: the policy file (or ``random``) of each seat."""
    by_file: dict[str, list[str]] = {}
    for agent, path in seats.items():
        by_file.setdefault(path if path == RANDOM else os.path.basename(path), []).append(agent)
    return "; ".join(f"{', '.join(agents)}: {name}" for name, agents in by_file.items())


def _check_finite(job: MatchJob, spec: games.GameSpec, vs: games.VecStep,
                  t: np.ndarray) -> None:
    """Raise :class:`NonFiniteMatchError` when a reward of this step, or the return of an
    episode ending at it, is NaN or infinite: naming the game, the agent, the episode's step
    and the seats' policy files, before anything of the match is returned (and recorded).
    One check for every agent together while all is well."""
    ids = spec.agent_ids
    rewards = [vs.rewards[a] for a in ids]  # [B] each
    returns = [vs.episode_return[a] for a in ids]
    if isinstance(rewards[0], torch.Tensor):  # a natively batched game: one device sync
        if bool(torch.isfinite(torch.stack([*rewards, *returns])).all()):
            return
    elif np.isfinite(rewards).all() and np.isfinite(returns).all():
        return
    done = _host(vs.done)
    for quantity, values in (("reward", rewards), ("episode return", returns)):
        for agent, v in zip(ids, values, strict=True):
            bad = ~np.isfinite(_host(v))
            if quantity != "reward":
                bad &= done
            if bad.any():
                b = int(np.flatnonzero(bad)[0])
                detail = (f"non-finite {quantity} ({float(_host(v)[b])}) in game {spec.name!r}, "
                          f"agent {agent!r}, at step {int(t[b])} of an episode of match "
                          f"{job.key}")
                raise NonFiniteMatchError(
                    f"{detail} (seats {_seats_text(job.seats)}): {MATCH_HINT}", job.key, detail)


MATCH_HINT = ("the match was stopped before anything of it was recorded; the game returned it "
              "(check the game's rewards)")


class Runner(abc.ABC):
    """Plays match jobs; results come back in job order."""

    @abc.abstractmethod
    def play(self, jobs: list[MatchJob]) -> list[MatchResult]:
        """Play every job."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release workers."""


class LocalRunner(Runner):
    """Plays jobs one after another in this process (policies and games cached across
    jobs: the ``max_policies`` most recently used policy files, :class:`GameCache`)."""

    def __init__(self, max_policies: int = POLICY_CACHE) -> None:
        # the most recently used policy files: a league adds snapshots every generation
        self._cache: LRUCache[str, Policy] = LRUCache(max_policies)
        self._games = GameCache()
        # told the episodes of play()'s jobs ended so far, as they end (a league's evaluation
        # bar: one pair of long or LLM episodes plays for minutes)
        self.on_episodes: Callable[[int], None] | None = None

    def play(self, jobs: list[MatchJob]) -> list[MatchResult]:
        told = self.on_episodes
        if told is None:
            return [play_job(j, self._cache, self._games) for j in jobs]
        out: list[MatchResult] = []
        for j in jobs:
            before = sum(len(r.returns) for r in out)
            out.append(play_job(j, self._cache, self._games, lambda n, b=before: told(b + n)))
        return out

    def close(self) -> None:
        self._games.close()


LOCAL_RAY_IP = "127.0.0.1"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
RAY_ADDRESS_FORMS = ("HOST:PORT of a running cluster's GCS (what `ray start --head` prints; "
                     "port 6379 by default), auto when a cluster runs on this machine, "
                     "ray://HOST:PORT for Ray Client, or leave it unset for a local instance")
RAY_PROBE_S = 5.0
"""How long :func:`check_ray_address` waits for a cluster to answer (``ray.init`` waits
forever, in C++ code that Ctrl-C does not interrupt)."""


class RayAddressError(ValueError):
    """``runner.address`` names no Ray cluster that answers (one line: the value, why, and
    :data:`RAY_ADDRESS_FORMS`)."""


def check_ray_address(address: str, timeout_s: float = RAY_PROBE_S,
                      key: str = "runner.address") -> str:
    """The address ``ray.init`` should join for ``address``, or a one-line
    :class:`RayAddressError`: for a value of no accepted form (``foo``, Ray's "Invalid
    address format"), ``auto`` with no cluster to find, and a ``HOST:PORT`` where nothing
    answers as a Ray server does within ``timeout_s`` (:func:`_no_ray_server`);
    ``ray.init`` waits forever there, printing a warning every 30 s and deaf to Ctrl-C.

    ``ray://`` addresses are returned as given. Ray joins a loopback host (``127.0.0.1``,
    ``localhost``) at this machine's routable address, where a cluster started by ``ray
    start --head`` listens; one started with ``--node-ip-address=127.0.0.1`` listens on
    loopback only, so that is tried next and returned as is (:func:`init_ray` keeps it).
    ``key`` names where the address came from in the message (``RAY_ADDRESS``)."""
    def refused(why: str) -> RayAddressError:
        return RayAddressError(f"{key}={address}: {why}; accepted: {RAY_ADDRESS_FORMS}")

    target = address.strip()
    scheme, sep, rest = target.partition("://")
    if sep and scheme in ("http", "https"):
        raise refused("that is the form of the dashboard's address (Ray Jobs), not the "
                      "cluster's")
    if sep and scheme != "ray":
        raise refused(f"unknown scheme {scheme}://")
    found = ""
    if not sep and target == "auto":  # as ray.init finds it: RAY_ADDRESS, then `ray start`
        from ray._private import services

        with contextlib.suppress(ConnectionError):
            found = services.get_ray_address_from_environment("auto", None) or ""
        if not found:
            raise refused("no Ray cluster runs on this machine (none started with `ray "
                          "start`, and RAY_ADDRESS is unset)")
        target = found
    host_port = _host_port(rest if sep else target)
    if host_port is None:
        raise refused(f"RAY_ADDRESS={found} is not an address of a Ray cluster" if found
                      else "not an address of a Ray cluster")
    host, port = host_port
    tries = [host]
    if not sep and host in LOOPBACK_HOSTS:
        from ray._private import services

        with contextlib.suppress(Exception):
            tries.insert(0, services.get_node_ip_address())  # where ray.init connects
    reasons = []
    for h in dict.fromkeys(tries):
        why = _no_ray_server(h, port, timeout_s, client=bool(sep))
        if not why:
            return target if sep else (f"[{h}]:{port}" if ":" in h else f"{h}:{port}")
        reasons.append(why if h == host else f"{why} at {h}:{port}, where Ray joins {host}")
    where = f"at {found}, which auto found" if found else "there"
    raise refused(f"no Ray cluster answers {where} ({'; '.join(reversed(reasons))})")


def _host_port(text: str) -> tuple[str, int] | None:
    """``HOST:PORT`` or ``[IPv6]:PORT`` as (host, port), else None."""
    found = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:(\d{1,5})|([\w.-]+):(\d{1,5})", text)
    if found is None:
        return None
    host, port = found[1] or found[3], int(found[2] or found[4])
    return (host, port) if 0 < port < 65536 else None


def _no_ray_server(host: str, port: int, timeout_s: float, client: bool = False) -> str:
    """Why no Ray server answers at ``host:port``; "" when one does: a cluster's GCS knows
    its ``GetClusterId`` call, Ray Client's server (``client``) its ``ClusterInfo`` (an
    answer, or an error of the call such as a missing token, which ``ray.init`` sends).
    With ``RAY_USE_TLS`` only the port is tried (the handshake is Ray's own)."""
    import grpc

    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
        except OSError as err:
            return err.strerror or type(err).__name__
        return ""
    method, server = (("/ray.rpc.RayletDriver/ClusterInfo", "Ray Client's server") if client
                      else ("/ray.rpc.NodeInfoGcsService/GetClusterId", "a Ray cluster's GCS"))
    channel = grpc.insecure_channel(address)
    try:
        channel.unary_unary(method)(b"", timeout=timeout_s)  # b"": an empty request message
        return ""
    except grpc.RpcError as err:
        code, details = err.code(), err.details() or ""  # type: ignore[attr-defined]
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return f"no answer within {timeout_s:g} s"
        if code == grpc.StatusCode.UNIMPLEMENTED:
            return f"a gRPC server answers there, but not {server}"
        if code != grpc.StatusCode.UNAVAILABLE:
            return ""  # it knows the call: the server named (a token is ray.init's business)
        if "Connection refused" in details:
            return "connection refused"
        if "resolving" in details or "lookup" in details:
            return "unknown host"
        if "HTTP/2" in details:
            return "something listens there but does not speak gRPC, as a Ray cluster's GCS does"
        return details.rsplit(": ", 1)[-1][:200]
    finally:
        channel.close()


def init_ray(address: str | None, num_cpus: int) -> Any:
    """The ``ray`` module, initialized once per process: a cluster at ``address``, or a local
    instance with ``num_cpus`` CPUs (no dashboard, quiet logs) whose servers listen on
    127.0.0.1 only, since Ray's services take commands from whoever can reach them. The
    address is checked first (:func:`check_ray_address`: one line where no cluster answers,
    instead of ``ray.init``'s endless wait); a cluster on this machine that listens on
    loopback only is joined there (Ray would go to the machine's routable address). With no
    ``address``, the environment's ``RAY_ADDRESS`` is joined, as ``ray.init`` does (``ray job
    submit`` sets it), checked the same way; unset, a local instance starts. Its servers run
    in a session of their own (:func:`_head_in_own_session`), so a SIGTERM to our process
    group stops the driver as the CLI says, not Ray under it, and they end with this process;
    a SIGTERM while ``ray.init`` runs meets the CLI's handler, not Ray's ``sys.exit(15)``
    (:func:`_own_sigterm_handler`)."""
    import ray

    from populations.run_folder import kept_sigterm

    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "configure_logging": False}
        key = "runner.address"
        if not address and os.environ.get("RAY_ADDRESS", "").strip():  # ray.init joins it;
            address, key = os.environ["RAY_ADDRESS"].strip(), "RAY_ADDRESS"  # num_cpus with
            # it was Ray's "num_cpus and num_gpus must not be provided"
        if address:
            target = check_ray_address(address, key=key)  # ray.init waits forever otherwise
            host = (_host_port(target) or ("", 0))[0]
            keep = _loopback_only() if host in LOOPBACK_HOSTS else contextlib.nullcontext()
            with keep, kept_sigterm(), _own_sigterm_handler():  # ray.init replaces it
                ray.init(address=target, **kwargs)
        else:
            crowded = crowded_local_ray(num_cpus)
            if crowded:
                log.warning(crowded)
            try:
                with _loopback_only(), kept_sigterm(), _own_sigterm_handler(), \
                        _head_in_own_session(), _quiet_token_notice():
                    started = ray.init(num_cpus=num_cpus, _node_ip_address=LOCAL_RAY_IP,
                                       **kwargs)
            except BaseException:  # Ctrl-C or a failure inside ray.init: its folder is ours
                _remove_session_at_exit(ray, _our_session_dir(ray))
                raise
            _remove_session_at_exit(ray, started.address_info.get("session_dir"))
    return ray


CROWDED_PER_CORE = 4
"""A local Ray instance asked for more actors than this many per core of the machine is
warned about (not refused: a run may mean it, and only its speed suffers)."""


def crowded_local_ray(num_cpus: int) -> str | None:
    """A warning for a local Ray instance of ``num_cpus`` CPUs (one per actor: ``runner.workers``,
    ``learners`` or ``rollout_workers``) past :data:`CROWDED_PER_CORE` actors a core of this
    machine, each a process with its own torch (``runner.workers=1000`` started 1000 on 2
    cores); ``None`` below."""
    cores = os.cpu_count() or 1
    if num_cpus <= CROWDED_PER_CORE * cores:
        return None
    return (f"runner: a local Ray instance of {num_cpus} actors on {cores} cores: each is a "
            f"process with its own torch, so they take turns; at most {CROWDED_PER_CORE * cores} "
            f"({CROWDED_PER_CORE} a core) run as fast (runner.workers / learners / "
            "rollout_workers)")


@contextlib.contextmanager
def _quiet_token_notice() -> Iterator[None]:
    """Around a local ``ray.init``: Ray's notice that token authentication is on (``Token
    authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt
    out...``, a WARNING of its ``authentication_token_setup`` logger on every run) is not
    shown; the authentication stays on, and that logger's other warnings (a cluster without
    authentication) are its own business when joining one, where this is not used."""
    quiet = logging.getLogger("ray._private.authentication.authentication_token_setup")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        yield
    finally:
        quiet.setLevel(level)


def _our_session_dir(ray: Any) -> str | None:
    """The session folder of the local instance this process began to start in ``ray.init``
    when it did not return (interrupted or failed): Ray's node names it, else the newest
    ``session_<time>_<our pid>`` of Ray's temp folder (Ray names sessions by the driver's
    pid); ``None`` when there is none."""
    node = getattr(getattr(ray, "_private", None), "worker", None)
    node = getattr(node, "_global_node", None)
    with contextlib.suppress(Exception):
        if node is not None:
            return str(node.get_session_dir_path())
    try:  # a private helper of Ray's: another version may lack it (then nothing is removed)
        from ray._common.utils import get_default_ray_temp_dir

        found = sorted(glob.glob(os.path.join(get_default_ray_temp_dir(),
                                              f"session_*_{os.getpid()}")), key=os.path.getmtime)
    except Exception:  # noqa: BLE001 - the interrupt or error being handled must go on as is
        return None
    return found[-1] if found else None


def _remove_session_at_exit(ray: Any, session_dir: str | None) -> None:
    """At exit, after ``ray.shutdown``, remove the session folder of the local instance this
    process started (``/tmp/ray/session_<time>_<pid>``: its logs and sockets, 200-240 KB),
    and ``session_latest`` where it names it: Ray leaves one per run, and they piled up (99
    on one machine after a day of runs). A cluster joined by address is never touched, nor
    is a folder left by a driver killed with SIGKILL (no exit handler runs then)."""
    if not session_dir or not os.path.basename(session_dir).startswith("session_"):
        return

    def remove() -> None:
        # Ray's own exit handler (registered when ray was imported) runs after this one
        try:
            with _sigint_answered():
                try:
                    ray.shutdown(wait_for_processes=True)  # its servers stop writing there
                except TypeError:  # a Ray before mid-2026 has no wait_for_processes
                    ray.shutdown()
                shutil.rmtree(session_dir, ignore_errors=True)
                latest = os.path.join(os.path.dirname(session_dir), "session_latest")
                with contextlib.suppress(OSError):
                    if os.readlink(latest) == session_dir:
                        os.unlink(latest)
        except _StopWaiting:
            _say(f"stopped waiting for Ray to stop; its session folder may stay: {session_dir}")

    atexit.register(remove)


class _StopWaiting(BaseException):
    """A second Ctrl-C while Ray shuts down at exit (:func:`_sigint_answered`)."""


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError, RuntimeError):  # closed, or re-entered
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


@contextlib.contextmanager
def _sigint_answered() -> Iterator[None]:
    """Ctrl-C while Ray shuts down at exit: the first says what is going on and lets it
    finish, a further one raises :class:`_StopWaiting` (the exit handler says what it left).

    A second Ctrl-C about a second after the first (the run already stopping) raised
    ``KeyboardInterrupt`` inside ``ray.shutdown``: Python printed ``Exception ignored in
    atexit callback`` with its traceback, the session folder stayed and Ray's servers
    lingered about a minute. The shutdown takes seconds; one who insists still gets out."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread sets handlers (exit handlers run there)
        return
    asked: list[int] = []

    def on_sigint(signum: int, frame: Any) -> None:
        if asked:
            raise _StopWaiting
        asked.append(signum)
        _say("stopping Ray (seconds); Ctrl-C again to stop waiting for it")

    before = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before if before is not None else signal.SIG_DFL)


@contextlib.contextmanager
def _head_in_own_session() -> Iterator[None]:
    """While a local instance starts: its servers (GCS, raylet, log monitor; the raylet
    starts the workers and agents) in a session of their own.

    A SIGTERM to our process group (``timeout``, ``kill -TERM -<pgid>``, a scheduler
    signalling the job's group) reached Ray's servers too: the raylet stopped every worker
    and exited while the driver waited on its learner actors, so the driver either died at
    once (its object store connection lost: exit 1) or hung 60 s until the lost GCS ended
    it, and the run stayed ``running``. Outside the group only the driver gets the signal:
    it stops as the CLI's handler says (after the generation's training), and Ray goes
    down with it, by ``ray.shutdown`` at exit or, if the driver is killed, by the kernel:
    Ray sets ``PR_SET_PDEATHSIG`` on them where the kernel has it (Ray itself starts them
    in a new process group on Windows when it has such fate-sharing). Without it (not
    Linux) Ray's reaper kills its own process group, so the servers stay in ours."""
    from ray._private import services, utils

    popen = getattr(services, "ConsolePopen", None)  # Ray's names (test_ray_private_names)
    fate_sharing = getattr(utils, "detect_fate_sharing_support", lambda: False)
    if popen is None or sys.platform == "win32" or not fate_sharing():
        yield
        return

    class OwnSession(popen):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("start_new_session", True)
            super().__init__(*args, **kwargs)

    services.ConsolePopen = OwnSession  # every Ray server starts through it
    try:
        yield
    finally:
        services.ConsolePopen = popen


@contextlib.contextmanager
def _own_sigterm_handler() -> Iterator[None]:
    """``ray.init`` replaces the SIGTERM handler first thing (``sys.exit(15)``), so a
    SIGTERM while a local instance started (seconds on a loaded machine) ended a run
    ``failed`` (``SystemExit: 15``): a handler the process installed (a CLI's) stays in
    place throughout; a default one is left to Ray's."""
    from ray._private import utils

    set_handler = getattr(utils, "set_sigterm_handler", None)
    if set_handler is None or signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL,
                                                                   signal.SIG_IGN, None):
        yield
        return
    utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        utils.set_sigterm_handler = set_handler


@contextlib.contextmanager
def _loopback_only() -> Iterator[None]:
    """Ray binds its servers to the node IP, and turns a loopback ``_node_ip_address`` into
    the routable address unless clusters are disabled (as Ray does itself on macOS and
    Windows: ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER``). Disable them while the local instance
    starts: in this process (the constant was read at import) and in the processes it
    spawns (they read the variable)."""
    from ray._private import ray_constants

    var = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR
    old_env, old_flag = os.environ.get(var), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[var], ray_constants.ENABLE_RAY_CLUSTER = "0", False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = old_flag
        if old_env is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = old_env


class RunnerError(RuntimeError):
    """A match job could not be played (its workers kept dying)."""


class WorkerImportError(ValueError):
    """A module of ``imports=`` that the driver imported could not be imported on a Ray
    worker (a cluster node without the package, a folder the node cannot read)."""


def worker_env() -> dict[str, str]:
    """What a Ray actor needs to register the user's modules as the driver did: the modules
    a command line imported (``games.registry.IMPORTS_ENV``, set by ``imports=`` and
    ``--import``) and the driver's ``PYTHONPATH`` (which holds the folder they came from),
    and ``SELFPLAY_GAME_LIMITS=off`` where the driver's own environment lifts the games' size
    limits (:mod:`games.limits`; a worker on an existing cluster would keep them)."""
    env = {k: os.environ[k] for k in (IMPORTS_ENV, "PYTHONPATH") if os.environ.get(k)}
    if limits.switch_on():  # handing the switch on lifts nothing yet: the worker says it
        env[limits.ENV] = "off"
    return env


def enter_worker_env(env: dict[str, str]) -> None:
    """In a Ray actor: take the driver's :func:`worker_env` (a cluster's workers do not
    inherit its variables), put its ``PYTHONPATH`` folders on ``sys.path`` and import its
    modules, so their policy kinds, learners, adv_norms and games are registered before a
    job loads a snapshot or trains. A module that fails raises :class:`WorkerImportError`
    in one line naming it."""
    os.environ.update(env)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)
    for module in filter(None, env.get(IMPORTS_ENV, "").split(",")):
        try:
            importlib.import_module(module)
        except Exception as err:
            first = (str(err).strip().splitlines() or [""])[0]
            raise WorkerImportError(
                f"imports: cannot import {module!r} on a Ray worker (pid {os.getpid()}): "
                f"{type(err).__name__}: {first}; every node needs the module, installed or "
                f"in a folder on PYTHONPATH (the driver's: {os.pathsep.join(paths) or 'empty'})"
            ) from None


class _MatchWorker:
    """One Ray actor's state: the policies it loaded and the games it played."""

    def __init__(self, env: dict[str, str] | None = None,
                 max_policies: int = POLICY_CACHE) -> None:
        torch.set_num_threads(1)
        self.cache: LRUCache[str, Policy] = LRUCache(max_policies)  # as LocalRunner's
        self.games = GameCache()
        self.env: dict[str, str] | None = env or {}  # None once entered

    def play(self, job: MatchJob) -> MatchResult:
        # here, not in __init__: an error raised by the constructor reaches the driver as a
        # dead actor (replaced, retried, then a traceback's first line), a job's as itself
        if self.env is not None:
            enter_worker_env(self.env)
            self.env = None
        return play_job(job, self.cache, self.games)

    def pid(self) -> int:
        return os.getpid()


class RayRunner(Runner):
    """Plays jobs on ``num_workers`` Ray actors (each caches the policies it loaded).

    Each worker holds one job at a time (the next goes to whichever finishes first). A
    worker that dies mid-job (killed, out of memory, its node lost) is replaced by a fresh
    actor and the job replayed there, at most ``max_retries`` times per job; jobs are
    seeded, so a replay returns what the first try would have. ``retries`` counts them.
    """

    def __init__(self, num_workers: int = 2, address: str | None = None,
                 num_cpus: int | None = None, max_retries: int = 2,
                 max_policies: int = POLICY_CACHE) -> None:
        if num_workers < 1 or max_retries < 0:
            raise ValueError(f"RayRunner: num_workers={num_workers} (expected >= 1), "
                             f"max_retries={max_retries} (expected >= 0)")
        self._ray = ray = init_ray(address, num_cpus or num_workers)
        self._actor = ray.remote(num_cpus=1)(_MatchWorker)
        self.max_retries, self.retries = max_retries, 0
        self.max_policies = max_policies  # each worker's loaded policies (LocalRunner's)
        self._env = worker_env()  # the user's modules (imports=), imported by every worker
        self.workers = [self._actor.remote(self._env, max_policies) for _ in range(num_workers)]
        log.info("ray runner with %d workers", num_workers)

    def play(self, jobs: list[MatchJob]) -> list[MatchResult]:
        from ray.exceptions import RayActorError, RayTaskError

        ray = self._ray
        results: list[MatchResult | None] = [None] * len(jobs)
        tries = [0] * len(jobs)
        todo = list(range(len(jobs)))[::-1]  # popped from the end: job order
        running: dict[Any, tuple[int, int]] = {}  # ref -> (job, worker slot)
        idle = list(range(len(self.workers)))
        while todo or running:
            while todo and idle:
                i, w = todo.pop(), idle.pop(0)
                running[self.workers[w].play.remote(jobs[i])] = (i, w)
            (ref,), _ = ray.wait(list(running), num_returns=1)
            i, w = running.pop(ref)
            try:
                results[i] = ray.get(ref)
            except RayTaskError as err:  # the job itself failed: its own error, unwrapped
                raise (err.cause if isinstance(err.cause, Exception) else err) from None
            except RayActorError as err:
                tries[i] += 1
                first = (str(err).strip().splitlines() or [type(err).__name__])[0]
                if tries[i] > self.max_retries:
                    raise RunnerError(
                        f"match {jobs[i].key}: its Ray worker died {tries[i]} times "
                        f"(max_retries={self.max_retries}); last: {first}") from None
                log.warning("match %s: Ray worker died (%s); replaying it on a fresh worker "
                            "(try %d of %d)", jobs[i].key, first, tries[i], self.max_retries)
                self._replace(w)
                self.retries += 1
                todo.append(i)
            idle.append(w)
        return results  # type: ignore[return-value]

    def _replace(self, slot: int) -> None:
        with contextlib.suppress(Exception):  # it may be gone already
            self._ray.kill(self.workers[slot])
        self.workers[slot] = self._actor.remote(self._env, self.max_policies)

    def close(self) -> None:
        for w in self.workers:
            with contextlib.suppress(Exception):
                self._ray.kill(w)
        self.workers = []


def make_runner(kind: str, max_policies: int = POLICY_CACHE, **kwargs: Any) -> Runner:
    """``"local"`` or ``"ray"`` (kwargs: num_workers, address, num_cpus), keeping the
    ``max_policies`` most recently used policies loaded (on each Ray worker)."""
    if kind == "local":
        return LocalRunner(max_policies)
    if kind == "ray":
        return RayRunner(**kwargs, max_policies=max_policies)
    raise ValueError(f"runner {kind!r} unknown; choose one of ['local', 'ray']"
                     f"{did_you_mean(kind, ('local', 'ray'))}")
