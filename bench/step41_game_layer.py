"""Where the main job's time goes, and our game layer's cost against the code before it.

Two modes:

``profile``: runs ``selfplay-train`` in this process with the overrides given (default: the
main job's league, ``experiment=main``, at its real settings but 2 generations of 4,000
frames) and prints a breakdown of its CPU time (``time.process_time``; the job runs torch on
one thread, ``torch_threads=1``) by timers wrapped around the layers:

* ``VectorGame.step/reset``: the game layer, of which
  * ``env step/reset``: PettingZoo's own step (mpe2's physics, rewards, observations and the
    Parallel conversion) and reset;
  * ``entity graphs``: ``Game.entity_graph`` (``games.graphs``, for the GNN);
  * ``ours``: the rest: VectorGame's and the adapter's Python around the env (action
    conversion, dicts of rewards and flags, observation copies, stacking, auto-reset);
* ``learner.act`` / ``opponent act``, ``learner.observe`` and ``learner.update``.

``--cprofile FILE`` also writes a cProfile (process-time clock) of the same run.

``bench``: steps ``VectorGame`` copies of a game (default: the main job's, B=16 with entity
graphs and global states, as its members' rollouts build it) with random legal actions, in
child processes that alternate between this checkout's ``games`` and an older commit's
(``--old REV``, checked out with ``git archive`` into a temporary folder put first on
PYTHONPATH), and prints each one's steps/s and the ratio new/old per round.

    python bench/step41_game_layer.py profile
    python bench/step41_game_layer.py profile -- game=mpe_spread   # the plain default: no args
    python bench/step41_game_layer.py bench --old 7648902 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/games.py would shadow the games package
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(ROOT))

from bench._args import at_least  # noqa: E402

MAIN_ARGS = ["experiment=main", "population.generations=2",
             "population.frames_per_generation=4000", "logger=none"]


class Timers:
    """CPU (process) and wall seconds per section, nested sections counted in their own."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def wrap(self, owner: object, attr: str, name: str) -> None:
        fn = getattr(owner, attr)
        cpu, wall, calls = self.cpu, self.wall, self.calls
        pt, pc = time.process_time, time.perf_counter

        def timed(*args, **kwargs):
            c0, w0 = pt(), pc()
            try:
                return fn(*args, **kwargs)
            finally:
                cpu[name] += pt() - c0
                wall[name] += pc() - w0
                calls[name] += 1

        setattr(owner, attr, timed)


def profile(args: argparse.Namespace) -> None:
    from pettingzoo.utils.conversions import aec_to_parallel_wrapper

    import games.pettingzoo as gp
    import games.vector as gv
    import marl.mappo as mappo
    import populations.members as members
    from populations.cli import train_main

    t = Timers()
    t.wrap(gv.VectorGame, "step", "vec")
    t.wrap(gv.VectorGame, "reset", "vec")
    t.wrap(aec_to_parallel_wrapper, "step", "env")
    t.wrap(aec_to_parallel_wrapper, "reset", "env")
    t.wrap(gp.PettingZooGame, "entity_graph", "graph")
    t.wrap(mappo.MAPPO, "act", "act")
    t.wrap(mappo.MAPPO, "observe", "observe")
    t.wrap(mappo.MAPPO, "update", "update")
    t.wrap(members, "_opponent_act", "opp_act")
    run_dir = tempfile.mkdtemp(prefix="step41_profile_")
    sys.argv = ["selfplay-train", *(args.overrides or MAIN_ARGS), f"hydra.run.dir={run_dir}"]
    prof = None
    if args.cprofile:
        import cProfile

        prof = cProfile.Profile(time.process_time)
        prof.enable()
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        train_main()
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            raise
    cpu_total, wall_total = time.process_time() - c0, time.perf_counter() - w0
    if prof is not None:
        prof.disable()
        prof.dump_stats(args.cprofile)
    ours = {k: t.cpu[k] for k in t.cpu}
    ours["ours"] = t.cpu["vec"] - t.cpu["env"] - t.cpu["graph"]
    rows = [("job (selfplay-train, in process)", cpu_total),
            ("VectorGame.step/reset (game layer)", t.cpu["vec"]),
            ("  env step/reset (PettingZoo/mpe2)", t.cpu["env"]),
            ("  entity graphs (games.graphs)", t.cpu["graph"]),
            ("  ours (VectorGame + adapter)", ours["ours"]),
            ("learner.act", t.cpu["act"]),
            ("opponent act (frozen snapshots)", t.cpu["opp_act"]),
            ("learner.observe", t.cpu["observe"]),
            ("learner.update", t.cpu["update"])]
    print(f"overrides: {' '.join(sys.argv[1:-1])}")
    print(f"wall {wall_total:.1f} s, CPU {cpu_total:.1f} s"
          f"{' (cProfile on: Python-heavy layers read high)' if prof else ''}")
    for name, sec in rows:
        print(f"{name:40s} {sec:8.2f} s  {100 * sec / cpu_total:5.1f} %")
    print(json.dumps({"cpu_total": cpu_total, **{k: round(v, 3) for k, v in ours.items()},
                      "vec_calls": t.calls["vec"], "env_calls": t.calls["env"]}))


# ----------------------------------------------------------------------------- bench
CHILD = r"""
import json, sys, time
import numpy as np
import games
name, B, steps, warm, graphs, state = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6] == "1"
kwargs = json.loads(sys.argv[7])
vg = games.VectorGame(name, B, seed=0, with_graphs=graphs, with_state=state, **kwargs)
spec = vg.spec
rng = np.random.default_rng(0)
def actions(vs):
    out = {}
    for a in spec.agent_ids:
        legal = vs.legal[a]
        u = rng.random(legal.shape) * legal  # a random legal action (any where none is)
        out[a] = np.where(legal.any(1), u.argmax(1), 0)
    return out
vs = vg.reset()
for _ in range(warm):
    vs = vg.step(actions(vs))
t0 = time.process_time()
for _ in range(steps):
    vs = vg.step(actions(vs))
dt = time.process_time() - t0
print(json.dumps({"steps_per_s": steps / dt, "us_per_copy_step": 1e6 * dt / steps / B,
                  "games": games.__file__}))
"""


def _old_tree(rev: str) -> str:
    """A folder holding ``games/`` at ``rev`` (git archive)."""
    out = tempfile.mkdtemp(prefix="step41_old_")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "games"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", out], input=archive, check=True)
    return out


def _child(pythonpath: str | None, args: argparse.Namespace) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, str(ROOT)) if p)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, args.game, str(args.num_envs), str(args.steps),
         str(args.warmup), "1" if args.graphs else "0", "1" if args.state else "0",
         args.kwargs], env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if proc.returncode:
        raise SystemExit(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench(args: argparse.Namespace) -> None:
    old = _old_tree(args.old)
    print(f"{args.game} B={args.num_envs} graphs={args.graphs} state={args.state} "
          f"{args.steps} steps per measurement; new = this checkout, old = {args.old}")
    ratios = []
    for r in range(args.rounds):
        pair = {}
        for label, path in (("old", old), ("new", None)) if r % 2 == 0 else \
                (("new", None), ("old", old)):
            pair[label] = _child(path, args)
            assert (old in pair[label]["games"]) == (label == "old"), pair[label]["games"]
        ratio = pair["new"]["steps_per_s"] / pair["old"]["steps_per_s"]
        ratios.append(ratio)
        print(f"round {r}: old {pair['old']['steps_per_s']:8.1f} steps/s "
              f"({pair['old']['us_per_copy_step']:6.1f} us/copy-step), new "
              f"{pair['new']['steps_per_s']:8.1f} ({pair['new']['us_per_copy_step']:6.1f}); "
              f"new/old {ratio:.3f}")
    ratios.sort()
    print(f"median new/old: {ratios[len(ratios) // 2]:.3f} (min {ratios[0]:.3f}, "
          f"max {ratios[-1]:.3f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("profile")
    p.add_argument("--cprofile", default="")
    p.add_argument("overrides", nargs="*", help="selfplay-train overrides (after --)")
    b = sub.add_parser("bench")
    b.add_argument("--old", default="7648902")
    b.add_argument("--game", default="pettingzoo/mpe2.simple_adversary_v3")
    b.add_argument("--kwargs", default='{"max_cycles": 25}')
    b.add_argument("--num-envs", type=at_least(1), default=16)
    b.add_argument("--steps", type=at_least(1), default=1500)
    b.add_argument("--warmup", type=at_least(0), default=100)
    b.add_argument("--no-graphs", dest="graphs", action="store_false")
    b.add_argument("--no-state", dest="state", action="store_false")
    b.add_argument("--rounds", type=at_least(1), default=5)
    args = ap.parse_args()
    profile(args) if args.mode == "profile" else bench(args)


if __name__ == "__main__":
    main()
