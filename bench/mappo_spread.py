"""MAPPO on ``mpe2.simple_spread_v3`` (N=3, 25-step episodes, discrete actions): frames/s
and return curve, beside BenchMARL's MAPPO on the same task in the same run.

    python bench/mappo_spread.py [--frames 120000] [--seeds 0 1 2] [--num-envs 32]
                                 [--no-peer]

The peer side runs ``../shared/bench/peers/benchmarl_bench.sh mappo pettingzoo/simple_spread``
with ``task.max_cycles=25 experiment.prefer_continuous_actions=False`` when the peers are
installed (``../shared/bench/peers/setup.sh``). Reward = each agent's episode return,
averaged over agents (BenchMARL's convention), over the training episodes of the last
10 % of frames. Prints a markdown table for ``BENCHMARKS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# bench/games.py is named like the package: keep bench/ off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

import numpy as np  # noqa: E402
import torch  # noqa: E402

import games  # noqa: E402
from bench._args import at_least  # noqa: E402
from marl.mappo import MAPPO, MAPPOConfig  # noqa: E402
from marl.train import train  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PEERS = Path(os.environ.get("PEERS_DIR", ROOT.parent / "shared" / "bench" / "peers"))
PEERS_ROOT = Path(os.environ.get("PEERS_ROOT", Path.home() / ".cache" / "selfplay-peers"))
GAME = "pettingzoo/mpe2.simple_spread_v3"


def run_ours(frames: int, seed: int, num_envs: int) -> dict:
    torch.manual_seed(seed)
    spec = games.make(GAME, N=3, max_cycles=25).spec
    learner = MAPPO(spec, MAPPOConfig(), seed=seed)
    vg = games.VectorGame(GAME, num_envs, seed=seed, N=3, max_cycles=25,
                          **learner.vector_game_kwargs)
    res = train(learner, vg, frames, progress=False)
    rets = np.asarray(res.episode_returns)
    tenth = max(1, len(rets) // 10)
    curve = [float(np.mean(c)) for c in np.array_split(rets, 10)]
    return {"fps": res.frames / res.seconds, "first": float(np.mean(rets[:tenth])),
            "last": float(np.mean(rets[-tenth:])), "curve": curve, "seconds": res.seconds}


def run_benchmarl(frames: int, seed: int) -> dict | None:
    script = PEERS / "benchmarl_bench.sh"
    if not (script.exists() and (PEERS_ROOT / "bm" / "bin" / "python").exists()):
        return None
    cmd = ["bash", str(script), "mappo", "pettingzoo/simple_spread", str(frames), str(seed),
           "task.max_cycles=25", "experiment.prefer_continuous_actions=False"]
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TAG": "disc"})
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("SUMMARY ")]
    if not line:
        print(out.stdout[-2000:], out.stderr[-2000:])
        return None
    s = json.loads(line[-1][8:])
    return {"fps": s["total_frames"] / s["wall_s"], "first": s.get(
        "collection_reward_episode_reward_mean_first"), "last": s.get(
        "collection_reward_episode_reward_mean_last"), "seconds": s["wall_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=at_least(1), default=120_000)
    parser.add_argument("--seeds", type=at_least(0), nargs="+", default=[0, 1, 2])
    parser.add_argument("--num-envs", type=at_least(1), default=32)
    parser.add_argument("--no-peer", action="store_true", help="skip BenchMARL")
    args = parser.parse_args()
    torch.set_num_threads(1)  # small networks: one thread is fastest and fairest
    rows = {"selfplay MAPPO": [], "BenchMARL MAPPO": []}
    for seed in args.seeds:
        t = time.perf_counter()
        ours = run_ours(args.frames, seed, args.num_envs)
        rows["selfplay MAPPO"].append(ours)
        print(f"ours seed {seed}: {ours['fps']:.0f} frames/s, return {ours['first']:.2f} -> "
              f"{ours['last']:.2f} ({time.perf_counter() - t:.0f}s); curve "
              f"{[round(c, 1) for c in ours['curve']]}", flush=True)
        if not args.no_peer:
            peer = run_benchmarl(args.frames, seed)
            if peer is not None:
                rows["BenchMARL MAPPO"].append(peer)
                print(f"BenchMARL seed {seed}: {peer['fps']:.0f} frames/s, return "
                      f"{peer['first']} -> {peer['last']}", flush=True)
    base = rows["BenchMARL MAPPO"]
    base_fps = float(np.mean([r["fps"] for r in base])) if base else None
    print(f"\n{args.frames} frames, seeds {args.seeds}, {args.num_envs} envs (ours)")
    print("| run | frames/s | ratio to BenchMARL | return first 10 % | return last 10 % |")
    print("|---|---:|---:|---:|---:|")
    for name, rs in rows.items():
        if not rs:
            continue
        fps = float(np.mean([r["fps"] for r in rs]))
        ratio = f"{fps / base_fps:.2f}" if base_fps else "n/a"
        first = float(np.mean([r["first"] for r in rs]))
        last = float(np.mean([r["last"] for r in rs]))
        print(f"| {name} | {fps:,.0f} | {ratio} | {first:.2f} | {last:.2f} |")


if __name__ == "__main__":
    main()
