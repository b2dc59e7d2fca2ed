"""Experiments: one typed config for everything ``selfplay-train`` launches
(:class:`~populations.experiment_config.ExperimentConfig`, torch-free: Hydra's schema; its
names are importable from here), and the code that runs it in a run folder.

The schema is made of the library's own dataclasses (``MAPPOConfig``, ``LeagueConfig``,
``MatchmakingConfig``, ``PSROConfig``...), so defaults and their docs live once, beside the
code; ``configs/`` only holds named presets. ``population.kind`` picks what runs:

* ``none``: train one learner (``algo``) on ``game`` for ``frames`` frames (``llm_grpo``:
  ``llm.iterations`` GRPO iterations), snapshot it, and evaluate it (against uniformly random
  seats for the other teams): ``populations.single_run``;
* ``league``: a self-play league (``populations.league``) with the chosen matchmaking; its
  members are ``population.members`` (default ``[algo]``), e.g. ``[mappo, llm_grpo]`` for
  MAPPO and an LLM team in one league;
* ``psro``: PSRO on an OpenSpiel game with exact (or RL) best responses.

Every mode writes ``league.db`` (members, snapshots, matches, metrics) in the run folder,
so the dashboard shows any run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import games
import llm_agents.learner  # noqa: F401 - registers llm_grpo (and the llm policy kind)
from llm_agents.build import LLMConfig, vocabulary_said
from marl import registry
from marl.maddpg import MADDPGConfig  # noqa: F401 - re-exported (and registers maddpg)
from marl.mappo import MAPPOConfig  # noqa: F401 - re-exported (and registers mappo, ippo)
from marl.registry import (  # noqa: F401 - LearnerBuildError re-exported: its old home
    LearnerBuildError,
    LearnerEntry,
)
from marl.value_decomp import ValueDecompConfig  # noqa: F401 - re-exported (vdn, qmix)
from populations.checkpoint import (
    note_resume_threads,
)
from populations.config_checks import (  # noqa: F401 - re-exported but check_game_kwargs
    NUM_ENVS,
    TOP_LEVEL_TYPES,
    backend_fits,
    check_game_kwargs,
    check_run_values,
)
from populations.experiment_config import (  # torch-free: checked before torch loads
    EXPLOITER,  # noqa: F401 - re-exported
    MODES,  # noqa: F401 - re-exported: its old home
    ExperimentConfig,  # the schema: its old home (Hydra's is made without torch)
    ExploitEvery,  # noqa: F401 - re-exported
    GameConfig,  # noqa: F401 - re-exported: its old home
    PopulationConfig,  # noqa: F401 - re-exported: its old home
    RunnerConfig,  # noqa: F401 - re-exported: its old home
    check_copies,
    league_algos,
    seeded_sections,
)
from populations.league import (  # noqa: F401 - MEMBER re-exported
    MEMBER,
    League,
    LeagueConfig,
    cooperative_refusal,
)
from populations.league_eval import league_table  # re-exported: its old home
from populations.learner_build import (  # make_learner: re-exported, its old home
    make_learner,  # noqa: F401
    rollout_trainer,
    rollouts_closed,
)
from populations.learner_sections import (  # settings: re-exported, its old home
    check_learner_sections,
    section_configs,
    settings,
)
from populations.loggers import (  # noqa: F401 - LoggerConfig re-exported: its old home
    LoggerConfig,
    MetricsLogger,
    make_logger,
)
from populations.matchmaking import MatchmakingConfig  # noqa: F401 - re-exported: its old home
from populations.member_specs import (
    MemberSpec,
    check_member_specs,
    member_names,
    member_settings,
    parse_members,
    refused_settings,
    refused_settings_hint,
)
from populations.members import LearnerMember, LLMMember
from populations.psro_config import PSROConfig  # noqa: F401 - re-exported: its old home
from populations.run_folder import (
    HYDRA_WORDS,
    SETTINGS_NAME,
    open_run,
    record_settings,
)
from populations.seeds import GLOBAL, RunSeeds, isolated_global_rng
from populations.single_eval import (  # re-exported: their old home
    EVAL_MATCHES,  # noqa: F401
    Evaluation,  # noqa: F401
    ci95,  # noqa: F401
    mean_eval_return,  # noqa: F401
    random_seats,  # noqa: F401
    recorded_evaluation,  # noqa: F401
)
from populations.single_run import (  # finished_run_row: re-exported, its old home
    CHECKPOINTS,
    finished_run_row,  # noqa: F401
    run_single,
    single_finished,
)

log = logging.getLogger(__name__)


def __getattr__(name: str) -> Any:
    """``ORACLE_NAMES`` and ``oracle_algos`` of :mod:`populations.psro_run`, importable from
    here as before (this module no longer imports psro_run at its top: psro_run imports it)."""
    if name in ("ORACLE_NAMES", "oracle_algos"):
        from populations import psro_run

        return getattr(psro_run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class RunSummary:
    """Where a finished run left its outputs, for the closing message."""

    run_dir: Path
    database: Path
    snapshots: Path
    logger_files: Path | None
    table: list[dict[str, Any]]
    logger_note: str = ""  # said after logger_files (MetricsLogger.files_note)


def check_experiment(cfg: ExperimentConfig, game: games.Game | None = None) -> None:
    """Refuse, in one line, an algo that cannot play the game (before any run folder):
    every learner the run would train (``algo``, or the league's members); and more game
    copies (``num_envs``) than a game stepped copy by copy may take (:func:`check_copies`).
    ``game``: ``cfg``'s game, built and its arguments checked by the caller, who closes it (a
    sweep's check builds each distinct game once); else it is built here and closed."""
    check_learner_sections(cfg)  # +my_algo.lr=0.5 (a learner of the user's own)
    check_presets(cfg)  # qmix.mixer=vdn: the qmix preset trained QMIX and recorded vdn
    if game is not None:
        _check_on(cfg, game)
        return
    if cfg.game.kwargs:  # built and stepped once: an argument the game cannot use, one line
        check_game_kwargs(cfg.game.name, dict(cfg.game.kwargs))
    with contextlib.closing(games.make(cfg.game.name, **cfg.game.kwargs)) as built:
        _check_on(cfg, built)


def check_presets(cfg: ExperimentConfig) -> None:
    """Refuse, in one line, a setting of a section only its own learner reads that the
    learner's preset would replace (:func:`marl.registry.preset_refusal`): ``qmix.mixer=vdn``
    trained QMIX while ``settings.json`` recorded vdn. A shared section is not judged: IPPO's
    preset replaces the ``mappo`` critic that ``encoder=gnn`` sets for both (a league's
    members are checked with their own settings in :func:`check_experiment`)."""
    # only the learner the run trains: a section no learner of the run reads is the unread
    # sections' warning (qmix.mixer=vdn with algo=mappo: "not read by this run"), and a
    # league's members are checked with their own settings in _check_on
    kind, oracle = cfg.population.kind, cfg.population.oracle
    name = cfg.algo if kind == "none" else oracle if kind == "psro" else None
    entry = registry.entries().get(name) if name else None
    if entry is None or entry.preset is None or entry.section != name:
        return
    found = registry.preset_refusal(name, settings(cfg, entry))
    if found is not None:
        raise ValueError(found if kind == "none" else
                         found.replace(" algo=", " population.oracle="))


def _check_on(cfg: ExperimentConfig, game: games.Game) -> None:
    """:func:`check_experiment`'s checks that read the built ``game``."""
    check_copies(cfg.num_envs, game)  # 10**8 copies of a stepped game: minutes, then killed
    text_views = not callable(getattr(game, "batched", None))  # see games.VectorGame
    roles = list(dict.fromkeys(a.role for a in game.spec.agents))  # llm.role_prompts' keys
    if cfg.population.kind == "psro":  # PSRO trains no `algo`; its RL oracle plays
        from populations.psro_run import check_oracle_config, check_oracle_on_spec, resolve_auto

        check_oracle_on_spec(cfg, game)  # before auto's tree walk (liars_dice: ~100 s)
        resolved = resolve_auto(cfg, game, announce=False)
        check_oracle_config(resolved, game.spec)
        check_oracle_builds(resolved, game.spec)
        return
    if cfg.population.kind == "league" and not cfg.population.sync and cfg.runner.kind != "ray":
        raise ValueError("population.sync=false (asynchronous members) needs runner=ray; got "
                         f"runner={cfg.runner.kind}")  # LeagueConfig's refusal, after the folder
    if cfg.population.kind == "league":  # each member with its own settings
        refused = cooperative_refusal(game)  # a tool task: one shared reward, teams= or not
        if refused:
            raise ValueError(refused)
        check_league_game(cfg, game.spec)
        for spec, _, entry, config in league_member_specs(cfg):
            preset = entry.section == entry.name and registry.preset_refusal(  # the run's
                entry.name, config, f"{spec.where}.{entry.section}" if spec.changes else None)
            if preset:  # section, a member's changes over it (a shared one: check_presets)
                raise ValueError(preset)
            found = registry.refusal(entry.name, game.spec, config, text_views)
            if found is not None and spec.changes:
                raise ValueError(_member_refusal(cfg, game.spec, spec, entry, found, text_views))
            if found is not None:  # a listed name says which entry; the default [algo] not
                where = f"{spec.where}: " if cfg.population.members else ""
                raise ValueError(where + found.line())
            if isinstance(config, LLMConfig):
                config.unused_role_prompts(roles, cfg.game.name)  # a misspelled role: refused
            if cfg.population.nash_conv and isinstance(config, LLMConfig):
                config.check_nash_conv()
        return
    config = settings(cfg, registry.get(cfg.algo))
    if isinstance(config, LLMConfig):  # the unused ones are named when the team is built
        config.unused_role_prompts(roles, cfg.game.name)
    registry.check_compatible(cfg.algo, game.spec, config, text_views)


def _member_refusal(cfg: ExperimentConfig, game: games.GameSpec, spec: MemberSpec,
                    entry: LearnerEntry, found: registry.Refusal, text_views: bool) -> str:
    """``found``'s line for a league member with a mapping of its own, after where it is
    (``population.members[1]: ...``). When its mapping is what makes it refused (the run's
    section plays the game), the learner's hint, which names run-level settings (``use
    encoder=mlp``), and the note on the section's defaults give way to the member's own
    settings, named under ``population.members[i]``; the list of algos that play the game
    is left out (made with the member's setting, it left out its own algo)."""
    own = refused_settings(spec, entry, settings(cfg, entry), lambda config: not
                           registry.compatible(entry.name, game, config, text_views))
    if not own:
        return f"{spec.where}: {found.line()}"
    problem = found.problem.split("; use ")[0]  # a learner's hint: run-level settings
    return f"{spec.where}: " + found.line(
        f"{problem}; {refused_settings_hint(spec.where, own)}", note="", others=[])


def check_oracle_builds(cfg: ExperimentConfig, spec: games.GameSpec) -> None:
    """Build PSRO's oracle once, for its first player, when it is a registered learner
    (``population.oracle=my_algo``): PSRO builds it only for its first best responses, after
    the run folder was made, and one that fails to build is refused here instead, in one line
    (:class:`LearnerBuildError`). The caller's global random streams are left as they were."""
    if cfg.population.oracle in ("exact", "rl"):  # no learner / the library's own MAPPO
        return
    from populations.psro_config import psro_players

    entry = registry.get(cfg.population.oracle)
    seats = next(iter(psro_players(spec, cfg.population.psro.players).values()))
    with isolated_global_rng(RunSeeds(cfg.seed).stream(GLOBAL)):
        entry.build(spec, settings(cfg, entry), seats, cfg.device,
                    RunSeeds(cfg.seed).learner(entry.name))


def league_member_specs(cfg: ExperimentConfig,
                        ) -> list[tuple[MemberSpec, str, LearnerEntry, Any]]:
    """A league's members as ``population.members`` lists them (default ``[algo]``): each
    entry's spec, member name, registry entry and the settings its learner trains with (the
    run's section, with a named member's changes over it: ``populations.member_specs``)."""
    allowed = league_algos()
    if not cfg.population.members and cfg.algo not in allowed:
        raise ValueError(f"population=league trains {allowed} members; got {cfg.algo!r}")
    specs = parse_members(cfg.population.members or [cfg.algo])
    check_member_specs(specs, allowed)
    out = []
    for spec, name in zip(specs, member_names(specs), strict=True):
        entry = registry.get(spec.algo)
        for key, value in _seeds((spec.changes or {}).get(entry.section, {}), entry.section,
                                 cfg):
            if value not in (0, cfg.seed):  # seeded from the run's learner/<name> stream
                raise ValueError(f"{spec.where}.{key}={value!r} is not read by an experiment: "
                                 f"the run's seed= seeds every member, each from its own "
                                 f"stream (give seed={value} instead)")
        out.append((spec, name, entry, member_settings(settings(cfg, entry), spec, entry)))
    return out


def _seeds(values: Any, section: str, cfg: ExperimentConfig) -> list[tuple[str, Any]]:
    """The seeds a member's section changes that the run level refuses too (``vdn.seed``,
    ``qmix.seed``, ``maddpg.seed``, ``llm.grpo.seed``: the Python API's), by dotted path; a
    seed a learner reads (``llm.tiny.seed``: the tiny model's initial weights) is not one."""
    if not isinstance(values, Mapping):
        return []
    if section in seeded_sections(cfg) and "seed" in values:
        return [(f"{section}.seed", values["seed"])]
    grpo = values.get("grpo") if section == "llm" else None
    return [("llm.grpo.seed", grpo["seed"])] if isinstance(grpo, Mapping) and "seed" in grpo \
        else []


def check_league_game(cfg: ExperimentConfig, spec: games.GameSpec) -> None:
    """Refuse, in one line, a game a league cannot run with these settings: exact NashConv
    (``population.nash_conv``) off small OpenSpiel games of perfect recall, a game without
    two teams. ``League.__init__`` refuses them too, but after it made ``league.db``, and
    after the run folder and the members' learners were made."""
    if cfg.population.nash_conv and not cfg.game.name.startswith("openspiel/"):
        raise ValueError(f"population.nash_conv=true needs a small OpenSpiel game; got "
                         f"game.name={cfg.game.name!r}; set it false, or "
                         "population.exploit.every=N for an approximate NashConv")
    if cfg.population.nash_conv:
        from populations import exploitability as ex

        try:  # cached: the league's own check reads the same tree; its 'enumerated ...'
            with ex.lines_held(), ex.exact_check(  # line waits for the run's start (a
                    "for population.nash_conv=true (exact NashConv needs a small game of "
                    "perfect recall); population.nash_conv=false skips this walk"):
                ex.require_perfect_recall(ex.game_tree(spec))  # resume may be refused)
        except games.GameContractError:  # a bug of the game's code (a ValueError too):
            raise  # one line naming the call; leaving NashConv out is no advice for it
        except ValueError as err:
            why = str(err).replace(f"; {ex.SAMPLED_HINT}", "")
            raise ValueError(f"population.nash_conv=true: {why}; set it false, or "
                             "population.exploit.every=N for an approximate NashConv") from None
    if len(spec.teams) != 2:
        # teams= regroups seats, PSRO plays two or more: no help for a game of one seat
        # (mpe2.simple_v3), which only population=none trains
        other = ("; it has one seat: population=none trains it" if len(spec.agents) < 2 else
                 f" ({HYDRA_WORDS.kwarg('teams', '[[...],[...]]')} groups its seats); "
                 "population=psro plays two or more seats, population=none one team")
        raise ValueError(
            f"a self-play league needs two teams; {spec.name} has {spec.teams}; accepted: a "
            f"game with two teams{other}")


# settings a resume may change (populations.run_folder): where it runs, how it logs, how long
RESUME_MAY_CHANGE = ("resume", "resume_override", "keep_going", "progress", "device",
                     "torch_threads", "checkpoint_every_s",
                     "llm.grpo.device", "llm.grpo.seed",  # never read
                     "population.psro.seed",  # never read either (the run's seed= is)
                     "population.psro.stop_nash_conv",  # a converged run resumes past it
                     "vdn.seed", "qmix.seed", "maddpg.seed",  # recorded as 0 before
                     "runner.", "logger.", "population.generations", "population.iterations",
                     "population.keep_checkpoints")


def run_experiment(cfg: ExperimentConfig, run_dir: str | Path) -> RunSummary:
    """Run ``cfg`` in ``run_dir`` (created, locked for this process, its settings checked on
    a resume); returns where everything landed. A run that raises is recorded ``failed``.
    ``cfg.imports`` are imported first (as selfplay-train does), so Ray workers get them too."""
    if cfg.imports:  # the Python API's ExperimentConfig(imports=[...]) was read by the CLIs only
        from populations.cli_common import import_user_modules  # cli imports this module

        import_user_modules(cfg.imports)
    check_experiment(cfg)  # an algo that cannot play the game: refused before the folder
    if cfg.population.kind == "psro":  # settings.json records what `auto` decided
        from populations.psro_run import resolve_auto, unread_algo

        cfg = resolve_auto(cfg, games.make(cfg.game.name, **cfg.game.kwargs),
                           run_dir=Path(run_dir))  # said once the run starts
        note = unread_algo(cfg)  # algo=llm_grpo population=psro: PSRO trains no algo
        if note:
            log.warning(note)
    # a finished single run does not train on: other settings would be recorded for nothing
    finished = (lambda: single_finished(Path(run_dir), cfg.experiment)) \
        if cfg.population.kind == "none" else None
    with open_run(run_dir, plain(cfg), cfg.resume, cfg.resume_override, RESUME_MAY_CHANGE,
                  finished, checked_later=cfg.population.kind == "league"):
        # a league says it itself (League._open), for the league CLI's resumes too
        if cfg.resume and cfg.population.kind != "league" and not (
                finished is not None and finished()):
            note_resume_threads(Path(run_dir) / CHECKPOINTS, cfg.torch_threads,
                                lambda: _recorded_settings(Path(run_dir)))
        return _run_experiment(cfg, Path(run_dir))


def _recorded_settings(run_dir: Path) -> object:
    """The run's ``settings.json`` as recorded (None where it cannot be read)."""
    try:
        return json.loads((run_dir / SETTINGS_NAME).read_text())
    except (OSError, ValueError, RecursionError):
        return None


def _run_experiment(cfg: ExperimentConfig, run_dir: Path) -> RunSummary:
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg.torch_threads)
    logger = make_logger(cfg.logger, run_dir, plain(cfg))
    # code that still draws from the global streams runs on a seeded copy of them: the
    # caller's torch / numpy random states are as they were when this returns
    with isolated_global_rng(RunSeeds(cfg.seed).stream(GLOBAL)), _closing(logger):
        kind = cfg.population.kind
        if kind == "league":
            table = _run_league(cfg, run_dir, logger)
        elif kind == "psro":
            from populations.psro_run import run_psro

            table = run_psro(cfg, run_dir, logger)
        else:
            table = run_single(cfg, run_dir, logger, plain(cfg))
        logger.summary({"table": table})
    return RunSummary(run_dir, run_dir / "league.db", run_dir / "snapshots", logger.files, table,
                      getattr(logger, "files_note", ""))  # a user's logger may lack it


@contextlib.contextmanager
def _closing(logger: MetricsLogger) -> Iterator[None]:
    """Close ``logger`` after the run; after an error, best effort: a close that fails too
    (the csv file's flush on the disk that filled up) is logged, the run's error is raised."""
    try:
        yield
    except BaseException:
        try:
            logger.close()
        except Exception as err:  # noqa: BLE001 - the error being raised is the one to report
            log.warning("closing the %s logger failed too: %s", type(logger).__name__, err)
        raise
    logger.close()


def _league_config(cfg: ExperimentConfig) -> LeagueConfig:
    pop = cfg.population
    return LeagueConfig(
        game=cfg.game.name, game_kwargs=dict(cfg.game.kwargs), generations=pop.generations,
        frames_per_generation=pop.frames_per_generation, num_envs=cfg.num_envs,
        opponent_prob=pop.opponent_prob, eval_episodes=cfg.eval_episodes,
        eval_window=pop.eval_window, matchmaking=pop.matchmaking, mappo=cfg.mappo,
        nash_conv=pop.nash_conv, exploit=pop.exploit, runner=cfg.runner.kind,
        ray_workers=cfg.runner.workers,
        ray_address=cfg.runner.address, seed=cfg.seed, device=cfg.device,
        torch_threads=cfg.torch_threads, ray_learners=cfg.runner.learners,
        learner_gpus=cfg.runner.learner_gpus,
        max_learner_restarts=cfg.runner.max_learner_restarts, sync=pop.sync,
        keep_checkpoints=pop.keep_checkpoints)


def _league_members(cfg: ExperimentConfig, run_dir: Path,
                    trainers: list | None = None) -> list:
    """The members ``population.members`` names (:func:`league_member_specs`), built through
    the registry, each seeded from the ``learner/<name>`` stream of the run's seed tree;
    each LLM team's trainer is appended to ``trainers`` as it is built (the caller closes
    their rollout workers, :func:`rollouts_closed`)."""
    game_spec = games.make(cfg.game.name, **cfg.game.kwargs).spec
    seeds = RunSeeds(cfg.seed)
    listed = league_member_specs(cfg)
    main = next(name for spec, name, _, _ in listed if not spec.exploiter)
    members: list = []
    started = time.perf_counter()
    for spec, name, entry, config in listed:
        # an LLM team loads (or, llm=tiny, trains) its model first, a replay learner
        # allocates its buffer: a start of minutes said nothing before the first bar
        note = _tiny_note(config, cfg.game.name, cfg.resume)
        log.info("league member %d/%d: building %s (%s%s)", len(members) + 1, len(listed),
                 name, entry.name, note)
        if entry.capabilities.own_rollouts:
            # the line above said what a tiny team's build spends its time on: said once
            with vocabulary_said() if note else contextlib.nullcontext():
                trainer = rollout_trainer(cfg, entry, game_spec, run_dir, seeds.learner(name),
                                          config)
            if trainers is not None:
                trainers.append(trainer)
            members.append(LLMMember(name, trainer, cfg.llm.iterations,
                                     cfg.population.opponent_prob, config=config))
            continue
        learner = entry.build(game_spec, config, None, cfg.device, seeds.learner(name))
        if spec.exploiter:
            members.append(LearnerMember(
                name, learner, opponents=(main,), latest_only=True,
                reset_win_rate=cfg.population.exploiter_reset_win_rate, algo=entry.name))
        else:
            members.append(LearnerMember(name, learner, algo=entry.name))
    log.info("league members built in %.0fs", time.perf_counter() - started)
    return members


def _tiny_note(config: Any, game: str, resume: bool = False) -> str:
    """What a tiny LLM team's build spends its time on (walk 25: minutes on mpe_tag): the
    text of ``llm.corpus_episodes`` random episodes, its vocabulary; "" for other members. A
    resume reads the vocabulary its run saved where there is one (the build says so)."""
    if getattr(config, "model", None) != "tiny":
        return ""
    return (f"; llm=tiny builds its vocabulary from llm.corpus_episodes="
            f"{config.corpus_episodes} random episodes of {game}"
            f"{', unless its run saved one' if resume else ''}")


def _run_league(cfg: ExperimentConfig, run_dir: Path, logger: MetricsLogger) -> list[dict]:
    lcfg = _league_config(cfg)
    trainers: list = []  # the LLM members': their Ray rollout actors end with the league
    with rollouts_closed(trainers):  # (a member built before an error or a stop too)
        league = League(lcfg, run_dir, resume=cfg.resume,
                        members=_league_members(cfg, run_dir, trainers),
                        resume_override=cfg.resume_override, experiment=cfg.experiment,
                        progress=cfg.progress)
        # a folder without settings.json, resumed: League checked what league.db recorded
        record_settings(run_dir, plain(cfg))
        league.logger = logger
        try:
            league.run()
            return league_table(league.db, league.run_id)
        finally:
            league.close()


def plain(obj: Any) -> Any:
    """Dataclasses, tuples and dicts as JSON-able plain values."""
    if isinstance(obj, ExperimentConfig):  # and the sections of the user's own learners
        out = {**{k: plain(v) for k, v in dataclasses.asdict(obj).items()},
               **{k: plain(v) for k, v in section_configs(obj).items()}}
        # the seeds a run reads: seed= (each learner's is its stream of seed='s tree, PSRO's
        # seed= itself); the sections' own said 0 whatever seed= was
        for name in seeded_sections(obj):
            out[name]["seed"] = obj.seed
        out["llm"]["grpo"]["seed"] = out["population"]["psro"]["seed"] = obj.seed
        return out
    if dataclasses.is_dataclass(obj):
        return {k: plain(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    return obj


