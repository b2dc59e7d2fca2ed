"""Projected replicator dynamics (``prd``, PSRO's default meta-solver on general-sum games):
the vectorized loop in ``populations.meta_solvers`` against the previous one (one player and
one ``tensordot`` per player per step, kept below as ``previous_prd``), alternating the two
in one run on the same payoffs, and OpenSpiel's ``projected_replicator_dynamics`` with the
same floor (approximate projection, ``gamma / K``) for the size of the differences.

    python bench/prd41_bench.py [--repeats 3] [--iterations 20000]

Prints a markdown table: seconds per call (median of ``--repeats``), the ratio and the
largest difference between the two results (float rounding only).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

# bench/games.py would shadow the games package: keep bench/ off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

from bench._args import at_least  # noqa: E402
from populations.meta_solvers import (  # noqa: E402
    PRDConfig,
    check_payoffs,
    deviation_payoffs,
    projected_replicator_dynamics,
)


def _simplex(x: np.ndarray) -> np.ndarray:
    """meta_solvers' helper as the previous loop called it (7648902), copied: a bench reads no
    module's private names (tests/test_priv38_private_names.py)."""
    x = np.asarray(x, dtype=np.float64)
    x = np.where(x > 0.0, x, 0.0)
    return x / x.sum()


def _project(x: np.ndarray, gamma: float) -> np.ndarray:
    """OpenSpiel's approximate projection, as meta_solvers had it at 7648902 (copied)."""
    x = np.maximum(x, gamma / x.size)
    return x / x.sum()


def previous_prd(payoffs: np.ndarray, config: PRDConfig,
                 initial: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
    """The loop before session 41, verbatim: the reference for speed and results."""
    cfg = config
    payoffs = check_payoffs(payoffs)
    P = payoffs.shape[0]
    if initial is None:
        x = [np.full(k, 1.0 / k) for k in payoffs.shape[1:]]
    else:
        x = [_simplex(s) for s in initial]
    keep = cfg.iterations if cfg.average_last is None else cfg.average_last
    keep = max(1, min(keep, cfg.iterations))
    avg = [np.zeros_like(s) for s in x]
    for it in range(cfg.iterations):
        dev = [deviation_payoffs(payoffs, x, p) for p in range(P)]
        x = [_project(s + cfg.dt * s * (d - s @ d), cfg.gamma) for s, d in zip(x, dev, strict=True)]
        if it >= cfg.iterations - keep:
            for a, s in zip(avg, x, strict=True):
                a += s
    return [_simplex(a) for a in avg] if cfg.iterations else x


GAMES = {
    "2x2 (battle of the sexes)": lambda rng: np.array(
        [[[3.0, 0.0], [0.0, 2.0]], [[2.0, 0.0], [0.0, 3.0]]]) / 3.0,
    "3 players, 3x3x3": lambda rng: rng.uniform(-1, 1, size=(3, 3, 3, 3)),
    "20x20 general-sum": lambda rng: rng.uniform(-1, 1, size=(2, 20, 20)),
    "100x100 general-sum": lambda rng: rng.uniform(-1, 1, size=(2, 100, 100)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=at_least(1), default=3)
    parser.add_argument("--iterations", type=at_least(1), default=20_000)
    args = parser.parse_args()
    cfg = PRDConfig(iterations=args.iterations)
    print("| meta-game | previous s/call | now s/call | ratio | max abs difference |")
    print("|---|---:|---:|---:|---:|")
    for name, make in GAMES.items():
        payoffs = make(np.random.default_rng(0))
        times: dict[str, list[float]] = {"previous": [], "now": []}
        results = {}
        for _ in range(args.repeats):  # alternate, so load drifts hit both alike
            for label, fn in (("previous", previous_prd), ("now", projected_replicator_dynamics)):
                start = time.perf_counter()
                results[label] = fn(payoffs, cfg)
                times[label].append(time.perf_counter() - start)
        diff = max(float(np.abs(a - b).max())
                   for a, b in zip(results["previous"], results["now"], strict=True))
        old, new = statistics.median(times["previous"]), statistics.median(times["now"])
        print(f"| {name} | {old:.3f} | {new:.3f} | {old / new:.1f}x | {diff:.1e} |")


if __name__ == "__main__":
    main()
