"""Agent-steps per second of ``VectorGame`` against a plain PettingZoo loop, in one run.

Scenario: ``mpe2.simple_spread_v3`` (N=3, 25-step episodes, discrete actions) with
uniformly random actions drawn up front. The baseline is the loop a researcher writes
by hand over PettingZoo's Parallel API (reset when the episode ends). Each measurement
is repeated and interleaved with the others; the median is reported, and every figure
is also a ratio to the baseline measured in the same run.

    python bench/games.py [--steps 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# This file is named like the package it measures: keep bench/ off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

import numpy as np  # noqa: E402
from mpe2 import simple_spread_v3  # noqa: E402

import games  # noqa: E402
from bench._args import at_least  # noqa: E402

N_AGENTS = 3


def plain_pettingzoo(steps: int, rng: np.random.Generator) -> float:
    """Agent-steps/s of the hand-written Parallel loop."""
    env = simple_spread_v3.parallel_env(N=N_AGENTS, max_cycles=25)
    env.reset(seed=0)
    acts = rng.integers(0, 5, size=(steps, N_AGENTS))
    t0 = time.perf_counter()
    for t in range(steps):
        env.step({a: int(acts[t, i]) for i, a in enumerate(env.agents)})
        if not env.agents:
            env.reset()
    return steps * N_AGENTS / (time.perf_counter() - t0)


def game_loop(steps: int, rng: np.random.Generator) -> float:
    """Agent-steps/s of one ``games.Game`` driven through the contract (validation on)."""
    game = games.make("pettingzoo/mpe2.simple_spread_v3", N=N_AGENTS, max_cycles=25)
    ts = game.reset(0)
    acts = rng.integers(0, 5, size=(steps, N_AGENTS))
    ids = game.spec.agent_ids
    t0 = time.perf_counter()
    for t in range(steps):
        ts = game.step({a: int(acts[t, i]) for i, a in enumerate(ids)})
        if ts.done:
            ts = game.reset()
    return steps * N_AGENTS / (time.perf_counter() - t0)


def vector_loop(steps: int, num_envs: int, rng: np.random.Generator) -> float:
    """Agent-steps/s of ``VectorGame`` with ``num_envs`` copies (same total agent-steps)."""
    vg = games.VectorGame("pettingzoo/mpe2.simple_spread_v3", num_envs, seed=0, N=N_AGENTS)
    vg.reset()
    iters = max(1, steps // num_envs)
    acts = rng.integers(0, 5, size=(iters, N_AGENTS, num_envs))
    ids = vg.spec.agent_ids
    t0 = time.perf_counter()
    for t in range(iters):
        vg.step({a: acts[t, i] for i, a in enumerate(ids)})
    return iters * num_envs * N_AGENTS / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=at_least(1), default=20000,
                        help="joint steps per measurement")
    parser.add_argument("--repeats", type=at_least(1), default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    runs: dict[str, list[float]] = {}
    cases = {
        "plain PettingZoo loop (baseline)": lambda: plain_pettingzoo(args.steps, rng),
        "games.Game, B=1": lambda: game_loop(args.steps, rng),
        "VectorGame B=1": lambda: vector_loop(args.steps, 1, rng),
        "VectorGame B=8": lambda: vector_loop(args.steps, 8, rng),
        "VectorGame B=64": lambda: vector_loop(args.steps, 64, rng),
    }
    for _ in range(args.repeats):
        for name, fn in cases.items():
            runs.setdefault(name, []).append(fn())
    base = statistics.median(runs["plain PettingZoo loop (baseline)"])
    print(f"simple_spread_v3 N={N_AGENTS}, {args.steps} joint steps, median of {args.repeats}")
    print("| loop | agent-steps/s | ratio to plain PettingZoo |")
    print("|---|---:|---:|")
    for name, vals in runs.items():
        med = statistics.median(vals)
        print(f"| {name} | {med:,.0f} | {med / base:.2f} |")


if __name__ == "__main__":
    main()
