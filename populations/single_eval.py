"""A single run's evaluation (``population=none``): ``eval_episodes`` episodes of its
snapshot against uniformly random players in the other teams' seats, recorded as matches
``eval/e00000``, ``eval/e00001``... in ``league.db``; the learner team's mean return over them
(per episode the mean over its seats) with the half-width of its 95 % confidence interval
(Student's t), read back from the database on a resume; and the table cells and metrics
(``charts/eval_return``, ``charts/final_return``) that show them.

An LLM team's snapshot must move in every turn of an episode: where its output names no legal
action it plays its fallback (``llm.grpo.action.fallback``), also with
``llm.grpo.action.on_invalid=end``, a training rule (the rollout ends the episode there; a
match has no forfeit outcome to compare members by). Its legal rate over the evaluation's
moves (``charts/eval_legal_rate``, the table's ``eval_legal_rate``) says how much of
``eval_return`` the model earned: below :data:`LOW_LEGAL_RATE` a warning says the return
measures mostly the fallback moves.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

import games
from marl import registry
from marl.core import Learner
from marl.registry import LearnerEntry
from marl.train import RandomPolicy, check_episode_lengths
from populations.db import LeagueDB, MatchRow
from populations.loggers import MetricsLogger
from populations.run_figures import (  # one home, torch-free (python -m populations.sweep_summary)
    EVAL_LEGAL_RATE,
    EVAL_MATCHES,
    Evaluation,
    ci95,
    recorded_evaluation,
)
from populations.runners import MatchJob, play_job
from populations.seeds import OPPONENT, RunSeeds

if TYPE_CHECKING:
    from populations.experiment import ExperimentConfig

log = logging.getLogger("populations.experiment")  # a single run's log, as before the move

LOW_LEGAL_RATE = 0.5
"""Below this share of legal moves an LLM policy's evaluated return (or rating) is said to
measure mostly its fallback moves (one warning)."""


def legal_stats(pol: Any) -> Any | None:
    """An LLM policy's move counts (``llm_agents.policy.LegalStats``: ``decisions``,
    ``invalid``, ``rate``, subtractable) now; None for a policy that cannot name an illegal
    move (every classic learner's)."""
    stats = getattr(pol, "legal_stats", None)
    return stats() if callable(stats) else None


def fallback_note(pol: Any) -> str:
    """``llm.grpo.action.fallback=random``: what an LLM policy plays for invalid output, and,
    where it trained with ``on_invalid=end``, that evaluation plays it all the same."""
    action = getattr(pol, "action", None)
    fallback = getattr(action, "fallback", "?")
    note = f"llm.grpo.action.fallback={fallback}"
    if getattr(action, "on_invalid", None) == "end":
        note += ("; on_invalid=end ends episodes in training only: a match or an evaluation "
                 "needs a move, so it plays the fallback")
    return note


def low_legal_warning(what: str, rate: float, moves: int, measured: str, pol: Any) -> str:
    """The one warning line for an LLM policy whose ``rate`` of legal moves over ``moves``
    is below :data:`LOW_LEGAL_RATE` (``measured``: ``its eval_return``, ``its rating``)."""
    return (f"{what} named a legal action in {rate:.0%} of its {moves} evaluated moves: "
            f"{measured} measures mostly the fallback moves it played for the rest "
            f"({fallback_note(pol)}), not the model")


def random_seats(spec: games.GameSpec, agents: tuple[str, ...], seeds: RunSeeds,
                 *path: str | int) -> dict[str, RandomPolicy]:
    """A uniformly random policy in every seat outside ``agents``, each on its own
    ``opponent/<seat>[/<path>]`` stream (one shared seed made the seats of a team move in
    lockstep)."""
    return {a: RandomPolicy(spec, seed=seeds.stream(OPPONENT, a, *path))
            for a in spec.agent_ids if a not in agents}


def evaluated_greedily(entry: LearnerEntry) -> bool:
    """Off-policy learners explore with noise or ε while training; their snapshots are
    evaluated greedily (on-policy ones by sampling, as they trained): the rule of every match
    (:func:`marl.registry.played_greedy`, by the policy kind the learner saves)."""
    return registry.played_greedy(entry.policy)


@dataclass
class PolicySeats:
    """A trained policy and the seats it holds (what ``evaluate_single`` needs)."""

    pol: Any
    agents: tuple[str, ...]

    def policy(self) -> Any:
        return self.pol


def evaluation_cost_note(cfg: ExperimentConfig, spec: games.GameSpec, trained: int,
                         played: int, episodes: int) -> str | None:
    """A line saying the evaluation will play more frames than the training did, with the
    setting that lowers it; None when it plays fewer. ``trained``: the run's frames;
    ``played``/``episodes``: the frames this process trained and the episodes that ended in
    them (an episode's length is their ratio). When none ended, the game's ``max_steps`` is
    the only length known: a bound, said ``up to`` (OpenSpiel's chinese_checkers allows
    22,000 steps; its random games end near 1,000). ``pursuit_v5`` (500 cycles) trained 2,400
    frames in minutes, then its 32 evaluation episodes (16,000 frames) ran on with no word.

    The value it suggests plays about as many frames as training, and never fewer than 2
    episodes, the fewest with a confidence interval (``eval_ci95``; one episode has none):
    where even 2 play more, it says what 2 play."""
    bound = not episodes
    length = spec.max_steps if bound else min(spec.max_steps, played / episodes)
    frames = round(cfg.eval_episodes * length)
    if frames <= trained:
        return None
    about = "up to" if bound else "about"
    cost = (f"up to {spec.max_steps} steps each (the game's longest: no training episode "
            f"ended), up to ~{frames} frames against the {trained} frames trained") if bound \
        else f"about {length:.3g} steps each, ~{frames} frames, more than the {trained} " \
        "frames trained"
    fits = min(int(trained // max(length, 1)), cfg.eval_episodes)
    if fits >= 2:
        value = f"eval_episodes={fits} plays {'at most' if bound else 'about'} as many as " \
            "training"
    elif cfg.eval_episodes > 2:
        value = f"2 episodes, the fewest with a confidence interval, play {about} " \
            f"~{round(2 * length)} frames"
    elif cfg.eval_episodes == 2:
        value = "2, the fewest with a confidence interval"
    else:
        value = "1, the fewest, gives no confidence interval"
    return (f"evaluation: {cfg.eval_episodes} episodes of {cost}; eval_episodes= sets how "
            f"many ({value})")


def evaluate_single(db: LeagueDB, run_id: int, cfg: ExperimentConfig, spec: games.GameSpec,
                    sid: int, learner: Learner, others: dict, vkw: dict
                    ) -> Evaluation | None:
    """Record ``eval_episodes`` episodes of the snapshot (random seats elsewhere) as matches,
    with a progress bar of episodes (long games, e.g. chess, take minutes); returns the
    learner team's mean return over the recorded ones and its uncertainty
    (:func:`recorded_evaluation`)."""
    from marl.progress import tqdm

    log.info("evaluating the trained policy: %d episodes%s", cfg.eval_episodes,
             " against random seats" if set(spec.agent_ids) - set(learner.agents) else "")
    pol = learner.policy()
    # its sampling stream from the run's tree: every policy started on one stream, so two
    # seeds' evaluations of like policies drew the same actions (identical episodes)
    pol.reseed(RunSeeds(cfg.seed).stream("eval", "policy"))
    vg = games.VectorGame(cfg.game.name, min(cfg.num_envs, cfg.eval_episodes),
                          seed=RunSeeds(cfg.seed).game("eval"), **vkw, **cfg.game.kwargs)
    seats = {a: pol if a in learner.agents else others[a] for a in spec.agent_ids}
    greedy = evaluated_greedily(registry.get(cfg.algo))
    moves_before = legal_stats(pol)
    vs = vg.reset()
    rows: list[MatchRow] = []
    bar = tqdm(total=cfg.eval_episodes, disable=not cfg.progress, unit="episode",
               desc="evaluation", dynamic_ncols=True, smoothing=0)  # the overall rate
    t = np.zeros(vg.num_envs, np.int64)  # [B] steps of each copy's running episode
    longest = f" of up to {spec.max_steps}" if spec.max_steps else ""
    while len(rows) < cfg.eval_episodes:
        vs = vg.step({a: p.act(a, vs, greedy=greedy) for a, p in seats.items()})
        check_episode_lengths(vs, spec, "evaluation")
        t += 1  # the bar moves within episodes of 1000 steps (0/32 for minutes before)
        bar.note(f"running episodes at step {int(t.max())}{longest}")
        t[np.asarray(vs.done.cpu() if hasattr(vs.done, "cpu") else vs.done, bool)] = 0
        for b in np.flatnonzero(vs.done):
            rows.append(MatchRow(f"{EVAL_MATCHES}{len(rows):05d}", spec.name,
                                 {a: sid for a in learner.agents},
                                 {a: float(vs.episode_return[a][b]) for a in spec.agent_ids}))
        bar.update(min(len(rows), cfg.eval_episodes) - bar.n)
    bar.set_postfix_str("", refresh=False)  # its last line: the episodes, all ended
    bar.close()
    db.add_matches(run_id, rows[: cfg.eval_episodes])
    evaluated = recorded_evaluation(db, run_id, sid, cfg.eval_episodes)  # as a resume reads it
    moves = None if moves_before is None else legal_stats(pol) - moves_before
    if evaluated is not None and moves is not None:
        evaluated = dataclasses.replace(evaluated, legal_rate=moves.rate)
    if evaluated is not None:
        ci = "" if evaluated.ci95 is None else \
            f"; 95 % confidence interval ±{evaluated.ci95:.3f} (the table's eval_ci95)"
        low = moves is not None and moves.rate is not None and moves.rate < LOW_LEGAL_RATE
        legal = "" if moves is None or moves.rate is None else \
            f"; legal rate {moves.rate:.3f} over its {moves.decisions} moves (the table's " \
            "eval_legal_rate" + ("" if low or moves.rate == 1.0 else
                                 f"; the rest its fallback's: {fallback_note(pol)}") + ")"
        log.info("evaluation: mean return %.3f over %d %s episodes of the snapshot%s (the "
                 "table's eval_return)%s%s", round(evaluated.mean, 3) + 0.0, cfg.eval_episodes,
                 "greedy" if greedy else "sampled",
                 " against random seats" if set(spec.agent_ids) - set(learner.agents) else "",
                 ci, legal)
        if low:
            log.warning("evaluation: %s", low_legal_warning(
                "the snapshot", moves.rate, moves.decisions, "its eval_return", pol))
    return evaluated


def mean_eval_return(db: LeagueDB, run_id: int, sid: int | None,
                     episodes: int | None = None) -> float | None:
    """The mean of :func:`recorded_evaluation` (None when none is recorded)."""
    evaluated = recorded_evaluation(db, run_id, sid, episodes)
    return None if evaluated is None else evaluated.mean


def log_eval_return(db: LeagueDB, run_id: int, logger: MetricsLogger, step: int,
                    evaluated: Evaluation | None, final_return: float | None = None) -> None:
    """``charts/eval_return``, ``charts/eval_return_ci95`` (and an LLM team's
    ``charts/eval_legal_rate``) at the run's last step (the
    dashboard's return chart, metrics.csv), and beside them ``charts/final_return``: the
    table's mean return of the last (up to) 50 training episodes, so every return of the
    table is a metric."""
    metrics = {}
    if final_return is not None:
        metrics["charts/final_return"] = final_return
    if evaluated is not None:
        metrics["charts/eval_return"] = evaluated.mean
        if evaluated.ci95 is not None:
            metrics["charts/eval_return_ci95"] = evaluated.ci95
        if evaluated.legal_rate is not None:
            metrics[EVAL_LEGAL_RATE] = evaluated.legal_rate
    if metrics:
        db.log_metrics(run_id, step, metrics)
        logger.log(step, metrics)


@dataclass(frozen=True)
class AloneResult:
    """A policy file played alone on every seat of a game (a cooperative game's one team):
    each episode's team return (the mean over the seats), their mean as an
    :class:`Evaluation` (with the LLM team's legal rate), the moves counted
    (``llm_agents.policy.LegalStats``; None for a policy that cannot play an illegal one) and
    each episode's success as the game reported it (``MatchResult.successes``)."""

    returns: list[dict[str, float]]
    evaluation: Evaluation
    moves: Any | None
    successes: list[bool | None] = field(default_factory=list)


def evaluate_alone(path: str, game: str, game_kwargs: dict[str, Any], episodes: int,
                   seed: int, key: str, cache: dict[str, Any] | None = None,
                   tick: Callable[[int], None] | None = None) -> AloneResult:
    """``episodes`` episodes of the policy file ``path`` in every seat of ``game``, played as
    a league match plays a seat (:func:`populations.runners.play_job`: sampled, or greedy for
    an off-policy learner's snapshot; seeded by ``seed``), in this process so that an LLM
    policy's moves are counted. ``cache``: policies loaded before, by file; ``tick``: called
    with the count of episodes ended as they end (:func:`populations.runners.play_job`)."""
    cache = {} if cache is None else cache
    made = games.make(game, **game_kwargs)
    spec = made.spec
    made.close()  # its spec only: the match makes its own copies
    job = MatchJob(key=key, game=game, seats=dict.fromkeys(spec.agent_ids, path),
                   episodes=episodes, seed=seed, game_kwargs=game_kwargs)
    before = legal_stats(cache[path]) if path in cache else None
    result = play_job(job, cache, tick=tick)
    after = legal_stats(cache[path])
    moves = None if after is None else after - before if before is not None else after
    team = [float(np.mean([r[a] for a in spec.agent_ids])) for r in result.returns]
    evaluation = Evaluation(float(np.mean(team)), ci95(team), len(team),
                            None if moves is None else moves.rate)
    return AloneResult(result.returns, evaluation, moves, result.successes)

