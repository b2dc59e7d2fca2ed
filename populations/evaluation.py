"""Evaluation matches between snapshots, and the payoffs and ratings derived from them.

Two snapshots of a two-team game meet in role-swapped episode pairs (see
``populations.ratings``). Every episode is recorded in the league database under a
key ``<pair key>/<ab|ba>/e<index>``, so re-running an evaluation after a crash records
nothing twice. Payoffs and ratings are computed from the recorded matches alone, so
they are the same however often a run was interrupted; a league folds in each
generation's new matches (:class:`Standings`) to the numbers a replay of all of them from
scratch gives (:func:`recompute`).
"""

from __future__ import annotations

import itertools
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
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
    actions, shape of continuous ones, and a box's bounds); the first of the two that
    differs is named, seats differing alike together. A policy reading entity graphs fits
    graphs of any size, and one reading text (an LLM team) picks among the legal actions by
    their texts: no observation shape is checked for either, nor actions for text. Seats the
    policy does not hold are the caller's to refuse. Values read from a file are not escaped.

    A continuous policy maps its outputs onto the box it recorded (``Actor.to_game``,
    MADDPG's actors) whatever the game says, so a recorded box reaching outside the game's
    in a dimension is refused: ``Game.step`` refused such actions one step into a match
    (VMAS's batches clamped them), as kinematic_bicycle snapshots recorded [-1, 1] of
    steering before boxes had bounds per dimension (it steers in [-0.52, 0.52]). Clamping
    would play a policy other than the one trained. A recorded box inside the game's plays
    as trained: every action it sends is legal."""
    text = "text" in meta.inputs
    vectors = not ({"graph", "text"} & set(meta.inputs))
    actions: dict[tuple[str, str], list[str]] = {}
    shapes: dict[tuple[str, str], list[str]] = {}
    for agent in (a for a in spec.agent_ids if a in meta.agents):
        recorded = meta.action_spaces.get(agent)
        game_space = spec.action_spaces[agent]
        want, got = _space_text(recorded), _space_text(game_space)
        if not text and recorded is not None and want != got:
            actions.setdefault((want, _given(want, got)), []).append(agent)
        elif not text and recorded is not None and not game_space.discrete:
            box = _box_outside(recorded, game_space)
            if box is not None:
                actions.setdefault(box, []).append(agent)
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


def _box_outside(recorded: dict[str, Any], space: ActionSpace) -> tuple[str, str] | None:
    """``("continuous actions in [-1, 1] in each dimension", "[-1, 1] x [-0.523599, 0.523599],
    and its actions would leave that box")`` when the box
    a policy ``recorded`` (as :class:`PolicyMeta` holds it) reaches outside ``space``'s (a
    game's box of the same shape) in a dimension, by more than the ``1e-6`` ``Game.step``
    lets pass; None when it lies inside (or cannot be read: ``load_policy`` refuses that)."""
    try:
        low, high = ActionSpace(**{**recorded, "shape": tuple(recorded.get("shape", ()))}
                                ).bounds()
    except (TypeError, ValueError):  # GameError is a ValueError
        return None
    game_low, game_high = space.bounds()
    if np.all(low >= game_low - 1e-6) and np.all(high <= game_high + 1e-6):
        return None
    return (f"continuous actions in {_box_text(low, high)}",
            f"{_box_text(game_low, game_high)}, and its actions would leave that box")


def _box_text(low: np.ndarray, high: np.ndarray) -> str:
    """``[-1, 1]`` (one dimension), ``[-1, 1] in each dimension`` (every dimension alike) or
    ``[-1, 1] x [-0.523599, 0.523599]`` (one interval per dimension)."""
    pairs = [f"[{lo:g}, {hi:g}]" for lo, hi in zip(low.flat, high.flat, strict=True)]
    if len(set(pairs)) > 1:
        return " x ".join(pairs)
    return pairs[0] + (" in each dimension" if len(pairs) > 1 else "")


def _given(want: str, got: str) -> str:
    """What the game gives, as short as the difference allows: ``9`` after ``5 actions``."""
    if want.endswith(" actions") and got.endswith(" actions") and want[0].isdigit() \
            and got[0].isdigit():
        return got.removesuffix(" actions")
    if want.startswith("continuous") and got.startswith("continuous"):
        return got.removeprefix("continuous actions of ")
    return got


@dataclass(frozen=True)
class PairsPlayed:
    """What :func:`evaluate_pairs` played: ``added`` new match rows, and ``moves[snapshot
    id]`` = (moves, fallbacks) of each snapshot whose policy counts its moves (an LLM
    team's: how many of its moves were its fallback's, played for output naming no legal
    action), over the pairs played by this call (not those recorded before it)."""

    added: int
    moves: dict[int, tuple[int, int]] = field(default_factory=dict)

    def legal_rate(self, sid: int) -> float | None:
        """The share of snapshot ``sid``'s moves that named a legal action (None: it counted
        none here)."""
        moves, fallbacks = self.moves.get(sid, (0, 0))
        return None if moves == 0 else 1.0 - fallbacks / moves


def evaluate_pairs(db: LeagueDB, run_id: int, runner: Runner, spec: GameSpec, game: str,
                   game_kwargs: dict[str, Any], pairs: Sequence[tuple[SnapshotRow, SnapshotRow]],
                   episodes: int, seed: int, prefix: str,
                   stop: Callable[[], bool] | None = None, batch: int = 1,
                   tick: Callable[[int], None] | None = None,
                   note: Callable[..., None] | None = None) -> PairsPlayed:
    """Play and record every pair; returns the number of new match rows and the moves of
    the snapshots that count theirs (:class:`PairsPlayed`).

    With ``stop``, pairs are played and recorded ``batch`` at a time, and the evaluation
    ends early once ``stop()`` is true (a CLI's stop request): each pair's jobs keep their
    seeds, so a resume playing the pairs left records what one call would have. ``tick``
    (a progress bar) is told the pairs done (recorded before included) after each batch;
    with it, pairs are played ``batch`` at a time too. ``note`` (the bar's postfix,
    :meth:`marl.progress.tqdm.note`) is told the episodes the batch has played as each
    ends, by a runner that says (``LocalRunner.on_episodes``): a pair of long episodes, or
    of an LLM team's, plays for minutes."""
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
    size = max(1, batch) if stop is not None or tick is not None else max(1, len(todo))
    added = 0
    moves: dict[int, tuple[int, int]] = {}
    if tick is not None:
        tick(len(pairs) - len(todo))
    for at in range(0, len(todo), size):
        if stop is not None and stop():
            break
        jobs = [j for js, _ in todo[at:at + size] for j in js]
        seat_ids = [s for _, ss in todo[at:at + size] for s in ss]
        rows = []
        try:
            with _episodes_noted(runner, note, sum(j.episodes for j in jobs)):
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
            sid_of = {job.seats[ag]: sid for ag, sid in seats.items()}
            for path, (n, bad) in res.moves.items():
                had = moves.get(sid_of[path], (0, 0))
                moves[sid_of[path]] = (had[0] + n, had[1] + bad)
        added += db.add_matches(run_id, rows)
        if tick is not None:
            tick(len(pairs) - len(todo) + min(at + size, len(todo)))
    return PairsPlayed(added, moves)


@contextmanager
def _episodes_noted(runner: Runner, note: Callable[..., None] | None,
                    total: int) -> Iterator[None]:
    """``note`` told ``3/16 episodes`` as a batch's ``total`` episodes end, by a runner that
    says (``on_episodes``, told the batch's episodes ended so far: in process; a Ray
    worker's come back whole)."""
    if note is None or not hasattr(runner, "on_episodes"):
        yield
        return

    def ended(done: int) -> None:
        note(f"{done}/{total} episodes", now=done == total)

    note(f"0/{total} episodes")
    runner.on_episodes = ended  # type: ignore[attr-defined]
    try:
        yield
    finally:
        runner.on_episodes = None  # type: ignore[attr-defined]


def _name(s: SnapshotRow) -> str:
    return f"{s.member!r} v{s.version} (id {s.id})"


def _finite(match: MatchRow) -> bool:
    return all(math.isfinite(r) for r in match.returns.values())


def _score(match: MatchRow, sid: int) -> float:
    rets = [r for ag, r in match.returns.items() if match.seats.get(ag) == sid]
    if len(rets) == 1:  # one seat a team (most games): its return, without numpy's overhead
        return float(rets[0])
    return float(np.mean(rets)) if rets else 0.0


def pair_outcomes(matches: Iterable[MatchRow]) -> list[PairOutcome]:
    """Outcomes of every complete role-swapped episode pair, in recorded order (of each
    pair's first recorded half)."""
    halves: dict[tuple[str, str], dict[str, MatchRow]] = {}
    for m in matches:
        got = _KEY.match(m.key)
        if got:
            halves.setdefault((got["pair"], got["ep"]), {})[got["side"]] = m
    return [o for o in map(_outcome, halves.values()) if o is not None]


def _outcome(h: dict[str, MatchRow]) -> PairOutcome | None:
    """The outcome of one role-swapped episode pair (None: a half is missing, or its seats
    do not hold two snapshots)."""
    if set(h) != {"ab", "ba"}:
        return None
    sids = sorted(set(h["ab"].seats.values()))
    if len(sids) != 2:
        return None
    first_team_sid = next(iter(h["ab"].seats.values()))
    a, b = first_team_sid, next(s for s in sids if s != first_team_sid)
    tot_a = _score(h["ab"], a) + _score(h["ba"], a)
    tot_b = _score(h["ab"], b) + _score(h["ba"], b)
    return pair_outcome(a, b, tot_a, tot_b)


class Standings:
    """A run's payoffs and ratings, kept up to date from its recorded matches.

    Matches are only ever appended (``evaluate_pairs`` deletes a pair's episodes only to
    replay ones an earlier version recorded with a NaN), and ratings replay the outcomes in
    recorded order, so :meth:`update` folds in only the matches recorded since its last
    call: Elo and Plackett-Luce go on from their state, each payoff entry from its running
    sums, and only the entries and ratings that changed are written. The result is the
    replay of every match from scratch (:func:`recompute`), to the bit: an outcome whose
    first half came before outcomes already folded (a half recorded alone, completed later),
    or a recorded match deleted, starts the replay over from the database. A new object
    (a resumed run) replays once from the database; ``read`` counts the match rows it
    decoded (work, for tests)."""

    def __init__(self, db: LeagueDB, run_id: int) -> None:
        self.db, self.run_id = db, run_id
        self.read = 0
        self._start()

    def _start(self) -> None:
        self.ratings = Ratings()
        # (a, b) -> [pairs, sum of a's margin per episode, sum of a's score]
        self.cells: dict[tuple[int, int], list[float]] = {}
        self._halves: dict[tuple[str, str], tuple[int, dict[str, MatchRow]]] = {}  # pending
        self._order = 0  # pairs of halves seen: the recorded order of their first half
        self._folded = -1  # the latest such order among outcomes folded in
        # the last match row id read, when it was recorded, and the rows read up to it
        self._last, self._at, self._seen = 0, 0.0, 0
        self._fresh = True  # nothing written yet: compare what is stored

    def update(self, step: int) -> Ratings:
        """Fold in the matches recorded since the last call and write the payoff entries
        and ratings (at ``step``) that changed; returns the ratings."""
        if self._seen and self.db.matches_mark(self.run_id, self._last) != (
                self._seen, self._at):
            self._start()  # a match read before was deleted (and replayed): from scratch
        rows = self.db.matches_after(self.run_id, self._last)
        done = self._fold(rows)
        if done is None:  # an outcome goes before ones already folded: from scratch
            self._start()
            rows = self.db.matches_after(self.run_id, 0)
            done = self._fold(rows)
            assert done is not None  # one pass over everything keeps the recorded order
        bad = sum(not _finite(m) for _, _, m in rows)
        if bad:  # recorded before match play checked rewards
            log.warning("%d recorded match episode(s) of run %d have non-finite returns (NaN "
                        "or infinity, recorded by an earlier version); payoffs and ratings "
                        "leave them and their role-swapped halves out", bad, self.run_id)
        outcomes = [o for _, o in sorted(done, key=lambda x: x[0])]
        self.ratings.update(outcomes)
        touched: dict[tuple[int, int], None] = {}
        for o in outcomes:
            for cell, margin, score in (((o.a, o.b), o.margin / 2.0, o.score_a),
                                        ((o.b, o.a), -o.margin / 2.0, 1.0 - o.score_a)):
                acc = self.cells.setdefault(cell, [0, 0.0, 0.0])
                acc[0] += 1
                acc[1] += margin
                acc[2] += score
                touched[cell] = None
        self._write(touched, {s for o in outcomes for s in (o.a, o.b)}, step)
        return self.ratings

    def _fold(self, rows: Sequence[tuple[int, float, MatchRow]]
              ) -> list[tuple[int, PairOutcome]] | None:
        """Pair up ``rows`` with the halves pending; the outcomes completed, each with the
        order of its first half (None: one goes before an outcome folded in before)."""
        done = []
        for rid, at, m in rows:
            self._last, self._at = rid, at
            self._seen, self.read = self._seen + 1, self.read + 1
            got = _KEY.match(m.key) if _finite(m) else None
            if not got:
                continue
            k = (got["pair"], got["ep"])
            if k not in self._halves:
                self._halves[k] = (self._order, {})
                self._order += 1
            order, halves = self._halves[k]
            halves[got["side"]] = m
            if set(halves) == {"ab", "ba"}:
                del self._halves[k]
                if order < self._folded:
                    return None
                o = _outcome(halves)
                if o is not None:
                    done.append((order, o))
        self._folded = max([self._folded, *(order for order, _ in done)])
        return done

    def _write(self, cells: Iterable[tuple[int, int]], rated: set[int], step: int) -> None:
        """Write payoff entries ``cells`` and the ratings of snapshots ``rated`` (after a
        start from scratch: every entry, and every rating that differs from the newest one
        stored)."""
        if self._fresh:
            cells, self._fresh = self.cells, False
            stored = self.db.latest_ratings(self.run_id)
            rated = {s for s, *now in self.ratings.table()
                     if s not in stored or tuple(now) != tuple(
                         stored[s][k] for k in ("elo", "mu", "sigma", "matches"))}
        self.db.set_payoffs(self.run_id, [
            (a, b, v[1] / v[0], v[2] / v[0], int(v[0]), False)
            for a, b in cells for v in (self.cells[(a, b)],)])
        rows = [r for r in self.ratings.table() if r[0] in rated]
        if rows:
            self.db.add_ratings(self.run_id, step, rows)


def recompute(db: LeagueDB, run_id: int, step: int) -> Ratings:
    """Payoffs and ratings from every recorded match, replayed from scratch; written to the
    database at ``step`` (the ratings that differ from the newest stored ones).

    A payoff entry ``(a, b)`` holds the mean over ``a``'s role-swapped pairs against ``b`` of
    the per-episode margin (``a``'s team return minus ``b``'s; in a zero-sum game twice
    ``a``'s mean return), the win rate (draws count 1/2) and the number of pairs; ``(b, a)``
    holds the negated margin and ``1 -`` the win rate. A league keeps a :class:`Standings`
    instead, which folds in each generation's new matches alone, to the same numbers."""
    return Standings(db, run_id).update(step)


def win_rates(db: LeagueDB, run_id: int, of: int, against: Sequence[int]) -> list[float | None]:
    """Estimated win rate of snapshot ``of`` against each of ``against`` (None if unplayed)."""
    table = {p["col_snapshot"]: p["win_rate"] for p in db.payoff_rows(run_id, [of])}
    return [table.get(s) for s in against]


def pfsp_win_rates(db: LeagueDB, run_id: int, own: Sequence[SnapshotRow],
                   against: Sequence[SnapshotRow]) -> list[float | None]:
    """The win rates a matchmaking rule weighs the candidates ``against`` by, for the member
    whose snapshots are ``own`` (oldest first, the learner's latest last).

    Against a snapshot the latest was evaluated against, its measured win rate: every
    earlier one with ``eval_window=0``. ``eval_window=k`` evaluates a snapshot only against
    the k published before it, so against an older one the latest never met, the win rate
    of the member's newest snapshot that was evaluated against it and published after it
    (or in its generation): the most recent evidence, where a default of 0.5 would flatten
    PFSP into uniform FSP (96.7 % of its mass on such opponents at 118 snapshots with
    ``eval_window=2``). None (a rule counts it 0.5) against the latest itself (even by
    symmetry) and against a snapshot none of the member's met."""
    if not own:
        return [None] * len(against)
    latest = own[-1]
    rates = win_rates(db, run_id, latest.id, [s.id for s in against])
    missing = {s.id: s for s, r in zip(against, rates, strict=True)
               if r is None and s.id != latest.id}
    if not missing:
        return rates
    found: dict[int, tuple[int, float]] = {}  # opponent -> (row snapshot id, its win rate)
    version = {s.id: s.version for s in own}
    for p in db.payoff_rows(run_id, [s.id for s in own[:-1]]):
        r, c, w = p["row_snapshot"], p["col_snapshot"], p["win_rate"]
        o = missing.get(c)
        if o is None or w is None or r == c or not (r > c or version[r] == o.version):
            continue
        if c not in found or r > found[c][0]:
            found[c] = (r, w)
    return [found[s.id][1] if r is None and s.id in found else r
            for s, r in zip(against, rates, strict=True)]


def round_robin(db: LeagueDB, run_id: int, runner: Runner, spec: GameSpec, game: str,
                game_kwargs: dict[str, Any], snapshots: Sequence[SnapshotRow], episodes: int,
                seed: int = 0, prefix: str = "rr") -> Ratings:
    """Every pair of ``snapshots`` plays ``episodes`` role-swapped pairs; returns ratings."""
    evaluate_pairs(db, run_id, runner, spec, game, game_kwargs,
                   list(itertools.combinations(snapshots, 2)), episodes, seed, prefix)
    return recompute(db, run_id, step=0)
