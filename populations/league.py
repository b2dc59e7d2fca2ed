"""A self-play league: members trained against their own and each other's past snapshots.

By default the league has one member, ``main``, a MAPPO learner; pass ``members`` for
more (e.g. a MAPPO member and an LLM team, ``populations.members``). Each generation:

1. **train** every member (``Member.train_generation``), one after another in this process
   or all at once on Ray actors (``runner="ray"``, ``populations.learner_actors``): in a
   fraction ``opponent_prob`` of its games a snapshot of any member, chosen by the
   matchmaking rule (self-play, FSP, PFSP, from the member's latest snapshot's win rates;
   outside ``eval_window``, from its newest snapshot that met the candidate),
   plays one team and the learner the other (sides drawn at random per episode); otherwise
   it plays every seat. A member sees the league only through a ``Matchmaker`` (its plan,
   opponent draws from its own seeded stream, snapshot policies, a metrics sink), so both
   ways train the same snapshots;
2. **checkpoint** the members and the generation;
3. **publish** each member's policy as snapshot ``v<generation>`` of that member;
4. **evaluate** the new snapshots against earlier ones and each other (role-swapped episode
   pairs through the runner), record every episode, fold the new ones into payoffs and
   ratings (``evaluation.Standings``: each match is read once, not every generation);
   checkpoint again.

Everything written to the store and the database is idempotent per generation, and
each generation's game copies are seeded from the generation number, so a run killed at
any point and resumed (``resume=True``) ends with the same snapshots, matches and metric
rows as an uninterrupted run — none lost, none counted twice.

A league holds its run folder's lock (``populations.run_folder``) from construction to
:meth:`League.close`, so a second process cannot resume it at the same time. A resume checks
the settings recorded with the run (``resume_override=True`` accepts other ones), that the
database and checkpoints belong together, and every snapshot's hash
(``populations.league_state``); a run that raises is recorded as ``failed`` with its error.

``League`` is three parts: how a run opens (its base class ``populations.league_open``, where
``NASH_CONV_WHY`` and ``cooperative_refusal`` live, importable from here too), how its members
train (``populations.league_training``), and the loop, checkpoints, publishing and evaluation
here.
"""

from __future__ import annotations

import contextlib
import logging
import numbers
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

if __name__ == "__main__" and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    def _interrupted_early(*_: object) -> None:
        """Ctrl-C while torch and the rest load (the first seconds), before main()'s
        handler: one line too; nothing was made yet."""
        sys.stderr.write("python -m populations.league: interrupted\n")
        sys.stderr.flush()
        os._exit(130)

    signal.signal(signal.SIGINT, _interrupted_early)

import games
from marl.actor_critic import NetConfig
from marl.configs import did_you_mean
from marl.core import CheckpointError
from marl.fileio import NoSpaceError, disk_full
from marl.mappo import MAPPO, MAPPOConfig
from marl.progress import tqdm
from marl.train import (
    planned_frames,
    rollout_frames,
    trains_whole_rollouts,
)
from populations import league_eval
from populations.checkpoint import load_latest, save_checkpoint
from populations.config_checks import MAX_SIZES, SEED_END
from populations.db import LeagueDB
from populations.evaluation import PairsPlayed, evaluate_pairs
from populations.experiment_config import (
    KEEP_CHECKPOINTS,
    POPULATION_SIZES,
    ExploitEvery,
    check_copies,
    check_keep_checkpoints,
)
from populations.league_open import (  # NASH_CONV_WHY, cooperative_refusal: re-exported,
    NASH_CONV_WHY,  # noqa: F401 - their old home (experiment.py, tests)
    LeagueOpening,
    cooperative_refusal,  # noqa: F401
)
from populations.league_progress import (
    count_unit,
    note_short_budgets,
    planned_episodes,
    recorded_estimate,
    sync_pairs_left,
    time_left,
    update_counts,
    updated,
)
from populations.league_state import check_snapshots, checked_state, load_members
from populations.league_training import LeagueTraining
from populations.learner_actors import LearnerPool
from populations.loggers import MetricsLogger
from populations.matchmaking import MatchmakingConfig
from populations.member_specs import MEMBER  # a league's only member: "main"
from populations.members import (
    MAPPOMember,
    Member,
    member_settings,
    rounding_notes,
)
from populations.run_folder import (
    RunFolderError,
    RunLock,
    deferred_stop,
    end_status,
    mark_started,
    one_line,
    resume_words,
    stop_deferred,
    stop_now,
    stop_requested,
)
from populations.runners import Runner
from populations.seeds import BLOCK

log = logging.getLogger(__name__)
COUNT_LEAST = {"generations": 1, "frames_per_generation": 1, "num_envs": 1, "eval_episodes": 1,
               "eval_window": 0, "ray_workers": 1, "ray_learners": 0, "max_learner_restarts": 0,
               "seed": 0, "torch_threads": 1}
""":class:`LeagueConfig`'s integer fields and the least each takes: ``generations=2.5`` and
``generations=True`` were taken from the Python API (a float failed later in the run, True
ran as 1)."""
COUNT_MOST = {"generations": POPULATION_SIZES["generations"][0],
              "frames_per_generation": POPULATION_SIZES["frames_per_generation"][0],
              "num_envs": MAX_SIZES["num_envs"][0], "eval_episodes": MAX_SIZES["eval_episodes"][0],
              "torch_threads": MAX_SIZES["torch_threads"][0]}
"""The most some of them take, as ``selfplay-train`` bounds them (``generations=10**20`` was
taken, and its bar read 2/10**20)."""


DEFAULT_GAME_KWARGS: dict[str, Any] = {"max_cycles": 25}
"""The default game's arguments (:attr:`LeagueConfig.game`), which ``game_kwargs=None`` takes
for it; another game given without ``game_kwargs`` starts from its own defaults, as does one
given by ``dataclasses.replace(cfg, game=...)`` of a config whose arguments were filled in."""


_SECTIONS = {"matchmaking": MatchmakingConfig, "exploit": ExploitEvery, "mappo": MAPPOConfig}
""":class:`LeagueConfig`'s nested settings and the dataclass each takes."""


@dataclass(frozen=True)
class LeagueConfig:
    """A self-play league run (defaults: MAPPO with PFSP on simple_adversary, minutes)."""

    game: str = "pettingzoo/mpe2.simple_adversary_v3"  # a two-team game
    game_kwargs: dict[str, Any] | None = None  # the game's arguments (None: DEFAULT_GAME_KWARGS
    # for the default game, {} for another: its own defaults)
    generations: int = 6  # snapshots published after the initial (untrained) one
    frames_per_generation: int = 20_000  # training frames between snapshots
    num_envs: int = 16  # game copies stepped together while training
    opponent_prob: float = 0.5  # share of copies where a past snapshot plays one team
    eval_episodes: int = 8  # role-swapped episode pairs per evaluated snapshot pair
    eval_window: int = 0  # evaluate a new snapshot against the last k snapshots (0: all)
    matchmaking: MatchmakingConfig = field(default_factory=MatchmakingConfig)
    nash_conv: bool = False  # log each new snapshot's exact NashConv (small OpenSpiel games)
    exploit: ExploitEvery = field(default_factory=ExploitEvery)  # approximate NashConv of
    # new snapshots every N generations (any game; populations.approx_exploit)
    mappo: MAPPOConfig = field(default_factory=lambda: MAPPOConfig(net=NetConfig(share="role")))
    runner: str = "local"  # local | ray
    ray_workers: int = 2  # Ray actors playing evaluation matches
    ray_address: str | None = None  # Ray cluster address (None: start Ray locally)
    ray_learners: int = 0  # ray: learner actors training members at once (0: one per member)
    learner_gpus: float | None = None  # ray: GPUs per learner actor (None: 1 on CUDA, else 0)
    max_learner_restarts: int = 2  # ray: a dead learner actor is replaced this often per job
    sync: bool = True  # ray: members wait for each other each generation (False: a member
    # that finishes publishes, is evaluated and trains on at once; see League._run_async)
    keep_checkpoints: int = KEEP_CHECKPOINTS  # newest checkpoints kept on disk
    seed: int = 0
    device: str = "cpu"
    torch_threads: int = 1  # intra-op threads (small networks are fastest on one)
    _filled_for: InitVar[tuple[str, dict[str, Any]] | None] = None  # not a setting: (game,
    # game_kwargs) when this config filled game_kwargs in for game (given as None); an
    # init-only variable, kept on the instance, which dataclasses.replace reads and passes on
    # (and asdict, fields, repr and == leave out: game_kwargs stays a plain dict, as YAML and
    # OmegaConf take it), so a copy with another game fills that game's in instead (the
    # default game's max_cycles went silently to any other game)

    def __post_init__(self, _filled_for: tuple[str, dict[str, Any]] | None) -> None:
        given, mark = self.game_kwargs, _filled_for
        ours = isinstance(mark, tuple) and len(mark) == 2 and mark[1] is given  # not the user's
        if given is None or (ours and mark[0] != self.game):  # replace() changed the game
            given = dict(DEFAULT_GAME_KWARGS if self.game == LeagueConfig.game else {})
            object.__setattr__(self, "game_kwargs", given)
            ours, mark = True, (self.game, given)
        object.__setattr__(self, "_filled_for", mark if ours else None)
        for name, kind in _SECTIONS.items():  # a dict failed after league.db was made
            value = getattr(self, name)
            if not isinstance(value, kind):
                raise ValueError(f"{name}={value!r:.80}; expected a {kind.__name__} "
                                 f"({kind.__module__}), e.g. {name}={kind.__name__}(...)")
        if not 0.0 <= self.opponent_prob <= 1.0:
            raise ValueError(f"opponent_prob={self.opponent_prob!r}; expected a value in [0, 1]")
        for name, least in COUNT_LEAST.items():  # Hydra's schema types only the command line's
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
                    value < least:
                raise ValueError(f"{name}={value!r}; expected an integer >= {least}")
            if value > COUNT_MOST.get(name, value):
                raise ValueError(f"{name}={value!r}; expected an integer from {least} to "
                                 f"{COUNT_MOST[name]}")
        if self.seed >= SEED_END:  # 2**63 crashed a league after its first checkpoint
            raise ValueError(f"seed={self.seed!r}; expected an integer from 0 to "
                             f"{SEED_END - 1} (2**62 - 1)")
        check_keep_checkpoints(self.keep_checkpoints)  # as population.keep_checkpoints
        if self.runner not in ("local", "ray"):
            raise ValueError(f"runner {self.runner!r} unknown; choose one of ['local', 'ray']"
                             f"{did_you_mean(self.runner, ('local', 'ray'))}")
        if self.num_envs > BLOCK:  # the game is built only then: a stepped one is refused
            check_copies(self.num_envs, games.make(self.game, **self.game_kwargs))
        if not self.sync and self.runner != "ray":
            raise ValueError("sync=False (asynchronous members) needs runner='ray'; "
                             f"got runner={self.runner!r}")


class League(LeagueOpening, LeagueTraining):
    """One league run in ``run_dir`` (league.db, snapshots/, checkpoints/).

    Args:
        cfg: the league's settings.
        run_dir: the run folder.
        resume: continue the run in ``run_dir`` from its last checkpoint.
        members: the members (default: one MAPPO member ``main`` built from ``cfg.mappo``);
            names must be unique.
        resume_override: resume even with settings other than the run's, or start a new run
            when ``run_dir`` holds none.
        progress: a progress bar of each member's generation on the terminal (frames and
            frames/s) when members train in this process; ``selfplay-train`` passes
            ``progress``.

    Raises:
        RunFolderError: another process holds ``run_dir``; a resume with other settings, of
            a folder with no league, or of checkpoints without their ``league.db``.
        FileExistsError: a fresh run in a folder that already holds a league.
        ValueError: a game, device or member the league cannot run (one line), refused
            before anything is written in ``run_dir``: the corrected call starts there.
    """

    def __init__(self, cfg: LeagueConfig, run_dir: str | Path, resume: bool = False,
                 members: Sequence[Member] | None = None, resume_override: bool = False,
                 experiment: str = "league", progress: bool = False) -> None:
        """``experiment``: the name the database and the dashboard show for a new run (the
        command line's experiment preset); a resumed run keeps the one it started with."""
        self.cfg, self.run_dir, self.experiment = cfg, Path(run_dir), experiment
        self.show_progress = progress
        # wall-clock seconds of the run before this process (checkpointed, as a single run's)
        self.seconds, self._began = 0.0, time.perf_counter()
        # what this process timed, for the time left (_left; _async_left reads the pairs'):
        # the seconds of the whole generations it ran besides their evaluation, how many
        # (asynchronous: the recorded member generations' estimate, AsyncTiming), and the
        # seconds and pairs of the evaluations it played (_time_eval: not the Ray match
        # workers' start), and every evaluation's seconds (_eval_spent: what a generation's
        # timing leaves out)
        self._gen_seconds, self._gens = 0.0, 0
        self._eval_seconds, self._eval_pairs, self._eval_spent = 0.0, 0.0, 0.0
        self._workers_started = False  # a batch of pairs was played on the Ray match workers
        # an asynchronous member's generation metrics, [(step, {key: value})]: kept in its
        # "trained" checkpoint and logged after it (League._run_async), so a kill before that
        # checkpoint leaves no rows the resume's retraining logs again at other steps
        self._unlogged: list[tuple[int, dict[str, float]]] = []
        if resume and not resume_override and not self.run_dir.is_dir():  # create nothing
            w = resume_words()
            raise RunFolderError(f"{w.resume} but run folder {self.run_dir} does not exist: "
                                 f"check its name, or {w.verb} {w.override} to start there")
        self.lock = RunLock(self.run_dir).acquire()
        self.db: LeagueDB | None = None
        self.runner: Runner | None = None
        self.learners: LearnerPool | None = None
        self._started = False  # the run row says running: a failure from here is recorded
        self._fresh = False  # a new run's league.db, made by _open
        try:
            self._open(resume, members, resume_override)
        except BaseException as err:
            # the match workers and learner actors made before the error (Ray actors): left
            # to the garbage collector, a traceback that holds this league (a notebook's last
            # error) kept them and their CPUs, and the next league's actors waited for them
            self._close_workers()
            if self.db is not None:
                if self._started and not self._fresh:  # a resume refused up front leaves the
                    # run as it was
                    self.db.set_run_status_quietly(self.run_id, end_status(err), one_line(err))
                self.db.close()
                if self._fresh:  # a new run that never started (Ray did not start): the rerun
                    # in this folder is a new run too, not refused as "already holds a league"
                    _remove_unstarted(self.run_dir)
            self.lock.release()
            raise
        mark_started(self.run_dir)  # its resume's checks passed: an error from here is the run's
        if cfg.nash_conv:
            from populations import exploitability as ex

            ex.say_held(self.spec.name)

    def _built_members(self, members: Sequence[Member] | None) -> list[Member]:
        """The league's members: ``members``, or one MAPPO member ``main`` built on
        ``cfg.device`` (a device this machine lacks is refused here, before league.db)."""
        cfg = self.cfg
        built: list[Member] = list(members) if members is not None else [
            MAPPOMember(MEMBER, MAPPO(self.spec, cfg.mappo, device=cfg.device, seed=cfg.seed))]
        names = [m.name for m in built]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"league members need unique names; got {names}")
        if cfg.nash_conv:  # refused now, not when the untrained snapshots are scored
            league_eval.check_nash_conv_members(built)
        return built

    def _left_to_train(self) -> bool:
        """Whether :meth:`run` trains a member from the loaded checkpoint: a generation short
        of ``cfg.generations`` (a finished league resumed with more generations trains them;
        one only publishing or evaluating, or finished, trains nothing)."""
        if self.progress:  # asynchronous: each member's own generation
            return any(g < self.cfg.generations for g, _ in self.progress.values())
        return self.generation < self.cfg.generations or self.phase == "training"

    @property
    def logger(self) -> MetricsLogger:
        """The extra metrics sink (csv, wandb). Given to a resumed league, it gets the
        database's rows it may lack (:meth:`MetricsLogger.backfill`: wandb those past its last
        step, csv those it has not): a killed process's rows after its last checkpoint are
        not replayed, and a SIGKILL loses the rows wandb had not yet written."""
        return self._logger

    @logger.setter
    def logger(self, logger: MetricsLogger) -> None:
        """Set the extra metrics sink (a resumed league backfills it first)."""
        self._logger = logger
        if self._resumed:
            logger.backfill(self.db.metric_rows(self.run_id))

    # ------------------------------------------------------------------ checkpoints
    def _state(self) -> dict[str, Any]:
        return {"generation": self.generation, "phase": self.phase, "frames": self.frames,
                "seconds": self.elapsed(),
                "members": {m.name: m.state_dict() for m in self.members},
                "progress": {k: list(v) for k, v in self.progress.items()},
                "trained": list(self.trained),
                **({"unlogged": [[int(step), {k: float(v) for k, v in m.items()}]
                                   for step, m in self._unlogged]}
                   if self._unlogged else {})}

    def _save(self) -> None:
        # "training" (some members trained, a stop request) shares its step with "trained",
        # which replaces it
        step = 2 * self.generation + (1 if self.phase == "done" else 0)
        if self.phase == "async":  # each member's own generation: +1 per phase change
            step = sum(2 * g + (p == "done") for g, p in self.progress.values())
        save_checkpoint(self.run_dir / "checkpoints", step, self._state(),
                        keep=self.cfg.keep_checkpoints, torch_threads=self.cfg.torch_threads)

    def _restore(self) -> None:
        # the members' states (replay buffers: hundreds of MB) are read and checked, then
        # every snapshot: seconds, said before they pass
        log.info("resuming: loading the latest checkpoint in %s", self.run_dir / "checkpoints")
        found = load_latest(self.run_dir / "checkpoints")
        if found is None:  # nothing recorded past generation 0 (recorded_history): start it again
            log.info("no checkpoint in %s: starting from generation 0", self.run_dir)
            return
        path, raw = found
        names = [m.name for m in self.members]
        state = checked_state(path, raw, names)
        check_snapshots(path, state, names, self.store, self.db.path)
        load_members(path, self.members, state.members)
        self.generation, self.phase, self.frames = state.generation, state.phase, state.frames
        self.progress, self.trained = dict(state.progress), list(state.trained)
        self._unlogged = unlogged_metrics(path, raw)
        self.seconds, self._began = state.seconds, time.perf_counter()
        if self.phase == "async":  # self.generation: set only as the members all finish
            log.info("resumed from %s (async; generations %s)", path.name,
                     member_generations(self.progress))
        else:
            log.info("resumed from %s (generation %d, %s%s)", path.name, self.generation,
                     self.phase, f": {', '.join(state.trained)} trained"
                     if state.trained else "")

    # ------------------------------------------------------------------ the loop
    def run(self) -> list[dict[str, Any]]:
        """Run (or continue) the league to ``cfg.generations`` and return its snapshot table,
        best first (member, version, kind, elo, mu, sigma, pairs: the rows the command
        lines print). A run that raises is recorded as ``failed`` (``interrupted`` after
        Ctrl-C) with its error before the error propagates."""
        try:
            # a CLI's first Ctrl-C / SIGTERM stops at the next checkpoint that a resume goes
            # on from bit for bit (after a member's training, a pair's evaluation matches)
            with deferred_stop("after the member in training (in process; on Ray learner "
                               "actors: after the generation's training) or the evaluation "
                               "pair at hand (an exploitability estimate: at once, redone by "
                               "the resume)", obey_at_end=False):
                self._run()
        except BaseException as err:  # recorded where it can be: `err` is what is reported
            self.db.set_run_status_quietly(self.run_id, end_status(err), one_line(err))
            raise
        return league_eval.league_table(self.db, self.run_id)

    def elapsed(self) -> float:
        """Wall-clock seconds of the run: this process's and those before its resume."""
        return self.seconds + time.perf_counter() - self._began

    def _run(self) -> None:
        if self.phase == "new":  # generation 0: the untrained policies are the first snapshots
            new = [self.store.publish(m.name, m.policy(), version=0, algo=getattr(m, "algo", None),
                                      retrained=True)
                   for m in self.members]
            self._evaluate(new, [], 0)  # against each other, as each later generation's are
            league_eval.log_nash_conv(self, new, 0)
            self.phase = "done"
            self._save()
        for m in self.members:  # recorded by their first snapshot: what each trains with
            self.db.set_member_settings(self.run_id, m.name, member_settings(m))
        left = self.cfg.generations - self.generation + (self.phase == "training")
        if self.progress:  # asynchronous: the member furthest behind
            left = self.cfg.generations - min(g for g, _ in self.progress.values())
        note_short_budgets(self.cfg, self.members, left, in_process=self.learners is None)
        for text in rounding_notes(self.members, self.cfg.frames_per_generation,
                                   self.cfg.num_envs) if left > 0 else ():
            log.info("%s", text)
        if not self.cfg.sync:
            self._run_async()
            return
        while self.generation < self.cfg.generations or self.phase != "done":
            # timed for the estimate when this process trains all of it (not a resume's rest)
            whole = self.phase == "done" or (self.phase == "training" and not self.trained)
            began, evaluated = time.perf_counter(), self._eval_spent
            counts = after = update_counts(self.members)  # a generation that only filled a
            # replay (an off-policy member before learning_starts) is not timed: faster than
            # the rest
            if self.phase == "done":
                self.generation += 1
                self.phase, self.trained = "training", []
            if self.phase == "training":  # a resume skips the members trained before a stop
                self._train_members()
                after = update_counts(self.members)  # before an exploiter's restart (0 again)
                self.phase, self.trained = "trained", []
                self._save()
                self._stop_if_asked()
            self._publish_and_evaluate()
            self.phase = "done"
            self._save()
            self.store.trim_loaded()
            if whole and updated(counts, after):
                self._gen_seconds += time.perf_counter() - began - \
                    (self._eval_spent - evaluated)
                self._gens += 1
            if self.generation < self.cfg.generations:  # after the last: finished
                self._stop_if_asked()
            log.info("generation %d/%d done, %d %s, %.0fs%s", self.generation,
                     self.cfg.generations, self.frames, self.unit, self.elapsed(),
                     self._left())
        self.db.set_run_status(self.run_id, "finished")

    def _publish_and_evaluate(self) -> None:
        g = self.generation
        earlier = [s for s in self.store.snapshots() if s.version < g]
        new = []
        for m in self.members:
            prev = [s for s in earlier if s.member == m.name]
            new.append(self.store.publish(m.name, m.policy(), version=g,
                                          parent=prev[-1].id if prev else None,
                                          algo=getattr(m, "algo", None), retrained=True))
        self._evaluate(new, earlier[-self.cfg.eval_window:] if self.cfg.eval_window
                       else earlier, g)
        league_eval.log_nash_conv(self, new, g)
        # decided from recorded matches: the same after a resume
        league_eval.reset_winners(self, new)

    def _evaluate(self, new: Sequence[Any], rivals: Sequence[Any], g: int) -> None:
        """Play generation ``g``'s new snapshots against ``rivals`` and each other, then
        recompute the ratings (nothing to play: a league of one member at generation 0). A
        stop request ends it after a pair; the resume plays the pairs left (recorded pairs
        are skipped), from the generation's last checkpoint."""
        pairs = [(s, r) for k, s in enumerate(new) for r in [*rivals, *new[:k]]]
        if not pairs:
            return
        for s in {s.id: s for pair in pairs for s in pair}.values():
            self.store.verify(s)  # runners load by path: check the files they will read
        played = self._play(pairs, g, self.cfg.seed + 100_003 * g)
        self._stop_if_asked()  # the "trained" checkpoint: a resume plays the pairs left
        self.standings.update(step=g)
        league_eval.log_legal_rates(self, new, played)

    def _play(self, pairs: Sequence[tuple[Any, Any]], g: int, seed: int) -> PairsPlayed:
        """Play and record generation ``g``'s evaluation ``pairs`` (those recorded before an
        interruption are skipped), with a bar of pairs and pairs/s under ``progress`` (a
        batch of pairs at a time: one in process, one per match worker on Ray; each pair
        keeps its seeds, so the records are the same), then a log line with the time. On
        Ray a batch at a time always: the first of the process is timed apart
        (:meth:`_time_eval`)."""
        started = time.perf_counter()
        before = len({m.key.split("/")[1] for m in self.db.matches(self.run_id, f"g{g:04d}/")}
                     & {f"{a.id}-{b.id}" for a, b in pairs})  # recorded before a stop
        on_ray = self.cfg.runner == "ray"
        batch = {"batch": self.cfg.ray_workers if on_ray else 1}
        ticks: list[tuple[float, int]] = []  # (when, pairs done) at the start, after each batch
        with tqdm(total=len(pairs), desc=f"generation {g}/{self.cfg.generations} evaluation",
                  unit="pair", disable=not self.show_progress, leave=False,
                  dynamic_ncols=True, smoothing=0) as bar:  # the overall rate: see _bar
            def tick(done: int) -> None:
                ticks.append((time.perf_counter(), done))
                if self.show_progress:
                    bar.update(done - bar.n)

            # on Ray a batch at a time, timed: the first waits for the workers' start
            timed = self.show_progress or on_ray
            played = evaluate_pairs(self.db, self.run_id, self.runner, self.spec,
                                    self.cfg.game, self.cfg.game_kwargs, pairs,
                                    self.cfg.eval_episodes, seed=seed, prefix=f"g{g:04d}",
                                    **(self._stop() or (batch if timed else {})),
                                    tick=tick if timed else None,
                                    note=bar.note if self.show_progress else None)
        seconds = time.perf_counter() - started
        # the pairs it played (a resume skips recorded ones)
        self._time_eval(seconds, min(len(pairs), played.added / (2 * self.cfg.eval_episodes)),
                        ticks)
        if not played.added and not stop_requested():  # a resume after the stop: all recorded
            log.info("generation %d: %s evaluated before the stop; nothing left to play", g,
                     "its 1 pair was" if len(pairs) == 1 else f"its {len(pairs)} pairs were")
            return played
        # "pair" in one sense: eval_episodes are episodes a side, not role-swapped pairs;
        # those played here, of all planned (a stop ends it after a pair, a resume plays
        # those left): "evaluated 3 snapshot pairs" was said for the 1 played
        done = min(len(pairs) - before, played.added // (2 * self.cfg.eval_episodes))
        count = f"{done} of {len(pairs)}" if before or done < len(pairs) else f"{done}"
        log.info("generation %d: evaluated %s snapshot pair%s%s, %d episodes recorded "
                 "(eval_episodes=%d a side) in %.0fs", g, count,
                 "" if len(pairs) == 1 else "s",
                 f" ({before} recorded before the stop)" if before else "", played.added,
                 self.cfg.eval_episodes, seconds)
        return played

    def _time_eval(self, seconds: float, pairs: float,
                   ticks: Sequence[tuple[float, int]]) -> None:
        """Count an evaluation of ``pairs`` pairs in ``seconds`` into the time left's timing
        (:meth:`_left`), less this process's first batch of pairs on the Ray match workers
        (``ticks``: when and how many pairs were done, at the start and after each batch):
        it waits for the workers' start (their processes and imports: 14-34 s for a pair,
        against under a second a pair later), which no later evaluation waits for."""
        self._eval_spent += seconds
        if self.cfg.runner == "ray" and not self._workers_started and len(ticks) > 1:
            self._workers_started = True
            (began, before), (first, after) = ticks[0], ticks[1]
            seconds -= first - began
            pairs -= after - before
        self._eval_seconds += max(0.0, seconds)
        self._eval_pairs += max(0.0, pairs)

    def _parallel(self) -> int:
        """How many members train at once on the learner actors (1 in this process)."""
        return min(len(self.members), len(getattr(self.learners, "actors", ())) or 1)

    def _left(self) -> str:
        """The synchronous loop's time left (:func:`time_left`; an asynchronous league's is
        ``_async_left``, per member): the mean whole generation this process timed besides
        its evaluation times those left, plus the mean evaluated pair's time (this
        process's, not the Ray match workers' start: :meth:`_time_eval`) times the pairs they
        will evaluate (more each generation: more snapshots). A resume that has timed none
        yet takes the recorded training times (``generations`` table;
        :func:`recorded_estimate`), none while a member has made no update, unless it is an
        exploiter, which a restart puts back at 0. Generations that made no update (an
        off-policy member filling its replay) are not timed."""
        cfg, n = self.cfg, len(self.members)
        left = cfg.generations - self.generation
        pairs_left = sync_pairs_left(n, cfg.eval_window, self.generation, cfg.generations)
        seconds, done = self._gen_seconds, self._gens
        if not done:
            seconds, done = recorded_estimate(self.db.generations(self.run_id), self.members)
        return time_left(seconds, done, done + left, self._eval_seconds, self._eval_pairs,
                         pairs_left)

    def _bar(self, m: Member) -> tqdm:
        """A progress bar of member ``m``'s generation in this process: its frames and
        frames/s over the generation so far (an LLM team's episodes), none unless
        ``progress``; cleared when done (the 'trained' line stays)."""
        cfg, unit = self.cfg, count_unit(m)
        total = None
        if unit == "frames":  # a step loop rounds up to whole steps of copies, and an
            # on-policy learner's (MAPPO/IPPO) to whole rollouts (LearnerMember's loop)
            learner = getattr(m, "learner", None)
            rollout = rollout_frames(learner, cfg.num_envs) \
                if learner is not None and trains_whole_rollouts(learner) else 0
            total = planned_frames(cfg.frames_per_generation, cfg.num_envs, 0, rollout)
        elif unit == "episodes":  # an LLM team's: its iterations' GRPO episodes
            total = planned_episodes(m)
        # smoothing=0: the rate (and ETA) is the count over the wall time so far, updates
        # included, as a single learner's bar (marl.train.train) shows it; tqdm's moving
        # average swung between the fast steps and the pauses of each update
        return tqdm(total=total, desc=f"generation {self.generation}/{cfg.generations} "
                    f"{m.name}", unit=unit.removesuffix("s"), disable=not self.show_progress,
                    leave=False, dynamic_ncols=True, smoothing=0)

    def _stop(self) -> dict[str, Any]:
        """``evaluate_pairs``' stop arguments: a stop request ends an evaluation after a
        batch of pairs (one in process; one per match worker on Ray), recorded. Outside a
        CLI's deferred stop: none (every pair in one batch, as before)."""
        if not stop_deferred():
            return {}
        return {"stop": stop_requested,
                "batch": self.cfg.ray_workers if self.cfg.runner == "ray" else 1}

    def _stop_if_asked(self) -> None:
        """Obey a CLI's stop request here: the checkpoint just written (or, in an
        evaluation, the last one) is where its resume goes on from."""
        if stop_requested():
            if self.phase == "async":  # each member at its own generation
                log.warning("stopped at generations %s (async) with a checkpoint",
                            member_generations(self.progress))
            else:
                log.warning("stopped at generation %d (%s%s) %s", self.generation, self.phase,
                            f": {', '.join(self.trained)} trained"
                            if self.phase == "training" and self.trained else "",
                            "with no checkpoint yet: the resume starts generation 0 again"
                            if self.phase == "new" else "with a checkpoint")
            stop_now()

    def _log_unlogged(self) -> None:
        """Log the asynchronous member generation's metrics its "trained" checkpoint holds
        (``_unlogged``; again after a kill past their logging: a row logged again replaces
        itself in the database, and metrics.csv writes each (step, key) once)."""
        for step, metrics in self._unlogged:
            self.log_metrics(step, metrics)
        self._unlogged = []

    def _member(self, name: str) -> Member:
        return next(m for m in self.members if m.name == name)

    def log_metrics(self, step: int, metrics: dict[str, float]) -> None:
        """Metrics go to the league database and the extra logger (csv, wandb)."""
        self.db.log_metrics(self.run_id, step, metrics)
        try:
            self.logger.log(step, metrics)
        except OSError as err:  # the csv file on a full disk: named, as every other file is
            if isinstance(err, NoSpaceError) or not disk_full(err):
                raise
            raise NoSpaceError(getattr(self.logger, "files", None) or self.run_dir,
                               "metrics ") from err

    def _close_workers(self) -> None:
        """Close the learner actors and the runner's workers, each even if the other's close
        fails (the first error is raised after both)."""
        with contextlib.ExitStack() as stack:
            for made in (self.runner, self.learners):  # the stack closes the learners first
                if made is not None:
                    stack.callback(made.close)

    def close(self) -> None:
        """Close the Ray learner actors and match workers, the database, and release the run
        folder's lock (call it once the league is done with, after :meth:`run`)."""
        self._close_workers()
        self.db.close()
        self.lock.release()


def member_generations(progress: dict[str, tuple[int, str]]) -> str:
    """An asynchronous league's place (its checkpoint's ``progress``: each member's last
    generation and phase), as its stop and resume lines say it: ``a: 2 done, b: 1 trained``
    (done: published and evaluated; trained: its evaluation left, which a resume plays)."""
    return ", ".join(f"{name}: {g} {phase}" for name, (g, phase) in progress.items())


def unlogged_metrics(path: Path, state: dict[str, Any]) -> list[tuple[int, dict[str, float]]]:
    """The metrics of an asynchronous member generation that checkpoint ``path`` (its
    ``state``) holds to log (``[(step, {key: value})]``; none in one from before, or one
    saved with none), each checked as the league's other entries are.

    Raises:
        CheckpointError: one line naming the file and the entry.
    """
    raw = state.get("unlogged", [])
    ok = isinstance(raw, list) and all(
        isinstance(r, list | tuple) and len(r) == 2 and isinstance(r[0], int)
        and not isinstance(r[0], bool) and 0 <= r[0] < 2**63 and isinstance(r[1], dict)
        and all(isinstance(k, str) and isinstance(v, numbers.Real) and not isinstance(v, bool)
                for k, v in r[1].items()) for r in raw)
    if not ok:
        raise CheckpointError(f"checkpoint {path} does not hold a league state this selfplay "
                              f"reads: unlogged is {str(raw)[:80]}; expected a list of "
                              "[step, {metric: value}]")
    return [(int(step), {k: float(v) for k, v in m.items()}) for step, m in raw]


def _remove_unstarted(run_dir: Path) -> None:
    """Remove what a new league wrote in ``run_dir`` before its start failed: ``league.db``
    (and SQLite's files beside it) and an empty ``snapshots/``; nothing was published."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(run_dir / f"league.db{suffix}")
    with contextlib.suppress(OSError):  # only when empty
        (run_dir / "snapshots").rmdir()


if __name__ == "__main__":  # python -m populations.league (README): the league's CLI
    # imported first: league_cli imports populations.league, this file again under its own
    # name (seconds on a loaded machine), still under the early one-line Ctrl-C handler
    from populations.league_cli import main

    if "_interrupted_early" in globals():  # main() reports Ctrl-C from here on
        signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
