"""MAPPO's encoders (MLP, GNN, GRU): CPU seconds of a short training run and of its updates,
each run in a fresh process with one torch thread, side by side with another checkout.

    python bench/encoders.py [--runs spread_gnn spread_mlp ...] [--repeats 3]
                             [--base /path/to/other/checkout]

``--base``: a tree of another revision (``git archive <rev> | tar -x -C DIR``) run with the
same settings, interleaved with this one, for before/after ratios measured at the same load.
Each figure is the minimum over ``--repeats`` (the least disturbed run on a shared machine);
``x mlp`` is a run's update time over ``spread_mlp``'s in the same tree. The load average is
printed before and after. Runs (32 copies, seed 0):

* ``spread_gnn``: tests/marl/test_mappo.py's GNN run (``simple_spread`` N=3, GATv2 actor
  and critic, ``gnn_hidden=32``, 25-step rollouts, 10 epochs x 4 minibatches), 4,000 frames;
* ``spread_mlp``: the same with the MLP encoder (the baseline of the ``x mlp`` column);
* ``spread_gnn_actor``: ``spread_gnn`` with the MLP critic of the global state
  (``critic=state``, as configs/experiment/main.yaml): the GNN in the actor only;
* ``adversary_gnn_actor`` / ``adversary_mlp``: the main job's game and networks
  (``simple_adversary``, GNN actor, state critic; ``mlp``: the MLP actor), default MAPPO
  settings, 3,200 frames (4 updates);
* ``spread_mlp_gru``: tests/marl/test_mappo_gru.py's rMAPPO run (5 epochs), 4,000 frames;
* ``spread_gnn_gru``: ``encoder=gnn_gru`` (GNN, then a GRU), 4,000 frames;
* ``world_comm_gnn`` / ``world_comm_gnn_gru``: ``simple_world_comm`` (6 agents, 11
  entities), default MAPPO settings, 1,600 frames (2 updates);
* ``pig_mlp_gru``: OpenSpiel ``pig`` (turn-based) with ``encoder=mlp_gru``, 4,000 frames.
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

from bench._args import at_least  # noqa: E402

SPREAD = "pettingzoo/mpe2.simple_spread_v3"
ADVERSARY = "pettingzoo/mpe2.simple_adversary_v3"
FAST = {"rollout_steps": 25, "epochs": 10, "minibatches": 4}
GNN = {"encoder": "gnn", "critic": "gnn", "gnn_hidden": 32}
RUNS: dict[str, tuple[str, dict, dict, dict, int]] = {
    # name: (game, game kwargs, MAPPOConfig kwargs, NetConfig kwargs, frames)
    "spread_gnn": (SPREAD, {"N": 3, "max_cycles": 25}, FAST, GNN, 4000),
    "spread_mlp": (SPREAD, {"N": 3, "max_cycles": 25}, FAST, {}, 4000),
    "spread_gnn_actor": (SPREAD, {"N": 3, "max_cycles": 25}, FAST,
                         {**GNN, "critic": "state"}, 4000),
    "adversary_gnn_actor": (ADVERSARY, {"max_cycles": 25}, {}, {**GNN, "critic": "state"},
                            3200),
    "adversary_mlp": (ADVERSARY, {"max_cycles": 25}, {}, {"critic": "state"}, 3200),
    "spread_mlp_gru": (SPREAD, {"N": 3, "max_cycles": 25}, {**FAST, "epochs": 5},
                       {"recurrent": True}, 4000),
    "spread_gnn_gru": (SPREAD, {"N": 3, "max_cycles": 25}, FAST,
                       {**GNN, "recurrent": True}, 4000),
    "world_comm_gnn": ("pettingzoo/mpe2.simple_world_comm_v3", {}, {}, GNN, 1600),
    "world_comm_gnn_gru": ("pettingzoo/mpe2.simple_world_comm_v3", {}, {},
                           {**GNN, "recurrent": True}, 1600),
    "pig_mlp_gru": ("openspiel/pig", {}, {}, {"recurrent": True}, 4000),
}


def child(name: str) -> None:
    """One run in this process: prints ``{"update": s, "total": s}`` (CPU seconds)."""
    import torch

    import games
    from marl.actor_critic import NetConfig
    from marl.mappo import MAPPO, MAPPOConfig
    from marl.train import train

    torch.set_num_threads(1)
    game, kwargs, cfg, net, frames = RUNS[name]
    torch.manual_seed(0)
    spec = games.make(game, **kwargs).spec
    learner = MAPPO(spec, MAPPOConfig(net=NetConfig(**net), **cfg), seed=0)
    vg = games.VectorGame(game, 32, seed=0, **kwargs, **learner.vector_game_kwargs)
    spent = [0.0]
    update = learner.update

    def timed() -> dict:
        t = time.process_time()
        try:
            return update()
        finally:
            spent[0] += time.process_time() - t

    learner.update = timed
    t0 = time.process_time()
    train(learner, vg, frames, progress=False)
    print(json.dumps({"update": spent[0], "total": time.process_time() - t0}))


def run(tree: Path, name: str) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, __file__, "--child", name], cwd=tree, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", nargs="+", default=["spread_mlp", "spread_gnn", "spread_mlp_gru"],
                    choices=list(RUNS))
    ap.add_argument("--repeats", type=at_least(1), default=3)
    ap.add_argument("--base", type=Path, help="another checkout, run side by side")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    here = Path(__file__).resolve().parents[1]
    trees = {"this": here, **({"base": args.base.resolve()} if args.base else {})}
    runs = list(dict.fromkeys(["spread_mlp", *args.runs]))
    print(f"load average before: {os.getloadavg()}", flush=True)
    best: dict[tuple[str, str], dict] = {}
    for r in range(args.repeats):
        for name in runs:
            for label, tree in trees.items():
                res = run(tree, name)
                print(f"  repeat {r} {name} {label}: update {res['update']:.2f} s, "
                      f"total {res['total']:.2f} s", flush=True)
                old = best.get((name, label))
                best[(name, label)] = {k: min(res[k], old[k]) if old else res[k] for k in res}
    print(f"load average after: {os.getloadavg()}")
    head = "| run | update CPU s | total CPU s | x mlp |"
    if args.base:
        head += " base update s | base total s | update speed-up | total speed-up |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for name in runs:
        new = best[(name, "this")]
        row = (f"| {name} | {new['update']:.2f} | {new['total']:.2f} | "
               f"{new['update'] / best[('spread_mlp', 'this')]['update']:.1f} |")
        if args.base:
            old = best[(name, "base")]
            row += (f" {old['update']:.2f} | {old['total']:.2f} | "
                    f"{old['update'] / new['update']:.2f}x | {old['total'] / new['total']:.2f}x |")
        print(row)


if __name__ == "__main__":
    main()
