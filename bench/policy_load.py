"""A snapshot's load time (``marl.core.load_policy``: what a league's policy-cache miss
costs), per learner, in milliseconds.

    python bench/policy_load.py [--loads 20] [--rounds 3] [--hidden 64,64] [--trees OLD,NEW]
                                [--cpu]

One snapshot per learner (MAPPO with an MLP, with the GNN encoder and with a GRU, MADDPG,
QMIX) of a seed-0 learner on simple_tag, written once by this tree; each source folder of
``--trees`` (``PYTHONPATH``; e.g. a ``git archive`` of an older commit beside the working
tree) then loads every snapshot ``--loads`` times in a fresh interpreter, the folders taking
turns for ``--rounds`` rounds. Median milliseconds of a load (per run, then over the runs:
a load that a shared machine's other work cut into counts once), and with several
trees each one's speed-up over the first (its median / theirs); one thread
(``OMP_NUM_THREADS=1``), so a shared machine's other load matters less; ``--cpu`` times the
process's CPU seconds instead of the wall clock's (on a machine busy with other work, whose
waits for a CPU would otherwise count).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for bench._args

from bench._args import at_least  # noqa: E402

LEARNERS = {"mappo": {}, "mappo_gnn": {"encoder": "gnn", "critic": "gnn"},
            "mappo_gru": {"recurrent": True}, "maddpg": None, "qmix": None}
TAG = "pettingzoo/mpe2.simple_tag_v3"

LOADS = """
import json, statistics, sys, time, torch
torch.set_num_threads(1)
from marl.core import load_policy
files, loads = json.loads(sys.argv[1]), int(sys.argv[2])
clock = time.process_time if sys.argv[3] == "cpu" else time.perf_counter
out = {}
for name, path in files.items():
    load_policy(path)  # imports and first-call caches off the clock
    took = []
    for _ in range(loads):
        start = clock()
        load_policy(path)
        took.append(clock() - start)
    out[name] = statistics.median(took) * 1e3  # a load the machine's other work cut into: 1 of n
print(json.dumps(out))
"""


def _hidden(text: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(w) for w in text.split(","))
    except ValueError:
        widths = ()
    if not widths or min(widths) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected widths >= 1 like 64,64")
    return widths


def write_snapshots(folder: Path, hidden: tuple[int, ...]) -> dict[str, str]:
    """One seed-0 snapshot per entry of :data:`LEARNERS` in ``folder``."""
    import dataclasses

    import games
    from marl import registry

    spec, files = games.make(TAG).spec, {}
    for name, net in LEARNERS.items():
        entry = registry.get(name.split("_")[0])
        cfg = entry.config()
        if net is None:
            cfg = dataclasses.replace(cfg, hidden=hidden)
        else:
            cfg = dataclasses.replace(cfg, net=dataclasses.replace(cfg.net, hidden=hidden, **net))
        policy = entry.cls(spec, cfg, seed=0).policy()
        files[name] = str(policy.save(folder / f"{name}.pt"))
    return files


def main() -> None:
    doc = (__doc__ or "").split("\n\n")
    ap = argparse.ArgumentParser(description=doc[0], epilog=doc[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loads", type=at_least(1), default=20, help="loads per snapshot and run")
    ap.add_argument("--rounds", type=at_least(1), default=3, help="runs per tree")
    ap.add_argument("--hidden", type=_hidden, default=(64, 64), help="hidden widths, e.g. 256,256")
    ap.add_argument("--trees", default=str(ROOT), help="comma-separated source folders")
    ap.add_argument("--cpu", action="store_true", help="CPU seconds, not wall-clock seconds")
    args = ap.parse_args()
    trees = [str(Path(t).resolve()) for t in args.trees.split(",")]
    missing = [t for t in trees if not (Path(t) / "marl" / "core.py").is_file()]
    if missing:
        sys.exit(f"--trees: {', '.join(missing)} holds no marl/core.py")
    times: dict[str, dict[str, list[float]]] = {t: {} for t in trees}
    with tempfile.TemporaryDirectory() as tmp:
        files = write_snapshots(Path(tmp), args.hidden)
        for _ in range(args.rounds):
            for tree in trees:
                env = {**os.environ, "PYTHONPATH": tree, "OMP_NUM_THREADS": "1"}
                out = subprocess.run(
                    [sys.executable, "-c", LOADS, json.dumps(files), str(args.loads),
                     "cpu" if args.cpu else "wall"],
                    env=env, cwd=tmp, capture_output=True, text=True, check=True).stdout
                for name, ms in json.loads(out.splitlines()[-1]).items():
                    times[tree].setdefault(name, []).append(ms)
    print(f"{'CPU ' if args.cpu else ''}ms per load (median of {args.rounds} runs x "
          f"{args.loads} loads, hidden {','.join(map(str, args.hidden))})")
    print(f"{'tree':<40}" + "".join(f"{n:>11}" for n in LEARNERS))
    median = {t: {n: statistics.median(times[t][n]) for n in LEARNERS} for t in trees}
    for tree in trees:
        print(f"{tree[-40:]:<40}" + "".join(f"{median[tree][n]:>11.2f}" for n in LEARNERS))
    for tree in trees[1:]:
        print(f"{'speed-up ' + tree[-31:]:<40}"
              + "".join(f"{median[trees[0]][n] / median[tree][n]:>10.2f}x" for n in LEARNERS))


if __name__ == "__main__":
    main()
