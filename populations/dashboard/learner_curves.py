"""The dashboard's learner curves: which logged metric keys each chart (:class:`Panel`)
plots, a league member's ``<member>/<key>`` and a snapshot's ``@v<N>`` read as one series,
and long histories averaged into at most ``max_points`` buckets of steps in SQL, so a
chart never ships a million points. Split from :mod:`populations.dashboard.queries`,
which re-exports every name here.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from populations.db import LeagueDB

MAX_POINTS = 400  # points per learner curve after bucketing


@dataclass(frozen=True)
class Panel:
    """A learner chart: the metric keys it plots (``pattern``) and its y-axis title."""

    title: str
    pattern: str
    y: str


# a league of several members logs <member>/<key> (League.log_metrics): each pattern takes
# the key at the start or after one member name's "/"
_M = r"(^|^[^/]+/)"
PANELS: tuple[Panel, ...] = (
    # not charts/eval_return_ci95: a confidence interval's half-width, not a return
    Panel("Episode return", rf"{_M}charts/(?![^/]*_ci95)[^/]*return", "return"),
    Panel("Losses", rf"{_M}losses/(?!entropy$|grad_norm($|/)|approx_kl$|clipfrac$|explained_var)",
          "loss"),
    Panel("Entropy", r"(^|/)entropy$", "entropy"),
    Panel("Gradient norm", r"grad_norm", "‖g‖"),
    # adv/agent_<name>/..., adv/role_<name>/... (numbered before 2026-12 and from API callers
    # that give no names): a name is any string but "/" (escaped %2F), the empty one too
    Panel("Advantage per agent", rf"{_M}adv/agent_[^/]*/adv_(mean|std)$", "advantage"),
    Panel("Advantage per role", rf"{_M}adv/role_[^/]*/adv_(mean|std)$", "advantage"),
    # what the advantage normalization was given (MAPPO: GAE advantages; an LLM team: its
    # turns' returns), not rewards; runs before 2026-12 logged it as reward_(mean|std)
    Panel("Raw advantage per agent and role",
          rf"{_M}adv/(agent|role)_[^/]*/(raw|reward)_(mean|std)$",
          "before normalization"),
    Panel("PPO diagnostics", rf"{_M}losses/(approx_kl|clipfrac|explained_var)", "value"),
    # LLM teams (training rollouts; eval_legal_rate: a single run's final evaluation, a
    # league's eval_legal_rate/<member> per new snapshot, series_key): rates in [0, 1], apart
    # from the counts and throughput, which would flatten them
    Panel("LLM actions / task success",
          rf"{_M}charts/(success_rate|legal_rate|eval_legal_rate)$|^eval_legal_rate/.+$",
          "rate"),
    Panel("LLM invalid turns", rf"{_M}charts/invalid_turns$", "turns"),
    Panel("LLM throughput", rf"{_M}charts/tokens_per_second$", "tokens / s"),
)


# a league's legal rate of one snapshot, logged for a rival first rated after its own
# evaluation (league_eval.legal_key: a lone LLM member's v0): a point of its member's curve
_SNAPSHOT_RATE = re.compile(r"^(eval_legal_rate/.+)@v\d+$")


def series_key(key: str) -> str:
    """The curve metric ``key``'s points are drawn in: ``eval_legal_rate/<member>@v<version>``
    (one point each) in its member's ``eval_legal_rate/<member>``; others in their own."""
    m = _SNAPSHOT_RATE.match(key)
    return m.group(1) if m else key


def metric_keys(db: LeagueDB, run_id: int) -> list[str]:
    """The run's curves (:func:`series_key`), by name."""
    rows = db.conn.execute("SELECT DISTINCT key FROM metrics WHERE run_id = ?", (run_id,))
    return sorted({series_key(r[0]) for r in rows})


def metric_series(db: LeagueDB, run_id: int, keys: list[str],
                  max_points: int = MAX_POINTS) -> list[dict[str, Any]]:
    """One series per (key, member): steps bucketed into at most ``max_points`` bins of
    equal width over the run's step range, values averaged per bin. A key's series takes
    the points of the keys drawn in it (:func:`series_key`: a league's
    ``eval_legal_rate/<member>@v<version>`` in ``eval_legal_rate/<member>``; a bin holding
    both averages them, as any of its points)."""
    if not keys:
        return []
    wanted = {series_key(k) for k in keys}
    legal = db.conn.execute("SELECT DISTINCT key FROM metrics WHERE run_id = ? AND "
                            "substr(key, 1, 16) = 'eval_legal_rate/'", (run_id,))
    keys = sorted({*keys, *(k for (k,) in legal if series_key(k) in wanted)})
    alias = [(k, series_key(k)) for k in keys if series_key(k) != k]
    drawn = ("CASE key " + "WHEN ? THEN ? " * len(alias) + "ELSE key END") if alias else "key"
    numbers = ("typeof(step) = 'integer' AND typeof(value) IN ('integer', 'real')")  # not text
    lo, hi = db.conn.execute(f"SELECT MIN(step), MAX(step) FROM metrics WHERE run_id = ? AND "
                             f"{numbers}", (run_id,)).fetchone()
    if lo is None:
        return []
    names = {m["id"]: m["name"] for m in db.members(run_id)}
    marks = ",".join("?" * len(keys))
    rows = db.conn.execute(
        f"SELECT member_id, {drawn} AS drawn, MAX(step), AVG(value) FROM metrics WHERE "
        f"run_id = ? AND {numbers} AND key IN ({marks}) GROUP BY member_id, drawn, "
        "((step - ?) * ?) / ? ORDER BY drawn, member_id, MAX(step)",
        (*(x for pair in alias for x in pair), run_id, *keys, lo, max(1, max_points),
         hi - lo + 1))
    series: dict[tuple[str, int | None], dict[str, Any]] = {}
    for member_id, key, step, value in rows:
        s = series.get((key, member_id))
        if s is None:
            member = names.get(member_id) if member_id is not None else None
            s = series[(key, member_id)] = {"key": key, "member": member, "step": [],
                                            "value": []}
        s["step"].append(step)
        s["value"].append(value)
    return list(series.values())


def learner_panels(db: LeagueDB, run_id: int,
                   max_points: int = MAX_POINTS) -> dict[str, Any]:
    """The learner charts that have data, and every metric key (for the free chart)."""
    keys = metric_keys(db, run_id)
    chosen = [(p, [k for k in keys if re.search(p.pattern, k)]) for p in PANELS]
    wanted = sorted({k for _, ks in chosen for k in ks})
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in metric_series(db, run_id, wanted, max_points):
        by_key[s["key"]].append(s)
    panels = [{"title": p.title, "y": p.y, "series": [s for k in ks for s in by_key[k]]}
              for p, ks in chosen if ks]
    return {"panels": panels, "keys": keys}
