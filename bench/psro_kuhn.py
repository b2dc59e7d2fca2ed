"""PSRO with exact best responses on Kuhn and Leduc poker: our ``populations.psro``
(exact expected payoffs) against OpenSpiel's ``psro_v2`` (1000 sampled episodes per
payoff entry), both in this run: NashConv of the meta-mixture and seconds per iteration.

    python bench/psro_kuhn.py [--games kuhn_poker leduc_poker] [--iters 30]
                              [--peer-iters N] [--meta least_exploitable] [--target exploiter]
                              [--peer-meta nash] [--sims 1000] [--no-peer]
                              [--variants nash:meta least_exploitable:nash ...]

Ours by default reports the least-exploitable mixture of each population (meta-solver
``least_exploitable``) and best-responds to the opponent strategy that exploits each
population most (``response_target="exploiter"``); ``--variants META:TARGET ...`` adds a
NashConv table of other configurations against the same OpenSpiel run.

The peer side runs ``../shared/bench/peers/openspiel_psro.py`` with the peer virtual
environment (``~/.cache/selfplay-peers/os``, made by ``../shared/bench/peers/setup.sh``)
when it is installed; otherwise only our side runs. Seconds per iteration count the three
PSRO steps (best responses, new payoff entries, meta-solve) on both sides, not the NashConv
evaluation; iteration ``k`` is the state after ``k`` calls of ``iteration()``. Prints
markdown tables for ``BENCHMARKS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# bench/games.py would shadow the games package: keep bench/ off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

import numpy as np  # noqa: E402

from populations.meta_solvers import available_meta_solvers  # noqa: E402
from populations.psro import PSRO, RESPONSE_TARGETS, ExactBestResponse, PSROConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PEERS = Path(os.environ.get("PEERS_DIR", ROOT.parent / "shared" / "bench" / "peers"))
PEERS_ROOT = Path(os.environ.get("PEERS_ROOT", Path.home() / ".cache" / "selfplay-peers"))


def run_ours(game: str, iters: int, meta: str, target: str) -> dict:
    t0 = time.perf_counter()
    psro = PSRO(
        f"openspiel/{game}",
        ExactBestResponse(f"openspiel/{game}"),
        PSROConfig(meta_solver=meta, response_target=target),
    )
    setup = time.perf_counter() - t0
    results = psro.run(iters)
    return {
        "nash_conv": [r.nash_conv for r in results],
        "iter_s": [r.seconds for r in results],
        "setup_s": setup,
        "wall_s": time.perf_counter() - t0,
    }


def run_peer(game: str, iters: int, meta: str, sims: int) -> dict | None:
    python = PEERS_ROOT / "os" / "bin" / "python"
    script = PEERS / "openspiel_psro.py"
    if not (python.exists() and script.exists()):
        return None
    cmd = [
        str(python),
        str(script),
        "--game",
        game,
        "--iters",
        str(iters),
        "--meta",
        meta,
        "--sims",
        str(sims),
        "--quiet",
    ]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("SUMMARY ")]
    if not line:
        print(f"peer failed on {game}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        return None
    summary = json.loads(line[-1].removeprefix("SUMMARY "))
    return {
        "nash_conv": summary["nash_conv_per_iter"],
        "iter_s": summary["iter_s_per_iter"],
        "setup_s": summary["setup_s"],
        "wall_s": time.perf_counter() - t0,
    }


def checkpoints(iters: int) -> list[int]:
    marks = {1, 2, 3, 4, 5, 10, 15, 20, 25, 30, iters}
    return sorted(k for k in marks if k <= iters)


def worse_than_peer(ours: list[float], peer: dict) -> list[int]:
    """Iterations (1-based) at which our NashConv exceeds OpenSpiel's (which it rounds to
    1e-5)."""
    n = min(len(ours), len(peer["nash_conv"]))
    return [i + 1 for i in range(n) if ours[i] > peer["nash_conv"][i] + 1e-5]


def report(game: str, ours: dict, peer: dict | None, config: str) -> None:
    iters = len(ours["nash_conv"])
    print(
        f"\n### {game}: {iters} iterations, ours {config} (peer: "
        f"{len(peer['nash_conv']) if peer else 'not run'})\n"
    )
    print(
        "| iteration | NashConv ours | NashConv OpenSpiel | s/iter ours | s/iter OpenSpiel "
        "| speed-up |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for k in checkpoints(iters):
        i = k - 1
        mine, mine_s = ours["nash_conv"][i], ours["iter_s"][i]
        if peer and i < len(peer["nash_conv"]):
            theirs, theirs_s = peer["nash_conv"][i], peer["iter_s"][i]
            print(
                f"| {k} | {mine:.6f} | {theirs:.6f} | {mine_s:.4f} | {theirs_s:.3f} "
                f"| {theirs_s / max(mine_s, 1e-9):.0f}x |"
            )
        else:
            print(f"| {k} | {mine:.6f} | - | {mine_s:.4f} | - | - |")
    nc = np.asarray(ours["nash_conv"])
    below = np.flatnonzero(nc < 1e-3)
    print(
        f"\nours: setup {ours['setup_s']:.2f}s, {sum(ours['iter_s']):.2f}s in iterations, "
        f"{ours['wall_s']:.2f}s wall incl. NashConv; final NashConv {nc[-1]:.6f}; "
        f"first below 0.001 at iteration {below[0] + 1 if len(below) else 'never'}"
    )
    if peer:
        n = min(iters, len(peer["nash_conv"]))
        worse = worse_than_peer(ours["nash_conv"], peer)
        ratio = np.asarray(peer["iter_s"][:n]) / np.maximum(ours["iter_s"][:n], 1e-9)
        print(
            f"OpenSpiel: {sum(peer['iter_s']):.2f}s in iterations, {peer['wall_s']:.2f}s "
            f"wall incl. NashConv; final NashConv {peer['nash_conv'][-1]:.6f}"
        )
        print(
            f"ours no worse than OpenSpiel at {n - len(worse)}/{n} iterations"
            f"{f' (worse at {worse})' if worse else ''}; speed-up per iteration: min "
            f"{ratio.min():.1f}x, median {np.median(ratio):.1f}x, total "
            f"{sum(peer['iter_s'][:n]) / sum(ours['iter_s'][:n]):.1f}x"
        )


def report_variants(game: str, variants: dict[str, dict], peer: dict | None) -> None:
    """NashConv of several configurations of ours at the checkpoints, and where each is
    worse than OpenSpiel."""
    names = list(variants)
    print(f"\n### {game}: NashConv of our configurations (meta-solver:response target)\n")
    print("| iteration | " + " | ".join(names) + (" | OpenSpiel |" if peer else " |"))
    print("|---:|" + "---:|" * (len(names) + bool(peer)))
    iters = min(len(v["nash_conv"]) for v in variants.values())
    for k in checkpoints(iters):
        row = [f"{variants[n]['nash_conv'][k - 1]:.6f}" for n in names]
        if peer and k <= len(peer["nash_conv"]):
            row.append(f"{peer['nash_conv'][k - 1]:.6f}")
        print(f"| {k} | " + " | ".join(row) + " |")
    for n in names:
        v = variants[n]
        worse = worse_than_peer(v["nash_conv"], peer) if peer else "n/a"
        print(
            f"{n}: final {v['nash_conv'][-1]:.6f}, mean s/iter "
            f"{np.mean(v['iter_s']):.4f}; worse than OpenSpiel at {worse}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=["kuhn_poker", "leduc_poker"])
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument(
        "--peer-iters",
        type=int,
        default=None,
        help="iterations on the peer side (default: --iters)",
    )
    parser.add_argument(
        "--meta",
        default="least_exploitable",
        help=f"our meta-solver ({' | '.join(available_meta_solvers())})",
    )
    parser.add_argument(
        "--target",
        default="exploiter",
        help=f"our response target ({' | '.join(RESPONSE_TARGETS)} | a meta-solver name)",
    )
    parser.add_argument(
        "--peer-meta", default="nash", help="OpenSpiel's meta-solver (nash | uniform | prd)"
    )
    parser.add_argument("--sims", type=int, default=1000, help="peer: episodes per entry")
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument(
        "--variants",
        nargs="*",
        default=[],
        metavar="META:TARGET",
        help="also run these configurations of ours (NashConv table)",
    )
    args = parser.parse_args()
    for game in args.games:
        ours = run_ours(game, args.iters, args.meta, args.target)
        peer = (
            None
            if args.no_peer
            else run_peer(game, args.peer_iters or args.iters, args.peer_meta, args.sims)
        )
        report(game, ours, peer, f"{args.meta}:{args.target}")
        if args.variants:
            runs = {v: run_ours(game, args.iters, *v.split(":", 1)) for v in args.variants}
            report_variants(game, runs, peer)


if __name__ == "__main__":
    main()
