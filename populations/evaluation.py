"""Evaluation matches between snapshots, and the payoffs and ratings derived from them.

Two snapshots of a two-team game meet in role-swapped episode pairs (see
``populations.ratings``). Every episode is recorded in the league database under a
key ``<pair key>/<ab|ba>/e<index>``, so re-running an evaluation after a crash records
nothing twice. Payoffs and ratings are recomputed from the recorded matches alone, so
they are the same however often a run was interrupted.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from games import ActionSpace, GameSpec
from marl.core import PolicyMeta
from populations.db import LeagueDB, MatchRow, SnapshotRow
from populations.ratings import PairOutcome, Ratings, pair_outcome
from populations.runners import MATCH_HINT, MatchJob, NonFiniteMatchError, Runner

log = logging.getLogger(__name__)

_KEY = re.compile(r"^(?P<pair>.+)/(?P<side>ab|ba)/e(?P<ep>\d+)$")


def pair_jobs(spec: GameSpec, game: str, game_kwargs: dict[str, Any], a: SnapshotRow,
              b: SnapshotRow, episodes: int, seed: int, key: str,
              num_envs: int = 8) -> list[MatchJob]:
    """The two role-swapped jobs of one pair: ``a`` on the first team, then ``b``."""
    if len(spec.teams) != 2:
        raise ValueError(f"pair evaluation needs a two-team game; {spec.name} has {spec.teams}")
    first = spec.teams[0]
    team = {ag.id: ag.team for ag in spec.agents}
    ab = {ag: (a.path if team[ag] == first else b.path) for ag in spec.agent_ids}
    ba = {ag: (b.path if team[ag] == first else a.path) for ag in spec.agent_ids}
    common = dict(game=game, episodes=episodes, seed=seed, game_kwargs=game_kwargs,
                  num_envs=num_envs)
    return [MatchJob(key=f"{key}/ab", seats=ab, **common),
            MatchJob(key=f"{key}/ba", seats=ba, **common)]


def seats_mismatch(meta: PolicyMeta, spec: GameSpec) -> str | None:
    """Why a policy recorded as ``meta`` cannot play its seats of ``spec`` (None: it can), in
    one line: ``"trained with 5 actions for adversary_0, adversary_1; vmas/simple_tag gives
    9"``. Its network has one output per action it was trained with and one input per
    observation feature, so a match of another size fails deep inside (PyTorch's "size of
    tensor a (9) must match the size of tensor b (5)").

    Checked for each seat of ``spec`` the policy holds: for a policy that reads observation
    vectors, their shape; then the action space it recorded (kind, number of discrete
    actions, shape of continuous ones); the first of the two that differs is named, seats
    differing alike together. A policy reading entity graphs fits graphs of any size, and
    one reading text (an LLM team) picks among the legal actions by their texts: no
    observation shape is checked for either, nor actions for text. Seats the policy does
    not hold are the caller's to refuse. Values read from a file are not escaped."""
    text = "text" in meta.inputs
    vectors = not ({"graph", "text"} & set(meta.inputs))
    actions: dict[tuple[str, str], list[str]] = {}
    shapes: dict[tuple[str, str], list[str]] = {}
    for agent in (a for a in spec.agent_ids if a in meta.agents):
        recorded = meta.action_spaces.get(agent)
        want, got = _space_text(recorded), _space_text(spec.action_spaces[agent])
        if not text and recorded is not None and want != got:
            actions.setdefault((want, _given(want, got)), []).append(agent)
        shape = meta.obs_shapes.get(agent)
        if vectors and shape is not None and tuple(shape) != tuple(spec.obs_shapes[agent]):
            key = (_shape(shape), _shape(spec.obs_shapes[agent]))
            shapes.setdefault(key, []).append(agent)
    if shapes:
        return "; ".join(f"trained on observations of shape {want} for {', '.join(agents)}; "
                         f"{spec.name} gives {got}" for (want, got), agents in shapes.items())
    if actions:
        return "; ".join(f"trained with {want} for {', '.join(agents)}; {spec.name} gives {got}"
                         for (want, got), agents in actions.items())
    return None


def _shape(shape: Any) -> str:
    """``(16,)``: a shape as Python writes a tuple."""
    return str(tuple(int(d) for d in shape))


def _space_text(space: ActionSpace | dict[str, Any]) -> str:
    """``5 actions``, ``continuous actions of shape (2,)``: an action space (a game's, or as
    :class:`marl.core.PolicyMeta` records it) in words."""
    d = space if isinstance(space, dict) else {"kind": space.kind, "n": space.n,
                                               "shape": space.shape}
    kind = d.get("kind")
    if kind == "discrete":
        n = d.get("n")
        return f"{n} action{'' if n == 1 else 's'}" if type(n) is int else f"n={n!r} actions"
    if kind == "continuous":
        shape = d.get("shape", ())
        return f"continuous actions of shape {_shape(shape)}"
    return f"actions of kind {kind!r}"


def _given(want: str, got: str) -> str:
    """What the game gives, as short as the difference allows: ``9`` after ``5 actions``."""
    if want.endswith(" actions") and got.endswith(" actions") and want[0].isdigit() \
            and got[0].isdigit():
        return got.removesuffix(" actions")
    if want.startswith("continuous") and got.startswith("continuous"):
        return got.removeprefix("continuous actions of ")
    return got


def evaluate_pairs(db: LeagueDB, run_id: int, runner: Runner, spec: GameSpec, game: str,
                   game_kwargs: dict[str, Any], pairs: Sequence[tuple[SnapshotRow, SnapshotRow]],
                   episodes: int, seed: int, prefix: str,
                   stop: Callable[[], bool] | None = None, batch: int = 1) -> int:
    """Play and record every pair; returns the number of new match rows.

    With ``stop``, pairs are played and recorded ``batch`` at a time, and the evaluation
    ends early once ``stop()`` is true (a CLI's stop request): each pair's jobs keep their
    seeds, so a resume playing the pairs left records what one call would have."""
    todo = []
    names: dict[str, str] = {}  # pair key -> its snapshots, for an error
    for i, (a, b) in enumerate(pairs):
        key = f"{prefix}/{a.id}-{b.id}"
        recorded = db.matches(run_id, key + "/")
        if recorded and all(_finite(m) for m in recorded):
            continue  # recorded before an interruption
        if recorded:  # an earlier version recorded a NaN return; played again (same seeds)
            log.warning("match %s: %d recorded episode(s) hold non-finite returns (recorded "
                        "by an earlier version); playing the pair again", key,
                        sum(not _finite(m) for m in recorded))
            db.delete_matches(run_id, key + "/")
        jobs = pair_jobs(spec, game, game_kwargs, a, b, episodes, seed + 7919 * i, key)
        first = spec.teams[0]
        team = {ag.id: ag.team for ag in spec.agents}
        seat_ids = [{ag: (a.id if team[ag] == first else b.id) for ag in spec.agent_ids},
                    {ag: (b.id if team[ag] == first else a.id) for ag in spec.agent_ids}]
        todo.append((jobs, seat_ids))
        names[key] = f"snapshots {_name(a)} vs {_name(b)}"
    size = max(1, batch) if stop is not None else max(1, len(todo))
    added = 0
    for at in range(0, len(todo), size):
        if stop is not None and stop():
            break
        jobs = [j for js, _ in todo[at:at + size] for j in js]
        seat_ids = [s for _, ss in todo[at:at + size] for s in ss]
        rows = []
        try:
            results = runner.play(jobs)
        except NonFiniteMatchError as err:  # name the snapshots, not their files
            pair = names.get(err.key.rpartition("/")[0])
            if pair is None or not err.detail:
                raise
            raise NonFiniteMatchError(f"{err.detail} ({pair}): {MATCH_HINT}", err.key,
                                      err.detail) from None
        for job, seats, res in zip(jobs, seat_ids, results, strict=True):
            for e, ret in enumerate(res.returns):
                rows.append(MatchRow(f"{job.key}/e{e:04d}", spec.name, seats, ret, job.seed))
        added += db.add_matches(run_id, rows)
    return added


def _name(s: SnapshotRow) -> str:
    return f"{s.member!r} v{s.version} (id {s.id})"


def _finite(match: MatchRow) -> bool:
    return all(np.isfinite(r) for r in match.returns.values())


def _score(match: MatchRow, sid: int) -> float:
    rets = [r for ag, r in match.returns.items() if match.seats.get(ag) == sid]
    return float(np.mean(rets)) if rets else 0.0


def pair_outcomes(matches: Iterable[MatchRow]) -> list[PairOutcome]:
    """Outcomes of every complete role-swapped episode pair, in recorded order."""
    halves: dict[tuple[str, str], dict[str, MatchRow]] = defaultdict(dict)
    order: list[tuple[str, str]] = []
    for m in matches:
        got = _KEY.match(m.key)
        if not got:
            continue
        k = (got["pair"], got["ep"])
        if k not in halves:
            order.append(k)
        halves[k][got["side"]] = m
    out = []
    for k in order:
        h = halves[k]
        if set(h) != {"ab", "ba"}:
            continue
        sids = sorted(set(h["ab"].seats.values()))
        if len(sids) != 2:
            continue
        first_team_sid = next(iter(h["ab"].seats.values()))
        a, b = first_team_sid, next(s for s in sids if s != first_team_sid)
        tot_a = _score(h["ab"], a) + _score(h["ba"], a)
        tot_b = _score(h["ab"], b) + _score(h["ba"], b)
        out.append(pair_outcome(a, b, tot_a, tot_b))
    return out


def recompute(db: LeagueDB, run_id: int, step: int) -> Ratings:
    """Payoffs and ratings from every recorded match; written to the database at ``step``.

    A payoff entry ``(a, b)`` holds the mean over ``a``'s role-swapped pairs against ``b`` of
    the per-episode margin (``a``'s team return minus ``b``'s; in a zero-sum game twice
    ``a``'s mean return), the win rate (draws count 1/2) and the number of pairs; ``(b, a)``
    holds the negated margin and ``1 -`` the win rate."""
    matches = db.matches(run_id)
    finite = [m for m in matches if _finite(m)]
    if len(finite) < len(matches):  # recorded before match play checked rewards
        log.warning("%d recorded match episode(s) of run %d have non-finite returns (NaN or "
                    "infinity, recorded by an earlier version); payoffs and ratings leave "
                    "them and their role-swapped halves out", len(matches) - len(finite),
                    run_id)
    outcomes = pair_outcomes(finite)
    ratings = Ratings()
    ratings.update(outcomes)
    acc: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    for o in outcomes:
        acc[(o.a, o.b)].append((o.margin / 2.0, o.score_a))
        acc[(o.b, o.a)].append((-o.margin / 2.0, 1.0 - o.score_a))
    db.set_payoffs(run_id, [
        (a, b, float(np.mean([v for v, _ in vals])), float(np.mean([w for _, w in vals])),
         len(vals), False)
        for (a, b), vals in acc.items()
    ])
    if ratings.elo:
        db.add_ratings(run_id, step, ratings.table())
    return ratings


def win_rates(db: LeagueDB, run_id: int, of: int, against: Sequence[int]) -> list[float | None]:
    """Estimated win rate of snapshot ``of`` against each of ``against`` (None if unplayed)."""
    table = {(p["row_snapshot"], p["col_snapshot"]): p["win_rate"] for p in db.payoffs(run_id)}
    return [table.get((of, s)) for s in against]


def round_robin(db: LeagueDB, run_id: int, runner: Runner, spec: GameSpec, game: str,
                game_kwargs: dict[str, Any], snapshots: Sequence[SnapshotRow], episodes: int,
                seed: int = 0, prefix: str = "rr") -> Ratings:
    """Every pair of ``snapshots`` plays ``episodes`` role-swapped pairs; returns ratings."""
    evaluate_pairs(db, run_id, runner, spec, game, game_kwargs,
                   list(itertools.combinations(snapshots, 2)), episodes, seed, prefix)
    return recompute(db, run_id, step=0)
