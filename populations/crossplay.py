"""Cross-play evaluation with uncertainty: win/draw/loss rates (Wilson score intervals) and
mean score margins (bootstrap intervals over episodes) between snapshots, Elo with a
bootstrap interval, and α-Rank over the empirical game (OpenSpiel's own
``open_spiel.python.egt.alpharank``).

Pure functions of recorded episodes (:class:`populations.db.MatchRow`): nothing here
reads a database or trains anything, so the dashboard and scripts share one definition.

A snapshot's *score* in an episode is the mean return of the agents it seats (its team's
return, as ``populations.evaluation`` and ``marl.train.evaluate`` count it: a shared team
reward once, however many seats the team has); in an episode between snapshots ``a`` and
``b`` the *margin* of ``a`` is its score minus ``b``'s, and ``a`` wins, draws or loses as
the margin is > tol, |·| <= tol or < -tol. Episodes where one snapshot plays every seat
(self-play) say nothing about a pair and are left out. Role-asymmetric games: the league
plays each pair in both seat orders, so these are seat-averaged figures, and over complete
role-swapped pairs a pair's mean margin is the payoffs table's value.

Win, draw and loss rates get Wilson score intervals (Wilson, 1927): a pair that won all of
its n episodes has a win rate in [n / (n + z²), 1] (10 of 10: [0.72, 1] at 95 %), where a
percentile bootstrap gives [1, 1], since every resample of all-wins is all-wins; Wilson's
coverage stays near the nominal level for small n and rates near 0 or 1 (Brown, Cai &
DasGupta, 2001, "Interval Estimation for a Binomial Proportion"). Mean margins, the
α-Rank masses and the Elo replay get percentile bootstrap intervals: the episodes of a pair
are resampled with replacement ``resamples`` times (one ``(resamples, n)`` index array,
vectorized), from a generator seeded by ``(seed, a, b)``, so a pair's interval does not
depend on which other pairs exist or in what order they are computed. A bootstrap interval
shows how much a statistic moves with the episodes drawn; where every episode of a pair
ended alike (all won, one margin), no resample differs and it has no width: that is no
spread in the data seen, not certainty.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import sys
import types
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from populations.db import MatchRow
from populations.ratings import ELO_START

log = logging.getLogger(__name__)

RESAMPLES = 1000  # bootstrap resamples per pair
CONFIDENCE = 0.95
TOL = 1e-9  # |margin| <= TOL is a draw (as populations.ratings.pair_outcome)
CHUNK = 1 << 22  # bootstrap index entries drawn at once (32 MiB of int64)


# ----------------------------------------------------------------------------- episodes
@dataclass(frozen=True)
class Episodes:
    """Two-snapshot episodes in recorded order: ``a[t] < b[t]`` snapshot ids and
    ``margin[t]`` = score of ``a[t]`` minus score of ``b[t]``; all shape ``(T,)``."""

    a: np.ndarray
    b: np.ndarray
    margin: np.ndarray

    def pairs(self) -> dict[tuple[int, int], np.ndarray]:
        """``{(a, b): margins of a over b, shape (n_ab,)}`` for every pair that met, each
        pair's margins in recorded order (one stable sort by pair, not a pass per pair)."""
        out: dict[tuple[int, int], np.ndarray] = {}
        if len(self.a) == 0:
            return out
        keys = np.stack([self.a, self.b], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        order = np.argsort(inverse.reshape(-1), kind="stable")  # (T,): pair by pair
        ends = np.cumsum(np.bincount(inverse.reshape(-1), minlength=len(uniq)))[:-1]
        for (a, b), margin in zip(uniq.tolist(), np.split(self.margin[order], ends),
                                  strict=True):
            out[(a, b)] = margin
        return out


def episodes(matches: Iterable[MatchRow]) -> Episodes:
    """Every (episode, pair of snapshots in it) from recorded matches. An episode with more
    than two snapshots gives one entry per pair; self-play episodes give none."""
    a: list[int] = []
    b: list[int] = []
    margin: list[float] = []
    for m in matches:
        total: dict[int, float] = {}
        seats: dict[int, int] = {}
        for agent, sid in m.seats.items():
            if agent in m.returns:
                total[int(sid)] = total.get(int(sid), 0.0) + float(m.returns[agent])
                seats[int(sid)] = seats.get(int(sid), 0) + 1
        score = {s: total[s] / seats[s] for s in total}
        sids = sorted(score)
        for i, x in enumerate(sids):
            for y in sids[i + 1:]:
                a.append(x)
                b.append(y)
                margin.append(score[x] - score[y])
    return Episodes(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64),
                    np.asarray(margin, dtype=np.float64))


# ----------------------------------------------------------------------------- bootstrap
def bootstrap_chunks(n: int, resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Resampled episode indices, ``resamples`` rows of n draws with replacement, in blocks
    of shape ``(rows, n)`` holding at most :data:`CHUNK` entries (memory stays bounded
    however many episodes a pair has)."""
    rows = _chunk_rows(n, resamples)
    for start in range(0, resamples, rows):
        yield rng.integers(0, n, size=(min(rows, resamples - start), n))


def _chunk_rows(n: int, resamples: int) -> int:
    """Rows of :func:`bootstrap_chunks`' blocks for ``n`` episodes (the last may be fewer)."""
    return min(resamples, max(1, CHUNK // max(n, 1)))


def bootstrap_indices(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """All of :func:`bootstrap_chunks` at once, shape ``(resamples, n)``."""
    return np.vstack(list(bootstrap_chunks(n, resamples, rng)))


def pair_rng(seed: int, a: int, b: int) -> np.random.Generator:
    """The generator of pair (a, b): independent of every other pair's."""
    return np.random.default_rng([seed, a, b])


def _interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    lo, hi = np.quantile(samples, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


@functools.lru_cache(maxsize=8)
def _normal_quantile(q: float) -> float:
    return NormalDist().inv_cdf(q)  # not scipy: a page's first answer waited for its import


def wilson(successes: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval of a proportion: ``successes`` of ``n`` trials (n >= 1; a
    fractional count, draws as halves, gives the same formula at that rate).

    With ``z`` the normal quantile of ``(1 + confidence) / 2`` and ``p = successes / n``:
    ``(p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n)``; 0 and 1 exactly at p = 0, 1."""
    z = _normal_quantile((1 + confidence) / 2)
    p, z2 = successes / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    lo, hi = max(0.0, float(centre - half)), min(1.0, float(centre + half))
    return (0.0 if successes == 0 else lo), (1.0 if successes == n else hi)  # exact there


def pair_stats(margin: np.ndarray, rng: np.random.Generator, resamples: int = RESAMPLES,
               confidence: float = CONFIDENCE, tol: float = TOL) -> dict[str, Any]:
    """Win/draw/loss rates of one pair with Wilson score intervals, and its mean margin with
    a percentile bootstrap interval.

    ``margin``: shape (n,); the resamples come from :func:`bootstrap_chunks` with ``rng``.
    Returns ``{stat: value, stat_lo: ..., stat_hi: ...}`` for stat in win, draw, loss,
    margin, and ``n``."""
    out = _rates(margin, confidence, tol)
    boot = boot_means(margin, resamples, rng)
    out["margin"] = float(margin.mean())
    out["margin_lo"], out["margin_hi"] = _interval(boot, confidence)
    out["margin_boot"] = boot  # (resamples,), for α-Rank's interval
    return out


def boot_means(margin: np.ndarray, resamples: int, rng: np.random.Generator,
               out: np.ndarray | None = None, scratch: np.ndarray | None = None
               ) -> np.ndarray:
    """The mean margin of each resample: ``margin`` (n,) at :func:`bootstrap_chunks`'
    indices drawn from ``rng``, averaged per row; shape ``(resamples,)``, written into
    ``out`` when given. ``scratch``: room for a block of gathered margins, reused across
    calls (a fresh block per pair cost as much as the gather itself); used where it fits
    and has ``margin``'s dtype. The one definition :func:`pair_stats` and the batched
    pairs share, so both give the same bits."""
    out = np.empty(resamples) if out is None else out
    start = 0
    for idx in bootstrap_chunks(len(margin), resamples, rng):  # idx: (rows, n)
        rows = out[start:start + len(idx)]
        vals = (scratch[:idx.size].reshape(idx.shape)
                if scratch is not None and scratch.size >= idx.size
                and scratch.dtype == margin.dtype else None)
        # indices are in range by construction: "clip" skips numpy's check, not a value
        vals = np.take(margin, idx, mode="clip", out=vals)
        # what ndarray.mean(axis=1) computes, less its per-call Python (half the time here)
        np.add.reduce(vals, axis=1, out=rows)
        np.true_divide(rows, len(margin), out=rows)
        start += len(idx)
    return out


def _mirror(s: dict[str, Any]) -> dict[str, Any]:
    """The same pair seen from the other snapshot: win ↔ loss, margin negated."""
    return {"n": s["n"], "win": s["loss"], "win_lo": s["loss_lo"], "win_hi": s["loss_hi"],
            "loss": s["win"], "loss_lo": s["win_lo"], "loss_hi": s["win_hi"],
            "draw": s["draw"], "draw_lo": s["draw_lo"], "draw_hi": s["draw_hi"],
            "margin": -s["margin"], "margin_lo": -s["margin_hi"], "margin_hi": -s["margin_lo"]}


STATS = ("win", "draw", "loss", "margin")


def pairs_stats(pairs: dict[tuple[int, int], np.ndarray], seed: int, resamples: int,
                confidence: float, tol: float) -> dict[tuple[int, int], dict[str, Any]]:
    """:func:`pair_stats` of every pair, the same numbers: each pair's resample means come
    from its own :func:`pair_rng` through the same :func:`boot_means`, one pair at a time
    (the draws are the cost, and they cannot be shared), into the rows of a
    ``(pairs, resamples)`` block whose percentile intervals are taken in one
    ``np.quantile``: per-pair quantile calls were most of the rest. Pairs come out grouped
    by episode count, each group in the order given (one scratch block per count).
    Stacking every pair's ``(resamples, n)`` indices to gather them in one op cost more
    than it saved (68d084f: 0.7x of the loop at 16 episodes a pair, 0.5x at 128)."""
    by_n: dict[int, list[tuple[int, int]]] = {}
    for ab, margin in pairs.items():
        by_n.setdefault(len(margin), []).append(ab)
    out: dict[tuple[int, int], dict[str, Any]] = {}
    per_block = max(1, CHUNK // resamples)  # pairs per (P, R) block of resample means
    for n, keys in by_n.items():
        scratch = np.empty(_chunk_rows(n, resamples) * n)  # one pair's gathered margins
        for start in range(0, len(keys), per_block):
            block = keys[start:start + per_block]
            boot = np.empty((len(block), resamples))  # (P, R)
            for p, ab in enumerate(block):
                boot_means(pairs[ab], resamples, pair_rng(seed, *ab), out=boot[p],
                           scratch=scratch)
            lo, hi = np.quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2], axis=1)
            for p, ab in enumerate(block):
                margin = pairs[ab]
                out[ab] = _rates(margin, confidence, tol)
                out[ab].update(margin=float(margin.mean()), margin_lo=float(lo[p]),
                               margin_hi=float(hi[p]), margin_boot=boot[p])
    return out


def _rates(margin: np.ndarray, confidence: float, tol: float) -> dict[str, Any]:
    """Win/draw/loss rates of one pair's ``margin`` (n,) with Wilson intervals."""
    n = len(margin)
    counts = {"win": int((margin > tol).sum()), "loss": int((margin < -tol).sum())}
    counts["draw"] = n - counts["win"] - counts["loss"]
    out: dict[str, Any] = {"n": int(n)}
    for name in ("win", "draw", "loss"):
        out[name] = counts[name] / n
        out[f"{name}_lo"], out[f"{name}_hi"] = wilson(counts[name], n, confidence)
    return out


@dataclass
class CrossPlay:
    """Cross-play tables over snapshots ``ids``: ``table[stat][i][j]`` (and ``stat_lo``,
    ``stat_hi``) is the statistic of ``ids[i]`` against ``ids[j]``, None where they have
    not met (and on the diagonal); ``n[i][j]`` the number of episodes."""

    ids: list[int]
    n: list[list[int]]
    table: dict[str, list[list[float | None]]] = field(default_factory=dict)
    # (i, j) with i < j → the pair's resampled mean margins, shape (resamples,)
    margin_boot: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)


def crossplay(eps: Episodes, resamples: int = RESAMPLES, seed: int = 0,
              confidence: float = CONFIDENCE, tol: float = TOL) -> CrossPlay:
    """Pairwise cross-play tables with Wilson intervals for the rates and bootstrap intervals
    for the mean margins (see the module doc)."""
    if resamples < 1:
        raise ValueError(f"resamples={resamples}: expected a positive number of resamples")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence}: expected a level in (0, 1), e.g. 0.95")
    pairs = eps.pairs()
    ids = sorted({x for ab in pairs for x in ab})
    pos = {s: i for i, s in enumerate(ids)}
    k = len(ids)
    n = [[0] * k for _ in range(k)]
    names = [f"{s}{sfx}" for s in STATS for sfx in ("", "_lo", "_hi")]
    table: dict[str, list[list[float | None]]] = {nm: [[None] * k for _ in range(k)]
                                                 for nm in names}
    boot: dict[tuple[int, int], np.ndarray] = {}
    for (a, b), s in pairs_stats(pairs, seed, resamples, confidence, tol).items():
        boot[(pos[a], pos[b])] = s["margin_boot"]
        for (i, j), st in (((pos[a], pos[b]), s), ((pos[b], pos[a]), _mirror(s))):
            n[i][j] = st["n"]
            for nm in names:
                table[nm][i][j] = st[nm]
    return CrossPlay(ids, n, table, boot)


# ----------------------------------------------------------------------------- Elo
def elo_bootstrap(eps: Episodes, ids: Sequence[int], resamples: int = RESAMPLES,
                  seed: int = 0, k: float = 24.0, tol: float = TOL,
                  confidence: float = CONFIDENCE) -> dict[int, dict[str, float]]:
    """Elo replayed over the episodes (start 1000, K = ``k``, one update per episode in
    recorded order) and its percentile bootstrap interval: each resample draws T episodes
    with replacement and replays them in the order they were drawn from, all resamples
    at once (ratings shape ``(resamples, len(ids))``).

    Returns ``{sid: {"elo": replay on the episodes as recorded, "elo_lo", "elo_hi"}}``.
    This is an *episode-level* replay, so it differs from the stored Elo, which the
    league updates once per role-swapped pair; the interval shows how much the rating
    moves when other episodes had been drawn, not a posterior."""
    pos = {s: i for i, s in enumerate(ids)}
    keep = np.array([a in pos and b in pos for a, b in zip(eps.a, eps.b, strict=True)],
                    dtype=bool)
    a = np.array([pos[int(x)] for x in eps.a[keep]], dtype=np.int64)
    b = np.array([pos[int(x)] for x in eps.b[keep]], dtype=np.int64)
    m = eps.margin[keep]
    score = np.where(m > tol, 1.0, np.where(m < -tol, 0.0, 0.5))
    t = len(a)
    rng = np.random.default_rng([seed, t])
    idx = np.vstack([np.arange(t)[None, :], np.sort(bootstrap_indices(t, resamples, rng), 1)])
    r = np.full((resamples + 1, len(ids)), ELO_START)
    rows = np.arange(resamples + 1)
    for step in range(t):  # sequential in episodes, vectorized over resamples
        e = idx[:, step]
        ra, rb = r[rows, a[e]], r[rows, b[e]]
        delta = k * (score[e] - 1.0 / (1.0 + 10.0 ** ((rb - ra) / 400.0)))
        r[rows, a[e]] += delta
        r[rows, b[e]] -= delta
    out = {}
    for s, i in pos.items():
        lo, hi = _interval(r[1:, i], confidence)
        out[s] = {"elo": float(r[0, i]), "elo_lo": lo, "elo_hi": hi}
    return out


# ----------------------------------------------------------------------------- α-Rank
def import_alpharank() -> types.ModuleType:
    """OpenSpiel's alpharank. Its module imports the plotting module, which needs
    matplotlib even though :func:`alpharank.compute` draws nothing; without matplotlib, a
    stand-in plotting module is registered first (so the real one never runs: its failed
    import would also attach a stderr handler to the root logger) that raises if
    anything tries to plot."""
    name = "open_spiel.python.egt.alpharank_visualizer"
    if name not in sys.modules and importlib.util.find_spec("matplotlib") is None:
        stub = types.ModuleType(name, "stand-in: matplotlib is not installed")

        def _no_plots(attr: str) -> Any:
            if attr.startswith("__"):  # module introspection (pytest, hypothesis, pickle)
                raise AttributeError(attr)  # must see a plain module, not a failed import
            raise ImportError(f"alpharank plotting ({attr}) needs matplotlib: "
                              "pip install matplotlib")

        stub.__getattr__ = _no_plots  # type: ignore[attr-defined]
        sys.modules[name] = stub
    from open_spiel.python.egt import alpharank
    return alpharank


INF_ALPHA_EPS = 0.01  # alpharank.compute's default noise of the α → ∞ model


def inf_alpha_pi(payoff: np.ndarray, eps: float = INF_ALPHA_EPS) -> np.ndarray:
    """Stationary distribution of α-Rank's α → ∞ chain of the single-population game
    ``payoff`` (k, k), k >= 2: OpenSpiel's ``_get_singlepop_transition_matrix`` with
    ``use_inf_alpha`` built as array ops (it loops over the k² pairs in Python, ~0.5 s at
    k = 100, which a bootstrap interval repeats a hundred times), then OpenSpiel's own
    ``_get_stationary_distr``. The same matrix entry by entry: from s, mutant r is
    reached with η(1 − ε) when it earns more against s than s against it, η/2 on a tie
    (``np.isclose``, atol 1e-14) and η ε otherwise, η = 1 / (k − 1); the diagonal is
    one minus the row, summed left to right as there."""
    ar = import_alpharank()
    k = payoff.shape[0]
    eta = 1.0 / (k - 1)
    gain, keep = payoff.T, payoff  # gain[s, r]: r against s; keep[s, r]: s against r
    c = np.where(np.isclose(gain, keep, atol=1e-14), eta * 0.5,
                 np.where(gain > keep, eta * (1 - eps), eta * eps))
    np.fill_diagonal(c, 0.0)
    np.fill_diagonal(c, 1 - np.cumsum(c, axis=1)[:, -1])
    return np.asarray(ar._get_stationary_distr(c), dtype=np.float64)


def _alpharank_pi(payoff: np.ndarray, alpha: float | None, m: int) -> np.ndarray:
    """α-Rank's stationary masses of ``payoff`` (k, k): the α → ∞ chain directly
    (:func:`inf_alpha_pi`), a finite α through ``alpharank.compute``."""
    if payoff.shape[0] == 1:
        return np.ones(1)
    if alpha is None:
        return inf_alpha_pi(payoff)
    return np.asarray(import_alpharank().compute([payoff], m=m, alpha=alpha)[2], dtype=float)


def complete_subset(defined: np.ndarray) -> list[int]:
    """Indices of a set of strategies that have all met each other: repeatedly drop the
    one missing the most opponents (ties: the later one). ``defined``: bool (k, k)."""
    keep = list(range(defined.shape[0]))
    while keep:
        sub = defined[np.ix_(keep, keep)] | np.eye(len(keep), dtype=bool)
        missing = (~sub).sum(axis=1)
        if missing.max() == 0:
            return keep
        worst = int(np.flatnonzero(missing == missing.max())[-1])
        keep.pop(worst)
    return keep


def alpha_rank(margin: list[list[float | None]], ids: Sequence[int], alpha: float | None = None,
               m: int = 50) -> dict[str, Any]:
    """α-Rank (Omidshafiei et al. 2019) of the single-population empirical game whose
    payoff to ``ids[i]`` against ``ids[j]`` is the mean margin ``margin[i][j]``
    (antisymmetric, 0 on the diagonal), computed by ``alpharank.compute``.

    Only snapshots that all met each other take part (:func:`complete_subset`); the rest
    are listed under ``left_out``. ``alpha=None`` uses the α → ∞ limit
    (``use_inf_alpha``), which depends only on which strategy beats which, not on the
    scale of the scores. Returns ``{"ids", "pi" (stationary mass, sums to 1), "rank"
    (1 = most mass), "alpha", "m", "left_out"}``."""
    k = len(ids)
    mat = np.array([[np.nan if v is None else float(v) for v in row] for row in margin],
                   dtype=np.float64).reshape(k, k)
    keep = complete_subset(~np.isnan(mat))
    left_out = [int(ids[i]) for i in range(k) if i not in keep]
    if not keep:
        return {"ids": [], "pi": [], "rank": [], "alpha": alpha, "m": m, "left_out": left_out}
    sub = np.nan_to_num(mat[np.ix_(keep, keep)])
    np.fill_diagonal(sub, 0.0)
    pi = np.clip(_alpharank_pi(sub, alpha, m).reshape(-1), 0.0, None)
    pi = pi / pi.sum()
    order = np.argsort(-pi, kind="stable")
    rank = np.empty(len(pi), dtype=np.int64)
    rank[order] = np.arange(1, len(pi) + 1)
    return {"ids": [int(ids[i]) for i in keep], "pi": pi.tolist(), "rank": rank.tolist(),
            "alpha": alpha, "m": m, "left_out": left_out}


def alpha_rank_interval(cp: CrossPlay, ranked: dict[str, Any], resamples: int = 100,
                        confidence: float = CONFIDENCE) -> dict[str, list[float]]:
    """How much α-Rank's masses move with the episodes drawn: α-Rank (same α and m as
    ``ranked``, from :func:`alpha_rank`) of the first ``resamples`` bootstrap mean-margin
    tables of ``cp``, the snapshots ``ranked`` kept. Returns ``{"pi_lo", "pi_hi"}``
    (percentile interval of each mass) and ``"top"`` (share of resamples in which each
    snapshot has the most mass), each in ``ranked["ids"]`` order."""
    keep = [cp.ids.index(s) for s in ranked["ids"]]
    k = len(keep)
    if k == 0:
        return {"pi_lo": [], "pi_hi": [], "top": []}
    if k == 1:
        return {"pi_lo": [1.0], "pi_hi": [1.0], "top": [1.0]}
    r = min(resamples, min(len(v) for v in cp.margin_boot.values()))
    mats = np.zeros((r, k, k))
    for x in range(k):
        for y in range(x + 1, k):
            i, j = keep[x], keep[y]
            sample = cp.margin_boot[(i, j)] if i < j else -cp.margin_boot[(j, i)]
            mats[:, x, y], mats[:, y, x] = sample[:r], -sample[:r]
    pis = np.array([_alpharank_pi(m, ranked["alpha"], ranked["m"]) for m in mats])  # (r, k)
    pis = np.clip(pis, 0.0, None)
    pis /= pis.sum(axis=1, keepdims=True)
    lo, hi = np.quantile(pis, [(1 - confidence) / 2, (1 + confidence) / 2], axis=0)
    top = np.bincount(pis.argmax(axis=1), minlength=k) / r
    return {"pi_lo": lo.tolist(), "pi_hi": hi.tolist(), "top": top.tolist()}
