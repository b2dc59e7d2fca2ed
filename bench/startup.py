"""Startup time of the command lines: how long a user waits for ``--help`` or for a config
mistake to be reported, next to what Python and torch alone cost on the same machine.

    python bench/startup.py [--runs 5]

Each command runs ``--runs`` times in a fresh interpreter (from a scratch folder: no run
folder is left anywhere); the table gives the median and the fastest wall time. Baselines
in the same run: ``python -c pass`` and ``python -c "import torch"`` (most of a config
error's time). Targets (issue 14): ``--help`` under 2 s, a config error under 3 s.

    python bench/startup.py --cpu [--runs 3] [--trees OLD,NEW]

CPU seconds (user + system of the child, ``OMP_NUM_THREADS=1``: less sensitive to a shared
machine's load than wall time) of what every CLI run and every CLI test's child process
pays: ``--help``, refused values, tiny runs of ``selfplay-train``, ``selfplay-eval`` and
``python -m populations.league``, beside ``import torch`` and torch's first optimizer.
``--trees`` runs each command once per source folder in turn (``PYTHONPATH``), e.g. a
``git archive`` of an older commit against the working tree; the last column is the last
tree's median over the first's.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
TRAIN = str(BIN / "selfplay-train")
EVAL = str(BIN / "selfplay-eval")
PY = sys.executable

COMMANDS: list[tuple[str, list[str], int]] = [  # (label, argv, expected exit status)
    ("python -c pass", [PY, "-c", "pass"], 0),
    ('python -c "import torch"', [PY, "-c", "import torch"], 0),
    ("selfplay-train --help", [TRAIN, "--help"], 0),
    ("selfplay-train num_envs=0 (config error)", [TRAIN, "num_envs=0"], 2),
    ("selfplay-train mappo.lrr=0.1 (unknown key)", [TRAIN, "mappo.lrr=0.1"], 2),
    ("selfplay-train game.name=chesss (unknown game)", [TRAIN, "game.name=chesss"], 2),
    ("selfplay-eval --game-kwargs '{' (bad JSON)",
     [EVAL, "--game", "openspiel/kuhn_poker", "--db", "x.db", "--game-kwargs", "{", "a.pt"], 2),
    ('python -c "import marl.mappo"', [PY, "-c", "import marl.mappo"], 0),
]


def time_command(argv: list[str], expected: int, runs: int, cwd: str) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        res = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if res.returncode != expected:
            raise SystemExit(f"{argv}: exit {res.returncode}, expected {expected}: "
                             f"{res.stderr.strip()[-300:]}")
    return times


def heavy_modules(cwd: str) -> tuple[str, str]:
    """Heavy packages ``import marl.mappo`` loads; whether ``import populations.cli`` (what
    the console scripts import before parsing) loads torch."""
    def run(code: str) -> str:
        return subprocess.run([PY, "-c", code], cwd=cwd, capture_output=True, text=True,
                              check=True).stdout.strip()

    mods = run("import sys, marl.mappo; print(sorted(m for m in ('torch_geometric', "
               "'transformers', 'ray', 'wandb', 'scipy.optimize') if m in sys.modules))")
    return mods, run("import sys, populations.cli; print('torch' in sys.modules)")


TINY = ["num_envs=4", "eval_episodes=2", "progress=false", "hydra.run.dir=run"]
FIRST_OPTIMIZER = ("import torch, time; t = time.process_time(); "
                   "torch.optim.Adam(torch.nn.Linear(2, 2).parameters()); "
                   "print(f'{time.process_time() - t:.2f}')")
CPU_COMMANDS: list[tuple[str, list[str], int]] = [  # (label, argv, expected exit status)
    ("python -c pass", [PY, "-c", "pass"], 0),
    ('python -c "import torch"', [PY, "-c", "import torch"], 0),
    ("import torch + first torch.optim.Adam", [PY, "-c", FIRST_OPTIMIZER], 0),
    ("selfplay-train --help", [TRAIN, "--help"], 0),
    ("selfplay-train num_envs=0 (refused)", [TRAIN, "num_envs=0"], 2),
    ("selfplay-train mappo.lr=-1 (refused)", [TRAIN, "mappo.lr=-1"], 2),
    ("selfplay-train frames=200 (spread, tiny)", [TRAIN, "frames=200", *TINY], 0),
    ("selfplay-train game=kuhn frames=200 (tiny)", [TRAIN, "game=kuhn", "frames=200", *TINY], 0),
    ("selfplay-eval kuhn, 2 policies x 2 episodes",
     [EVAL, "--game", "openspiel/kuhn_poker", "--db", "e.db", "--episodes", "2", "SNAP/a.pt",
      "SNAP/b.pt"], 0),
    ("python -m populations.league kuhn (tiny)",
     [PY, "-m", "populations.league", "--run-dir", "run", "--game", "openspiel/kuhn_poker",
      "--generations", "1", "--frames-per-generation", "200", "--num-envs", "4",
      "--eval-episodes", "2"], 0),
]


def cpu_seconds(argv: list[str], expected: int, env: dict[str, str]) -> float:
    """User + system CPU seconds of one run of ``argv`` (and its children), in a new folder."""
    cwd = tempfile.mkdtemp(prefix="startup-")
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        res = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        shutil.rmtree(cwd)
    if res.returncode != expected:
        raise SystemExit(f"{argv}: exit {res.returncode}, expected {expected}: "
                         f"{res.stderr.strip()[-300:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cpu_main(runs: int, trees: list[str]) -> None:
    """The ``--cpu`` table: median CPU seconds per command and tree, commands alternating."""
    envs = [dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=t) for t in trees]
    with tempfile.TemporaryDirectory() as snap:
        league = [f"{snap}/run" if a == "run" else a for a in CPU_COMMANDS[-1][1]]
        subprocess.run(league, env=envs[0], cwd=snap, check=True, capture_output=True)
        policy = next(Path(snap, "run", "snapshots").rglob("*.pt"))  # a league's: every seat
        for name in ("a", "b"):  # two policies for selfplay-eval
            shutil.copy(policy, f"{snap}/{name}.pt")
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, {runs} runs "
              f"each, CPU seconds (user+sys), OMP_NUM_THREADS=1\n")
        head = "".join(f" {Path(t).name[:12]:>12}" for t in trees)
        print(f"{'command':<46}{head}" + (f" {'ratio':>6}" if len(trees) > 1 else ""))
        for label, argv, expected in CPU_COMMANDS:
            argv = [a.replace("SNAP", snap) for a in argv]
            times: list[list[float]] = [[] for _ in trees]
            for _ in range(runs):
                for i, env in enumerate(envs):
                    times[i].append(cpu_seconds(argv, expected, env))
            med = [statistics.median(t) for t in times]
            ratio = f" {med[-1] / med[0]:>6.2f}" if len(trees) > 1 else ""
            print(f"{label:<46}" + "".join(f" {m:>12.2f}" for m in med) + ratio, flush=True)
        print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


MAX_RUNS = 100  # the --cpu table's tiny runs take ~10 s each: 100 runs are hours already


def runs(text: str) -> int:
    """``--runs``' argparse type: an integer in ``[1, MAX_RUNS]`` (0 or a negative number
    ended in a StatisticsError traceback after the first command, a huge one ran for days)."""
    accepted = f"an integer in [1, {MAX_RUNS}]"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected {accepted}") from None
    if not 1 <= value <= MAX_RUNS:
        raise argparse.ArgumentTypeError(f"{value}: expected {accepted}")
    return value


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=runs, default=5,
                   help=f"times each command runs (1 to {MAX_RUNS}; default 5)")
    p.add_argument("--cpu", action="store_true", help="CPU seconds of tiny runs too")
    p.add_argument("--trees", default="", help="source folders to compare (with --cpu)")
    args = p.parse_args()
    repo = str(Path(__file__).resolve().parents[1])
    if args.cpu:
        cpu_main(args.runs, [str(Path(t).resolve()) for t in args.trees.split(",") if t]
                 or [repo])
        return
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = repo + (os.pathsep + env_path if env_path else "")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
          f"{args.runs} runs each\n")
    print(f"{'command':<50} {'median s':>9} {'min s':>7}")
    with tempfile.TemporaryDirectory() as cwd:
        for label, argv, expected in COMMANDS:
            t = time_command(argv, expected, args.runs, cwd)
            print(f"{label:<50} {statistics.median(t):>9.2f} {min(t):>7.2f}", flush=True)
        leftovers = sorted(os.listdir(cwd))
        print(f"\nfiles left in the scratch folder: {leftovers or 'none'}")
        mods, torch_loaded = heavy_modules(cwd)
        print(f"import marl.mappo loads {mods}; import populations.cli loads torch: "
              f"{torch_loaded}")


if __name__ == "__main__":
    main()
