"""PSRO with exact best responses on Kuhn and Leduc poker, compared like with like, all in
one run: our ``populations.psro`` with exact expected payoffs against OpenSpiel's
``psro_v2`` **with exact payoffs patched in** (its ``sample_episodes`` replaced by
``expected_game_score.policy_value``, one call per entry), and OpenSpiel's sampled
``psro_v2`` (1000 episodes per entry) against ours with sampled payoffs (``--sampled``).
OpenSpiel's C++ CFR+ is the reference for the time to a given NashConv.

    python bench/psro_kuhn.py [--games kuhn_poker leduc_poker] [--iters 30]
                              [--peer-iters N] [--meta least_exploitable] [--target exploiter]
                              [--peer-meta nash] [--sims 1000] [--no-peer]
                              [--peer-payoffs exact sampled] [--sampled] [--cfr-iters 1000]
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

import numpy as np  # noqa: E402

from bench._args import at_least  # noqa: E402
from populations.meta_solvers import available_meta_solvers  # noqa: E402
from populations.psro import PSRO, RESPONSE_TARGETS, ExactBestResponse, PSROConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PEERS = Path(os.environ.get("PEERS_DIR", ROOT.parent / "shared" / "bench" / "peers"))
PEERS_ROOT = Path(os.environ.get("PEERS_ROOT", Path.home() / ".cache" / "selfplay-peers"))


def run_ours(game: str, iters: int, meta: str, target: str, payoffs: str = "exact",
             episodes: int = 1000) -> dict:
    t0 = time.perf_counter()
    psro = PSRO(
        f"openspiel/{game}",
        ExactBestResponse(f"openspiel/{game}"),
        PSROConfig(meta_solver=meta, response_target=target, payoffs=payoffs,
                   episodes_per_entry=episodes),
    )
    setup = time.perf_counter() - t0
    results = psro.run(iters)
    return {
        "nash_conv": [r.nash_conv for r in results],
        "iter_s": [r.seconds for r in results],
        "setup_s": setup,
        "wall_s": time.perf_counter() - t0,
    }


# Run in the peer's interpreter: OpenSpiel's own psro_v2 script, with the one change that
# each payoff entry is the exact expected return of the profile instead of a mean of
# sampled episodes (the script is then run with --sims 1, so each entry is one exact call).
EXACT_PATCH = """
import runpy, sys
import numpy as np
from open_spiel.python.algorithms import expected_game_score
from open_spiel.python.algorithms.psro_v2 import psro_v2

def exact_payoffs(self, policies, num_episodes):
    state = self._game.new_initial_state()
    return np.asarray(expected_game_score.policy_value(state, policies), dtype=float)

psro_v2.PSROSolver.sample_episodes = exact_payoffs
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
"""


def peer_python() -> Path | None:
    python = PEERS_ROOT / "os" / "bin" / "python"
    return python if python.exists() else None


def peer_missing(no_peer: bool) -> str | None:
    """Why OpenSpiel will not run (the tables say it instead of showing empty columns), or
    None when it will."""
    if no_peer:
        return "--no-peer given"
    if peer_python() is None:
        return (f"no peer environment: {PEERS_ROOT / 'os' / 'bin' / 'python'} is missing "
                f"(bash {PEERS / 'setup.sh'} makes it)")
    if not (PEERS / "openspiel_psro.py").exists():
        return f"no peer scripts: {PEERS / 'openspiel_psro.py'} is missing (PEERS_DIR)"
    return None


# Prepended to the peer's script with ``cpu=True``: the script times with time.time(), which
# then reads this process's CPU seconds (less sensitive than wall time to a loaded machine).
CPU_PATCH = "import time\ntime.time = time.process_time\n"
RUN_SCRIPT = """
import runpy, sys
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
"""


def run_peer(game: str, iters: int, meta: str, sims: int, exact: bool = False,
             seed: int = 1, cpu: bool = False) -> dict | None:
    """OpenSpiel's psro_v2 (``exact``: with exact payoffs patched in) in the peer venv;
    ``cpu``: its seconds are CPU seconds of its process."""
    python = peer_python()
    script = PEERS / "openspiel_psro.py"
    if python is None or not script.exists():
        return None
    args = ["--game", game, "--iters", str(iters), "--meta", meta,
            "--sims", "1" if exact else str(sims), "--seed", str(seed), "--quiet"]
    prelude = (CPU_PATCH if cpu else "") + (EXACT_PATCH if exact else RUN_SCRIPT)
    cmd = [str(python), "-c", prelude, str(script), *args]
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


def run_cfr_plus(game: str, iters: int) -> dict | None:
    """OpenSpiel's C++ CFR+ (``pyspiel.CFRPlusSolver``) in the peer venv: NashConv of the
    average policy at dense checkpoints with the cumulative solve seconds."""
    python = peer_python()
    script = PEERS / "openspiel_cfr.py"
    if python is None or not script.exists():
        return None
    marks = sorted({m for m in (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300,
                                500, 700, 1000, 1500, 2000, 3000, 5000) if m <= iters} | {iters})
    cmd = [str(python), str(script), "--game", game, "--algo", "cfr_plus", "--impl", "cpp",
           "--iters", str(iters), "--checkpoints", ",".join(map(str, marks))]
    out = subprocess.run(cmd, capture_output=True, text=True)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("SUMMARY ")]
    if not line:
        print(f"CFR+ failed on {game}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        return None
    return json.loads(line[-1].removeprefix("SUMMARY "))


def seconds_to(nash_conv: list[float], iter_s: list[float], target: float) -> float | None:
    """PSRO seconds (iterations only) until NashConv first is <= target; None if never."""
    total = 0.0
    for nc, sec in zip(nash_conv, iter_s, strict=False):
        total += sec
        if nc <= target:
            return total
    return None


def cfr_seconds_to(cfr: dict, target: float) -> tuple[int, float] | None:
    """(iterations, cumulative solve seconds) at CFR+'s first checkpoint <= target."""
    for row in cfr["checkpoints"]:
        if row["nash_conv"] <= target:
            return row["iter"], row["solve_s_cum"]
    return None


def _secs(v: float | None) -> str:
    """Seconds to 3 decimals (the CFR script rounds its own to 3: 0 means < 0.001 s)."""
    if v is None:
        return "not reached"
    return "< 0.001" if v < 0.0005 else f"{v:.3f}"


def report_like_with_like(game: str, ours: dict, exact: dict | None,
                          sampled: tuple[dict, dict] | None, cfr: dict | None,
                          missing: str = "the peer run failed (its output is above)") -> None:
    """Exact against exact, sampled against sampled, and time to a NashConv against CFR+;
    ``missing``: why, where OpenSpiel has no figures."""
    print(f"\n### {game}: like with like\n")
    pairs = [("exact", ours, exact)] + ([("sampled", *sampled)] if sampled else [])
    pairs = [(name, mine, theirs) for name, mine, theirs in pairs if theirs is not None]
    if not pairs:
        print(f"OpenSpiel's psro_v2 not run: {missing}")
        if cfr is None:
            return
    else:
        print("| payoffs | iterations | s in PSRO iterations, ours | OpenSpiel psro_v2 | ratio "
              "(OpenSpiel / ours) | final NashConv ours | OpenSpiel |")
        print("|---|---:|---:|---:|---:|---:|---:|")
    for name, mine, theirs in pairs:
        n = min(len(mine["iter_s"]), len(theirs["iter_s"]))
        a, b = sum(mine["iter_s"][:n]), sum(theirs["iter_s"][:n])
        print(f"| {name} | {n} | {a:.3f} | {b:.3f} | {b / max(a, 1e-9):.2f}x "
              f"| {mine['nash_conv'][n - 1]:.3g} | {theirs['nash_conv'][n - 1]:.3g} |")
    if cfr is None:
        return
    print("\n| NashConv target | ours PSRO (s) | OpenSpiel exact psro_v2 (s) "
          "| OpenSpiel C++ CFR+ (iterations, s) |")
    print("|---:|---:|---:|---:|")
    final = ours["nash_conv"][-1]
    for target in sorted({1.0, 0.1, 1e-2, 1e-3, round(final, 3) if final > 1e-3 else 1e-3},
                         reverse=True):
        mine = seconds_to(ours["nash_conv"], ours["iter_s"], target)
        theirs = seconds_to(exact["nash_conv"], exact["iter_s"], target) if exact else None
        c = cfr_seconds_to(cfr, target)
        print(f"| {target:g} | {_secs(mine)} | {_secs(theirs)} | "
              f"{'not reached' if c is None else f'{c[0]}, {_secs(c[1])}'} |")
    print(f"\nCFR+ (C++): {cfr['iters']} iterations in {cfr['solve_s']:.3f} s, final NashConv "
          f"{cfr['final_nash_conv']:.3g}")


def checkpoints(iters: int) -> list[int]:
    marks = {1, 2, 3, 4, 5, 10, 15, 20, 25, 30, iters}
    return sorted(k for k in marks if k <= iters)


def worse_than_peer(ours: list[float], peer: dict) -> list[int]:
    """Iterations (1-based) at which our NashConv exceeds OpenSpiel's (which it rounds to
    1e-5)."""
    n = min(len(ours), len(peer["nash_conv"]))
    return [i + 1 for i in range(n) if ours[i] > peer["nash_conv"][i] + 1e-5]


def report(game: str, ours: dict, peer: dict | None, config: str,
           missing: str = "the peer run failed (its output is above)") -> None:
    """NashConv and seconds per iteration at the checkpoints, ours beside ``peer``'s
    (``missing``: why there is no peer)."""
    iters = len(ours["nash_conv"])
    print(
        f"\n### {game}: {iters} iterations, ours {config} (peer: "
        f"{len(peer['nash_conv']) if peer else f'not run: {missing}'})\n"
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=["kuhn_poker", "leduc_poker"])
    parser.add_argument("--iters", type=at_least(1), default=30)
    parser.add_argument(
        "--peer-iters",
        type=at_least(1),
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
    parser.add_argument("--sims", type=at_least(1), default=1000, help="peer: episodes per entry")
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--peer-payoffs", nargs="+", default=["exact", "sampled"],
                        choices=["exact", "sampled"],
                        help="OpenSpiel runs: exact payoffs patched in, and/or sampled")
    parser.add_argument("--sampled", action="store_true",
                        help="also run ours with sampled payoffs (--sims episodes per entry, "
                        "meta nash:meta as OpenSpiel) against OpenSpiel's sampled run")
    parser.add_argument("--cfr-iters", type=at_least(0), default=1000,
                        help="OpenSpiel C++ CFR+ iterations (0: skip)")
    parser.add_argument(
        "--variants",
        nargs="*",
        default=[],
        metavar="META:TARGET",
        help="also run these configurations of ours (NashConv table)",
    )
    args = parser.parse_args()
    missing = peer_missing(args.no_peer)
    failed = "the peer run failed (its output is above)"
    why_sampled = missing or ("--peer-payoffs exact" if "sampled" not in args.peer_payoffs
                              else failed)
    why_like = missing or ("--peer-payoffs sampled without --sampled"
                           if "exact" not in args.peer_payoffs and not args.sampled else failed)
    for game in args.games:
        ours = run_ours(game, args.iters, args.meta, args.target)
        n_peer = args.peer_iters or args.iters
        run = missing is None
        peer = (run_peer(game, n_peer, args.peer_meta, args.sims)
                if run and "sampled" in args.peer_payoffs else None)
        exact = (run_peer(game, n_peer, args.peer_meta, args.sims, exact=True)
                 if run and "exact" in args.peer_payoffs else None)
        report(game, ours, peer, f"{args.meta}:{args.target}", why_sampled)
        if exact:
            print("\nAgainst OpenSpiel with exact payoffs patched in:")
            report(game, ours, exact, f"{args.meta}:{args.target}")
        sampled = None
        if args.sampled and peer:
            mine = run_ours(game, args.iters, "nash", "meta", "sampled", args.sims)
            sampled = (mine, peer)
        cfr = run_cfr_plus(game, args.cfr_iters) if run and args.cfr_iters > 0 else None
        report_like_with_like(game, ours, exact, sampled, cfr, why_like)
        if args.variants:
            runs = {v: run_ours(game, args.iters, *v.split(":", 1)) for v in args.variants}
            report_variants(game, runs, exact or peer)

if __name__ == "__main__":
    main()
