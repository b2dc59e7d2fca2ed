"""PSRO on vmas_tag (3 adversaries vs 1 good agent) with seats as players (4 populations,
``K^4`` profiles, meta-solver ``prd``: ``nash`` needs 2 players) against teams as players
(2 populations, ``K^2`` profiles, ``nash``), same settings, in one run.

    python bench/psro_teams.py [--iters 3] [--frames 2000] [--episodes 32] [--max-steps 25]

Per iteration it prints CPU seconds of the three PSRO steps (best responses, payoff
sampling, meta-solve) and their sum; on a shared machine wall time swings with the load,
CPU time of this one process much less (wall seconds are printed too). Both sides use the
RL oracle (MAPPO, local critics) and sampled payoffs (each entry's episodes as copies of
one VMAS batch).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# bench/games.py would shadow the games package: keep bench/ off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

import torch  # noqa: E402

from bench._args import at_least  # noqa: E402
from populations.psro import PSRO, PSROConfig, RLOracle, RLOracleConfig  # noqa: E402

GAME = "vmas/simple_tag"


def _timed(obj: object, name: str, totals: dict[str, float]) -> None:
    """Wrap ``obj.name`` to add its CPU seconds to ``totals[name]``."""
    inner = getattr(obj, name)

    def call(*args, **kwargs):
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            totals[name] = totals.get(name, 0.0) + time.process_time() - start

    setattr(obj, name, call)


def run(players: str, solver: str, args: argparse.Namespace) -> list[dict[str, float]]:
    kw = {"num_adversaries": 3, "num_good_agents": 1, "max_steps": args.max_steps}
    oracle = RLOracle(GAME, RLOracleConfig(frames=args.frames, num_envs=16), game_kwargs=kw)
    psro = PSRO(GAME, oracle, PSROConfig(meta_solver=solver, payoffs="sampled",
                                         episodes_per_entry=args.episodes, players=players,
                                         seed=args.seed), game_kwargs=kw)
    rows = []
    for _ in range(args.iters):
        totals: dict[str, float] = {}
        _timed(psro, "update_agents", totals)
        _timed(psro, "update_empirical_game", totals)
        _timed(psro, "update_meta_strategies", totals)
        start, cpu = time.perf_counter(), time.process_time()
        it = psro.iteration()
        for name in ("update_agents", "update_empirical_game", "update_meta_strategies"):
            delattr(psro, name)  # unwrap (the wrapper is an instance attribute)
        row = {"iteration": it.iteration, "K": len(next(iter(psro.members.values()))),
               "profiles": int(psro.payoffs[0].size), "oracle": totals["update_agents"],
               "payoffs": totals["update_empirical_game"],
               "meta": totals["update_meta_strategies"],
               "cpu": time.process_time() - cpu, "wall": time.perf_counter() - start}
        rows.append(row)
        print(f"{players:5s} {solver:4s} " + " ".join(
            f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
            flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=at_least(1), default=3)
    ap.add_argument("--frames", type=at_least(1), default=2000)
    ap.add_argument("--episodes", type=at_least(1), default=32)
    ap.add_argument("--max-steps", type=at_least(1), default=25)
    ap.add_argument("--seed", type=at_least(0), default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    seats = run("seats", "prd", args)
    teams = run("teams", "nash", args)
    print("\n| iteration | K | seats (prd): profiles, CPU s (oracle / payoffs / meta) "
          "| teams (nash): profiles, CPU s (oracle / payoffs / meta) | ratio |")
    print("|---|---|---|---|---|")
    for s, t in zip(seats, teams, strict=True):
        print(f"| {s['iteration']} | {s['K']} | {s['profiles']}: {s['cpu']:.1f} "
              f"({s['oracle']:.1f} / {s['payoffs']:.1f} / {s['meta']:.1f}) "
              f"| {t['profiles']}: {t['cpu']:.1f} ({t['oracle']:.1f} / {t['payoffs']:.1f} / "
              f"{t['meta']:.2f}) | {s['cpu'] / t['cpu']:.1f}x |")


if __name__ == "__main__":
    main()
