"""A PSRO experiment in a run folder: every member, payoff, meta-strategy and NashConv goes
to the league database (``DBRecorder`` implements ``populations.psro.PSRORecorder``), and
each iteration's new best responses play a few recorded episodes against each other.

Resuming counts the iterations recorded in the database. An iteration's row and its
metrics are written in one transaction, members and matches are keyed, so a run killed
anywhere and resumed ends with exactly the rows of an uninterrupted one; the extra logger
(``metrics.csv``) gets the database's rows it missed. A run that raises is recorded as
``failed`` with its error.

With ``population.psro.stop_nash_conv`` set, a run stops (``finished``) after the first
iteration whose recorded NashConv is at most it; resumed, a run whose last recorded NashConv
is at most the threshold (a resume may change it) has nothing left to run.

PSRO's players are seats or teams (``population.psro.players``, see :mod:`populations.psro`).
A run from before that setting (its ``settings.json`` has no ``players``) played seats; it
resumes so with ``players=auto``, and refuses ``players=teams`` in one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import games
from games import GameSpec
from games.openspiel import OpenSpielGame
from marl import registry
from marl.core import Learner, Policy, policy_class
from marl.train import budget_told, planned_frames, short_budget
from populations import exploitability as ex
from populations.db import LeagueDB, LeagueDBError, MatchRow
from populations.learner_sections import replaced, settings
from populations.loggers import MetricsLogger
from populations.psro import (
    PSRO,
    ExactBestResponse,
    GreedyPolicy,
    LearnerFactory,
    Oracle,
    RLOracle,
    RLOracleConfig,
    check_exact_players,
    mappo_learner,
    no_stop_nash_conv,
    psro_players,
    seat_tuple,
    why_not_exact,
)
from populations.psro_config import (
    full_game_settings,
    one_team_note,
    payoff_plan,
    random_episode_frames,
    settings_refusal,
)
from populations.run_folder import (
    SETTINGS_NAME,
    RunFolderError,
    deferred_stop,
    end_status,
    mark_started,
    one_line,
    stop_now,
    stop_requested,
    when_started,
)
from populations.runners import MatchJob, make_runner
from populations.seeds import MATCH, RunSeeds
from populations.store import PolicyStore, StoreError

if TYPE_CHECKING:
    from populations.experiment import ExperimentConfig

log = logging.getLogger(__name__)


class DBRecorder:
    """Writes PSRO's members, payoffs and iterations to a league database and a store."""

    def __init__(self, db: LeagueDB, run_id: int, store: PolicyStore,
                 logger: MetricsLogger | None = None, episodes: int | None = None) -> None:
        """``episodes``: episodes behind each sampled payoff (None: exact payoffs)."""
        self.db, self.run_id, self.store = db, run_id, store
        self.logger = logger or MetricsLogger()
        self.episodes = episodes
        self.snapshot: dict[str, list[int]] = {}  # seat -> snapshot id of each member

    def on_member(self, name: str, agent: str, policy: Policy) -> None:
        k = len(self.snapshot.setdefault(agent, []))
        member = f"psro-{agent}-{k}"
        snap = self.store.latest(member)  # published before a resume, or as a best response
        try:  # kept as written: a policy loaded back saves equal tensors in other bytes
            snap = self.store.verify(snap) if snap is not None else None
        except StoreError:
            snap = None
        if snap is None:
            snap = self.store.publish(member, policy, version=0, retrained=True)
        self.snapshot[agent].append(snap.id)

    def on_payoffs(self, payoffs: np.ndarray) -> None:
        if payoffs.shape[0] != 2:
            return  # the payoff table is pairwise; n-player tensors stay in PSRO
        seats = list(self.snapshot)
        rows = []
        exact, count = self.episodes is None, self.episodes or 0
        for i, si in enumerate(self.snapshot[seats[0]][: payoffs.shape[1]]):
            for j, sj in enumerate(self.snapshot[seats[1]][: payoffs.shape[2]]):
                v = float(payoffs[0, i, j])
                rows.append((si, sj, v, None, count, exact))
                rows.append((sj, si, float(payoffs[1, i, j]), None, count, exact))
        self.db.set_payoffs(self.run_id, rows)

    def on_iteration(self, iteration: int, meta_strategy: Mapping[str, np.ndarray],
                     nash_conv: float | None, seconds: float) -> None:
        meta = {a: [float(x) for x in p] for a, p in meta_strategy.items()}
        metrics = {"psro/seconds": seconds,
                   "psro/population": float(sum(len(v) for v in self.snapshot.values()))}
        if nash_conv is not None:
            metrics["psro/nash_conv"] = nash_conv
        # one transaction: a resume counts recorded iterations, so none may lack its metrics
        self.db.add_psro_iteration(self.run_id, iteration, meta, nash_conv, seconds, metrics)
        self.logger.log(iteration, metrics)


def run_psro(cfg: ExperimentConfig, run_dir: Path, logger: MetricsLogger) -> list[dict[str, Any]]:
    """PSRO for ``cfg.population.iterations`` iterations (fewer once NashConv is at most
    ``population.psro.stop_nash_conv``); returns the final meta-strategy table."""
    game = _game_name(cfg)  # kuhn_poker(players=3)
    db = LeagueDB(run_dir / "league.db")
    run_id = db.run_id(cfg.experiment)
    if run_id is not None and not cfg.resume:
        db.close()
        raise FileExistsError(f"run folder {run_dir} already holds {cfg.experiment!r}")
    fresh = run_id is None
    if fresh:  # the game's name with its arguments and the settings, as single runs
        from populations.experiment import plain

        run_id = db.create_run(cfg.experiment, experiment=cfg.experiment, game=game,
                               config=plain(cfg))
    started = [fresh]  # a resume's row says running once its checks passed (_run)

    def start() -> None:
        """The resume's checks passed (its players, the members it restored): an error from
        here is the run's, not a refusal of the command (which leaves the run's row, and
        selfplay-train's record of the folder, as they were)."""
        mark_started(run_dir)
        if not started[0]:
            db.set_run_status(run_id, "running")
            started[0] = True

    try:
        # a CLI's first Ctrl-C / SIGTERM stops after the best response or iteration at hand
        with deferred_stop("after the best response in training (or, past them, the "
                           "sampled payoff entry or iteration at hand)", obey_at_end=False):
            table = _run(cfg, run_dir, logger, db, run_id, start)
    except BaseException as err:
        if started[0]:
            db.set_run_status_quietly(run_id, end_status(err), one_line(err))
        db.close()
        raise
    db.set_run_status(run_id, "finished")
    db.close()
    return table


def _note_iterations(db: LeagueDB, run_id: int, iterations: int) -> None:
    """A resume whose ``population.iterations`` differs from the run's (a setting a resume may
    change) says so in one line, as a league's generation count does: the count sets how long
    the run goes on, and a run started with 2 iterations went on to 3 without a word."""
    try:
        recorded = db.run_config(run_id)
    except LeagueDBError:  # damaged: nothing to compare with (the resume's own checks say it)
        return
    pop = recorded.get("population") if isinstance(recorded, dict) else None
    before = pop.get("iterations") if isinstance(pop, dict) else None
    if isinstance(before, int) and not isinstance(before, bool) and before != iterations:
        log.info("iterations: the run recorded %d; this resume goes on to %d", before,
                 iterations)


def _tell_plan(cfg: ExperimentConfig, psro_cfg: Any) -> None:
    """At start: a warning where the game's seats are one team (vmas/dispersion:
    :func:`~populations.psro_config.one_team_note`), and with sampled payoffs a line of the
    episodes they play over the run and a warning when their frames will dominate it
    (:func:`~populations.psro_config.payoff_plan`: connect four's default 1,000 an entry
    played 9,000 episodes around 2,000-frame best responses, unsaid)."""
    pop = cfg.population
    with _made(cfg) as game:
        spec = game.spec
    note = one_team_note(spec)
    if note:
        log.warning("%s", note)
    if psro_cfg.payoffs != "sampled":
        return
    try:
        frames = random_episode_frames(cfg.game.name, cfg.game.kwargs, seed=cfg.seed)
    except games.GameError:  # a game's own bug: the run says it where it meets it, with the
        return  # history (the exact check's walk, the sampler), not from this estimate
    plan = payoff_plan(len(psro_players(spec, psro_cfg.players)), pop.iterations,
                       psro_cfg.episodes_per_entry, frames,
                       0 if pop.oracle == "exact" else pop.oracle_frames)
    log.info("%s", plan.line)
    if plan.warning:
        log.warning("%s", plan.warning)


def _run(cfg: ExperimentConfig, run_dir: Path, logger: MetricsLogger, db: LeagueDB,
         run_id: int, start: Callable[[], None] = lambda: None) -> list[dict[str, Any]]:
    """PSRO's loop; ``start()`` is called once a resume's checks passed (the players it
    continues with, the members of its recorded iterations restored)."""
    pop = cfg.population
    store = PolicyStore(run_dir / "snapshots", db, run_id)
    psro_cfg = pop.psro if pop.psro.seed == cfg.seed else _with_seed(pop.psro, cfg.seed)
    with ex.lines_held(), ex.exact_check(walk_reason(cfg)):  # the game's 'enumerated' line:
        oracle = make_oracle(cfg)  # once the resume's checks passed
        if cfg.resume:
            recorded = db.psro_iterations(run_id)[:1]
            psro_cfg = _resumed_players(psro_cfg, run_dir, cfg.game.name,
                                        dict(cfg.game.kwargs),
                                        set(recorded[0]["meta_strategy"]) if recorded else None)
        recorder = DBRecorder(db, run_id, store, logger, None if psro_cfg.payoffs == "exact"
                              else psro_cfg.episodes_per_entry)
        _tell_plan(cfg, psro_cfg)  # before PSRO: it samples the initial entry
        psro = PSRO(cfg.game.name, oracle, psro_cfg, recorder=recorder,
                    game_kwargs=cfg.game.kwargs, progress=cfg.progress, keys="population.psro.")
        # an RL oracle's members show its learner (population.oracle=ippo: ippo, not mappo)
        algo = {"exact": None, "rl": "mappo"}.get(pop.oracle, pop.oracle)
        psro.oracle = _KeptResponses(oracle, store, psro, algo)
        rows = db.psro_iterations(run_id) if cfg.resume else []
        done = len(rows)
        # a run that stopped converged has nothing left to run, unless stop_nash_conv changed
        converged = bool(rows) and psro.converged(rows[-1]["nash_conv"], done - 1,
                                                  announce=False)
        if done:
            _restore(psro, store, min(done, pop.iterations))
    start()
    ex.say_held(psro.spec.name)
    # after the resume's checks: a refused resume left a Ray runner's workers running
    runner = make_runner(cfg.runner.kind, **(
        {"num_workers": cfg.runner.workers, "address": cfg.runner.address}
        if cfg.runner.kind == "ray" else {}))
    if cfg.resume:
        _note_iterations(db, run_id, pop.iterations)
    if done:
        logger.backfill(db.metric_rows(run_id))  # rows recorded after the logger's last write
        log.info("resumed PSRO: %d of %d iterations done%s", min(done, pop.iterations),
                 pop.iterations,
                 "; nothing left to run" if done >= pop.iterations else
                 f"; converged (NashConv {rows[-1]['nash_conv']} <= "
                 f"{psro_cfg.stop_nash_conv}), nothing left to run" if converged else "")
    left = 0 if converged else max(0, pop.iterations - done)
    try:
        if done:  # the last finished iteration may have stopped before its matches
            _record_matches(db, run_id, runner, store, recorder, cfg, done - 1,
                            _greedy(psro), psro.seats_of)
        with short_oracle_budget(cfg, left):  # one warning for every best response
            for k in range(done, done + left):
                it = psro.iteration(pop.iterations)  # logs its line (k/total, NashConv, s)
                _record_matches(db, run_id, runner, store, recorder, cfg, it.iteration,
                                _greedy(psro), psro.seats_of)
                if psro.converged(it.nash_conv, it.iteration):  # logs that the run stops
                    break
                # the iteration is recorded: its resume starts the next (after the last:
                # finished)
                if stop_requested() and k < pop.iterations - 1:
                    log.warning("stopped after PSRO iteration %d", it.iteration)
                    stop_now()
    finally:
        runner.close()
    # a player is a seat, or a team (players=teams: red, blue), and its column says which
    col = "seat" if all(s == (p,) for p, s in psro.seats_of.items()) else "team"
    return [
        {"member": f"psro-{agent}-{k}", col: agent, "meta_weight": round(float(w), 4)}
        for agent, probs in psro.meta_strategy.items() for k, w in enumerate(probs)
    ]


class _KeptResponses:
    """An oracle whose best responses are published as each is computed (as the member the
    iteration then adds: ``psro-<player>-<k>``, the same bytes) and, when the store already
    holds one (an iteration stopped after it), loaded instead of computed again. Each
    response's seed derives from its iteration and player, so the member is the one an
    uninterrupted run computes. A CLI's stop request is obeyed after a response is kept."""

    def __init__(self, oracle: Oracle, store: PolicyStore, psro: PSRO,
                 algo: str | None = None) -> None:
        self.oracle, self.store, self.psro, self.algo = oracle, store, psro, algo

    def best_response(self, agent: str, opponents: Mapping[str, Any], seed: int) -> Policy:
        name = f"psro-{agent}-{self.psro.iterations + 1}"
        kept = self.store.latest(name)
        if kept is not None:
            log.info("PSRO iteration %d: %s's best response kept before a stop (%s)",
                     self.psro.iterations, agent, name)
            return self.store.load(self.store.verify(kept).id)
        policy = self.oracle.best_response(agent, opponents, seed)
        self.store.publish(name, policy, version=0, algo=self.algo, retrained=True)
        if stop_requested():
            log.warning("stopped in PSRO iteration %d after %s's best response",
                        self.psro.iterations, agent)
            stop_now()
        return policy


ORACLE_NAMES = ("auto", "exact", "rl")
"""Oracles that are not a registered learner's name: exact best responses, ``rl`` (a
MAPPO with local critics and default settings, :func:`mappo_learner`), and ``auto`` (exact
where exact best responses can be computed, else ``rl``, or where ``rl`` cannot play the game
the first learner that can, e.g. ``maddpg`` on continuous actions: :func:`resolve_auto`)."""


def walk_reason(cfg: ExperimentConfig) -> str:
    """Why PSRO walks the game's tree, and the overrides that skip the walk: said on the
    first progress line of a long one (:func:`populations.exploitability.exact_check`; a
    3-player goofspiel with sampled payoffs counted and walked 653,141 histories, ~1 min,
    with no word of why)."""
    pop = cfg.population
    uses = [(f"population.oracle={pop.oracle}", "population.oracle=rl")
            if pop.oracle in ("auto", "exact") else None,
            (f"population.psro.payoffs={pop.psro.payoffs}", "population.psro.payoffs=sampled")
            if pop.psro.payoffs in ("auto", "exact") else None,
            ("population.psro.nash_conv=true", "population.psro.nash_conv=false")
            if pop.psro.nash_conv else None,
            ("population.psro.stop_nash_conv", "population.psro.stop_nash_conv=null")
            if pop.psro.stop_nash_conv is not None else None]
    from populations.psro_config import walk_reason_text

    return walk_reason_text(uses)


def resolve_auto(cfg: ExperimentConfig, game: Any, announce: bool = True,
                 run_dir: Path | None = None) -> ExperimentConfig:
    """``cfg`` with PSRO's ``auto`` settings decided for ``game``: ``population.oracle`` and
    ``population.psro.payoffs`` are ``exact`` where exact tools serve the game (an enumerable
    OpenSpiel game of perfect recall, played by seats: :func:`populations.psro.why_not_exact`),
    else ``rl`` (:func:`rl_oracle`: another learner where ``rl`` cannot play the game) and
    ``sampled``; ``psro.meta_solver`` is ``prd`` unless PSRO has 2 players,
    ``nash`` when the game also declares itself zero-sum, else it stays ``auto`` (decided on
    each iteration's payoffs). A run's settings record what was decided, so a resume (and a
    run from before ``auto``) compares those. ``announce``: log the decision, once the run
    in ``run_dir`` starts where it is given (:func:`when_started`: after selfplay-train's
    'experiment ... in' line, and never for a command refused before its run started)."""
    pop = cfg.population
    meta = pop.psro.meta_solver
    players = psro_players(game.spec, pop.psro.players)
    if "auto" not in (pop.oracle, pop.psro.payoffs, meta):
        _refuse_settings(cfg, game, players, pop.oracle, pop.psro.payoffs, meta)
        return cfg
    with ex.lines_held(), ex.exact_check(walk_reason(cfg)):  # a check's 'enumerated' line:
        # said when the run starts (_run), not before a refusal
        why = why_not_exact(game, players) if "auto" in (pop.oracle, pop.psro.payoffs) else None
    oracle = (rl_oracle(game.spec) if why else "exact") if pop.oracle == "auto" else pop.oracle
    # exact payoffs also need every member's action probabilities (a custom oracle's policy
    # may have none: exact payoffs failed after its first best response had trained)
    no_probs = without_probs(oracle) if why is None and pop.psro.payoffs == "auto" else None
    payoffs = ("sampled" if why or no_probs else "exact") if pop.psro.payoffs == "auto" \
        else pop.psro.payoffs
    if why and pop.oracle == "auto" and oracle != "rl":
        why = f"{why}; the rl oracle cannot play it"
    if meta == "auto" and len(players) != 2:
        meta = "prd"
    elif meta == "auto" and game.spec.zero_sum:
        meta = "nash"
    # before PSROConfig is remade: a full-game meta-solver with the sampled payoffs auto chose
    # was refused there naming neither the choice nor the settings that run
    _refuse_settings(cfg, game, players, oracle, payoffs, meta,
                     (why or no_probs) if pop.psro.payoffs == "auto" else None)
    if announce:
        # where PSRO looks for exact NashConv (an OpenSpiel game, or teams) it logs the same
        # reason on its NashConv line: said once, there
        teams = any(len(seats) > 1 for seats in players.values())
        later = why and pop.psro.nash_conv and (isinstance(game, OpenSpielGame) or teams)
        because = f" ({no_probs})" if no_probs else "" if not why else \
            " (no exact tools: see PSRO's NashConv line)" if later else f" ({why})"
        told = meta if meta != "auto" else ("auto (nash where an iteration's payoffs are "
                                            "constant-sum, else prd: each iteration says which)")
        line = (f"PSRO on {game.spec.name}: oracle={oracle}, payoffs={payoffs}, "
                f"meta_solver={told}{because}")
        if run_dir is None:
            log.info(line)
        else:
            when_started(run_dir, lambda: log.info(line))
    psro = dataclasses.replace(pop.psro, payoffs=payoffs, meta_solver=meta)
    # replaced: dataclasses.replace would drop the sections of the user's own learners
    return replaced(cfg, population=dataclasses.replace(pop, oracle=oracle, psro=psro))


def _refuse_settings(cfg: ExperimentConfig, game: Any, players: Mapping[str, tuple[str, ...]],
                     oracle: str, payoffs: str, meta: str, chose: str | None = None) -> None:
    """Refuse, in one line naming every ``population.psro`` fix, settings PSRO cannot run
    on ``game`` (:func:`~populations.psro_config.settings_refusal`): nash on vmas/simple_push
    was refused after the initial payoffs and the first iteration's best responses trained,
    and only once exact payoffs had been refused before it. Exact tools for a team are
    refused first, in their own line (it offers players=seats too)."""
    target = cfg.population.psro.response_target
    check_exact_players(players, payoffs, oracle == "exact", full_game_settings(meta, target),
                        where="population.psro", players=cfg.population.psro.players)
    line = settings_refusal(game, players, payoffs, meta, cfg.population.psro.response_target,
                            lambda name, value: f"population.psro.{name}={value}", chose,
                            (cfg.game.name, cfg.game.kwargs), cfg.seed)
    if line:
        raise ValueError(line)


def unread_algo(cfg: ExperimentConfig) -> str | None:
    """The warning for an ``algo`` other than the default beside ``population=psro``, which
    trains no ``algo`` (``algo=llm_grpo population=psro`` ran exact oracles, silently): as
    for ``frames=`` in a league, one line saying what the run trains instead (``cfg``:
    with ``auto`` resolved)."""
    from populations.experiment import ExperimentConfig

    default = next(f.default for f in dataclasses.fields(ExperimentConfig) if f.name == "algo")
    if cfg.population.kind != "psro" or cfg.algo == default:
        return None
    return (f"algo={cfg.algo} is not used with population.kind=psro (PSRO trains no algo); "
            f"its best responses come from population.oracle={cfg.population.oracle} (set "
            "population.oracle=<algo> for a learner's)")


def without_probs(oracle: str) -> str | None:
    """Why the members an RL oracle ``oracle`` adds have no action probabilities, which exact
    payoffs (and exact NashConv) need (None: they have them): its policy kind's class keeps
    :meth:`Policy.action_probs` of the base, which raises. ``exact``/``rl`` members have them;
    so do those of off-policy learners, played greedily (:class:`~populations.psro.
    GreedyPolicy`: one-hot probabilities, by the rule of :func:`populations.psro.plays_greedy`).
    """
    if oracle in ORACLE_NAMES:
        return None
    entry = registry.get(oracle)
    if registry.played_greedy(entry.policy):
        return None
    cls = policy_class(entry.policy)
    if cls is None or getattr(cls, "action_probs", None) is not Policy.action_probs:
        return None  # what it saves is not known before it trains: PSRO says so if it fails
    return (f"population.oracle={oracle}'s policies ({entry.policy}) have no action "
            "probabilities")


def oracle_algos(spec: GameSpec | None = None) -> list[str]:
    """Registered learners that can be an RL oracle (on ``spec``, when given): those trained
    through the step loop (``act`` / ``observe`` / ``update``) on a subset of the seats,
    next to frozen opponents; a learner that plays its own whole episodes (an LLM team)
    cannot train against a meta-mixture."""
    return [name for name, e in sorted(registry.entries().items())
            if not e.capabilities.own_rollouts
            and (spec is None or registry.compatible(name, spec))]


RL_ORACLE = "ippo"  # what `rl` builds (mappo_learner): a MAPPO with local critics


def rl_oracle(spec: GameSpec) -> str:
    """The RL oracle ``auto`` picks for ``spec``: ``rl`` where it plays the game, else the
    first registered oracle learner that does (``maddpg`` on continuous actions); ``rl``
    when none does (refused then by :func:`check_oracle`, in one line)."""
    if registry.compatible(RL_ORACLE, spec):
        return "rl"
    return next(iter(oracle_algos(spec)), "rl")


def playing_oracles(spec: GameSpec, exact: bool | Callable[[], bool] = False) -> list[str]:
    """The ``population.oracle`` values that can play ``spec`` (``exact``: whether its exact
    tools serve the game, or a function saying it); ``auto`` leads them when any does."""
    algos = oracle_algos(spec)
    exact = exact() if callable(exact) else exact
    found = [*(["exact"] if exact else []), *(["rl"] if RL_ORACLE in algos else []), *algos]
    return ["auto", *found] if found else []


def _setting(algo: str, setting: str) -> str:
    """The oracle as the user set it: ``rl`` with what it is, a learner as its algo."""
    return (f"{setting}=rl (a PPO learner with local critics at default settings)"
            if algo == "rl" else f"{setting}: algo={algo}")


def check_oracle(algo: str, spec: GameSpec, config: Any = None,
                 exact: bool | Callable[[], bool] = False,
                 setting: str = "population.oracle") -> None:
    """Refuse, in one line, an RL oracle ``algo`` (with its section's ``config``) that cannot
    best-respond on ``spec``: unknown, not trained through the step loop, or unable to play
    the game (:func:`marl.registry.check_compatible`). The line names ``setting`` as given
    and the oracles that play the game (``exact``: its exact tools serve it)."""
    learner = RL_ORACLE if algo == "rl" else algo
    entry = registry.get(learner)

    def choose() -> str:
        able = playing_oracles(spec, exact)
        return f"oracles that play it: {able}" if able else \
            f"no oracle plays it (learners that can be one: {oracle_algos()})"

    if entry.capabilities.own_rollouts:
        raise registry.IncompatibleError(
            f"{_setting(algo, setting)} cannot be a PSRO oracle: it plays its own episodes and "
            f"an oracle trains one seat against frozen opponents; {choose()}")
    try:
        registry.check_compatible(learner, spec, config)
    except registry.IncompatibleError as err:
        problem = str(err).split("; algos that play it")[0]
        problem = problem.removeprefix(f"algo={learner} cannot play {spec.name}: ")
        if algo == "rl" and problem.startswith(f"{learner} "):  # the user never named it
            problem = "it" + problem[len(learner):]
        raise registry.IncompatibleError(
            f"{_setting(algo, setting)} cannot play {spec.name}: {problem}; {choose()}"
        ) from None


def registry_learner(algo: str, config: Any = None, device: str = "cpu") -> LearnerFactory:
    """A :data:`LearnerFactory` building the registered learner ``algo`` for one seat, with
    ``config`` (its experiment section's settings; None: the learner's defaults)."""
    entry = registry.get(algo)

    def build(spec: GameSpec, agent: str | tuple[str, ...], seed: int) -> Learner:
        return entry.build(spec, config, seat_tuple(agent), device, seed)

    build.__name__ = f"{algo}_learner"
    build.algo = algo  # type: ignore[attr-defined]  # PSRO(payoffs="auto") reads it
    return build


def oracle_learner(cfg: ExperimentConfig) -> LearnerFactory:
    """The RL oracle's learner: ``rl`` is a MAPPO with local critics and default settings
    (as before learners were registered); a registered algo is built through the registry
    with its own experiment section (``population.oracle=vdn`` reads ``vdn:``), on one seat
    or a team's seats."""
    if cfg.population.oracle == "rl":
        return mappo_learner
    entry = registry.get(cfg.population.oracle)
    return registry_learner(entry.name, settings(cfg, entry), cfg.device)


def make_oracle(cfg: ExperimentConfig) -> Oracle:
    """The best-response oracle ``population.oracle`` names (``exact``, ``rl`` or an algo)."""
    pop = cfg.population
    if pop.oracle == "exact":
        return ExactBestResponse(cfg.game.name, game_kwargs=cfg.game.kwargs)
    return RLOracle(cfg.game.name, RLOracleConfig(frames=pop.oracle_frames,
                                                  num_envs=cfg.num_envs),
                    learner_factory=oracle_learner(cfg), game_kwargs=cfg.game.kwargs)


@contextlib.contextmanager
def short_oracle_budget(cfg: ExperimentConfig, iterations: int) -> Iterator[None]:
    """Warn once, before the first of ``iterations`` iterations left, when a replay learner's
    best responses (``population.oracle=maddpg``, ``vdn``, ``qmix``) get a budget
    (``population.oracle_frames``) that ends before their warm-up
    (``<algo>.learning_starts``): every one would train nothing and PSRO would add untrained
    networks as best responses. Within the block the oracle's training does not repeat it
    for each response (:func:`marl.train.budget_told`)."""
    pop = cfg.population
    entry = registry.entries().get(pop.oracle) if iterations else None
    if entry is None:  # exact, rl (MAPPO: whole rollouts), or nothing left to train
        yield
        return
    frames = pop.oracle_frames
    why = short_budget(frames, planned_frames(frames, cfg.num_envs),
                       entry.resolve(settings(cfg, entry)), entry.section,
                       "population.oracle_frames")
    if not why:
        yield
        return
    log.warning("PSRO's best responses (population.oracle=%s): %s", pop.oracle, why)
    with budget_told(entry.section, frames):
        yield


def check_oracle_on_spec(cfg: ExperimentConfig, game: games.Game) -> None:
    """Refuse, in one line, an RL oracle (``rl`` or a learner) that cannot play ``game``,
    from its spec alone: before :func:`resolve_auto` walks the game's tree for
    ``payoffs=auto`` (liars_dice: ~100 s, then ``population.oracle=maddpg`` was refused on
    being turn-based). The refusal's list names ``exact`` where exact tools may serve the
    game without walking it (:func:`exact_at_a_glance`); ``auto`` leads it, which decides
    by the walk. :func:`check_oracle_config` checks the rest after."""
    oracle = cfg.population.oracle
    if oracle in ("auto", "exact"):
        return
    players = psro_players(game.spec, cfg.population.psro.players)
    config = None if oracle == "rl" else settings(cfg, registry.get(oracle))
    check_oracle(oracle, game.spec, config, lambda: exact_at_a_glance(game, players))


def exact_at_a_glance(game: games.Game, players: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether exact tools may serve ``game`` with these ``players``, without walking it: an
    OpenSpiel game played seat by seat, with information state strings, whose size estimated
    from random playouts (:func:`games.openspiel.estimate_histories`, milliseconds) is not
    far past :data:`~populations.exploitability.MAX_HISTORIES`, as the walk's own first check
    refuses it. A refusal's list of oracles asks it: ``exact`` was listed for connect_four
    (~1e28 histories), which ``population.oracle=exact`` then refused."""
    if not isinstance(game, OpenSpielGame) or any(len(s) != 1 for s in players.values()):
        return False
    import pyspiel

    from games.openspiel import estimate_histories

    solver = game.game
    if not solver.get_type().provides_information_state_string:
        return False
    if game.spec.simultaneous:
        solver = pyspiel.convert_to_turn_based(solver)
    try:
        tree = estimate_histories(solver, guard=game)
    except (ValueError, pyspiel.SpielError):  # GameError is a ValueError
        return False
    return bool(tree.histories <= ex.ESTIMATE_MARGIN * ex.MAX_HISTORIES)


def check_oracle_config(cfg: ExperimentConfig, spec: GameSpec) -> None:
    """Refuse, in one line and before any run folder, an RL oracle that cannot play the
    game (the learner with its experiment section's settings), and PSRO players that the
    settings cannot serve (an unknown ``players``, a game of one seat, exact tools for a team
    of several seats)."""
    oracle, psro_cfg = cfg.population.oracle, cfg.population.psro
    check_exact_players(psro_players(spec, psro_cfg.players), psro_cfg.payoffs,
                        oracle == "exact",
                        full_game_settings(psro_cfg.meta_solver, psro_cfg.response_target),
                        where="population.psro", players=psro_cfg.players)
    if psro_cfg.stop_nash_conv is not None:  # PSRO's exact NashConv: what it stops on
        with _made(cfg) as game, ex.lines_held(), ex.exact_check(walk_reason(cfg)):
            why = why_not_exact(game, psro_players(spec, psro_cfg.players))
        why = why or without_probs(oracle)
        if why:
            raise ValueError(no_stop_nash_conv(psro_cfg.stop_nash_conv, why))
    if oracle == "exact":
        return
    no_probs = without_probs(oracle) if psro_cfg.payoffs == "exact" else None
    if no_probs:  # refused now, not after the first iteration's best responses trained
        raise ValueError(f"population.psro.payoffs=exact needs every member's action "
                         f"probabilities: {no_probs}; use population.psro.payoffs=sampled or "
                         "auto")
    config = None if oracle == "rl" else settings(cfg, registry.get(oracle))

    def exact() -> bool:  # asked only for a refusal's list of oracles
        try:
            with _made(cfg) as game, ex.lines_held(), ex.exact_check(walk_reason(cfg)):
                return why_not_exact(game, psro_players(spec, psro_cfg.players)) is None
        except (ValueError, TypeError):
            return False

    check_oracle(oracle, spec, config, exact)


def _restore(psro: PSRO, store: PolicyStore, iterations: int) -> None:
    """Rebuild ``psro`` from the members its first ``iterations`` iterations published
    (members published by an unfinished iteration are published again, identically keyed)."""
    saved = {}
    for agent in psro.players:
        saved[agent] = []
        for k in range(1, iterations + 1):
            snap = store.latest(f"psro-{agent}-{k}")
            if snap is None:
                raise RunFolderError(f"cannot resume PSRO: member psro-{agent}-{k} of a "
                                     "finished iteration is missing from the store")
            saved[agent].append(store.load(snap.id))
    psro.restore(saved, iterations)


def _with_seed(psro_cfg: Any, seed: int) -> Any:
    return dataclasses.replace(psro_cfg, seed=seed)


def _resumed_players(psro_cfg: Any, run_dir: Path, game: str, game_kwargs: dict[str, Any],
                     recorded: set[str] | None) -> Any:
    """The PSRO settings a resume continues with: the players the run has (``recorded``: its
    first iteration's meta-strategy keys; else, for a run whose ``settings.json`` predates
    ``players``, the seats). ``players=auto`` follows them; an explicit other value is
    refused in one line."""
    if recorded is None:
        try:
            saved = json.loads((run_dir / SETTINGS_NAME).read_text())
            section = saved["population"]["psro"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return psro_cfg  # nothing recorded to compare (run_folder's rule)
        if not isinstance(section, dict) or "players" in section:
            return psro_cfg
    import games

    with contextlib.closing(games.make(game, **game_kwargs)) as made:
        spec = made.spec
    ran = recorded if recorded is not None else set(spec.agent_ids)
    if set(psro_players(spec, psro_cfg.players)) == ran:
        return psro_cfg
    kind = None
    for k in ("seats", "teams"):
        with contextlib.suppress(ValueError):  # teams on a game of one team
            kind = k if set(psro_players(spec, k)) == ran else kind
    if psro_cfg.players != "auto" or kind is None:
        why = "it is from before that setting and " if recorded is None else ""
        raise RunFolderError(
            f"cannot resume {run_dir} with population.psro.players={psro_cfg.players!r}: "
            f"{why}its players are {kind or 'other'} ({sorted(ran)}); resume with "
            f"players=auto{f' or players={kind}' if kind else ''}")
    return dataclasses.replace(psro_cfg, players=kind)


def match_seed(seed: int, iteration: int) -> int:
    """The seed of iteration ``iteration``'s recorded matches: its own block of the run's
    ``match/psro`` stream (``seed + iteration`` made consecutive jobs share game seeds)."""
    return RunSeeds(seed).block(MATCH, "psro", index=iteration)


def _greedy(psro: PSRO) -> bool:
    """Whether the newest members are played greedily (off-policy oracles' snapshots)."""
    return all(isinstance(ms[-1].policy, GreedyPolicy) for ms in psro.members.values())


def _record_matches(db: LeagueDB, run_id: int, runner: Any, store: PolicyStore,
                    recorder: DBRecorder, cfg: ExperimentConfig, iteration: int,
                    greedy: bool = False,
                    seats_of: Mapping[str, tuple[str, ...]] | None = None) -> None:
    """The newest member of every player plays ``eval_episodes`` recorded episodes together
    (greedily where PSRO plays them greedily); a team's member holds each of its seats."""
    seats_of = seats_of or {agent: (agent,) for agent in recorder.snapshot}
    newest = {a: recorder.snapshot[p][-1] for p, seats in seats_of.items() for a in seats}
    job = MatchJob(key=f"psro/it{iteration:04d}", game=cfg.game.name,
                   seats={a: store.verify(store.get(s)).path for a, s in newest.items()},
                   episodes=cfg.eval_episodes, seed=match_seed(cfg.seed, iteration),
                   game_kwargs=dict(cfg.game.kwargs), greedy=greedy)
    (res,) = runner.play([job])
    game = _game_name(cfg)  # with its arguments, as runs
    db.add_matches(run_id, [MatchRow(f"{job.key}/e{e:04d}", game, newest, ret, job.seed)
                            for e, ret in enumerate(res.returns)])


def _made(cfg: ExperimentConfig) -> contextlib.closing[games.Game]:
    """The run's game, built for a look and closed after (``with _made(cfg) as game:``): a
    game may hold a renderer, a subprocess or a device's memory (``Game.close``)."""
    return contextlib.closing(games.make(cfg.game.name, **cfg.game.kwargs))


def _game_name(cfg: ExperimentConfig) -> str:
    """The run's game's name with its arguments (``kuhn_poker(players=3)``), as a run's rows
    record it; the game built to read it is closed."""
    with _made(cfg) as game:
        return game.spec.name
