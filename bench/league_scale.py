"""A long league's bookkeeping: each path made fast for many snapshots against its baseline,
measured in the same process on the same synthetic but real ``league.db``.

    nice -n 10 python bench/league_scale.py [--leagues 64,135,290:2] [--eval-episodes 8]
                                            [--repeats 3] [--seed 0]

Each league of ``--leagues`` (``N`` snapshots, or ``N:K`` for ``eval_window=K``; 0, the
default, evaluates each new snapshot against every earlier one) is written through the
project's own API (``LeagueDB``, and ``evaluation.Standings`` folding in each generation
as a league does): one member, snapshot ``g`` published in generation ``g`` and evaluated
in ``--eval-episodes`` role-swapped Kuhn-like episode pairs (returns ±1 or ±2, the newer
snapshot a little stronger) against its rivals, under the keys ``evaluate_pairs`` writes.
Then, per league, baseline against the new path:

- **standings**: the last ``--repeats`` generations' matches are added one generation at a
  time and folded in by the league's ``Standings.update`` (the new matches alone; median
  of those generations), against one ``evaluation.recompute`` after the last (a replay of
  every recorded match from scratch: what every generation did before 2c7f023, which
  README gives as 1.0 s CPU at 135 snapshots and 17.9k matches; 677f4ae made the replay
  itself faster). Both must give the same ratings and payoff table, to the bit.
- **cross-play**: the dashboard's statistics (``queries.compute_crossplay``) with α-Rank
  and its interval over the newest ``ALPHARANK_MAX_SNAPSHOTS`` (64) snapshots, against the
  same with the bound lifted to all N (leagues of more than 64 snapshots); two of its
  parts alone: the α → ∞ chain of the ranked k = min(N, 64) snapshots built as array ops
  (``inf_alpha_pi``) against OpenSpiel's ``alpharank.compute`` (loops over the k² pairs),
  and the pair bootstraps batched by episode count (``pairs_stats``) against one
  ``pair_stats`` call per pair, on the same (at most 2,000) pairs, each checked equal.
- **win_rates**: a matchmaking draw's read of the latest snapshot's win rates (one row of
  the payoff table, ``payoff_rows``) against reading the whole table (before 2c7f023);
  median of at least ten reads.
- **bytes**: the JSON the server sends (``payoffs``, ``crossplay``, ``ratings``) in full and
  with ``?compact=1``, and the compact cross-play asked again with its ETag (304, no body;
  the server still builds the answer to hash it).

Times are CPU seconds of this process (``time.process_time``; less moved by a loaded
machine) and wall seconds, one run unless said above; speed-ups are baseline / new. A tiny
league's cross-play runs first, untimed, so no timed path pays the imports. Prints
markdown tables for ``BENCHMARKS.md``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# bench/games.py would shadow the games package: keep bench/ off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from bench._args import at_least  # noqa: E402
from populations import crossplay as cp  # noqa: E402
from populations.dashboard import create_app, queries  # noqa: E402
from populations.dashboard.data import finite  # noqa: E402
from populations.db import LeagueDB, MatchRow  # noqa: E402
from populations.evaluation import Standings, recompute, win_rates  # noqa: E402
from populations.league import LeagueConfig  # noqa: E402

GAME = "openspiel/kuhn_poker"
SEATS = ("player_0", "player_1")
MAX_BOOT_PAIRS = 2000  # pairs whose bootstraps are timed both ways (one by one is slow)


def parse_leagues(text: str) -> list[tuple[int, int]]:
    """``64,135,290:2`` -> ``[(64, 0), (135, 0), (290, 2)]`` (snapshots, eval_window)."""
    out = []
    for part in text.split(","):
        n, _, k = part.strip().partition(":")
        try:
            league = (int(n), int(k or 0))
        except ValueError:
            league = (0, -1)
        if league[0] < 2 or league[1] < 0:
            raise argparse.ArgumentTypeError(
                f"{part!r}: expected N (snapshots, at least 2) or N:K (eval_window K >= 0), "
                "comma-separated, e.g. 64,135,290:2")
        out.append(league)
    return out


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``fn()``'s result, CPU seconds and wall seconds."""
    c, w = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c, time.perf_counter() - w


def generation_rows(rng: np.random.Generator, g: int, ids: list[int], window: int,
                    episodes: int) -> list[MatchRow]:
    """Generation ``g``'s evaluation: snapshot ``ids[g]`` against its rivals (every earlier
    snapshot, or the last ``window``), ``episodes`` role-swapped pairs each, keyed as
    ``evaluate_pairs`` keys them; the newer snapshot wins an episode with probability
    0.5 + 0.2 * (its version lead) / N, by 1 or 2 chips."""
    new = ids[g]
    rivals = ids[:g][-window:] if window else ids[:g]
    rows = []
    for i, old in enumerate(rivals):
        lead = 0.5 + 0.2 * (g - ids.index(old)) / len(ids)
        key = f"g{g:04d}/{new}-{old}"
        seed = 100_003 * g + 7919 * i
        for side, seats in (("ab", {SEATS[0]: new, SEATS[1]: old}),
                            ("ba", {SEATS[0]: old, SEATS[1]: new})):
            wins = rng.random(episodes) < lead
            chips = rng.integers(1, 3, size=episodes).astype(float)
            for e in range(episodes):
                r_new = chips[e] if wins[e] else -chips[e]
                r0 = r_new if seats[SEATS[0]] == new else -r_new
                rows.append(MatchRow(f"{key}/{side}/e{e:04d}", GAME, seats,
                                     {SEATS[0]: r0, SEATS[1]: -r0}, seed))
    return rows


def build(path: Path, n: int, window: int, episodes: int, upto: int, seed: int
          ) -> tuple[LeagueDB, int, list[int], Standings, np.random.Generator]:
    """A league.db of ``n`` snapshots whose generations 1..``upto`` are evaluated and
    folded into payoffs and ratings (``Standings.update(step=g)``, as a league does)."""
    db = LeagueDB(path)
    run = db.create_run("league_scale", game=GAME)
    mid = db.add_member(run, "main", "mappo", SEATS)
    ids = [db.add_snapshot(mid, v, path.parent / f"main_v{v}.pt", "mappo", GAME, SEATS)
           for v in range(n)]
    rng = np.random.default_rng(seed)
    standings = Standings(db, run)
    for g in range(1, upto + 1):
        db.add_matches(run, generation_rows(rng, g, ids, window, episodes))
        standings.update(step=g)
    return db, run, ids, standings, rng


def median_times(samples: Times) -> tuple[float, float]:
    return (statistics.median(c for c, _ in samples), statistics.median(w for _, w in samples))


Times = list[tuple[float, float]]  # (CPU s, wall s) per repeat


def payoff_table(db: LeagueDB, run: int) -> list[tuple[Any, ...]]:
    """The payoff entries' values (not when they were written), sorted."""
    return sorted((p["row_snapshot"], p["col_snapshot"], p["value"], p["win_rate"],
                   p["count"], p["exact"]) for p in db.payoffs(run))


def bench_standings(db: LeagueDB, run: int, ids: list[int], standings: Standings,
                    rng: np.random.Generator, window: int, episodes: int, repeats: int
                    ) -> tuple[dict[str, Any], Times, Times]:
    """The league's update in each of the last ``repeats`` generations, then one replay of
    every match from scratch after the last; both must agree to the bit."""
    inc = []
    for g in range(len(ids) - repeats, len(ids)):
        rows = generation_rows(rng, g, ids, window, episodes)
        db.add_matches(run, rows)
        ratings, c, w = timed(lambda g=g: standings.update(step=g))
        inc.append((c, w))
    after_inc = payoff_table(db, run)
    replayed, c, w = timed(lambda: recompute(db, run, step=len(ids) - 1))
    if replayed.table() != ratings.table():
        raise SystemExit("incremental ratings differ from a replay of every match")
    if payoff_table(db, run) != after_inc:
        raise SystemExit("incremental payoffs differ from a replay of every match")
    return {"matches": db.count_matches(run), "new": len(rows)}, [(c, w)], inc


def warm_up() -> None:
    """First calls pay for imports (OpenSpiel's alpharank, SciPy) and NumPy's first use of
    each routine: a tiny league's cross-play first, so no timed path pays them."""
    with tempfile.TemporaryDirectory(prefix="league_scale-") as tmp:
        db, run, *_ = build(Path(tmp) / "league.db", 4, 0, 2, 3, 0)
        queries.compute_crossplay(db, run)
        db.close()
    queries.CROSSPLAY_CACHE.clear()


def bench_crossplay(db: LeagueDB, run: int, n: int) -> dict[str, Any]:
    """compute_crossplay bounded and unbounded, and its two batched parts against loops."""
    out: dict[str, Any] = {}
    bound = queries.ALPHARANK_MAX_SNAPSHOTS
    if n > bound:  # at most the bound, both are the same computation
        queries.ALPHARANK_MAX_SNAPSHOTS = n
        try:
            _, *out["unbounded"] = timed(lambda: queries.compute_crossplay(db, run))
        finally:
            queries.ALPHARANK_MAX_SNAPSHOTS = bound
    bounded, *out["bounded"] = timed(lambda: queries.compute_crossplay(db, run))
    out["episodes"] = bounded.episodes
    out["ranked"] = len(bounded.alpharank["ids"])
    out["elo"] = bounded.elo is not None
    # the α → ∞ chain of the ranked window, unmet pairs as 0 (the chain's cost is its size)
    table = bounded.table
    pos = [table.ids.index(s) for s in queries.ranked_window(table.ids)]
    payoff = np.nan_to_num(np.array([[np.nan if table.table["margin"][i][j] is None
                                      else table.table["margin"][i][j] for j in pos]
                                     for i in pos], dtype=np.float64))
    np.fill_diagonal(payoff, 0.0)
    ar = cp.import_alpharank()
    looped, *out["chain_loop"] = timed(
        lambda: ar.compute([payoff], m=50, use_inf_alpha=True)[2])
    arrays, *out["chain_arrays"] = timed(lambda: cp.inf_alpha_pi(payoff))
    if not np.allclose(np.asarray(looped).reshape(-1), arrays, atol=1e-9):
        raise SystemExit("the α → ∞ chain's array ops differ from alpharank.compute")
    out["chain_k"] = len(pos)
    # pair bootstraps of (at most MAX_BOOT_PAIRS of) the table's pairs, the same both ways
    every = cp.episodes(db.matches(run)).pairs()
    keys = list(every)
    if len(keys) > MAX_BOOT_PAIRS:
        keys = [keys[i] for i in sorted(np.random.default_rng(0).choice(
            len(keys), MAX_BOOT_PAIRS, replace=False))]
    pairs = {ab: every[ab] for ab in keys}

    def one_by_one() -> dict[tuple[int, int], dict[str, Any]]:
        return {ab: cp.pair_stats(m, cp.pair_rng(queries.CROSSPLAY_SEED, *ab))
                for ab, m in pairs.items()}

    each, *out["boot_loop"] = timed(one_by_one)
    batched, *out["boot_batched"] = timed(lambda: cp.pairs_stats(
        pairs, queries.CROSSPLAY_SEED, cp.RESAMPLES, cp.CONFIDENCE, cp.TOL))
    for ab, s in each.items():
        t = batched[ab]
        if s["margin_lo"] != t["margin_lo"] or s["margin_hi"] != t["margin_hi"] \
                or not np.array_equal(s["margin_boot"], t["margin_boot"]):
            raise SystemExit(f"pair {ab}: batched bootstrap differs from pair_stats")
    out["pairs"], out["all_pairs"] = len(pairs), len(every)
    return out


def bench_bytes(folder: Path, db: LeagueDB, run: int) -> dict[str, Any]:
    """JSON bytes of the full and compact views (cross-play cached: serialising only), and
    an ETag revalidation of the compact cross-play."""
    out: dict[str, Any] = {}
    for view, fn in (("payoffs", queries.payoff_matrix), ("crossplay", queries.crossplay),
                     ("ratings", queries.rating_history)):
        for compact in (False, True):
            body, *times = timed(lambda fn=fn, compact=compact:
                                 JSONResponse(finite(fn(db, run, compact))).body)
            out[(view, compact)] = (len(body), *times)
    client = TestClient(create_app([folder]))
    source = client.get("/api/runs").json()["runs"][0]["source"]
    url = f"/api/runs/{source}/{run}/crossplay?compact=1"
    first, *t200 = timed(lambda: client.get(url))
    again, *t304 = timed(lambda: client.get(url, headers={"if-none-match": first.headers["etag"]}))
    if first.status_code != 200 or again.status_code != 304:
        raise SystemExit(f"ETag: expected 200 then 304, got {first.status_code}, "
                         f"{again.status_code}")
    out["etag"] = (len(first.content), t200, len(again.content), t304)
    return out


def bench_win_rates(db: LeagueDB, run: int, ids: list[int], repeats: int
                    ) -> tuple[Times, Times]:
    """The latest snapshot's win rates against every snapshot: one row against the table."""
    def whole_table() -> list[float | None]:  # win_rates before 2c7f023
        table = {(p["row_snapshot"], p["col_snapshot"]): p["win_rate"] for p in db.payoffs(run)}
        return [table.get((ids[-1], s)) for s in ids]

    old, new = [], []
    for _ in range(repeats):
        want, *t_old = timed(whole_table)
        got, *t_new = timed(lambda: win_rates(db, run, ids[-1], ids))
        if got != want:
            raise SystemExit("win_rates differs from the whole table's entries")
        old.append(tuple(t_old))
        new.append(tuple(t_new))
    return old, new


def fmt(x: float) -> str:
    return f"{x:.4f}" if x < 0.1 else f"{x:.2f}"


def row(league: str, what: str, base: tuple[float, float], new: tuple[float, float]) -> str:
    ratio = [b / a if a > 0 else math.inf for b, a in zip(base, new, strict=True)]
    return (f"| {league} | {what} | {fmt(base[0])} | {fmt(new[0])} | {ratio[0]:.1f}x | "
            f"{fmt(base[1])} | {fmt(new[1])} | {ratio[1]:.1f}x |")


MEASURED = ("populations/evaluation.py", "populations/db.py", "populations/ratings.py",
            "populations/crossplay.py", "populations/dashboard")  # the code timed here


def commit() -> str:
    """HEAD, and whether the code measured differs from it in the working tree."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout
    dirty = git("status", "--porcelain", "--", *MEASURED)
    return git("rev-parse", "--short", "HEAD").strip() + (
        f" (working tree differs: {' '.join(line[3:] for line in dirty.splitlines())})"
        if dirty else "")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--leagues", type=parse_leagues, default=parse_leagues("64,135,290:2"),
                   help="N or N:K (eval_window K), comma-separated (default 64,135,290:2)")
    p.add_argument("--eval-episodes", type=at_least(1), default=LeagueConfig.eval_episodes,
                   help="role-swapped episode pairs per evaluated pair (the league's default)")
    p.add_argument("--repeats", type=at_least(1), default=3,
                   help="generations timed (standings) and reads (win_rates), medians")
    p.add_argument("--seed", type=at_least(0), default=0)
    args = p.parse_args()
    if args.eval_episodes < 1 or args.repeats < 1:
        p.error(f"--eval-episodes {args.eval_episodes}, --repeats {args.repeats}: expected "
                "positive numbers")
    if any(n <= args.repeats for n, _ in args.leagues):
        p.error(f"--repeats {args.repeats}: expected fewer than each league's snapshots")
    started = time.perf_counter()
    warm_up()
    print(f"commit {commit()}, {os.cpu_count()} CPUs, load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}, --eval-episodes "
          f"{args.eval_episodes}, --repeats {args.repeats}\n")
    times, sizes, notes = [], [], []
    for n, window in args.leagues:
        league = f"{n}" + (f" (window {window})" if window else "")
        with tempfile.TemporaryDirectory(prefix="league_scale-") as tmp:
            folder = Path(tmp)
            (db, run, ids, standings, rng), build_cpu, _ = timed(
                lambda n=n, window=window, folder=folder: build(
                    folder / "league.db", n, window, args.eval_episodes, n - 1 - args.repeats,
                    args.seed))
            info, full, inc = bench_standings(db, run, ids, standings, rng, window,
                                              args.eval_episodes, args.repeats)
            what = f"standings, a generation ({info['new']:,} new of {info['matches']:,} matches)"
            times.append(row(league, what, median_times(full), median_times(inc)))
            old, new = bench_win_rates(db, run, ids, max(args.repeats, 10))
            times.append(row(league, "win_rates of the latest", median_times(old),
                             median_times(new)))
            queries.CROSSPLAY_CACHE.clear()
            x = bench_crossplay(db, run, n)
            if "unbounded" in x:
                times.append(row(league, f"cross-play statistics (α-Rank over {n} / "
                                 f"{queries.ALPHARANK_MAX_SNAPSHOTS})", x["unbounded"],
                                 x["bounded"]))
            else:
                times.append(f"| {league} | cross-play statistics (α-Rank over all {n}: "
                             f"the bound does not apply) | | {fmt(x['bounded'][0])} | | | "
                             f"{fmt(x['bounded'][1])} | |")
            times.append(row(league, f"α → ∞ chain, k = {x['chain_k']}", x["chain_loop"],
                             x["chain_arrays"]))
            times.append(row(league, f"pair bootstraps ({x['pairs']:,} of {x['all_pairs']:,} "
                             f"pairs, {2 * args.eval_episodes} episodes each)",
                             x["boot_loop"], x["boot_batched"]))
            notes.append(f"{league}: built in {build_cpu:.1f} s CPU; cross-play counts "
                         f"{x['episodes']:,} episodes, α-Rank ranks {x['ranked']} snapshots, "
                         f"Elo replay {'on' if x['elo'] else 'skipped (over ELO_MAX_EPISODES)'}")
            b = bench_bytes(folder, db, run)
            for view in ("payoffs", "crossplay", "ratings"):
                full_b, compact_b = b[(view, False)][0], b[(view, True)][0]
                sizes.append(f"| {league} | {view} | {full_b:,} | {compact_b:,} | "
                             f"{full_b / compact_b:.1f}x |")
            n200, t200, n304, t304 = b["etag"]
            sizes.append(f"| {league} | crossplay?compact=1 again with its ETag (304) | "
                         f"{n200:,} | {n304:,} | CPU {fmt(t200[0])} -> {fmt(t304[0])} s |")
            db.close()
            queries.CROSSPLAY_CACHE.clear()
    print("| league | path: baseline -> new | baseline CPU s | new CPU s | CPU speed-up | "
          "baseline wall s | new wall s | wall speed-up |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(times))
    print("\n| league | view | full bytes | compact bytes | full / compact |")
    print("|---|---|---:|---:|---:|")
    print("\n".join(sizes))
    print()
    print("\n".join(notes))
    print(f"\nload average at the end {', '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
