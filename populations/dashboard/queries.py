"""Read-only queries behind the dashboard: one function per table or chart, each returning
plain JSON-able data from an open :class:`~populations.db.LeagueDB`.

Strings from the database are returned as they are; escaping is the page's job (it
writes them with ``textContent`` and as entities in Plotly labels). The learner curves
(metric keys, panels, bucketed histories) live in :mod:`populations.dashboard.learner_curves`
and are re-exported here; what a stored value is served as (a number column's value or a
gap, a rating row, a member kind's name, a learner step's unit) in
:mod:`populations.dashboard.values`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from populations import crossplay as cp
from populations.dashboard.learner_curves import MAX_POINTS as MAX_POINTS  # re-exported
from populations.dashboard.learner_curves import PANELS as PANELS
from populations.dashboard.learner_curves import Panel as Panel
from populations.dashboard.learner_curves import learner_panels as learner_panels
from populations.dashboard.learner_curves import metric_keys as metric_keys
from populations.dashboard.learner_curves import metric_series as metric_series
from populations.dashboard.learner_curves import series_key as series_key
from populations.dashboard.sources import Source, SourceError, job_overrides, open_source
from populations.dashboard.values import KIND_LABELS as KIND_LABELS  # re-exported
from populations.dashboard.values import STEP_UNITS as STEP_UNITS
from populations.dashboard.values import StepUnit as StepUnit
from populations.dashboard.values import kind_label as kind_label
from populations.dashboard.values import loads, number, rating
from populations.dashboard.values import step_unit as step_unit
from populations.db import LeagueDB

log = logging.getLogger(__name__)

# A crafted league.db chooses how many snapshots its rows name: tables are k x k in the
# snapshots shown and an episode of k snapshots is k(k-1)/2 pairs, so both are bounded.
MAX_MATRIX_SNAPSHOTS = 1000  # payoff and cross-play tables show the newest (highest ids)
MAX_EPISODE_SNAPSHOTS = 64  # cross-play leaves out an episode naming more (no game has)
MAX_PSRO_PLAYERS = 64  # PSRO charts: players (seats or teams) shown
MAX_SETTINGS = 1000  # key = value rows shown per member or run configuration
MAX_SETTING_CHARS = 2000  # characters of one setting's value shown (a prompt template...)
MAX_COMPARED = 64  # members of one kind whose settings are compared (the differing keys)



# ------------------------------------------------------------------------------ settings
def flat_settings(obj: Any) -> dict[str, Any]:
    """Nested JSON settings as ``key = value`` rows, in stored order: objects are walked
    (``{"net": {"encoder": "gnn"}}`` → ``net.encoder = gnn``); strings are shown as they are
    and other values (numbers, lists, null) as JSON. ``items``: ``{"key", "value"}`` rows,
    at most :data:`MAX_SETTINGS` (``left_out``: how many more), each value cut to
    :data:`MAX_SETTING_CHARS` characters. Walked without recursion: a crafted row may nest
    as deep as the JSON parser allows."""
    items: list[dict[str, str]] = []
    left_out = 0
    stack: list[tuple[str, Any]] = [("", obj)] if obj != {} else []
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict) and value:
            stack.extend(reversed([(f"{key}.{k}" if key else str(k), v)
                                   for k, v in value.items()]))
            continue
        if len(items) >= MAX_SETTINGS:
            left_out += 1
            continue
        items.append({"key": key, "value": _setting_text(value)})
    return {"items": items, "left_out": left_out}


def _setting_text(value: Any) -> str:
    if isinstance(value, str):
        text = value
    else:
        try:  # inf and nan as JSON's Infinity and NaN (max_grad_norm=inf: a setting)
            text = json.dumps(value)
        except (ValueError, RecursionError):  # nested deeper than the encoder goes
            text = "(nested too deep to show)"
    if len(text) > MAX_SETTING_CHARS:
        text = f"{text[:MAX_SETTING_CHARS]}… ({len(text):,} characters)"
    return text


def _differing(members: list[dict[str, Any]], flats: dict[int, dict[str, Any]]
               ) -> dict[int, list[str]]:
    """For each member with settings, the keys it sets otherwise than another member of its
    kind with settings, or that only one of them sets: what tells two MAPPO members apart.
    Kinds of more than :data:`MAX_COMPARED` such members (a crafted file) are not compared."""
    by_kind: dict[str, list[int]] = defaultdict(list)
    for m in members:
        if m["id"] in flats:
            by_kind[str(m["kind"])].append(m["id"])
    out: dict[int, list[str]] = {}
    for ids in by_kind.values():
        if not 2 <= len(ids) <= MAX_COMPARED:
            continue
        values = {i: {it["key"]: it["value"] for it in flats[i]["items"]} for i in ids}
        same: dict[tuple[str, str], int] = defaultdict(int)  # (key, value) -> members
        for v in values.values():
            for kv in v.items():
                same[kv] += 1
        keys = list(dict.fromkeys(k for v in values.values() for k in v))
        for i in ids:
            out[i] = [k for k in keys if same.get((k, values[i].get(k)), 0) < len(ids)]
    return out


# ------------------------------------------------------------------------------ runs
def db_version(path: Path) -> str:
    """Size and modification time of a database file and its ``-wal`` file: it changes
    with every write, so the page asks a finished run's parts again only when it does."""
    parts = []
    for f in (path, Path(f"{path}-wal")):
        try:
            st = f.stat()
            parts.append(f"{st.st_size}.{st.st_mtime_ns}")
        except OSError:
            parts.append("-")
    return "/".join(parts)


def runs(db: LeagueDB, source: Source) -> list[dict[str, Any]]:
    """Every run in one database, newest first, with its members, snapshots and recorded
    episodes (``episodes``: rows of the ``matches`` table, one per episode played),
    ``db_version`` (:func:`db_version`) of the database and the Hydra overrides of its job
    (``overrides``, :func:`~populations.dashboard.sources.job_overrides`)."""
    rows = db.conn.execute(
        "SELECT r.id, r.name, r.experiment, r.game, r.status, r.started_at, r.updated_at, "
        "(SELECT COUNT(*) FROM members m WHERE m.run_id = r.id) AS members, "
        "(SELECT COUNT(*) FROM matches x WHERE x.run_id = r.id) AS episodes, "
        "(SELECT COUNT(*) FROM snapshots s JOIN members m ON s.member_id = m.id "
        " WHERE m.run_id = r.id) AS snapshots "
        "FROM runs r ORDER BY r.id DESC").fetchall()
    version = db_version(source.path)
    overrides = job_overrides(source.path)  # a sweep job's: what tells it from the others
    return [{**dict(r), **_times(r), "source": source.id, "path": str(source.path),
             "db_version": version, "overrides": overrides} for r in rows]


def run_summary(db: LeagueDB, source: Source, run_id: int) -> dict[str, Any]:
    """One run with its configuration; an unknown run id is a 404."""
    row = db.conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise SourceError(f"no run {run_id} in {source.path}", 404)
    out = {**dict(row), **_times(row)}
    out["config"] = loads(out.get("config"), {})
    out["config_settings"] = flat_settings(out["config"])  # the run's own settings, flat
    out.update(source=source.id, path=str(source.path))
    return out


def _times(row: Any) -> dict[str, Any]:
    """A run row's ``started_at`` and ``updated_at`` as served (text in them: None)."""
    return {k: number(row[k]) for k in ("started_at", "updated_at")}


def check_run(db: LeagueDB, source: Source, run_id: int) -> None:
    if db.conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
        raise SourceError(f"no run {run_id} in {source.path}", 404)


# ------------------------------------------------------------------------------ league
def _member_episodes(db: LeagueDB, run_id: int) -> dict[int, int]:
    """Episodes played by any snapshot of each member: ``{member id: episodes}``."""
    rows = db.conn.execute(
        "SELECT s.member_id, COUNT(DISTINCT x.id) FROM matches x, json_each(x.seats) j "
        "JOIN snapshots s ON s.id = j.value WHERE x.run_id = ? AND json_valid(x.seats) "
        "GROUP BY s.member_id",
        (run_id,))
    return {int(m): int(n) for m, n in rows}


def _win_rates(db: LeagueDB, run_id: int) -> dict[int, tuple[float, int]]:
    """Count-weighted win rate of each snapshot against those it met: ``{sid: (rate, n)}``."""
    rows = db.conn.execute(
        "SELECT row_snapshot, SUM(win_rate * count) / SUM(count), SUM(count) FROM payoffs "
        "WHERE run_id = ? AND win_rate IS NOT NULL AND count > 0 GROUP BY row_snapshot",
        (run_id,))
    return {int(s): (float(w), int(n)) for s, w, n in rows}


def league_table(db: LeagueDB, run_id: int) -> list[dict[str, Any]]:
    """One row per member: its learner settings (``settings``: :func:`flat_settings` of
    what it trains with, None where not recorded; ``settings_differ``: the keys set
    otherwise than for another member of its kind; ``settings_error``: why a stored value
    could not be read), latest snapshot with its learner step and that step's unit
    (``step_unit``: frames, updates, iterations; None where unknown), rating of its newest
    rated snapshot and the role-swapped pairs that rating is from (``rated_pairs``), the
    episodes played by any of its snapshots (``episodes``) and the win rate of its newest
    rated snapshot per role-swapped pair (over ``win_pairs`` pairs; a draw counts 1/2) with
    a 95 % Wilson score interval (``win_rate_lo``, ``win_rate_hi``)."""
    snaps = db.snapshots(run_id)
    ratings = db.latest_ratings(run_id)
    wins = _win_rates(db, run_id)
    played = _member_episodes(db, run_id)
    exploit: dict[Any, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for k, r in enumerate(exploitability(db, run_id)):  # grouped once, not scanned per member
        exploit[r["snapshot_id"]].append((k, r))
    by_member: dict[int, list[Any]] = defaultdict(list)
    for s in snaps:
        by_member[s.member_id].append(s)
    table = []
    members = db.members(run_id)
    flats = {m["id"]: flat_settings(m["settings"]) for m in members if m["settings"] is not None}
    differs = _differing(members, flats)
    for m in members:
        own = sorted(by_member.get(m["id"], []), key=lambda s: (s.version, s.id))
        latest = own[-1] if own else None
        rated = next((s for s in reversed(own) if s.id in ratings), None)
        r = rating(ratings.get(rated.id)) if rated else None
        w = wins.get(rated.id) if rated else None
        w_lo, w_hi = cp.wilson(w[0] * w[1], w[1]) if w and w[1] > 0 else (None, None)
        unit, unit_title = step_unit(latest.kind, latest.learner_step) if latest else (None, None)
        table.append({
            "member_id": m["id"], "member": m["name"], "kind": m["kind"],
            "kind_label": kind_label(m["kind"]), "roles": m["roles"],
            "snapshots": len(own),
            "latest_version": latest.version if latest else None,
            "learner_step": latest.learner_step if latest else None,
            "step_unit": unit, "step_title": unit_title,
            "rated_version": rated.version if rated else None,
            "mu": r["mu"] if r else None, "sigma": r["sigma"] if r else None,
            "elo": r["elo"] if r else None,
            "rated_pairs": r["matches"] if r else None,  # ratings.matches: pairs
            "episodes": played.get(m["id"], 0),
            "win_rate": w[0] if w else None, "win_pairs": w[1] if w else 0,
            "win_rate_lo": w_lo, "win_rate_hi": w_hi,  # 95 % Wilson, over the pairs
            **_newest_nash_conv(exploit, own),
            # what it trains with (None: not recorded) and the keys that tell it apart from
            # the run's other members of its kind
            "settings": flats.get(m["id"]), "settings_differ": differs.get(m["id"], []),
            "settings_error": m.get("settings_error"),
        })
    return table


def exploitability(db: LeagueDB, run_id: int) -> list[dict[str, Any]]:
    """Every recorded NashConv of the run (exact, or approximate by trained best responses
    with its 95 % interval), with the snapshot's label; [] for databases older than the
    ``exploitability`` table (a read-only dashboard does not migrate them)."""
    has = db.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                          "name = 'exploitability'").fetchone()
    if not has:
        return []
    labels = _labels(db, run_id)
    return [{"snapshot_id": r["snapshot_id"], "label": r["label"],
             "snapshot": labels.get(r["snapshot_id"]), "method": r["method"],
             "value": r["value"], "low": r["low"], "high": r["high"],
             "interval": r["details"].get("interval")} for r in db.exploitability(run_id)]


def _newest_nash_conv(rows: dict[Any, list[tuple[int, dict[str, Any]]]],
                      own: list[Any]) -> dict[str, Any]:
    """The newest recorded NashConv of a member's newest measured snapshot (league columns);
    ``rows``: each snapshot id's exploitability rows with their places in recording order."""
    measured = [s for s in own if s.id in rows]
    if not measured:
        return {"nash_conv": None, "nash_conv_half": None, "nash_conv_method": None,
                "nash_conv_version": None}
    version = max(s.version for s in measured)
    _, r = max((kr for s in measured if s.version == version for kr in rows[s.id]),
               key=lambda kr: kr[0])  # the one recorded last
    half = None if r["low"] is None or r["high"] is None else (r["high"] - r["low"]) / 2
    return {"nash_conv": r["value"], "nash_conv_half": half, "nash_conv_method": r["method"],
            "nash_conv_version": version}


def _newest(ids: Any) -> set[int]:
    """The :data:`MAX_MATRIX_SNAPSHOTS` highest of the integer snapshot ids ``ids``."""
    return set(sorted({i for i in ids if type(i) is int})[-MAX_MATRIX_SNAPSHOTS:])


def _labels(db: LeagueDB, run_id: int) -> dict[int, str]:
    return {s.id: f"{s.member} v{s.version}" for s in db.snapshots(run_id)}


# ------------------------------------------------------------------------------ payoffs
# what a payoff cell holds: league evaluations (populations.evaluation.recompute, with a win
# rate) store margins; PSRO (psro_run.DBRecorder, no win rate) stores each seat's return
PAYOFF_LABELS = {
    "margin": "Each cell: the row's mean margin per episode over the column, its team's return "
              "minus the column's, over role-swapped pairs; in a zero-sum game twice the "
              "row's return. On hover: the row's win rate per role-swapped pair (won on the pair's "
              "summed margin, a draw counting 1/2); cross-play below counts each episode.",
    "return": "Each cell: the expected return of the row's PSRO member against the column's "
              "(PSRO's empirical game), not a margin.",
}


def payoff_matrix(db: LeagueDB, run_id: int, compact: bool = False) -> dict[str, Any]:
    """Payoffs between every snapshot that has one, None where they have not met.
    ``compact`` (what the page asks for): where fewer than half the cells are filled,
    instead of the k x k ``value``, ``win_rate`` and ``count`` tables, the filled cells
    only, ``cells = {"i", "j", "value", "win_rate", "count"}`` (row and column positions
    in ``ids``); a fuller table is sent whole, which is then the shorter.

    ``value_kind`` says what ``value[i][j]`` is, and ``value_label`` says it in words for the
    page and the export: ``"margin"`` for a league's evaluations (rows with a win rate,
    :func:`populations.evaluation.recompute`): the mean margin of snapshot ``ids[i]`` over
    ``ids[j]`` per episode, its team's return minus the other's over their role-swapped
    pairs (in a zero-sum game twice its return, not the return itself); ``"return"`` for
    PSRO's empirical game (rows without one, ``psro_run.DBRecorder``): the expected return
    of ``ids[i]``'s seat against ``ids[j]``. ``left_out`` snapshots (beyond the newest
    ``max_snapshots``) are not in the table."""
    entries = db.payoffs(run_id)
    labels = _labels(db, run_id)
    named = {e["row_snapshot"] for e in entries} | {e["col_snapshot"] for e in entries}
    shown = _newest(named)
    entries = [e for e in entries if e["row_snapshot"] in shown and e["col_snapshot"] in shown]
    ids = sorted(shown)
    pos = {sid: i for i, sid in enumerate(ids)}
    n = len(ids)
    value: list[list[float | None]] = [[None] * n for _ in range(n)]
    win: list[list[float | None]] = [[None] * n for _ in range(n)]
    count: list[list[int]] = [[0] * n for _ in range(n)]
    exact = False
    for e in entries:
        i, j = pos[e["row_snapshot"]], pos[e["col_snapshot"]]
        value[i][j], win[i][j] = number(e["value"]), number(e["win_rate"])
        count[i][j] = number(e["count"]) or 0
        exact = exact or bool(e["exact"])
    kind = "return" if entries and all(e["win_rate"] is None for e in entries) else "margin"
    out = {"ids": ids, "labels": [labels.get(s, f"snapshot {s}") for s in ids],
           "value_kind": kind, "value_label": PAYOFF_LABELS[kind], "exact": exact,
           "left_out": len(named) - len(shown), "max_snapshots": MAX_MATRIX_SNAPSHOTS}
    cells = sorted(set((pos[e["row_snapshot"]], pos[e["col_snapshot"]]) for e in entries))
    if compact and 2 * len(cells) < n * n:  # a windowed league's table is nearly all empty
        return {**out, "cells": {"i": [i for i, _ in cells], "j": [j for _, j in cells],
                                 "value": [value[i][j] for i, j in cells],
                                 "win_rate": [win[i][j] for i, j in cells],
                                 "count": [count[i][j] for i, j in cells]}}
    return {**out, "value": value, "win_rate": win, "count": count}


# ------------------------------------------------------------------------------ cross-play
CROSSPLAY_SEED = 0  # fixed, so every refresh (and the export) shows the same intervals
ELO_RESAMPLES = 200  # the Elo replay is sequential in episodes; fewer resamples keep it quick
ALPHARANK_RESAMPLES = 100  # bootstrap tables α-Rank is recomputed on, for its interval
# α-Rank and its interval rank only the newest this many snapshots of the cross-play table
# (then those of them that all met each other): the chain is k x k and its interval solves
# it ALPHARANK_RESAMPLES more times, and a league's ranking of interest is among its newest
ALPHARANK_MAX_SNAPSHOTS = 64
ELO_MAX_EPISODES = 20_000  # beyond this the Elo replay (a Python loop over episodes) is skipped
# Stale-while-revalidate: once a run's statistics took this much CPU to compute, a change in
# its matches is recomputed in a background thread (one at a time, all runs together) while
# requests get the last result marked ``stale``; cheaper ones are recomputed in the request.
CROSSPLAY_INLINE_CPU_S = 0.5
# ... and a background recompute starts no sooner than this many times its last CPU time
# after the last one ended, so a live league's every generation does not keep a core busy
CROSSPLAY_IDLE_FACTOR = 3.0
# A run with more recorded episodes than this has its first statistics computed in the
# background too: the request answers at once with a ``pending`` document (no tables), so
# the page's first load does not wait on cross-play (200 snapshots, 50k episodes: ~10 s)
CROSSPLAY_INLINE_EPISODES = 5000


def _few_snapshots(seats: Any) -> bool:
    """Whether a match names at most :data:`MAX_EPISODE_SNAPSHOTS` snapshot ids."""
    return isinstance(seats, dict) and len(set(map(str, seats.values()))) <= MAX_EPISODE_SNAPSHOTS


@dataclass(frozen=True)
class CrossplayStats:
    """The heavy part of the cross-play view, computed from the matches alone."""

    table: cp.CrossPlay
    alpharank: dict[str, Any]
    elo: dict[int, dict[str, float]] | None
    episodes: int
    left_out: dict[str, int]
    state: tuple[int, int]  # (matches, newest match id) it was computed from


def _match_state(db: LeagueDB, run_id: int) -> tuple[int, int]:
    n, last = db.conn.execute("SELECT COUNT(*), IFNULL(MAX(id), 0) FROM matches "
                              "WHERE run_id = ?", (run_id,)).fetchone()
    return int(n), int(last)


def ranked_window(ids: list[int]) -> list[int]:
    """The snapshots α-Rank considers: the newest :data:`ALPHARANK_MAX_SNAPSHOTS` of
    ``ids`` (sorted), in ``ids`` order."""
    return ids[-ALPHARANK_MAX_SNAPSHOTS:] if ALPHARANK_MAX_SNAPSHOTS > 0 else []


def bounded_alpha_rank(table: cp.CrossPlay, resamples: int = ALPHARANK_RESAMPLES
                       ) -> dict[str, Any]:
    """α-Rank (:func:`populations.crossplay.alpha_rank`) and its bootstrap interval
    (:func:`~populations.crossplay.alpha_rank_interval`) over the snapshots of
    :func:`ranked_window` only; ``considered``: those snapshots, ``older_left_out``: how
    many older ones of the table were not considered."""
    window = ranked_window(table.ids)
    pos = [table.ids.index(s) for s in window]
    margin = [[table.table["margin"][i][j] for j in pos] for i in pos]
    ar = cp.alpha_rank(margin, window)
    ar.update(cp.alpha_rank_interval(table, ar, resamples=resamples))
    return {**ar, "considered": window, "older_left_out": len(table.ids) - len(window),
            "max_snapshots": ALPHARANK_MAX_SNAPSHOTS}


def compute_crossplay(db: LeagueDB, run_id: int) -> CrossplayStats:
    """Cross-play tables, bounded α-Rank and the Elo replay of one run, as of now."""
    state = _match_state(db, run_id)
    matches = db.matches(run_id)
    few = [m for m in matches if _few_snapshots(m.seats)]
    eps = cp.episodes(few)
    named = set(np.concatenate([eps.a, eps.b]).tolist())
    shown = _newest(named)
    left_out = {"left_out": len(named) - len(shown),
                "left_out_episodes": len(matches) - len(few)}
    keep = np.isin(eps.a, list(shown)) & np.isin(eps.b, list(shown))
    eps = cp.Episodes(eps.a[keep], eps.b[keep], eps.margin[keep])
    table = cp.crossplay(eps, resamples=cp.RESAMPLES, seed=CROSSPLAY_SEED)
    ar = bounded_alpha_rank(table)
    elo = (cp.elo_bootstrap(eps, table.ids, resamples=ELO_RESAMPLES, seed=CROSSPLAY_SEED)
           if len(eps.a) <= ELO_MAX_EPISODES else None)
    return CrossplayStats(table, ar, elo, int(len(eps.a)), left_out, state)


@dataclass
class _Entry:
    stats: CrossplayStats | None = None
    cpu_s: float = 0.0  # CPU seconds the last computation took
    ended: float = 0.0  # time.monotonic() when it ended
    thread: threading.Thread | None = None  # the background recompute, while it runs
    lock: threading.Lock = field(default_factory=threading.Lock)  # one inline compute
    # the last background computation's failure (one line) and the matches it counted: no
    # other starts until the run's matches change (each poll started one that failed again)
    error: str | None = None
    error_state: tuple[int, Any] | None = None


class CrossplayCache:
    """The last cross-play statistics of each (database, run), served while a newer one is
    computed (stale-while-revalidate; see :data:`CROSSPLAY_INLINE_CPU_S`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # guards the entries and each entry's thread
        self.worker = threading.Semaphore(1)  # one background recompute at a time

    @property
    def entries(self) -> dict[tuple[str, int], _Entry]:
        return _CACHE  # module level: a test may swap it for an empty one

    @entries.setter
    def entries(self, value: dict[tuple[str, int], _Entry]) -> None:
        global _CACHE
        _CACHE = value

    def get(self, db: LeagueDB, run_id: int, fresh: bool = False
            ) -> tuple[CrossplayStats | None, bool, bool]:
        """``(statistics, stale, updating)``: stale when the run has matches the statistics
        do not count; updating while a background recompute runs; statistics None while
        the first ones of a run of more than :data:`CROSSPLAY_INLINE_EPISODES` episodes are
        computed in the background. ``fresh``: never stale nor None, computed in this call
        if need be (the export)."""
        key = (str(db.path), run_id)
        state = _match_state(db, run_id)
        with self.lock:
            entry = self.entries.setdefault(key, _Entry())
            if len(self.entries) > CACHE_ENTRIES:  # many databases: forget the others, but
                # not one whose computation runs (forgotten, its run's next request started
                # another thread beside it: 208 threads after 3 passes over 69 runs)
                self.entries = {k: e for k, e in self.entries.items()
                                if k == key or e.thread is not None}
            stats = entry.stats
            if stats is not None and stats.state == state:
                return stats, False, entry.thread is not None
            first_heavy = stats is None and state[0] > CROSSPLAY_INLINE_EPISODES
            if (first_heavy or stats is not None and entry.cpu_s >= CROSSPLAY_INLINE_CPU_S
                    ) and not fresh:
                idle = time.monotonic() - entry.ended >= CROSSPLAY_IDLE_FACTOR * entry.cpu_s
                failed = entry.error is not None and entry.error_state == state
                running = sum(e.thread is not None for e in self.entries.values())
                if entry.thread is None and idle and not failed and running < CACHE_ENTRIES:
                    entry.thread = threading.Thread(
                        target=self._background, args=(key, entry, state), daemon=True,
                        name=f"crossplay-{run_id}")
                    entry.thread.start()
                return stats, True, entry.thread is not None
        with entry.lock:  # a first (or cheap) computation: in this request, once at a time
            if entry.stats is None or entry.stats.state != state:
                self._compute(entry, db, run_id)
            return entry.stats, False, False

    @staticmethod
    def _compute(entry: _Entry, db: LeagueDB, run_id: int) -> None:
        t = time.thread_time()
        stats = compute_crossplay(db, run_id)
        entry.cpu_s, entry.ended = time.thread_time() - t, time.monotonic()
        entry.stats = stats

    def error(self, db: LeagueDB, run_id: int) -> str | None:
        """The last background computation's failure for the run's matches now (None: none,
        or the matches changed since and the next request tries again)."""
        state = _match_state(db, run_id)
        with self.lock:
            entry = self.entries.get((str(db.path), run_id))
            return entry.error if entry is not None and entry.error_state == state else None

    def _background(self, key: tuple[str, int], entry: _Entry, state: tuple[int, Any]
                    ) -> None:
        try:
            with self.worker, entry.lock, open_source(Source("", Path(key[0]))) as db:
                self._compute(entry, db, key[1])
            entry.error = entry.error_state = None
        except Exception as err:  # noqa: BLE001 - the stale result stays; said on the page
            log.exception("cross-play recompute of %s run %s failed", *key)
            reason = " ".join(f"{type(err).__name__}: {err}".split())  # one line
            entry.error = f"cross-play computation failed: {reason[:200]}"
            entry.error_state = state  # retried once the run's matches change
        finally:
            with self.lock:
                entry.thread = None
                entry.ended = time.monotonic()

    def wait(self, timeout_s: float | None = None) -> None:
        """Wait for every background recompute running now (tests, the export)."""
        with self.lock:
            threads = [e.thread for e in self.entries.values() if e.thread is not None]
        for t in threads:
            t.join(timeout_s)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()


_CACHE: dict[tuple[str, int], _Entry] = {}  # (database path, run id) → its statistics
CACHE_ENTRIES = 64  # runs whose statistics are kept, and background computations at most
CROSSPLAY_CACHE = CrossplayCache()


def crossplay(db: LeagueDB, run_id: int, compact: bool = False, fresh: bool = False,
              rows: int | None = None) -> dict[str, Any]:
    """Cross-play between snapshots from the recorded episodes (:mod:`populations.crossplay`):
    per pair win/draw/loss rates and mean margin with 95 % bootstrap intervals, α-Rank
    over the mean-margin game of the newest :data:`ALPHARANK_MAX_SNAPSHOTS` snapshots
    (``alpharank.considered``; ``alpharank.older_left_out`` older ones not ranked), and per
    snapshot the stored rating (μ ± 2σ, Elo) beside an Elo replayed per episode with its
    bootstrap interval (None beyond :data:`ELO_MAX_EPISODES` episodes). ``left_out``:
    snapshots beyond the newest :data:`MAX_MATRIX_SNAPSHOTS`; ``left_out_episodes``:
    recorded episodes naming more than :data:`MAX_EPISODE_SNAPSHOTS` snapshots.

    The statistics are cached per run (:class:`CrossplayCache`): ``stale`` says the run has
    episodes they do not count yet (``as_of``: the matches they count), ``updating`` that
    a recompute is running; ``fresh`` computes them now if need be. ``compact`` (what the
    page asks for) leaves out the k x k tables (``n`` and each statistic), which repeat
    ``pairs`` twice over, and gives ``pairs`` as columns (``{"row": [...], "col": [...],
    "n": [...], "win": [...], ...}``) without the labels, which ``labels`` gives by id.
    ``rows``: only the last ``rows`` pairs (those of the newest snapshots; what the page
    draws before "show all"), ``pairs_total`` counting them all.

    While the first statistics of a large run are computed in the background (see
    :data:`CROSSPLAY_INLINE_EPISODES`) the answer is ``{"pending": true, ...}`` with the
    recorded episodes (``as_of``) and no tables."""
    stats, stale, updating = CROSSPLAY_CACHE.get(db, run_id, fresh)
    error = None if fresh or updating else CROSSPLAY_CACHE.error(db, run_id)
    if stats is None:
        n, last = _match_state(db, run_id)
        return {"pending": error is None, "stale": True, "updating": updating,
                **({"error": error} if error else {}),
                "as_of": {"matches": n, "last_match": last}}
    table, ar, elo = stats.table, stats.alpharank, stats.elo
    labels = _labels(db, run_id)

    def name(s: int) -> str:
        return labels.get(s, f"snapshot {s}")

    ids = table.ids
    pairs = [{"row": a, "col": ids[j], "row_label": name(a), "col_label": name(ids[j]),
              "n": table.n[i][j], **{k: v[i][j] for k, v in table.table.items()}}
             for i, a in enumerate(ids) for j in range(i + 1, len(ids)) if table.n[i][j]]
    total = len(pairs)
    if rows is not None:
        pairs = pairs[max(0, total - rows):]
    stored = db.latest_ratings(run_id)
    mass = dict(zip(ar["ids"], zip(ar["pi"], ar["rank"], ar["pi_lo"], ar["pi_hi"], ar["top"],
                                   strict=True), strict=True))
    none = (None,) * 5
    ratings = []
    for s in ids:
        r = rating(stored.get(s))
        ok = r["mu"] is not None and r["sigma"] is not None
        replay = elo[s] if elo else {"elo": None, "elo_lo": None, "elo_hi": None}
        ratings.append({
            "snapshot_id": s, "label": name(s),
            **dict(zip(("alpharank_pi", "alpharank_rank", "alpharank_pi_lo",
                        "alpharank_pi_hi", "alpharank_top"), mass.get(s, none), strict=True)),
            "mu": r["mu"], "sigma": r["sigma"],
            "mu_lo": r["mu"] - 2 * r["sigma"] if ok else None,
            "mu_hi": r["mu"] + 2 * r["sigma"] if ok else None,
            "elo": r["elo"], **{f"replay_{k}": v for k, v in replay.items()}})
    sent: Any = pairs
    if compact:  # columns, labels by id from ``labels``: a pair row's keys were half its size
        sent = {k: [p[k] for p in pairs] for k in ("row", "col", "n", *table.table)}
    tables = {} if compact else {"n": table.n, **table.table}
    return {"ids": ids, "labels": [name(s) for s in ids], **tables,
            "pairs": sent, "pairs_total": total, "ratings": ratings,
            "alpharank": {**ar, "labels": [name(s) for s in ar["ids"]],
                          "left_out_labels": [name(s) for s in ar["left_out"]]},
            "episodes": stats.episodes, "resamples": cp.RESAMPLES,
            "alpharank_resamples": ALPHARANK_RESAMPLES,
            "elo_resamples": ELO_RESAMPLES if elo is not None else 0, "confidence": cp.CONFIDENCE,
            "seed": CROSSPLAY_SEED, **stats.left_out,
            "max_snapshots": MAX_MATRIX_SNAPSHOTS, "max_episode_snapshots": MAX_EPISODE_SNAPSHOTS,
            "stale": stale, "updating": updating, **({"error": error} if error else {}),
            "as_of": {"matches": stats.state[0], "last_match": stats.state[1]}}


# ------------------------------------------------------------------------------ ratings
def rating_history(db: LeagueDB, run_id: int, compact: bool = False) -> list[dict[str, Any]]:
    """One series per snapshot: Elo and TrueSkill-style μ, σ at every step it has a rating
    row, the role-swapped pairs each rating is from (``pairs``; the ratings table's
    ``matches``), and ``run_last_step``, the run's last rating step (the same in every
    series). A league writes a snapshot's row only where its rating changed (2c7f023), so a
    rating holds from its row until the next: the page draws step lines, each held on from
    its last row to ``run_last_step`` (no row is made up for the steps between).

    ``compact`` (what the page asks for): only the steps where a series changes, kept as
    the first and last step of each run of equal values, so a chart's lines are the same
    (a snapshot of an older, per-generation database no longer evaluated keeps its rating:
    two points instead of one per generation)."""
    labels = _labels(db, run_id)
    rows = db.conn.execute(
        "SELECT snapshot_id, step, elo, mu, sigma, matches FROM ratings WHERE run_id = ? "
        "ORDER BY snapshot_id, step", (run_id,))
    series: dict[int, dict[str, Any]] = {}
    last = None
    for sid, step, elo, mu, sigma, pairs in rows:
        s = series.setdefault(sid, {"snapshot_id": sid, "label": labels.get(sid, f"snapshot {sid}"),
                                    "step": [], "elo": [], "mu": [], "sigma": [], "pairs": []})
        for k, v in (("step", step), ("elo", elo), ("mu", mu), ("sigma", sigma),
                     ("pairs", pairs)):
            s[k].append(number(v))
        step = number(step)  # a crafted row's text is no step (nor compares with one)
        if step is not None and (last is None or step > last):
            last = step
    out = [_change_points(s) for s in series.values()] if compact else list(series.values())
    return [{**s, "run_last_step": last} for s in out]


RATING_FIELDS = ("elo", "mu", "sigma", "pairs")


def _change_points(s: dict[str, Any]) -> dict[str, Any]:
    """Series ``s`` at its first and last steps and where any of :data:`RATING_FIELDS`
    differs from the step before or after: lines through the kept points are the lines
    through all of them."""
    rows = list(zip(*(s[k] for k in RATING_FIELDS), strict=True))
    last = len(rows) - 1
    keep = [t for t in range(len(rows))
            if t in (0, last) or rows[t] != rows[t - 1] or rows[t] != rows[t + 1]]
    return {**s, **{k: [s[k][t] for t in keep] for k in ("step", *RATING_FIELDS)}}


# ------------------------------------------------------------------------------ PSRO
def _weights(v: Any) -> list[float] | None:
    """A stored list of weights, or None when it is not a list of numbers."""
    if isinstance(v, list) and all(type(x) in (int, float) for x in v):
        return [float(x) for x in v]
    return None


def _seat_weights(meta: Any) -> dict[str, list[float]]:
    """Meta-strategy as stored (per seat, one list, or a list per seat) → ``{seat: probs}``;
    what is not a list of numbers (a crafted row) is left out."""
    if isinstance(meta, dict):
        pairs = [(str(k), _weights(v)) for k, v in meta.items()]
    elif isinstance(meta, list) and meta and all(isinstance(v, list) for v in meta):
        pairs = [(f"seat {i}", _weights(v)) for i, v in enumerate(meta)]
    else:
        pairs = [("meta", _weights(meta))]
    return {k: w for k, w in pairs if w is not None}


def psro(db: LeagueDB, run_id: int) -> dict[str, Any]:
    """PSRO iterations: NashConv (None where not computed) and, per seat, the weight of
    each population member at each iteration (0 before it joined). The meta-strategies are
    read here, not by :meth:`LeagueDB.psro_iterations` (which refuses all but PSRO's own
    form), so that older forms and a malformed row leave only their chart entries out."""
    its = [dict(r) for r in db.conn.execute(
        "SELECT * FROM psro_iterations WHERE run_id = ? ORDER BY iteration", (run_id,))]
    per_it = [_seat_weights(loads(it["meta_strategy"], None)) for it in its]
    seats: dict[str, None] = {}  # in order of first appearance
    for w in per_it:
        seats.update((s, None) for s in w if len(seats) < MAX_PSRO_PLAYERS)
    out_seats = []
    for seat in seats:
        # iteration i has at most i + 1 members per player: a longer stored list (a crafted
        # row) must not size the k x iterations table
        k = min(max((len(w.get(seat, [])) for w in per_it), default=0), len(its) + 1)
        weights = [[(w.get(seat) or [])[j] if j < len(w.get(seat) or []) else 0.0
                    for w in per_it] for j in range(k)]
        out_seats.append({"seat": seat, "members": [f"#{j}" for j in range(k)],
                          "weights": weights})
    return {"iteration": [number(it["iteration"]) for it in its],
            "nash_conv": [number(it["nash_conv"]) for it in its],
            "seconds": [number(it["seconds"]) for it in its], "seats": out_seats}
