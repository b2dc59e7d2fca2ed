"""Console entry point ``selfplay-train`` (a Hydra app): its Hydra callback
(:class:`ConfigCheck`), its task and the end-of-run summary. What every CLI shares (one-line
errors, the user's modules and plugins) is :mod:`populations.cli_common`; the checks of the
overrides and composed config, :mod:`populations.train_overrides`; the guard of the run
folders, :mod:`populations.run_guard`. ``selfplay-eval`` is :mod:`populations.eval_cli`; a
sweep's folders and resume commands, :mod:`populations.sweeps`.

``selfplay-train`` composes ``configs/config.yaml`` with the groups ``game``, ``algo``,
``encoder``, ``population``, ``runner``, ``logger`` and ``experiment`` over the typed schema
:class:`populations.experiment_config.ExperimentConfig` (the ``configs`` package registers it,
without torch, when Hydra loads it): a misspelt key, a value of the wrong type, an unknown
group option or game stops it before the run folder is made, naming what is accepted.

A user's own code reaches every entry point two ways: modules listed in the config key
``imports`` (``selfplay-train imports=[mypkg.games]``; ``--import MODULE`` for
``selfplay-eval`` and ``python -m populations.league``), importable from the working
directory; and installed packages' entry points in the groups ``selfplay.games``,
``selfplay.learners``, ``selfplay.meta_solvers``, ``selfplay.matchmaking_rules`` and
``selfplay.loggers``, loaded when each CLI starts.

Every error a user can cause ends in one line on stderr, ``<prog>: <message>``, with exit
status 2 and no traceback (``HYDRA_FULL_ERROR=1`` shows it), and leaves no half-made run
folder behind. Startup stays light: torch and the learners load after the arguments parse,
when the experiment is made (``--cfg job``, ``--help`` and the early refusals load neither).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.experimental.callback import Callback

from populations import cli_common, run_guard
from populations.cli_common import fail, interrupted, load_plugins, one_line, reported, untyped
from populations.command_line import (
    TRAIN,
    game_overrides,
    resume_command,
    shell_word,
)
from populations.config_groups import group_options
from populations.member_overrides import members_by_index_last
from populations.run_guard import (
    failed_jobs_line,
    folder_before,
    hold_folder,
    keep_written,
    not_started,
    refuse_resume_without_folder,
    run_folder_guard,
    to_cli_log,
)
from populations.sweep_jobs import check_sweep_jobs
from populations.sweeps import (  # importing it registers the job folders' resolvers
    folder_given,
    pin_sweep_folder,
    refuse_renamed_job,
    register_resolvers,
    set_swept,
    sweep_folder,
    sweep_started,
)
from populations.train_overrides import (
    check_command_line,
    config_flags,
    hydra_args,
    prepare,
    refuse_cuda_without_gpu,
    unused_overrides,
)

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from populations.experiment import RunSummary
    from populations.experiment_config import ExperimentConfig

log = logging.getLogger("selfplay")


def _folder(config: DictConfig, node: str) -> Path:
    """``hydra.<node>.dir``, resolved; an interpolation that does not resolve
    (``hydra.run.dir='runs/${x}'``, no setting ``x``) is refused in one line naming the key,
    where Hydra's "Interpolation key 'x' not found" named neither (after a 5-line warning)."""
    from omegaconf.errors import InterpolationResolutionError

    from populations.command_line import CLIError

    try:
        return Path(str(config.hydra[node].dir))
    except InterpolationResolutionError as err:
        raw = config.hydra[node]._get_node("dir")._value()
        why = str(err).strip().splitlines()[0]
        raise CLIError(f"hydra.{node}.dir={raw}: {why}; Hydra resolves '${{...}}' in the "
                       "folder's name, and a literal '${' is refused: give the name without "
                       "it") from None


def check_entity_graphs(exp: Any) -> None:
    """Refuse, in the line training would say, a game whose entity graphs a learner of the
    run reads (``encoder=gnn``, ``mappo.net.critic=gnn``) and cannot (another node width,
    no row for an agent: :func:`games.graphs.graph_problem`): one game copy made with graphs
    here, as training makes its copies, but before torch_geometric is imported and the GNN
    layers built (seconds of CPU). A game with no entity graphs is the learner's own
    refusal (:func:`marl.mappo.check_game`, from the game's spec)."""
    from marl import registry
    from marl.configs import NetConfig, reads_graphs
    from populations.experiment import league_member_specs
    from populations.learner_sections import settings

    # what each learner trains with: its section's settings with its preset applied (IPPO's
    # local critic: mappo.net.critic=gnn is not read by algo=ippo)
    if exp.population.kind == "league":
        configs = [entry.resolve(config) for _, _, entry, config in league_member_specs(exp)]
    elif exp.population.kind == "psro":
        # PSRO trains no algo: its oracle's learner (exact, and rl's default MAPPO with local
        # critics, read no section; auto is decided on the game later, where the learner's
        # own check refuses a graph reader)
        oracle = exp.population.oracle
        entry = None if oracle in ("auto", "exact", "rl") else registry.get(oracle)
        configs = [] if entry is None else [entry.resolve(settings(exp, entry))]
    else:
        entry = registry.get(exp.algo)
        configs = [entry.resolve(settings(exp, entry))]
    # a learner of the user's own may have a net of its own (no encoder, no critic): Hydra
    # turned its AttributeError here into a warning and skipped the folder's lock below
    if not any(reads_graphs(c.net) for c in configs if isinstance(getattr(c, "net", None),
                                                                   NetConfig)):
        return
    import games

    games.VectorGame(exp.game.name, 1, seed=exp.seed, with_graphs=True,
                     **exp.game.kwargs).close()


def warn_if_not_replaying(exp: Any) -> None:
    """One warning line when a user's game (``imports=``, an entry point) does not replay from
    its seed: :func:`games.check.replay_problem` (4 to 6 episodes of 8 steps, ~20 ms; a
    second copy built only when the first was cheap to build or did not replay). Training
    goes on (a researcher may want a nondeterministic game), but its runs with one seed may
    differ, which ``check_game`` would have said. Shipped games are not played here
    (``check_game`` runs on them in the test suite: their start costs nothing more); a game
    whose own code raises is left to training, which names it in its own line."""
    from games.check import EpisodeNotEndedError, GameCheckError, replay_problem, user_game
    from games.core import GameError
    from games.registry import as_literals

    if not user_game(exp.game.name):
        return
    import games

    kwargs = as_literals(dict(exp.game.kwargs or {}))
    try:
        problem = replay_problem(lambda: games.make(exp.game.name, **kwargs), exp.seed)
    except EpisodeNotEndedError as err:  # training would stop there: refused before a folder
        raise games.EpisodeTooLongError(one_line(err)) from None
    except (GameCheckError, GameError) as err:  # the game's own code: training names it
        # (not a bug of the check's own, whose traceback shows: a lost warning hid one)
        log.debug("replay check of %s not done: %s", exp.game.name, one_line(err))
        return
    call = ", ".join([repr(exp.game.name), *(f"{k}={v!r}" for k, v in kwargs.items())])
    if problem:
        log.warning("game %s does not replay from its seed (training goes on): %s; "
                    "games.check_game(games.make(%s)) checks the whole game contract",
                    exp.game.name, problem, call)
    for clause in _start_warnings(exp, kwargs):
        log.warning("game %s (training goes on): %s; games.check_game(games.make(%s)) checks "
                    "the whole game contract", exp.game.name, clause, call)


LONG_LEAGUE = 50
"""Generations past which a league evaluating every earlier snapshot (``eval_window=0``) is
warned at its start: its last generation plays over 50 times the pairs of its first."""


def every_pair_warning(generations: int, members: int, eval_episodes: int) -> str | None:
    """The start warning of a league of ``members`` members and ``generations`` generations
    with ``population.eval_window=0``, past :data:`LONG_LEAGUE` generations (None below):
    generation g's ``members`` new snapshots play each other and all ``members * g`` earlier
    ones, ``2 * eval_episodes`` episodes a pair, so evaluation time and ``league.db``'s match
    rows grow with the square of the generations."""
    if generations <= LONG_LEAGUE:
        return None
    among = members * (members - 1) // 2  # the new snapshots against each other

    def pairs(g: int) -> int:
        return members * members * g + among

    total = members * members * generations * (generations + 1) // 2 + among * (generations + 1)
    return (f"{generations} generations with population.eval_window=0 evaluate {total} "
            f"snapshot pairs ({2 * eval_episodes * total} episodes at "
            f"eval_episodes={eval_episodes}; the last generation {pairs(generations)} pairs, "
            f"the first {pairs(1)}): each new snapshot plays every earlier one, so evaluation "
            f"time and league.db's match rows grow with the square of the generations; set "
            f"population.eval_window=K to evaluate each new snapshot against the K newest")


def warn_if_every_pair(exp: Any) -> None:
    """One warning line at a long league's start with the default ``population.eval_window=0``
    (:func:`every_pair_warning`: 1,000 generations of one member play 500,500 pairs), said
    nowhere before (walk 37c)."""
    from populations.member_specs import parse_members

    pop = exp.population
    if pop.kind != "league" or pop.eval_window:
        return
    line = every_pair_warning(pop.generations, len(parse_members(pop.members)) or 1,
                              exp.eval_episodes)
    if line:
        log.warning(line)


def _start_warnings(exp: Any, kwargs: dict[str, Any]) -> list[str]:
    """:func:`games.check.start_warnings` on a new copy of a user's game (200 random steps):
    what ``check_game`` refuses but training runs through (agents acting together without
    ``simultaneous=True``, observations not float32, a reward to an agent whose episode
    ended, an episode ending with an agent neither terminated nor truncated), one clause
    each; none where the game's own code raised (training names it in its own line).

    Raises:
        games.EpisodeTooLongError: an episode ran past ``spec.max_steps`` (a one-line refusal).
    """
    import games
    from games.check import EpisodeNotEndedError, GameCheckError, start_warnings

    game = None
    try:
        game = games.make(exp.game.name, **kwargs)
        return start_warnings(game, exp.seed)
    except EpisodeNotEndedError as err:  # VectorGame refuses the step after spec.max_steps:
        # a run would stop there having trained nothing, and a league kept a checkpoint and a
        # resume command (walk38a L4); refused before the run's folder is made
        raise games.EpisodeTooLongError(one_line(err)) from None
    except (GameCheckError, games.GameError) as err:
        log.debug("contract check of %s not done: %s", exp.game.name, one_line(err))
        return []
    finally:
        if game is not None:
            try:
                game.close()
            except Exception as err:  # noqa: BLE001 - the game's own code: training says it
                log.debug("closing %s raised: %s", exp.game.name, one_line(err))


@contextmanager
def _claim_dropped_if_refused(folder: Path) -> Iterator[None]:
    """Drop this process's claim on the default run folder's name
    (:func:`populations.run_folder.new_folder`) when the command is refused before locking it:
    a notebook or test session that runs many refused commands kept one socket each, and
    other processes passed over those names (review40b L1)."""
    try:
        yield
    except BaseException:
        from populations.run_folder import release_claim

        release_claim(folder)
        raise


class ConfigCheck(Callback):
    """Hydra callback (``configs/config.yaml``): validates the composed config before Hydra
    makes the run folder, so a config mistake leaves nothing behind."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        import copy

        from omegaconf import open_dict

        task = copy.deepcopy(config)
        with open_dict(task):
            del task["hydra"]
        run_guard.forget_folders()
        run_guard.forget_started()  # tests run several commands in a process
        run_guard.release_folders()
        with reported(TRAIN), _named_log_lines():  # Hydra turns a callback's exception
            # into a warning: exit here
            run_dir = _folder(config, "run")
            with _claim_dropped_if_refused(run_dir):
                exp = prepare(task, list(config.hydra.overrides.task), hydra=config.hydra)
                check_entity_graphs(exp)
                if task.get("resume") and not task.get("resume_override"):
                    refuse_resume_without_folder(config)
        with reported(TRAIN):  # the folder's lock before Hydra writes .hydra and cli.log
            # there (a folder in use: refused, nothing written), what it held then (was it
            # there: _before) and what .hydra and cli.log held
            with _claim_dropped_if_refused(run_dir):
                hold_folder(run_dir, "hydra.run.dir")
            keep_written(run_dir, log_name=_job_log(config))

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        run_guard.release_folders()


    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        run_guard.forget_jobs()  # keep_going's lists, per sweep (tests run several in a
        # process)
        set_swept(list(config.hydra.overrides.task))  # populations.sweeps' set (loggers
        # reads it there)
        with reported(TRAIN), _named_log_lines():  # jobs that cannot run: before the first
            check_sweep_jobs(config)
        folder = None if folder_given(config, "hydra.sweep.dir") else sweep_folder(config)
        run_guard.forget_folders()
        # refused before the lock: the claim on the default folder's name goes, as a run's
        # (a notebook kept one socket per refused sweep)
        with _claim_dropped_if_refused(folder) if folder is not None else nullcontext():
            if config.get("resume") is True and not config.get("resume_override"):
                with reported(TRAIN):
                    refuse_resume_without_folder(config, "hydra.sweep.dir", folder)
            if folder is not None:
                pin_sweep_folder(config, folder)
        run_guard.forget_started()
        run_guard.release_folders()
        from populations.run_folder import SWEEP_FOLDER

        with reported(TRAIN):  # one sweep per folder, locked before Hydra writes
            # multirun.yaml and the jobs' .hydra (a sweep in use: refused, nothing written)
            sweep_dir = folder or _folder(config, "sweep")
            with _claim_dropped_if_refused(sweep_dir):
                hold_folder(sweep_dir, "hydra.sweep.dir", SWEEP_FOLDER, depth=1)  # and what
                # the folders held (were they there: folder_before)
            keep_written(sweep_dir, depth=1, log_name=_job_log(config))
            run_guard.keep_sweep_file(sweep_dir)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from populations.sweep_summary import JobResult, overrides_of, print_summary

        sweep_dir = Path(str(config.hydra.sweep.dir))
        # one table over the sweep's jobs, finished before this command too (a resume)
        try:
            print_summary(sweep_dir, removed=[
                JobResult(folder, n, overrides_of(overrides), "failed",
                          error="failed before its first checkpoint: its folder was removed")
                for n, folder, overrides in run_guard.failed_jobs() if not folder.is_dir()])
        except Exception as err:  # noqa: BLE001 - the jobs ran: say so, and how they ended
            log.warning("no summary of the sweep's jobs: %s (python -m "
                        "populations.sweep_summary %s)", one_line(err), shell_word(str(sweep_dir)))
        run_guard.release_folders()
        if run_guard.failed_jobs():  # keep_going=true: the jobs ran; the failed ones in one
            # line, exit 2
            fail(TRAIN, failed_jobs_line(sweep_dir))



def _job_log(config: DictConfig) -> str:
    """The name of Hydra's job log in the run folder, ``${hydra.job.name}.log`` (``cli.log``):
    the only log a refused command cuts back (run_guard._restore_written)."""
    try:
        return f"{config.hydra.job.name}.log"
    except Exception:  # noqa: BLE001 - no job name: Hydra's default for this module's app
        return "cli.log"


@contextmanager
def _named_log_lines() -> Iterator[None]:
    """Before the run's logging is set up, Hydra's own formatter labels every line
    ``[HYDRA]``: the check's lines ('enumerated openspiel/kuhn_poker: 58 histories...') read as
    Hydra's. They are formatted as the run's lines are (Hydra's job_logging default)."""
    root = logging.getLogger()
    saved = [(h, h.formatter) for h in root.handlers]
    named = logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    for handler, _ in saved:
        handler.setFormatter(named)
    try:
        yield
    finally:
        for handler, formatter in saved:
            handler.setFormatter(formatter)


def print_summary(s: RunSummary, resume: str | None = None) -> None:
    """The end-of-run summary: folders, files, the table (``resume``: how the run is
    resumed, default ``selfplay-train resume=true hydra.run.dir=...``: :func:`resume_command`
    without the run's overrides)."""
    print(f"\nrun folder : {s.run_dir}")
    print(f"database   : {s.database}")
    print(f"snapshots  : {s.snapshots}")
    if s.logger_files is not None:
        print(f"metrics    : {s.logger_files}" + (f" ({s.logger_note})" if s.logger_note else ""))
    if (s.run_dir / "checkpoints").is_dir():
        resume = resume or resume_command(s.run_dir)
        print(f"checkpoints: {s.run_dir / 'checkpoints'} ({resume})")
    if s.table:
        cols, rows = list(s.table[0]), s.table[:20]
        # a single run whose episodes all outlast its frames has no return: say so
        empty = {"final_return": "no episode ended", "eval_return": "not recorded",
                 "eval_legal_rate": "not recorded"}  # an LLM snapshot evaluated without rows

        def blank(row: dict[str, Any], col: str) -> str:  # eval_ci95: a t interval needs 2
            if col == "eval_ci95":
                return "not recorded" if row.get("eval_return") is None else "under 2 episodes"
            return empty.get(col, "None")

        # a float's + 0.0 turns -0.0 (a return rounded from -0.0001) into 0.0
        cells = [[blank(row, c) if row[c] is None else
                  str(row[c] + 0.0 if isinstance(row[c], float) else row[c]) for c in cols]
                 for row in rows]
        width = [max(12, len(c), *(len(r[k]) for r in cells)) for k, c in enumerate(cols)]
        print("\n" + "  ".join(f"{c:>{w}}" for c, w in zip(cols, width, strict=True)))
        for r in cells:  # long member names (psro-player_0-12) kept the columns aligned
            print("  ".join(f"{v:>{w}}" for v, w in zip(r, width, strict=True)))
        if len(s.table) > len(rows):  # kuhn_psro's 26 members: 6 were left out unsaid
            print(f"... {len(s.table) - len(rows)} more rows: every one on the dashboard "
                  f"(below) and in {s.database}")
        # a single run's two returns side by side (populations.single_run.single_row,
        # llm_row): which is which (VDN's exploring 0.14 was read as broken beside its
        # greedy snapshot's 0.66, shown nowhere)
        legend = {"final_return": "mean return of the last (up to) 50 training episodes "
                                  "(exploring, or sampling for on-policy learners)",
                  "legal_rate": "share of the last GRPO iteration's moves that named a legal "
                                "action",
                  "success_rate": "share of the last GRPO iteration's episodes the game "
                                  "reported a success (a tool task's info['success'])",
                  "team_return": "mean team return of the last GRPO iteration's episodes",
                  "eval_return": "mean return over the evaluation episodes of the snapshot "
                                 "(eval_episodes; greedy for off-policy learners)",
                  "eval_ci95": "half-width of the 95 % confidence interval of eval_return "
                               "(Student's t over the evaluation episodes; the evaluation's "
                               "noise, not the spread between seeds)",
                  "eval_legal_rate": "share of the LLM team's evaluation moves that named a "
                                     "legal action (the rest were its fallback's, also with "
                                     "on_invalid=end; eval_return measures those too)"}
        if {"eval_return", "eval_legal_rate"} & set(cols):  # a league's: the LLM column's
            print("\n" + "\n".join(f"{c}: {legend[c]}" for c in cols if c in legend))
        if {"member", "version", "mu", "pairs"} <= set(cols) and "seat" not in cols:
            _print_members(s.database)  # a league's: every snapshot above, by mu
    print(f"\ndashboard  : selfplay-dashboard {shell_word(str(s.run_dir))}")


def _print_members(database: Path) -> None:
    """Under a league's closing table (every snapshot by mu, the members interleaved: an
    untrained ``v0`` may top it, and no win rate), one row per member: its newest rated
    snapshot, that snapshot's mu, and its win rate with the 95 % Wilson interval, as the
    dashboard computes them (:func:`populations.dashboard.queries.league_table`). Nothing
    when the database cannot be read (the run is over: its table was printed)."""
    from populations.dashboard.queries import league_table
    from populations.db import EVAL_EXPERIMENT, LeagueDB

    try:
        db = LeagueDB(database, readonly=True)
        try:  # the run's own: a selfplay-eval --db into the run's database added a newer run
            # (its files' names listed as the league's members)
            row = db.conn.execute("SELECT id FROM runs WHERE experiment != ? ORDER BY id DESC "
                                  "LIMIT 1", (EVAL_EXPERIMENT,)).fetchone()
            members = league_table(db, int(row[0])) if row is not None else []
        finally:
            db.close()
    except Exception as err:  # noqa: BLE001 - the run is done; its table is out already
        log.debug("no per-member rows from %s: %s", database, one_line(err))
        return
    rows = sorted((m for m in members if m["rated_version"] is not None),
                  key=lambda m: -(m["mu"] if m["mu"] is not None else float("-inf")))
    if not rows:
        return

    def num(x: float | None, digits: int) -> str:
        return "-" if x is None else f"{x:.{digits}f}"

    cols = ["member", "version", "mu", "win_rate", "95 % interval", "pairs"]
    cells = [[str(m["member"]), str(m["rated_version"]), num(m["mu"], 2),
              num(m["win_rate"], 2), "-" if m["win_rate_lo"] is None else
              f"[{m['win_rate_lo']:.2f}, {m['win_rate_hi']:.2f}]", str(m["win_pairs"])]
             for m in rows]
    width = [max(12, len(c), *(len(r[k]) for r in cells)) for k, c in enumerate(cols)]
    print("\neach member's newest rated snapshot (best mu first): its mu, and its win rate "
          "over the role-swapped pairs it played (a draw counts 1/2) with the 95 % Wilson "
          "interval, as the dashboard shows them:")
    for r in [cols, *cells]:
        print("  ".join(f"{v:>{w}}" for v, w in zip(r, width, strict=True)))


# ---------------------------------------------------------------------- selfplay-train
def _train_task(cfg: DictConfig) -> None:
    """Hydra's task: one experiment in the run folder Hydra made."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from populations.experiment import plain, run_experiment
    from populations.run_folder import HYDRA_WORDS, spelled, when_started

    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
    sweep_dir = Path(hc.sweep.dir) if hc.mode == RunMode.MULTIRUN else None
    created, before = folder_before(run_dir)
    overrides, flags = list(hc.overrides.task), config_flags(cli_common.typed_words())
    summary = None
    if sweep_dir is not None:
        run_guard.record_job(hc.job.num, overrides)
    with run_folder_guard(TRAIN, run_dir, created=created, sweep_dir=sweep_dir,
                          job=hc.job.num if sweep_dir is not None else None,
                          overrides=overrides, flags=flags, resumed=cfg.get("resume") is True,
                          keep_going=cfg.get("keep_going") is True, before=before), \
            spelled(HYDRA_WORDS):  # messages say resume_override=true, as typed here
        exp = prepare(cfg, overrides, check=False)  # run_experiment checks
        if sweep_dir is not None and not run_dir.name.startswith(f"{hc.job.num}_"):
            log.info("job %d of the sweep resumes in its folder %s (numbered by the sweep "
                     "that made it)", hc.job.num, run_dir.name)
        if exp.resume and not_started(run_dir) and sweep_dir is not None and \
                sweep_started(sweep_dir):
            refuse_renamed_job(sweep_dir, hc.job.num, run_dir, plain(exp), overrides, flags)
            # a job the interrupted sweep never reached (a mistyped sweep folder still fails)
            log.info("resume=true: job %d of the sweep had not started; starting it",
                     hc.job.num)
            from populations.learner_sections import replaced  # keeps +my_algo.* sections

            exp = replaced(exp, resume=False)
        # once its start checks pass: a refused command's first line read as a run started
        when_started(run_dir, lambda: log.info("experiment %s in %s", exp.experiment, run_dir))
        if exp.keep_going and sweep_dir is None:  # ignored: nothing to go on to
            log.warning("keep_going=true is for sweeps (-m): a single run stops where it fails")
        for note in unused_overrides(exp, overrides):
            log.warning(note)
        warn_if_not_replaying(exp)  # in each job's log: a sweep's too
        warn_if_every_pair(exp)
        with recorded_run_settings(exp, run_dir):
            summary = run_experiment(exp, run_dir)
    if summary is not None:  # None: a failed job of a keep_going sweep (its line is out)
        import io
        from contextlib import redirect_stdout

        text = io.StringIO()
        with redirect_stdout(text):
            print_summary(summary, resume_command(run_dir, overrides, flags))
        print(text.getvalue(), end="")
        to_cli_log(run_dir, "run finished:" + text.getvalue().rstrip())  # found in the folder


@contextmanager
def recorded_run_settings(exp: ExperimentConfig, run_dir: Path) -> Iterator[None]:
    """A single or PSRO run's resume (run in the block) checked against the settings its
    ``league.db`` recorded (``runs.config``) when its ``settings.json`` was deleted, and
    ``runs.config`` kept to the settings in force.

    Such a folder was taken for a run from before settings were recorded: any settings
    resumed silently (a league checks what its database recorded itself, ``League``). The
    recorded ones are written back as ``settings.json`` and the resume is checked as any other
    (:func:`~populations.run_folder.resume_settings`: refused in one line, unless
    ``resume_override``; a finished single run refuses any change); once accepted, the
    folder's ``settings.json`` and ``runs.config`` both hold the settings in force (after a
    ``resume_override``, ``runs.config`` kept the settings the run was created with). The
    folder's lock is held from the check to the run's end."""
    from marl.fileio import atomic_write
    from populations.run_folder import SETTINGS_NAME, RunLock, resume_settings, settings_diff

    db_path, path = run_dir / "league.db", run_dir / SETTINGS_NAME
    if not exp.resume or exp.population.kind == "league" or not db_path.is_file():
        yield
        return
    import games
    from populations.db import LeagueDB, LeagueDBError
    from populations.experiment import RESUME_MAY_CHANGE, plain
    from populations.single_run import single_finished

    single = exp.population.kind == "none"
    if not single:  # what run_experiment records: PSRO's `auto` settings decided
        from populations.psro_run import resolve_auto

        exp = resolve_auto(exp, games.make(exp.game.name, **exp.game.kwargs), announce=False)
    current = plain(exp)
    with RunLock(run_dir):
        db = LeagueDB(db_path)
        try:
            run_id = db.run_id(exp.experiment)
            try:
                recorded = db.run_config(run_id) if run_id is not None else None
            except LeagueDBError as err:  # damaged: nothing to compare with, as before
                if not path.is_file():
                    log.warning("%s: the resume is compared with no recorded settings", err)
                recorded = None
            restored = bool(recorded) and not path.is_file()
            if restored:
                atomic_write(path, json.dumps(recorded, indent=1, sort_keys=True))
            resume_settings(run_dir, current, True, exp.resume_override, RESUME_MAY_CHANGE,
                            (lambda: single_finished(run_dir, exp.experiment)) if single
                            else None)
            # accepted: the settings of this resume, as a fresh run's; a resume_override with
            # other settings writes them once its checkpoint loaded (run_folder.open_run), so
            # one refused there leaves the recorded ones
            if restored and not settings_diff(recorded, current, RESUME_MAY_CHANGE):
                atomic_write(path, json.dumps(current, indent=1, sort_keys=True))
            in_force = json.loads(path.read_text()) if path.is_file() else None
            if run_id is not None and in_force and in_force != recorded:
                db.set_run_config(run_id, in_force)
        finally:
            db.close()
        yield


def _hydra_app() -> Callable[[], None]:
    import hydra
    import hydra._internal.utils as hydra_utils

    register_resolvers()

    # private, no public equivalent: Hydra has no hook for its composition or argparse
    # errors (callbacks start after composition), so its reporter and parser are wrapped;
    # pyproject pins hydra-core 1.3, whose names these are
    # Hydra reports composition errors (unknown key, group option...) with several lines
    # and exit 1; user errors become one line and exit 2, bugs keep Hydra's traceback
    original = getattr(hydra_utils.run_and_report, "__wrapped__", hydra_utils.run_and_report)

    def run_and_report(func: Callable[[], Any]) -> Any:
        def guarded() -> Any:
            with reported(TRAIN):
                return func()

        return original(guarded)

    run_and_report.__wrapped__ = original  # type: ignore[attr-defined]
    hydra_utils.run_and_report = run_and_report
    hydra_main = sys.modules["hydra.main"]  # its argparse errors too (an unknown flag)
    parser = getattr(hydra_main.get_args_parser, "__wrapped__", hydra_main.get_args_parser)

    def get_args_parser() -> argparse.ArgumentParser:
        p = parser()
        p.error = lambda message: fail(TRAIN, f"{untyped(message)} (see --help)")  # type: ignore[method-assign]
        return p

    get_args_parser.__wrapped__ = parser  # type: ignore[attr-defined]
    hydra_main.get_args_parser = get_args_parser
    _compose_once()
    _resolve_hydra_node_in_full_config()
    return hydra.main(version_base=None, config_path="pkg://configs",
                      config_name="config")(_train_task)


# Where Hydra looks for configs when nothing on the command line adds a place: its own, ours,
# the schema's. A config found anywhere else may set ``hydra.mode``.
_PACKAGED_CONFIGS = [("hydra", "pkg://hydra.conf"), ("main", "pkg://configs"),
                     ("schema", "structured://")]


def _compose_once() -> None:
    """Hydra composes the whole config once only to read ``hydra.mode`` (run or sweep) and
    again for the run: ~0.2 s CPU of every ``selfplay-train``. No file in ``configs/`` sets
    ``hydra.mode`` (tests/populations/test_start30_run_mode.py), so with the packaged configs
    alone the mode is what ``-m`` says, as Hydra decides for an unset one; an override naming
    ``hydra.mode`` or ``hydra.searchpath``, ``--config-dir``/``--config-path``/
    ``--config-name`` or a search-path plugin keep Hydra's first compose."""
    # private, no public equivalent: Hydra.get_mode is its first compose (pyproject pins
    # hydra-core 1.3, whose names these are)
    from hydra._internal.hydra import Hydra

    get_mode = getattr(Hydra.get_mode, "__wrapped__", Hydra.get_mode)

    def mode_if_set(self: Hydra, config_name: str | None, overrides: list[str]) -> Any:
        keys = [o.split("=", 1)[0].lstrip("+~") for o in overrides]
        searched = [(e.provider, e.path)
                    for e in self.config_loader.get_search_path().get_path()]
        if (config_name == "config" and searched == _PACKAGED_CONFIGS
                and not any(k == "hydra.mode" or k.startswith("hydra.searchpath")
                            for k in keys)):
            return None  # unset: Hydra's _run_app takes RUN, or MULTIRUN for -m
        return get_mode(self, config_name, overrides)

    mode_if_set.__wrapped__ = get_mode  # type: ignore[attr-defined]
    Hydra.get_mode = mode_if_set  # type: ignore[method-assign]


def _resolve_hydra_node_in_full_config() -> None:
    """``--cfg hydra --resolve``: Hydra drops the job's keys and then resolves the ``hydra``
    node alone, so ``hydra.run.dir: runs/${experiment}/...`` (the run folder is named after
    the job key ``experiment``) failed with "Interpolation key 'experiment' not found". The
    ``hydra`` node is resolved while the job's keys are still there, then they are dropped."""
    import copy

    from hydra._internal.hydra import Hydra  # private: Hydra.show_cfg is its --cfg printer
    from omegaconf import OmegaConf, flag_override

    show = getattr(Hydra.show_cfg, "__wrapped__", Hydra.show_cfg)
    sanitize = Hydra.get_sanitized_hydra_cfg

    def resolved_hydra_cfg(src_cfg: DictConfig) -> DictConfig:
        cfg = copy.deepcopy(src_cfg)
        with flag_override(cfg.hydra, ["struct", "readonly"], [False, False]):
            OmegaConf.resolve(cfg.hydra)  # its interpolations see the whole config
        return sanitize(cfg)

    def show_cfg(self: Any, config_name: Any, overrides: Any, cfg_type: str, package: Any,
                 resolve: bool = False) -> None:
        if resolve and cfg_type == "hydra":
            self.get_sanitized_hydra_cfg = resolved_hydra_cfg  # this Hydra object only
        show(self, config_name, overrides, cfg_type, package, resolve)

    show_cfg.__wrapped__ = show  # type: ignore[attr-defined]
    Hydra.show_cfg = show_cfg  # type: ignore[method-assign]



HELP = """\
usage: selfplay-train [GROUP=OPTION ...] [KEY=VALUE ...] [-m] [--cfg job] [--hydra-help]

Run one experiment (a sweep with -m) in a new run folder (runs/<experiment>/<time>[_<n>]/).

config groups (configs/):
{groups}
common keys:
  seed=0  frames=60000  num_envs=32  eval_episodes=32  device=cpu|cuda|cuda:N|auto
  game.name=NAME game.kwargs.KEY=V   a game by name, from its own defaults (game.kwargs={{}})
  imports=[mypkg.games]              your modules (importable from here) to import first
  resume=true hydra.run.dir=DIR      continue a run;  checkpoint_every_s=300  progress=false
  population.psro.payoffs=sampled  population.oracle=rl  population.members=[mappo,llm_grpo]

examples:
  selfplay-train experiment=kuhn_psro
  selfplay-train algo=ippo game=kuhn seed=3
  selfplay-train imports=[mygames] game.name=my_game population=self_play
  selfplay-train experiment=kuhn_psro --cfg job      # every key, with its value

Installed packages' entry points (selfplay.games, selfplay.learners, selfplay.meta_solvers,
selfplay.matchmaking_rules, selfplay.loggers) load at start. Errors are one line and exit 2;
HYDRA_FULL_ERROR=1 shows the traceback.
"""


def _check_config_free(args: list[str]) -> None:
    """With ``--config-dir``, ``--config-path``, ``--config-name`` or ``hydra.searchpath``,
    other config files may provide group options, presets and ``imports``, so
    :func:`check_command_line` leaves its early checks to the composed config (after torch,
    ~3 s CPU here). The overrides whose meaning no config file changes are checked early all
    the same, alone: the run's (sweep's) folder (``hydra.run.dir=``, an unset ``$RUN``, wrote
    the run into the working folder), ``imports=`` and the schema's top-level values
    (``num_envs=0``, ``device=gpu``); not ``game.name`` (a config's ``imports`` may register
    it), nor a section's value (its presets may come from those files)."""
    from populations.config_checks import TOP_LEVEL_TYPES

    parsed = hydra_args(args)
    if parsed is None or not config_flags(args):
        return
    plain = ("hydra.run.dir", "hydra.sweep.dir", "imports", *TOP_LEVEL_TYPES)
    check_command_line([o for o in parsed.overrides if o.split("=", 1)[0] in plain])


def _import_configs(argv: list[str]) -> None:
    """Import the package of the shipped configs (``configs``: Hydra's primary config module,
    ``pkg://configs``; importing it registers the schema) before Hydra does, where Hydra reads
    it (no ``--config-path`` of the user's own): an ImportError raised in it (a module it
    imports fails, a dependency is missing) is one line naming the package and the error,
    where Hydra's said "Primary config module 'configs' not found" and hid it
    (``HYDRA_FULL_ERROR=1``: the traceback)."""
    import importlib
    import importlib.util
    import os

    parsed = hydra_args(argv)
    if parsed is None or parsed.config_path is not None:  # Hydra refuses the flags itself,
        return  # before it reads configs; another primary config (a missing one: Hydra's)
    spec = None
    try:
        spec = importlib.util.find_spec("configs")
        importlib.import_module("configs")
    except ImportError as err:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        origin = spec.origin if spec is not None and spec.origin else None
        where = f" ({Path(origin).parent})" if origin else ""
        fail(TRAIN, f"cannot import the config package configs{where}: "
                    f"{type(err).__name__}: {one_line(err)}")


def train_main() -> None:
    """``selfplay-train``: run one experiment (or a sweep with ``-m``)."""
    args = sys.argv[1:]
    if "--help" in args or "-h" in args:  # Hydra's own help copies the config store ~90
        groups = "".join(f"  {g:<11} {', '.join(o)}\n" for g, o in group_options().items())
        print(HELP.format(groups=groups), end="")  # times: seconds; this one reads files
        return
    for i, arg in enumerate(args):  # the other CLIs' flag (README's walk: 'unrecognized')
        if arg == "--import" or arg.startswith("--import="):
            module = arg.partition("=")[2] or next(
                (a for a in args[i + 1:i + 2] if "=" not in a and not a.startswith("-")), "MODULE")
            fail(TRAIN, f"{arg}: selfplay-train names your modules as imports=[{module}] "
                        "(--import is selfplay-eval's and python -m populations.league's)")
    cli_common.set_typed(args)  # the resume hints repeat what was typed, not the added ~game
    run_guard.set_start_folder(Path.cwd())
    sys.argv = [sys.argv[0], *game_overrides(args)]
    from populations.run_folder import sigterm_as_interrupt

    with sigterm_as_interrupt():  # SIGTERM (kill, timeout, SLURM) ends the run as Ctrl-C does
        with reported(TRAIN):
            load_plugins()
            check_command_line(sys.argv[1:])
            _check_config_free(sys.argv[1:])
            refuse_cuda_without_gpu(sys.argv[1:])
        sys.argv = [sys.argv[0], *members_by_index_last(sys.argv[1:])]  # the list's keys
        try:
            _import_configs(sys.argv[1:])
            _hydra_app()()
        except KeyboardInterrupt:  # Ctrl-C while Hydra composes, before the run and its guard
            interrupted(TRAIN)
        finally:
            run_guard.release_folders()


if __name__ == "__main__":  # python -m populations.cli: run the module Hydra's callback
    from populations.cli import train_main as _train_main  # (ConfigCheck) is imported from,

    _train_main()  # so both read one _BEFORE (what the run folders held before Hydra)


def __getattr__(name: str) -> Any:
    """``eval_main`` for a ``selfplay-eval`` script written by an install from before it moved
    to :mod:`populations.eval_cli` (an editable install keeps its old scripts until
    reinstalled: ``from populations.cli import eval_main`` would fail at every call)."""
    if name == "eval_main":
        from populations.eval_cli import eval_main

        return eval_main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
