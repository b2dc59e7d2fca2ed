"""Startup time of the command lines: how long a user waits for ``--help`` or for a config
mistake to be reported, next to what Python and torch alone cost on the same machine.

    python bench/startup.py [--runs 5]

Each command runs ``--runs`` times in a fresh interpreter (from a scratch folder: no run
folder is left anywhere); the table gives the median and the fastest wall time. Baselines
in the same run: ``python -c pass`` and ``python -c "import torch"`` (most of a config
error's time). Targets (issue 14): ``--help`` under 2 s, a config error under 3 s.
"""

from __future__ import annotations

import argparse
import os
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    repo = str(Path(__file__).resolve().parents[1])
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
