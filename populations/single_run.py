"""A single run (``population=none``): one learner (``algo``) trained on ``game`` for
``frames`` frames, or an LLM team (``llm_grpo``) for ``llm.iterations`` GRPO iterations,
snapshotted and evaluated against uniformly random seats for the other teams
(:mod:`populations.single_eval`).

Its checkpoints (``<run>/checkpoints/ckpt_<step>.pt``: the learner's state, the step, the
returns and seconds so far, the random seats' RNG states) are taken every
``checkpoint_every_s`` seconds after an update and when training ends; a resume loads the
newest good one, drops the metrics recorded past it, and plays new game copies seeded from its
step (the episodes in flight are not saved: a game's state is its own) against the random
seats going on from their saved streams, so a run killed at any point ends as an
uninterrupted one: bit for bit where no episode is in flight at the checkpoint (a one-step
game), with other episodes otherwise. A run recorded ``finished`` is not trained again: its
table row is read back (:func:`finished_run_row`). :func:`populations.experiment.run_experiment`
calls :func:`run_single`.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import games
from marl import registry
from marl.core import CheckpointError, Learner, nonfinite_tensor
from marl.fileio import atomic_write
from marl.train import TrainResult, train
from populations.checkpoint import checkpoint_files, load_latest, read_checkpoint, save_checkpoint
from populations.db import LeagueDB
from populations.experiment_config import KEEP_CHECKPOINTS
from populations.learner_build import make_learner, rollout_trainer, rollouts_closed
from populations.loggers import MetricsLogger
from populations.run_figures import (  # the rows' one home (python -m populations.sweep_summary)
    CHECKPOINTS,
    finished,
    llm_row,
    plain_figures,
    single_row,
    table_row,
)
from populations.run_folder import (
    GRPO_ITERATION,
    deferred_stop,
    mark_started,
    one_line,
    refuse_lost_history,
    stop_now,
    stop_requested,
)
from populations.seeds import GAME, RunSeeds
from populations.single_eval import (
    PolicySeats,
    evaluate_single,
    evaluated_greedily,
    evaluation_cost_note,
    log_eval_return,
    random_seats,
)
from populations.store import PolicyStore

if TYPE_CHECKING:
    from populations.experiment import ExperimentConfig

# the run's lines keep the logger they had before the move (users' logging settings)
log = logging.getLogger("populations.experiment")

# written beside checkpoints/ once its first checkpoint is whole: a resume that finds none
# then knows they were lost (a run stopped before it, or killed writing it, starts over)
CHECKPOINTED = ".checkpointed"


def run_single(cfg: ExperimentConfig, run_dir: Path, logger: MetricsLogger,
               recorded: dict[str, Any]) -> list[dict]:
    """One learner on one game; its snapshot is evaluated against random other teams.
    ``recorded``: the run's settings as its database records them (``experiment._plain``)."""
    entry = registry.get(cfg.algo)
    if entry.capabilities.own_rollouts:
        return _run_single_llm(cfg, run_dir, logger, recorded)
    seeds = RunSeeds(cfg.seed)
    spec = games.make(cfg.game.name, **cfg.game.kwargs).spec
    db = LeagueDB(run_dir / "league.db")
    run_id = db.run_id(cfg.experiment) or db.create_run(
        cfg.experiment, experiment=cfg.experiment, game=spec.name, config=recorded)
    done = finished_run_row(db, run_id, run_dir, cfg.algo, "frames")
    if done is not None:
        db.close()
        return [done]
    store = PolicyStore(run_dir / "snapshots", db, run_id)
    teams = spec.teams
    agents = tuple(a.id for a in spec.agents if a.team == teams[0])  # first team learns
    if len(teams) > 1:  # a user of a competitive game may expect both sides to train
        log.info("population=none: %s trains team %r (%s) against uniformly random players in "
                 "the other seats; population=self_play, fsp, pfsp or psro trains every side",
                 cfg.algo, teams[0], ", ".join(agents))
    else:  # a cooperative game: README says the log names the seats that train here too
        log.info("population=none: %s trains every seat of the game's one team %r (%s)",
                 cfg.algo, teams[0], ", ".join(agents))
    learner = make_learner(cfg, spec, agents, seeds.learner(cfg.algo))
    start, state = _restore(learner, cfg, run_dir, db, run_id, logger,
                            {a for a in spec.agent_ids if a not in agents}) \
        if cfg.resume else (0, {})
    # a resume plays new game copies seeded from its checkpoint's step (the episodes in flight
    # are not saved): as at the run's start, it replayed the first deals after every resume
    resumed = ("resumed", start) if start else ()
    # the random seats go on from their streams' states at the checkpoint (a checkpoint
    # without them, from before: streams seeded from its step): the uninterrupted run's moves
    others = _restored_seats(random_seats(spec, agents, seeds), state.get("opponents")) \
        if state.get("opponents") is not None else random_seats(spec, agents, seeds, *resumed)
    ckpt = _Checkpoints(run_dir, cfg.checkpoint_every_s, learner, cfg.torch_threads,
                        cfg.population.keep_checkpoints)  # after the resume's checks
    ckpt.seats = others
    vkw = getattr(learner, "vector_game_kwargs", {"with_state": True})
    # MAPPO/IPPO read tensor VecSteps: a natively batched game's rollout stays on its device
    vg = games.VectorGame(cfg.game.name, cfg.num_envs,
                          seed=seeds.block(GAME, "train", *resumed, index=0), **vkw,
                          tensors="auto" if getattr(learner, "reads_tensors", False) else False,
                          **cfg.game.kwargs)

    recent = _RecentReturns(learner, state.get("returns", []))
    began = time.perf_counter()

    def on_update(frames: int, metrics: dict[str, float]) -> None:
        frames += start  # a resumed run counts on from its checkpoint
        if "charts/frames" in metrics:
            metrics["charts/frames"] = float(frames)
        if start and recent.returns:  # the last 50 episodes', as uninterrupted: also before it
            metrics["charts/episode_return"] = float(np.mean(recent.returns[-50:]))
        db.log_metrics(run_id, frames, metrics)
        logger.log(frames, metrics)
        # after the metrics: a resume drops only later ones, and counts the returns and
        # seconds so far (without them a resume's final_return was the resumed part's alone)
        extra = {"returns": recent.returns[-50:],
                 "seconds": state.get("seconds", 0.0) + time.perf_counter() - began}
        if stop_requested():  # a CLI's first Ctrl-C / SIGTERM: stop here, nothing lost
            stop_with_checkpoint(frames)
        ckpt.maybe_save(frames, **extra)

    def stop_with_checkpoint(frames: int) -> None:
        ckpt.save(frames, returns=recent.returns[-50:],
                  seconds=state.get("seconds", 0.0) + time.perf_counter() - began)
        log.warning("stopped at frame %d with a checkpoint", frames)
        stop_now()

    def on_step(frames: int) -> None:
        # a replay learner's state is whole after any step (weights, counters, the replay if
        # it checkpoints it): it stops at once, not after a warm-up of minutes; a rollout
        # learner stops at its next update (its partial rollout is not in its state)
        if stop_requested() and not entry.capabilities.on_policy:
            stop_with_checkpoint(start + frames)

    with deferred_stop():  # a CLI's Ctrl-C / SIGTERM stops at the next update's checkpoint
        res = _train_single(cfg, learner, recent, start, vg, others, (on_update, on_step),
                            agents, vkw, seeds)
        frames = start + res.frames
        returns = (state.get("returns", []) + res.episode_returns)[-50:]
        seconds = state.get("seconds", 0.0) + res.seconds
        if res.frames:  # a resume after a kill past this point trains nothing again
            ckpt.save(frames, returns=returns, seconds=seconds)
    if returns:  # the table's final_return, told apart from its eval_return
        log.info("training: mean return %.3f over the last %d training episodes (%s; the "
                 "table's final_return)", round(float(np.mean(returns)), 3) + 0.0, len(returns),
                 "exploring" if evaluated_greedily(entry) else "sampled actions")
    snap = store.publish(cfg.algo, learner.policy(), version=0, algo=cfg.algo,
                         retrained=True)
    # random seats from their streams' starts, not where training left them: a run killed
    # after its last checkpoint resumes to the uninterrupted run's evaluation
    note = evaluation_cost_note(cfg, spec, frames, res.frames, len(res.episode_returns)) \
        if res.frames else None  # (a resume past its training measured no episode)
    if note is not None:  # a long-episode game's default 32 episodes outlast its training
        log.info(note)
    evaluated = evaluate_single(db, run_id, cfg, spec, snap.id, learner,
                                random_seats(spec, agents, seeds), vkw)
    log_eval_return(db, run_id, logger, frames, evaluated,
                    float(np.mean(returns)) if returns else None)
    db.set_run_status(run_id, "finished")
    rows = [single_row(cfg.algo, snap.version, frames, seconds, returns, evaluated)]
    db.close()
    return rows


def _train_single(cfg: ExperimentConfig, learner: Learner, recent: _RecentReturns, start: int,
                  vg: games.VectorGame, others: dict, hooks: tuple[Any, Any],
                  agents: tuple[str, ...], vkw: dict[str, Any], seeds: RunSeeds) -> TrainResult:
    """The frames left of a single run (from ``start``), in process or on rollout workers
    (``hooks``: ``on_update`` and ``on_step`` of ``marl.train.train``)."""
    on_update, on_step = hooks
    try:  # the learner gets its own observe back, also after an error or Ctrl-C
        if start >= cfg.frames:  # stopped after training (publishing or evaluating)
            res = TrainResult(0, 0, 0.0)
        elif cfg.runner.rollout_workers:
            from populations.rollouts import RolloutCollector, RolloutSpec, train_with_workers

            workers = cfg.runner.rollout_workers
            spec_w = RolloutSpec(cfg.game.name, agents, max(1, cfg.num_envs // workers),
                                 seeds.stream("rollouts", *(("resumed", start) if start else ())),
                                 dict(cfg.game.kwargs), dict(vkw))
            collector = RolloutCollector(spec_w, workers, cfg.runner.kind, cfg.runner.address,
                                         num_envs=cfg.num_envs)  # 5 over 2 workers: 3 + 2
            try:
                res = train_with_workers(learner, collector, cfg.frames - start, cfg.progress,
                                         on_update, resumed_at=start)
            finally:
                collector.close()
        else:
            res = train(learner, vg, cfg.frames - start, opponents=others,
                        progress=cfg.progress, on_update=on_update, on_step=on_step,
                        eval_greedy=evaluated_greedily(registry.get(cfg.algo)),
                        resumed_at=start)  # the bar at start/N, not 0/(N - start)
    finally:
        recent.close()
    return res


def _run_single_llm(cfg: ExperimentConfig, run_dir: Path, logger: MetricsLogger,
                    recorded: dict[str, Any]) -> list[dict]:
    """An LLM team trained by multi-turn GRPO for ``llm.iterations`` iterations (self-play
    on every seat in multi-team games, team play in cooperative ones; the log says so at the
    start), snapshotted and evaluated against random seats for the other teams."""
    from marl.progress import tqdm
    from populations.league_progress import step_postfix

    spec = games.make(cfg.game.name, **cfg.game.kwargs).spec
    db = LeagueDB(run_dir / "league.db")
    run_id = db.run_id(cfg.experiment) or db.create_run(
        cfg.experiment, experiment=cfg.experiment, game=spec.name, config=recorded)
    done = finished_run_row(db, run_id, run_dir, "llm", "iterations")
    if done is not None:
        db.close()
        return [done]
    store = PolicyStore(run_dir / "snapshots", db, run_id)
    seeds = RunSeeds(cfg.seed)
    _log_llm_seating(cfg.algo, spec)
    trainer = rollout_trainer(cfg, registry.get(cfg.algo), spec, run_dir, seeds.learner(cfg.algo))
    # its Ray rollout actors (runner=ray) end with the run, not when the collector is
    # garbage-collected: a process that goes on (a notebook, a test session) kept their CPUs
    with rollouts_closed([trainer]):
        start, state = _restore(trainer, cfg, run_dir, db, run_id, logger) if cfg.resume \
            else (0, {})
        ckpt = _Checkpoints(run_dir, cfg.checkpoint_every_s, trainer, cfg.torch_threads,
                            cfg.population.keep_checkpoints)
        if start == 0:  # the untrained team (a resumed one is past it)
            store.publish("llm", trainer.policy(), version=0, retrained=True)
        # the last iteration's metrics: a run killed after its last checkpoint trains nothing
        # again but still reports them (an older checkpoint without them: the database's row)
        metrics: dict[str, float] = {}
        if start:
            metrics = state.get("metrics") or {k: v for s, k, v in db.metric_rows(run_id)
                                                if s == start}
        bar = tqdm(total=cfg.llm.iterations, initial=min(start, cfg.llm.iterations),
                   disable=not cfg.progress, unit="iter", dynamic_ncols=True,
                   smoothing=0)  # the overall rate, as every other bar
        if cfg.progress:  # an iteration of a real model runs for minutes: say where it is
            trainer.on_status = step_postfix(bar)
        with deferred_stop(GRPO_ITERATION):  # a CLI's Ctrl-C / SIGTERM: after the checkpoint
            for it in range(start + 1, cfg.llm.iterations + 1):
                metrics = trainer.step()
                db.log_metrics(run_id, it, metrics)
                logger.log(it, metrics)
                # the bar counts this iteration before a stop's line says it stopped after it
                # (it showed 8/30 under "stopped at iteration 9")
                bar.set_postfix(legal=f"{metrics['charts/legal_rate']:.2f}",
                                ret=f"{metrics['charts/team_return']:.2f}", refresh=False)
                bar.update(1)
                if it == cfg.llm.iterations:  # a resume after a kill past this trains nothing again
                    ckpt.save(it, metrics={k: float(v) for k, v in metrics.items()})
                elif stop_requested():
                    ckpt.save(it)
                    log.warning("stopped at iteration %d with a checkpoint", it)
                    stop_now()
                else:
                    ckpt.maybe_save(it)
        bar.close()
        snap = store.publish("llm", trainer.policy(), version=1, retrained=True)
        agents = tuple(a.id for a in spec.agents if a.team == spec.teams[0])
        others = random_seats(spec, agents, seeds)
        member = PolicySeats(trainer.policy(agents), agents)
        evaluated = evaluate_single(db, run_id, cfg, spec, snap.id, member, others,
                                    {"with_text": True})
        log_eval_return(db, run_id, logger, cfg.llm.iterations, evaluated)
        db.set_run_status(run_id, "finished")
        row = llm_row(snap.version, cfg.llm.iterations, metrics, evaluated)
        db.close()
        return [row]


def _log_llm_seating(algo: str, spec: Any) -> None:
    """The seating of an LLM team's single run, as :func:`run_single` logs a learner's: its
    trainer (:class:`llm_agents.trainer.MultiTurnGRPO` without league opponents) plays whole
    episodes, every seat of every team (self-play in a competitive game), and its evaluation
    plays the first team's seats against uniformly random players in the others'."""
    teams = spec.teams
    first = ", ".join(a.id for a in spec.agents if a.team == teams[0])
    if len(teams) > 1:  # README said it trains the first team against random seats: it does not
        log.info("population=none: %s trains every seat (%s) in self-play, the team playing "
                 "itself; its evaluation plays team %r (%s) against uniformly random players "
                 "in the other seats; population=self_play, fsp or pfsp trains it against "
                 "its earlier snapshots", algo, ", ".join(spec.agent_ids), teams[0], first)
    else:
        log.info("population=none: %s trains every seat of the game's one team %r (%s)",
                 algo, teams[0], first)


class _Checkpoints:
    """A single run's checkpoints (``<run>/checkpoints/ckpt_<step>.pt``, step: frames, or
    iterations of an LLM team): the learner's ``state_dict`` and the step, written
    atomically with a hash (populations.checkpoint), at most every ``every_s`` seconds."""

    def __init__(self, run_dir: Path, every_s: float, learner: Any, threads: int,
                 keep: int = KEEP_CHECKPOINTS) -> None:
        self.folder, self.every_s, self.learner = run_dir / CHECKPOINTS, every_s, learner
        mark_started(run_dir)  # made after the resume's checks: an error from here is the run's
        self.keep = keep  # population.keep_checkpoints: the newest kept on disk
        self.threads = threads  # torch_threads: recorded with each checkpoint
        self.seats: dict[str, Any] = {}  # a single run's random seats: their RNG states saved
        self.last = time.monotonic()

    def maybe_save(self, step: int, **extra: Any) -> None:
        if time.monotonic() - self.last >= self.every_s:
            self.save(step, **extra)

    def save(self, step: int, **extra: Any) -> None:
        if self.seats:  # a resume goes on with the seats' moves of the uninterrupted run
            extra["opponents"] = {a: p.rng.bit_generator.state for a, p in self.seats.items()}
        save_checkpoint(self.folder, step, {"step": step, "learner": self.learner.state_dict(),
                                            **extra}, keep=self.keep,
                        torch_threads=self.threads)
        marker = self.folder.parent / CHECKPOINTED
        if not marker.exists():  # outside checkpoints/: deleting them leaves it
            atomic_write(marker, f"{step}\n")
        self.last = time.monotonic()


class _RecentReturns:
    """The returns of the learner's episodes as they end (the mean over its seats, as
    ``marl.train`` counts them), after ``returns`` from a checkpoint: what a periodic
    checkpoint saves mid-``train``. It watches ``learner.observe``, which both training loops
    call with every step, until :meth:`close`."""

    def __init__(self, learner: Learner, returns: list[float]) -> None:
        self.learner, self.returns = learner, list(returns)
        self.own = vars(learner).get("observe")  # a plugin's own instance attribute, if any
        observe = learner.observe

        def watched(vs: Any) -> None:
            observe(vs)
            done = vs.done.cpu().numpy() if hasattr(vs.done, "cpu") else vs.done  # [B]
            ended = np.flatnonzero(done)
            if len(ended):
                ret = {a: vs.episode_return[a] for a in learner.agents}
                ret = {a: r.cpu().numpy() if hasattr(r, "cpu") else r for a, r in ret.items()}
                self.returns += [float(np.mean([ret[a][b] for a in ret])) for b in ended]
                del self.returns[:-50]

        learner.observe = watched  # type: ignore[method-assign]

    def close(self) -> None:
        if self.own is None:
            del self.learner.observe  # the class's own method again
        else:
            self.learner.observe = self.own  # type: ignore[method-assign]


def single_finished(run_dir: Path, name: str) -> bool:
    """Whether the single run recorded in ``run_dir``'s database has finished."""
    if not (run_dir / "league.db").is_file():
        return False
    db = LeagueDB(run_dir / "league.db", readonly=True)
    try:
        run_id = db.run_id(name)
        return run_id is not None and db.run_status(run_id) == "finished"
    finally:
        db.close()


def finished_run_row(db: LeagueDB, run_id: int, run_dir: Path, member: str,
                     unit: str) -> dict[str, Any] | None:
    """A run recorded ``finished`` is not trained nor published again on a resume: one log
    line and its table row as the run recorded it (its last checkpoint's seconds and returns,
    or an LLM run's rates; the evaluation's return from its matches in ``db``), None when the
    run is not finished (``populations.run_figures.finished_row`` reads it without torch)."""
    found = finished(db, run_id, run_dir, member, checkpoint_files)
    if found is None:
        return None
    version, ckpts, step, evaluated = found
    log.info("run %s already finished%s (snapshot v%s); nothing to do", run_dir,
             "" if step is None else f" at {step} {unit}", version)
    figures = None
    if ckpts:
        try:  # the newest only: an older one's figures are not the finished run's
            _, returns, seconds, metrics = _checked_state(ckpts[0], read_checkpoint(ckpts[0]))
            figures = returns, seconds, metrics
        except CheckpointError as err:
            log.warning("%s; the finished run's table shows none of its training figures", err)
    return table_row(member, version, unit, step, figures, evaluated)


def _checked_state(path: Path, raw: dict[str, Any]) -> tuple[int, list[float], float,
                                                             dict[str, float]]:
    """A single run's checkpoint ``raw`` (read from ``path``, an untrusted file): its step,
    last episode returns, seconds and metrics, each checked.

    Raises:
        CheckpointError: one line naming the file and the bad value.
    """
    step = raw.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < 2**63:
        raise CheckpointError(f"checkpoint {path} holds step={step!r}; expected a count >= 0 "
                              "below 2**63 (SQLite's integers)")
    figures = plain_figures(raw)
    if figures is None:
        raise CheckpointError(f"checkpoint {path} holds returns, seconds or metrics that "
                              "are not floats")
    returns, seconds, metrics = figures
    return step, returns, seconds, metrics


def _names(names: object, width: int = 80) -> str:
    """Names for a one-line message: each as Python writes it (a newline stays ``\\n``),
    the list cut at ``width`` characters."""
    text = ", ".join(repr(n) for n in sorted(names, key=str))  # type: ignore[call-overload]
    return text if len(text) <= width else text[:width - 1] + "\u2026"


def _is_int(x: object) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


def _seat_states(path: Path, saved: object, seats: set[str] | None = None
                 ) -> dict[str, dict[str, Any]] | None:
    """The random seats' RNG states a checkpoint (``path``, untrusted) holds: None where it
    holds none (older ones); each a numpy PCG64 ``bit_generator.state`` dict of integers.
    ``seats``: the run's random seats, which the checkpoint's must be (None: not checked).
    Checked here, before the resume drops the metrics past the checkpoint.

    Raises:
        CheckpointError: one line naming the file: ``opponents`` is not a mapping of this
            run's seats to PCG64 states.
    """
    if saved is None:
        return None
    if not isinstance(saved, dict) or not all(isinstance(a, str) and isinstance(v, dict)
                                              for a, v in saved.items()):
        raise CheckpointError(f"checkpoint {path} holds opponents={saved!r:.80}; expected the "
                              "random seats' RNG states (seat -> numpy bit_generator state)")
    if seats is not None and set(saved) != seats:
        raise CheckpointError(f"checkpoint {path} holds random seats {_names(saved)}, this "
                              f"run {_names(seats)}; resume with the run's settings")
    for a, st in saved.items():
        inner = st.get("state")
        ints = (isinstance(inner, dict) and set(inner) == {"state", "inc"}
                and all(_is_int(inner[k]) for k in ("state", "inc"))
                and _is_int(st.get("has_uint32")) and _is_int(st.get("uinteger")))
        try:  # numpy takes a float state silently (review39a L7): integers only
            if not ints or st.get("bit_generator") != "PCG64":
                raise ValueError("expected PCG64's integer state, inc, has_uint32, uinteger")
            np.random.PCG64().state = st  # RandomPolicy's (np.random.default_rng)
        except Exception as err:  # noqa: BLE001 - numpy's TypeError/ValueError/KeyError
            raise CheckpointError(f"checkpoint {path} holds a random seat {a!r:.40} state numpy "
                                  f"refuses ({one_line(err)[:120]}); the file is damaged or "
                                  "was edited") from None
    return saved


def _restored_seats(seats: dict[str, Any], saved: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``seats`` (random policies) set to the RNG states a checkpoint saved for them
    (checked by :func:`_seat_states`, seat names included)."""
    for a, pol in seats.items():
        pol.rng.bit_generator.state = saved[a]  # checked by _seat_states
    return seats


def _restore(learner: Any, cfg: ExperimentConfig, run_dir: Path, db: LeagueDB, run_id: int,
             logger: MetricsLogger, seats: set[str] | None = None) -> tuple[int, dict[str, Any]]:
    """Load a resumed single run's newest good checkpoint into ``learner`` (a learner, or an
    LLM team's trainer); returns its step and the rest of its state (checked: the file is
    untrusted; ``seats``: the run's random seats, see :func:`_seat_states`). Metrics
    recorded past the step (by the interrupted process) are dropped, after every check."""
    found = load_latest(run_dir / CHECKPOINTS)
    step, state = 0, {}
    if found is None:
        if (run_dir / CHECKPOINTED).is_file():  # a checkpoint was written, then lost
            steps = [s for s, _, _ in db.metric_rows(run_id)]
            refuse_lost_history(run_dir / CHECKPOINTS,
                                f"metrics up to step {max(steps)}" if steps else None,
                                cfg.resume_override, "its metrics")
        log.info("no checkpoint in %s: training from the start", run_dir)
    else:
        path, raw = found
        step, returns, seconds, metrics = _checked_state(path, raw)
        bad = nonfinite_tensor(raw["learner"])
        if bad is not None:  # not "does not fit ...; resume with the run's settings" below
            raise CheckpointError(f"checkpoint {path} holds {bad}; a checkpoint's tensors must "
                                  "be finite real numbers (the file is damaged or was edited)")
        try:
            learner.load_state_dict(raw["learner"])
        except Exception as err:  # noqa: BLE001 - a file of other settings, or a crafted one
            from marl.core import ModelChangedError

            if isinstance(err, ModelChangedError) and cfg.llm.model != "tiny":  # a folder's
                lora = " (or llm.lora changed with resume_override=true)" \
                    if cfg.resume_override else ""
                raise CheckpointError(
                    f"checkpoint {path} holds another model than llm.model={cfg.llm.model!r} "
                    f"now ({err}): the model folder changed since the checkpoint{lora}; put "
                    "back the model and tokenizer the run trained, or start a new run in "
                    "another folder") from None
            raise CheckpointError(f"checkpoint {path} does not fit this {cfg.algo} learner "
                                  f"({one_line(err)}); resume with the run's settings") from None
        state = {"returns": returns[-50:], "seconds": seconds, "metrics": metrics,
                 "opponents": _seat_states(path, raw.get("opponents"), seats)}
        log.info("resumed %s from %s at step %d of its training", run_dir, path.name, step)
    db.drop_metrics_after(run_id, step)
    logger.drop_after(step)  # metrics.csv holds what the database holds, not the dead run's
    logger.backfill(db.metric_rows(run_id))
    db.set_run_status(run_id, "running")
    return step, state
