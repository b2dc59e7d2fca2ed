"""Experiments: one typed config for everything ``selfplay-train`` launches, and the code
that runs it in a run folder.

The schema is made of the library's own dataclasses (``MAPPOConfig``, ``LeagueConfig``,
``MatchmakingConfig``, ``PSROConfig``...), so defaults and their docs live once, beside the
code; ``configs/`` only holds named presets. ``population.kind`` picks what runs:

* ``none``: train one learner (``algo``) on ``game`` for ``frames`` frames (``llm_grpo``:
  ``llm.iterations`` GRPO iterations), snapshot it, and evaluate it (against uniformly random
  seats for the other teams);
* ``league``: a self-play league (``populations.league``) with the chosen matchmaking; its
  members are ``population.members`` (default ``[algo]``), e.g. ``[mappo, llm_grpo]`` for
  MAPPO and an LLM team in one league;
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
from llm_agents.build import LLMConfig
from marl.core import Learner
from marl.maddpg import MADDPG, MADDPGConfig
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import RandomPolicy, train
from marl.value_decomp import ValueDecomp, ValueDecompConfig
from populations.db import LeagueDB, MatchRow
from populations.league import League, LeagueConfig
from populations.loggers import LoggerConfig, MetricsLogger, make_logger
from populations.matchmaking import MatchmakingConfig
from populations.members import LLMMember, MAPPOMember
from populations.psro import PSROConfig
from populations.run_folder import open_run
from populations.store import PolicyStore

log = logging.getLogger(__name__)

ALGOS = ("mappo", "ippo", "vdn", "qmix", "maddpg", "llm_grpo")
LEAGUE_ALGOS = ("mappo", "ippo", "llm_grpo", "mappo_exploiter")
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
    rollout_workers: int = 0  # population=none, MAPPO/IPPO: workers collecting training
    # rollouts (Ray actors with kind=ray, in this process with kind=local); 0: no workers

    def __post_init__(self) -> None:
        if self.kind not in ("local", "ray"):
            raise ValueError(f"runner kind {self.kind!r} unknown; choose one of ['local', 'ray']")
        if self.rollout_workers < 0:
            raise ValueError(f"rollout_workers={self.rollout_workers}; expected an integer >= 0")


@dataclass
class PopulationConfig:
    """What population runs: none (one learner), a self-play league, or PSRO."""

    kind: str = "none"  # none | league | psro
    generations: int = 6  # league: snapshots after the first
    frames_per_generation: int = 20_000  # league: training frames per snapshot
    opponent_prob: float = 0.5  # league: share of copies with a past snapshot as opponent
    eval_window: int = 0  # league: evaluate against the last k snapshots (0: all)
    members: list[str] = field(default_factory=list)  # league: member algos (empty: [algo]);
    # mappo | ippo | llm_grpo | mappo_exploiter (AlphaStar main exploiter of the first member)
    nash_conv: bool = False  # league: log each snapshot's exact NashConv (small OpenSpiel)
    exploiter_reset_win_rate: float = 0.7  # league, mappo_exploiter: restart after this
    # win rate against the main member's newest snapshot
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
        for m in self.members:
            if m not in LEAGUE_ALGOS:
                raise ValueError(f"league member {m!r} unknown; choose from {list(LEAGUE_ALGOS)}")
        if len(set(self.members)) != len(self.members):
            raise ValueError(f"league members {self.members} repeat an algo; list each once")


@dataclass
class ExperimentConfig:
    """Everything ``selfplay-train`` runs; see ``configs/`` for named presets."""

    experiment: str = "default"  # name (run folders are grouped by it)
    seed: int = 0  # seeds games, learners and evaluation
    algo: str = "mappo"  # mappo | ippo | vdn | qmix | maddpg | llm_grpo
    frames: int = 60_000  # population=none: training frames
    num_envs: int = 32  # game copies stepped together while training
    eval_episodes: int = 32  # evaluation episodes (league: role-swapped pairs per snapshot pair)
    device: str = "cpu"  # cpu | cuda | cuda:N | auto
    torch_threads: int = 1  # intra-op threads (small networks are fastest on one)
    resume: bool = False  # continue the run in this folder from its last checkpoint
    resume_override: bool = False  # resume with other settings / start fresh on resume=true
    progress: bool = True  # progress bars and lines on the terminal
    game: GameConfig = field(default_factory=GameConfig)
    mappo: MAPPOConfig = field(default_factory=MAPPOConfig)
    vdn: ValueDecompConfig = field(default_factory=lambda: ValueDecompConfig(mixer="vdn"))
    qmix: ValueDecompConfig = field(default_factory=lambda: ValueDecompConfig(mixer="qmix"))
    maddpg: MADDPGConfig = field(default_factory=MADDPGConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)  # algo=llm_grpo: model, team, GRPO
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


# settings a resume may change (populations.run_folder): where it runs, how it logs, how long
RESUME_MAY_CHANGE = ("resume", "resume_override", "progress", "device", "torch_threads",
                     "runner.", "logger.", "population.generations", "population.iterations")


def run_experiment(cfg: ExperimentConfig, run_dir: str | Path) -> RunSummary:
    """Run ``cfg`` in ``run_dir`` (created, locked for this process, its settings checked on
    a resume); returns where everything landed. A run that raises is recorded ``failed``."""
    with open_run(run_dir, _plain(cfg), cfg.resume, cfg.resume_override, RESUME_MAY_CHANGE):
        return _run_experiment(cfg, Path(run_dir))


def _run_experiment(cfg: ExperimentConfig, run_dir: Path) -> RunSummary:
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


def _mappo_config(cfg: ExperimentConfig, algo: str) -> MAPPOConfig:
    if algo == "ippo":
        return dataclasses.replace(cfg.mappo, net=dataclasses.replace(cfg.mappo.net,
                                                                     critic="local"))
    return cfg.mappo


def _league_config(cfg: ExperimentConfig) -> LeagueConfig:
    pop = cfg.population
    algos = pop.members or [cfg.algo]
    bad = [a for a in algos if a not in LEAGUE_ALGOS]
    if bad:
        raise ValueError(f"population=league trains {list(LEAGUE_ALGOS)} members; got "
                         f"{bad[0]!r}")
    mappo = next((_mappo_config(cfg, a) for a in algos if a != "llm_grpo"), cfg.mappo)
    return LeagueConfig(
        game=cfg.game.name, game_kwargs=dict(cfg.game.kwargs), generations=pop.generations,
        frames_per_generation=pop.frames_per_generation, num_envs=cfg.num_envs,
        opponent_prob=pop.opponent_prob, eval_episodes=cfg.eval_episodes,
        eval_window=pop.eval_window, matchmaking=pop.matchmaking, mappo=mappo,
        nash_conv=pop.nash_conv, runner=cfg.runner.kind, ray_workers=cfg.runner.workers,
        ray_address=cfg.runner.address, seed=cfg.seed, device=cfg.device,
        torch_threads=cfg.torch_threads)


def _llm_trainer(cfg: ExperimentConfig, run_dir: Path) -> Any:
    from llm_agents.build import build_trainer

    return build_trainer(cfg.llm, [cfg.game.name], {cfg.game.name: dict(cfg.game.kwargs)},
                         seed=cfg.seed, device=cfg.device, workdir=run_dir)


def _league_members(cfg: ExperimentConfig, lcfg: LeagueConfig, run_dir: Path) -> list | None:
    """The members ``population.members`` names (None: the league's default MAPPO ``main``)."""
    algos = cfg.population.members or [cfg.algo]
    if algos in (["mappo"], ["ippo"]):
        return None
    spec = games.make(cfg.game.name, **cfg.game.kwargs).spec
    members: list = []
    mains = [a for a in algos if a != "mappo_exploiter"]
    if not mains:
        raise ValueError("population.members: a mappo_exploiter needs a main member to "
                         "exploit (mappo, ippo or llm_grpo)")
    main = "llm" if mains[0] == "llm_grpo" else mains[0]
    for algo in algos:
        if algo == "mappo_exploiter":
            members.append(MAPPOMember(
                "exploiter", MAPPO(spec, cfg.mappo, device=cfg.device, seed=cfg.seed + 1),
                opponents=(main,), latest_only=True,
                reset_win_rate=cfg.population.exploiter_reset_win_rate))
        elif algo == "llm_grpo":
            members.append(LLMMember("llm", _llm_trainer(cfg, run_dir), cfg.llm.iterations,
                                     cfg.population.opponent_prob))
        else:
            members.append(MAPPOMember(algo, MAPPO(spec, _mappo_config(cfg, algo),
                                                   device=cfg.device, seed=cfg.seed)))
    return members


def _run_league(cfg: ExperimentConfig, run_dir: Path, logger: MetricsLogger) -> list[dict]:
    lcfg = _league_config(cfg)
    league = League(lcfg, run_dir, resume=cfg.resume,
                    members=_league_members(cfg, lcfg, run_dir),
                    resume_override=cfg.resume_override)
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
    if cfg.algo == "llm_grpo":
        return _run_single_llm(cfg, run_dir, logger)
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

    if cfg.runner.rollout_workers:
        from populations.rollouts import RolloutCollector, RolloutSpec, train_with_workers

        workers = cfg.runner.rollout_workers
        spec_w = RolloutSpec(cfg.game.name, agents, max(1, cfg.num_envs // workers), cfg.seed,
                             dict(cfg.game.kwargs), dict(vkw))
        collector = RolloutCollector(spec_w, workers, cfg.runner.kind, cfg.runner.address)
        try:
            res = train_with_workers(learner, collector, cfg.frames, cfg.progress, on_update)
        finally:
            collector.close()
    else:
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


def _run_single_llm(cfg: ExperimentConfig, run_dir: Path, logger: MetricsLogger) -> list[dict]:
    """An LLM team trained by multi-turn GRPO for ``llm.iterations`` iterations (self-play
    in multi-team games, team play in cooperative ones), snapshotted and evaluated."""
    from tqdm.auto import tqdm

    spec = games.make(cfg.game.name, **cfg.game.kwargs).spec
    db = LeagueDB(run_dir / "league.db")
    run_id = db.run_id(cfg.experiment) or db.create_run(
        cfg.experiment, experiment=cfg.experiment, game=spec.name, config=_plain(cfg))
    store = PolicyStore(run_dir / "snapshots", db, run_id)
    trainer = _llm_trainer(cfg, run_dir)
    store.publish("llm", trainer.policy(), version=0)
    metrics: dict[str, float] = {}
    bar = tqdm(total=cfg.llm.iterations, disable=not cfg.progress, unit="iter",
               dynamic_ncols=True)
    for it in range(1, cfg.llm.iterations + 1):
        metrics = trainer.step()
        db.log_metrics(run_id, it, metrics)
        logger.log(it, metrics)
        bar.set_postfix(legal=f"{metrics['charts/legal_rate']:.2f}",
                        ret=f"{metrics['charts/team_return']:.2f}", refresh=False)
        bar.update(1)
    bar.close()
    snap = store.publish("llm", trainer.policy())
    agents = tuple(a.id for a in spec.agents if a.team == spec.teams[0])
    others = {a: RandomPolicy(spec, seed=cfg.seed) for a in spec.agent_ids if a not in agents}
    member = _Seats(trainer.policy(agents), agents)
    _evaluate_single(db, run_id, cfg, spec, snap.id, member, others, {"with_text": True})
    db.set_run_status(run_id, "finished")
    row = {"member": "llm", "version": snap.version, "iterations": cfg.llm.iterations}
    for key in ("legal_rate", "success_rate", "team_return"):
        if f"charts/{key}" in metrics:
            row[key] = round(float(metrics[f"charts/{key}"]), 3)
    db.close()
    return [row]


@dataclass
class _Seats:
    """A trained policy and the seats it holds (what ``_evaluate_single`` needs)."""

    pol: Any
    agents: tuple[str, ...]

    def policy(self) -> Any:
        return self.pol


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


