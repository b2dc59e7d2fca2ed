"""PSRO with sampled payoffs, side by side with OpenSpiel's ``psro_v2`` in one run: both with
exact best-response oracles, the Nash meta-solver and ``--sims`` sampled episodes per payoff
entry, for ``--iters`` iterations, on each game and seed.

    python bench/psro_sampled.py [--games kuhn_poker leduc_poker] [--iters 30] [--sims 1000]
                                 [--seeds 1 2 3] [--played kuhn_poker] [--played-iters 30]

Ours samples payoffs in lockstep over a memo of the game's histories
(``populations.lockstep``); ``--played GAME ...`` also runs ours with every episode played
through ``VectorGame`` (the path before, and still the path of games the memo does not take)
on the first seed. Seconds are CPU seconds of the three PSRO steps on both sides (ours split
into best responses, payoff sampling and meta-solve), not the NashConv evaluation: on a
shared machine wall time swings with the load while one side runs (both sides are one
process; wall seconds are printed too). The OpenSpiel side
runs ``../shared/bench/peers/openspiel_psro.py`` in the peer environment
(``../shared/bench/peers/setup.sh``). Prints markdown for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

# bench/games.py would shadow the games package: keep bench/ off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

from bench._args import at_least  # noqa: E402
from populations.payoffs import SampledPayoffs  # noqa: E402
from populations.psro import PSRO, ExactBestResponse, PSROConfig  # noqa: E402


def _peer_tools():
    """``run_peer`` of bench/psro_kuhn.py (loaded by path: bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "psro_kuhn", Path(__file__).with_name("psro_kuhn.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run_peer


def run_ours(game: str, iters: int, sims: int, seed: int, played: bool = False) -> dict:
    """Our PSRO (Nash meta-strategy, exact best responses, sampled payoffs), each step timed
    in CPU seconds of this process (and wall seconds in total)."""
    name = f"openspiel/{game}"
    psro = PSRO(name, ExactBestResponse(name),
                PSROConfig(meta_solver="nash", response_target="meta", payoffs="sampled",
                           episodes_per_entry=sims, seed=seed))
    if played:  # every later entry played through VectorGame (the first one is already in)
        est = SampledPayoffs(name, sims, psro.config.num_envs, seed, lockstep=False)
        for members in psro.members.values():
            for m in members:
                est.add_member(m)
        psro.estimator = est
    steps = {"best responses": 0.0, "payoffs": 0.0, "meta-solve": 0.0}
    nash_conv, wall = [], 0.0
    for _ in range(iters):  # PSRO.iteration's three steps, timed one by one
        w0, t0 = time.perf_counter(), time.process_time()
        psro.update_agents()
        t1 = time.process_time()
        psro.update_empirical_game()
        t2 = time.process_time()
        psro.update_meta_strategies()
        t3 = time.process_time()
        wall += time.perf_counter() - w0
        psro.iterations += 1
        steps["best responses"] += t1 - t0
        steps["payoffs"] += t2 - t1
        steps["meta-solve"] += t3 - t2
        nash_conv.append(psro.nash_conv())
    return {"seconds": sum(steps.values()), "wall": wall, "steps": steps,
            "nash_conv": nash_conv}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=["kuhn_poker", "leduc_poker"])
    parser.add_argument("--iters", type=at_least(1), default=30)
    parser.add_argument("--sims", type=at_least(1), default=1000, help="episodes per payoff entry")
    parser.add_argument("--seeds", type=at_least(0), nargs="+", default=[1, 2, 3])
    parser.add_argument("--played", nargs="*", default=[],
                        help="games on which ours also plays every episode through VectorGame")
    parser.add_argument("--played-iters", type=at_least(1), default=None,
                        help="iterations of the played run (default --iters)")
    parser.add_argument("--no-peer", action="store_true")
    args = parser.parse_args()
    run_peer = None if args.no_peer else _peer_tools()
    print(f"\n{args.iters} iterations, {args.sims} sampled episodes per entry, Nash "
          "meta-solver, exact best responses on both sides\n")
    print("| game | seed | ours CPU s | OpenSpiel CPU s | OpenSpiel / ours | NashConv ours "
          "| OpenSpiel | wall s, ours | OpenSpiel (whole process) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    summary: dict[str, list[tuple[dict, dict | None]]] = {}
    for game in args.games:
        for seed in args.seeds:
            ours = run_ours(game, args.iters, args.sims, seed)
            w0 = time.perf_counter()
            peer = (run_peer(game, args.iters, "nash", args.sims, seed=seed, cpu=True)
                    if run_peer else None)
            if peer:
                peer["wall"] = time.perf_counter() - w0  # with its setup and NashConv

            summary.setdefault(game, []).append((ours, peer))
            theirs = (f"{sum(peer['iter_s']):.1f} | {sum(peer['iter_s']) / ours['seconds']:.1f}x"
                      f" | {ours['nash_conv'][-1]:.4f} | {peer['nash_conv'][-1]:.4f} "
                      f"| {ours['wall']:.2f} | {peer['wall']:.1f}" if peer
                      else f"- | - | {ours['nash_conv'][-1]:.4f} | - | {ours['wall']:.2f} | -")
            print(f"| {game} | {seed} | {ours['seconds']:.2f} | {theirs} |", flush=True)
    print()
    for game, rows in summary.items():
        mine = [o["seconds"] for o, _ in rows]
        steps = {k: statistics.mean(o["steps"][k] for o, _ in rows) for k in rows[0][0]["steps"]}
        share = ", ".join(f"{k} {v:.2f} s ({100 * v / sum(steps.values()):.0f} %)"
                          for k, v in steps.items())
        line = f"{game}: ours mean {statistics.mean(mine):.2f} s ({share})"
        if all(p for _, p in rows):
            theirs = [sum(p["iter_s"]) for _, p in rows]
            ratio = [t / m for t, m in zip(theirs, mine, strict=True)]
            nc = [(o["nash_conv"][-1], p["nash_conv"][-1]) for o, p in rows]
            line += (f"; OpenSpiel mean {statistics.mean(theirs):.1f} s; ratio min "
                     f"{min(ratio):.1f}x, mean {statistics.mean(ratio):.1f}x; final NashConv "
                     f"mean ours {statistics.mean(a for a, _ in nc):.4f} vs OpenSpiel "
                     f"{statistics.mean(b for _, b in nc):.4f}; ours no worse in "
                     f"{sum(a <= b for a, b in nc)}/{len(nc)} seeds")
        print(line)
    for game in args.played:
        iters = args.played_iters or args.iters
        fast = run_ours(game, iters, args.sims, args.seeds[0])
        slow = run_ours(game, iters, args.sims, args.seeds[0], played=True)
        print(f"{game}, seed {args.seeds[0]}, {iters} iterations: episodes played through "
              f"VectorGame {slow['seconds']:.1f} s (payoffs {slow['steps']['payoffs']:.1f} s) "
              f"vs lockstep {fast['seconds']:.2f} s (payoffs {fast['steps']['payoffs']:.2f} s): "
              f"{slow['seconds'] / fast['seconds']:.0f}x; final NashConv "
              f"{slow['nash_conv'][-1]:.4f} vs {fast['nash_conv'][-1]:.4f}")


if __name__ == "__main__":
    main()
