"""A single run's evaluation (``population=none``): ``eval_episodes`` episodes of its
snapshot against uniformly random players in the other teams' seats, recorded as matches
``eval/e00000``, ``eval/e00001``... in ``league.db``; the learner team's mean return over them
(per episode the mean over its seats) with the half-width of its 95 % confidence interval
(Student's t), read back from the database on a resume; and the table cells and metrics
(``charts/eval_return``, ``charts/final_return``) that show them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

import games
from marl import registry
from marl.core import Learner
from marl.registry import LearnerEntry
from marl.train import RandomPolicy, check_episode_lengths
from populations.db import LeagueDB, MatchRow
from populations.loggers import MetricsLogger
from populations.seeds import OPPONENT, RunSeeds

if TYPE_CHECKING:
    from populations.experiment import ExperimentConfig

log = logging.getLogger("populations.experiment")  # a single run's log, as before the move


def random_seats(spec: games.GameSpec, agents: tuple[str, ...], seeds: RunSeeds,
                 *path: str | int) -> dict[str, RandomPolicy]:
    """A uniformly random policy in every seat outside ``agents``, each on its own
    ``opponent/<seat>[/<path>]`` stream (one shared seed made the seats of a team move in
    lockstep)."""
    return {a: RandomPolicy(spec, seed=seeds.stream(OPPONENT, a, *path))
            for a in spec.agent_ids if a not in agents}


def _greedy(entry: LearnerEntry) -> bool:
    """Off-policy learners explore with noise or ε while training; their snapshots are
    evaluated greedily (on-policy ones by sampling, as they trained): the rule of every match
    (:func:`marl.registry.played_greedy`, by the policy kind the learner saves)."""
    return registry.played_greedy(entry.policy)


@dataclass
class _Seats:
    """A trained policy and the seats it holds (what ``_evaluate_single`` needs)."""

    pol: Any
    agents: tuple[str, ...]

    def policy(self) -> Any:
        return self.pol


def _evaluate_single(db: LeagueDB, run_id: int, cfg: ExperimentConfig, spec: games.GameSpec,
                     sid: int, learner: Learner, others: dict, vkw: dict
                     ) -> Evaluation | None:
    """Record ``eval_episodes`` episodes of the snapshot (random seats elsewhere) as matches,
    with a progress bar of episodes (long games, e.g. chess, take minutes); returns the
    learner team's mean return over the recorded ones and its uncertainty
    (:func:`_evaluation`)."""
    from tqdm.auto import tqdm

    log.info("evaluating the trained policy: %d episodes%s", cfg.eval_episodes,
             " against random seats" if set(spec.agent_ids) - set(learner.agents) else "")
    pol = learner.policy()
    # its sampling stream from the run's tree: every policy started on one stream, so two
    # seeds' evaluations of like policies drew the same actions (identical episodes)
    pol.reseed(RunSeeds(cfg.seed).stream("eval", "policy"))
    vg = games.VectorGame(cfg.game.name, min(cfg.num_envs, cfg.eval_episodes),
                          seed=RunSeeds(cfg.seed).game("eval"), **vkw, **cfg.game.kwargs)
    seats = {a: pol if a in learner.agents else others[a] for a in spec.agent_ids}
    greedy = _greedy(registry.get(cfg.algo))
    vs = vg.reset()
    rows: list[MatchRow] = []
    bar = tqdm(total=cfg.eval_episodes, disable=not cfg.progress, unit="episode",
               desc="evaluation", dynamic_ncols=True, smoothing=0)  # the overall rate
    while len(rows) < cfg.eval_episodes:
        vs = vg.step({a: p.act(a, vs, greedy=greedy) for a, p in seats.items()})
        check_episode_lengths(vs, spec, "evaluation")
        for b in np.flatnonzero(vs.done):
            rows.append(MatchRow(f"{EVAL_MATCHES}{len(rows):05d}", spec.name,
                                 {a: sid for a in learner.agents},
                                 {a: float(vs.episode_return[a][b]) for a in spec.agent_ids}))
        bar.update(min(len(rows), cfg.eval_episodes) - bar.n)
    bar.close()
    db.add_matches(run_id, rows[: cfg.eval_episodes])
    evaluated = _evaluation(db, run_id, sid, cfg.eval_episodes)  # as a resume reads it
    if evaluated is not None:
        ci = "" if evaluated.ci95 is None else \
            f"; 95 % confidence interval ±{evaluated.ci95:.3f} (the table's eval_ci95)"
        log.info("evaluation: mean return %.3f over %d %s episodes of the snapshot%s (the "
                 "table's eval_return)%s", round(evaluated.mean, 3) + 0.0, cfg.eval_episodes,
                 "greedy" if greedy else "sampled",
                 " against random seats" if set(spec.agent_ids) - set(learner.agents) else "",
                 ci)
    return evaluated


EVAL_MATCHES = "eval/e"  # a single run's evaluation matches: eval/e00000, eval/e00001, ...


@dataclass(frozen=True)
class Evaluation:
    """A single run's evaluation of its snapshot: the learner team's mean return over
    ``episodes`` episodes and the half-width of that mean's 95 % confidence interval
    (Student's t over the episodes' returns; None below two episodes)."""

    mean: float
    ci95: float | None
    episodes: int


def _evaluation(db: LeagueDB, run_id: int, sid: int | None,
                episodes: int | None = None) -> Evaluation | None:
    """The learner team's returns in a single run's recorded evaluation matches of snapshot
    ``sid`` (the first ``episodes`` of them, in the order they were played; a resume with
    another ``eval_episodes`` keeps the rows recorded before): per episode the mean over the
    seats it held, as ``final_return`` (and ``marl.train``'s ``charts/episode_return``, an
    LLM team's ``charts/team_return``) counts an episode; then their mean and its 95 %
    confidence half-width; None when none is recorded."""
    # eval/e00000 ... eval/e99999, eval/e100000: by length, then text (text alone put
    # e100000 before e10001)
    mine = sorted((m for m in db.matches(run_id, EVAL_MATCHES)
                   if m.seats and set(m.seats.values()) == {sid}),
                  key=lambda m: (len(m.key), m.key))
    per_episode = [float(np.mean([m.returns[a] for a in m.seats])) for m in mine[:episodes]]
    if not per_episode:
        return None
    return Evaluation(float(np.mean(per_episode)), ci95(per_episode), len(per_episode))


def ci95(values: list[float]) -> float | None:
    """The half-width of the 95 % confidence interval of the mean of ``values`` (Student's
    t with n - 1 degrees of freedom: 2.04 × std / √n at 32 episodes); None below two."""
    n = len(values)
    if n < 2:
        return None
    from scipy.stats import t

    return float(t.ppf(0.975, n - 1) * np.std(values, ddof=1) / np.sqrt(n))


def _eval_return(db: LeagueDB, run_id: int, sid: int | None,
                 episodes: int | None = None) -> float | None:
    """The mean of :func:`_evaluation` (None when none is recorded)."""
    evaluated = _evaluation(db, run_id, sid, episodes)
    return None if evaluated is None else evaluated.mean


def _log_eval_return(db: LeagueDB, run_id: int, logger: MetricsLogger, step: int,
                     evaluated: Evaluation | None, final_return: float | None = None) -> None:
    """``charts/eval_return`` and ``charts/eval_return_ci95`` at the run's last step (the
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
    if metrics:
        db.log_metrics(run_id, step, metrics)
        logger.log(step, metrics)


def _eval_cells(evaluated: Evaluation | None) -> dict[str, float | None]:
    """A table row's ``eval_return`` and ``eval_ci95`` (None when not recorded)."""
    if evaluated is None:
        return {"eval_return": None, "eval_ci95": None}
    return {"eval_return": _rounded(evaluated.mean), "eval_ci95": _rounded(evaluated.ci95)}


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(float(x), 3)
