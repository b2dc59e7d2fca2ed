"""Experiments: one typed config for everything ``selfplay-train`` launches, and the code
that runs it in a run folder.

The schema is made of the library's own dataclasses (``MAPPOConfig``, ``LeagueConfig``,
``MatchmakingConfig``, ``PSROConfig``...), so defaults and their docs live once, beside the
code; ``configs/`` only holds named presets. ``population.kind`` picks what runs:

* ``none``: train one learner (``algo``) on ``game`` for ``frames`` frames, snapshot it,
  and evaluate it (against uniformly random seats for the other teams);
* ``league``: a self-play league (``populations.league``) with the chosen matchmaking;
* ``psro``: PSRO on an OpenSpiel game with exact (or RL) best responses.

Every mode writes ``league.db`` (members, snapshots, matches, metrics) in the run folder,
so the dashboard shows any run.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import games
from marl.core import Learner
from marl.maddpg import MADDPG, MADDPGConfig
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import RandomPolicy, train
from marl.value_decomp import ValueDecomp, ValueDecompConfig
from populations.db import LeagueDB, MatchRow
from populations.league import League, LeagueConfig
from populations.loggers import LoggerConfig, MetricsLogger, make_logger
from populations.matchmaking import MatchmakingConfig
from populations.psro import PSROConfig
from populations.store import PolicyStore

log = logging.getLogger(__name__)

ALGOS = ("mappo", "ippo", "vdn", "qmix", "maddpg")
MODES = ("none", "league", "psro")


@dataclass
class GameConfig:
    """Which game: a ``games.make`` spec and its keyword arguments."""

    name: str = "pettingzoo/mpe2.simple_spread_v3"
    kwargs: dict[str, Any] = field(default_factory=dict)  # presets in configs/game/ set them


@dataclass
class RunnerConfig:
    """Where evaluation matches run."""

    kind: str = "local"  # local | ray
    workers: int = 2  # ray: actors
    address: str | None = None  # ray: cluster address (None: local ray.init())

    def __post_init__(self) -> None:
        if self.kind not in ("local", "ray"):
            raise ValueError(f"runner kind {self.kind!r} unknown; choose one of ['local', 'ray']")


@dataclass
class PopulationConfig:
    """What population runs: none (one learner), a self-play league, or PSRO."""

    kind: str = "none"  # none | league | psro
    generations: int = 6  # league: snapshots after the first
    frames_per_generation: int = 20_000  # league: training frames per snapshot
    opponent_prob: float = 0.5  # league: share of copies with a past snapshot as opponent
    eval_window: int = 0  # league: evaluate against the last k snapshots (0: all)
    matchmaking: MatchmakingConfig = field(default_factory=MatchmakingConfig)
    iterations: int = 20  # psro: iterations
    oracle: str = "exact"  # psro: exact | rl (MAPPO best responses)
    oracle_frames: int = 20_000  # psro rl oracle: frames per best response
    psro: PSROConfig = field(default_factory=PSROConfig)

    def __post_init__(self) -> None:
        if self.kind not in MODES:
            raise ValueError(f"population kind {self.kind!r} unknown; choose one of {list(MODES)}")
        if self.oracle not in ("exact", "rl"):
            raise ValueError(f"psro oracle {self.oracle!r} unknown; choose one of ['exact', 'rl']")


@dataclass
class ExperimentConfig:
    """Everything ``selfplay-train`` runs; see ``configs/`` for named presets."""

    experiment: str = "default"  # name (run folders are grouped by it)
    seed: int = 0  # seeds games, learners and evaluation
    algo: str = "mappo"  # mappo | ippo | vdn | qmix | maddpg
    frames: int = 60_000  # population=none: training frames
    num_envs: int = 32  # game copies stepped together while training
    eval_episodes: int = 32  # evaluation episodes (league: role-swapped pairs per snapshot pair)
    device: str = "cpu"  # cpu | cuda | cuda:N | auto
    torch_threads: int = 1  # intra-op threads (small networks are fastest on one)
    resume: bool = False  # continue the run in this folder from its last checkpoint
    progress: bool = True  # progress bars and lines on the terminal
    game: GameConfig = field(default_factory=GameConfig)
    mappo: MAPPOConfig = field(default_factory=MAPPOConfig)
    vdn: ValueDecompConfig = field(default_factory=lambda: ValueDecompConfig(mixer="vdn"))
    qmix: ValueDecompConfig = field(default_factory=lambda: ValueDecompConfig(mixer="qmix"))
    maddpg: MADDPGConfig = field(default_factory=MADDPGConfig)
    population: PopulationConfig = field(default_factory=PopulationConfig)
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise ValueError(f"algo {self.algo!r} unknown; choose one of {list(ALGOS)}")


@dataclass
class RunSummary:
    """Where a finished run left its outputs, for the closing message."""

    run_dir: Path
    database: Path
    snapshots: Path
    logger_files: Path | None
    table: list[dict[str, Any]]


def make_learner(cfg: ExperimentConfig, spec: games.GameSpec,
                 agents: tuple[str, ...] | None = None) -> Learner:
    """The learner ``cfg.algo`` names, for ``agents`` of ``spec`` (all by default)."""
    if cfg.algo in ("mappo", "ippo"):
        mcfg = cfg.mappo
        if cfg.algo == "ippo":
            mcfg = dataclasses.replace(mcfg, net=dataclasses.replace(mcfg.net, critic="local"))
        return MAPPO(spec, mcfg, agents=agents, device=cfg.device, seed=cfg.seed)
    if cfg.algo in ("vdn", "qmix"):
        vcfg = dataclasses.replace(getattr(cfg, cfg.algo), seed=cfg.seed)
        return ValueDecomp(spec, vcfg, agents=agents, device=cfg.device)
    return MADDPG(spec, dataclasses.replace(cfg.maddpg, seed=cfg.seed), agents=agents,
                  device=cfg.device)


def run_experiment(cfg: ExperimentConfig, run_dir: str | Path) -> RunSummary:
    """Run ``cfg`` in ``run_dir`` (created); returns where everything landed."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed)
    np.random.seed(cfg.seed)
    logger = make_logger(cfg.logger, run_dir, _plain(cfg))
    try:
        kind = cfg.population.kind
        if kind == "league":
            table = _run_league(cfg, run_dir, logger)
        elif kind == "psro":
            from populations.psro_run import run_psro

            table = run_psro(cfg, run_dir, logger)
        else:
            table = _run_single(cfg, run_dir, logger)
        logger.summary({"table": table})
    finally:
        logger.close()
    return RunSummary(run_dir, run_dir / "league.db", run_dir / "snapshots", logger.files, table)


def _league_config(cfg: ExperimentConfig) -> LeagueConfig:
    pop = cfg.population
    mappo = cfg.mappo
    if cfg.algo == "ippo":
        mappo = dataclasses.replace(mappo, net=dataclasses.replace(mappo.net, critic="local"))
    elif cfg.algo != "mappo":
        raise ValueError(f"population=league trains MAPPO/IPPO members; got algo={cfg.algo!r}")
    return LeagueConfig(
        game=cfg.game.name, game_kwargs=dict(cfg.game.kwargs), generations=pop.generations,
        frames_per_generation=pop.frames_per_generation, num_envs=cfg.num_envs,
        opponent_prob=pop.opponent_prob, eval_episodes=cfg.eval_episodes,
        eval_window=pop.eval_window, matchmaking=pop.matchmaking, mappo=mappo,
        runner=cfg.runner.kind, ray_workers=cfg.runner.workers, ray_address=cfg.runner.address,
        seed=cfg.seed, device=cfg.device, torch_threads=cfg.torch_threads)


def _run_league(cfg: ExperimentConfig, run_dir: Path, logger: MetricsLogger) -> list[dict]:
    league = League(_league_config(cfg), run_dir, resume=cfg.resume)
    league.logger = logger
    try:
        league.run()
        return league_table(league.db, league.run_id)
    finally:
        league.close()


def league_table(db: LeagueDB, run_id: int) -> list[dict[str, Any]]:
    """One row per snapshot: member, version, Elo, μ±σ, matches (best first)."""
    ratings = db.latest_ratings(run_id)
    rows = []
    for s in db.snapshots(run_id):
        r = ratings.get(s.id)
        rows.append({"member": s.member, "version": s.version, "kind": s.kind,
                     "elo": None if r is None else round(r["elo"], 1),
                     "mu": None if r is None else round(r["mu"], 2),
                     "sigma": None if r is None else round(r["sigma"], 2),
                     "matches": 0 if r is None else int(r["matches"])})
    return sorted(rows, key=lambda x: -(x["mu"] or -1e9))


def _run_single(cfg: ExperimentConfig, run_dir: Path, logger: MetricsLogger) -> list[dict]:
    """One learner on one game; its snapshot is evaluated against random other teams."""
    spec = games.make(cfg.game.name, **cfg.game.kwargs).spec
    db = LeagueDB(run_dir / "league.db")
    run_id = db.run_id(cfg.experiment) or db.create_run(
        cfg.experiment, experiment=cfg.experiment, game=spec.name, config=_plain(cfg))
    store = PolicyStore(run_dir / "snapshots", db, run_id)
    teams = spec.teams
    agents = tuple(a.id for a in spec.agents if a.team == teams[0])  # first team learns
    learner = make_learner(cfg, spec, agents)
    others = {a: RandomPolicy(spec, seed=cfg.seed) for a in spec.agent_ids if a not in agents}
    vkw = getattr(learner, "vector_game_kwargs", {"with_state": True})
    vg = games.VectorGame(cfg.game.name, cfg.num_envs, seed=cfg.seed, **vkw, **cfg.game.kwargs)

    def on_update(frames: int, metrics: dict[str, float]) -> None:
        db.log_metrics(run_id, frames, metrics)
        logger.log(frames, metrics)

    res = train(learner, vg, cfg.frames, opponents=others, progress=cfg.progress,
                on_update=on_update, eval_greedy=cfg.algo in ("vdn", "qmix"))
    snap = store.publish(cfg.algo, learner.policy())
    _evaluate_single(db, run_id, cfg, spec, snap.id, learner, others, vkw)
    db.set_run_status(run_id, "finished")
    rows = [{"member": cfg.algo, "version": snap.version, "frames": res.frames,
             "seconds": round(res.seconds, 1),
             "final_return": round(float(np.mean(res.episode_returns[-50:])), 3)
             if res.episode_returns else None}]
    db.close()
    return rows


def _evaluate_single(db: LeagueDB, run_id: int, cfg: ExperimentConfig, spec: games.GameSpec,
                     sid: int, learner: Learner, others: dict, vkw: dict) -> None:
    """Record ``eval_episodes`` episodes of the snapshot (random seats elsewhere) as matches."""
    pol = learner.policy()
    vg = games.VectorGame(cfg.game.name, min(cfg.num_envs, cfg.eval_episodes),
                          seed=cfg.seed + 99_991, **vkw, **cfg.game.kwargs)
    seats = {a: pol if a in learner.agents else others[a] for a in spec.agent_ids}
    greedy = cfg.algo in ("vdn", "qmix")
    vs = vg.reset()
    rows: list[MatchRow] = []
    while len(rows) < cfg.eval_episodes:
        vs = vg.step({a: p.act(a, vs, greedy=greedy) for a, p in seats.items()})
        for b in np.flatnonzero(vs.done):
            rows.append(MatchRow(f"eval/e{len(rows):05d}", spec.name,
                                 {a: sid for a in learner.agents},
                                 {a: float(vs.episode_return[a][b]) for a in spec.agent_ids}))
    db.add_matches(run_id, rows[: cfg.eval_episodes])


def _plain(obj: Any) -> Any:
    """Dataclasses, tuples and dicts as JSON-able plain values."""
    if dataclasses.is_dataclass(obj):
        return {k: _plain(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    return obj


