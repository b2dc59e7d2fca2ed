"""Benchmark of a league's members training at once on Ray learner actors (issue 20).

A league of ``--members`` (4) MAPPO members on simple_adversary (``max_cycles=25``, 16 copies,
``--frames`` frames per member and generation) runs ``--generations`` generations twice in
one process, with the same seed: in this process (members one after another, matches in
this process) and with ``runner="ray"`` (``--actors`` (2) CPU learner actors, one Ray match
worker). For each generation it reports the wall time of the training phase (every member's
generation) and of the whole generation (training to the end of evaluation; checkpoints
apart), and the ratios in-process / Ray. Ray's start (once per run) is timed on its own
line; generation 1 on Ray also starts the learner actors (fresh processes importing torch and
the games), so the steady state shows from generation 2. Both runs must publish identical
snapshots (checked: the same SHA-256 per snapshot).

Usage: ``nice -n 10 python bench/league_ray.py [--members 4] [--actors 2] [--frames 8000]
[--generations 3]``. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import games  # noqa: E402
from bench._args import at_least  # noqa: E402
from marl.actor_critic import NetConfig  # noqa: E402
from marl.mappo import MAPPO, MAPPOConfig  # noqa: E402
from populations.league import League, LeagueConfig  # noqa: E402
from populations.members import LearnerMember  # noqa: E402
from populations.runners import init_ray  # noqa: E402


class TimedLeague(League):
    """A league that records the wall time of each generation's training and whole."""

    times: dict[int, dict[str, float]]

    def _train_members(self) -> None:
        self.t0 = time.perf_counter()
        super()._train_members()
        self.times[self.generation] = {"train": time.perf_counter() - self.t0}

    def _publish_and_evaluate(self) -> None:
        super()._publish_and_evaluate()
        self.times[self.generation]["total"] = time.perf_counter() - self.t0


def run(cfg: LeagueConfig, run_dir: Path, members: int) -> tuple[dict, list]:
    spec = games.make(cfg.game, **cfg.game_kwargs).spec
    ms = [LearnerMember(f"m{i}", MAPPO(spec, cfg.mappo, seed=i)) for i in range(members)]
    league = TimedLeague(cfg, run_dir, members=ms)
    league.times = {}
    try:
        league.run()
    finally:
        league.close()
    db = sqlite3.connect(run_dir / "league.db")
    shas = db.execute("SELECT m.name, s.version, s.sha256 FROM snapshots s JOIN members m "
                      "ON s.member_id = m.id ORDER BY m.name, s.version").fetchall()
    db.close()
    return league.times, shas


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--members", type=at_least(1), default=4)
    p.add_argument("--actors", type=at_least(1), default=2)
    p.add_argument("--frames", type=at_least(1), default=8000)
    p.add_argument("--generations", type=at_least(1), default=3)
    args = p.parse_args()
    torch.set_num_threads(1)  # before any torch work, as selfplay-train (learner_actors)
    logging.basicConfig(level=logging.WARNING)
    base = dict(generations=args.generations, frames_per_generation=args.frames, num_envs=16,
                eval_episodes=2, mappo=MAPPOConfig(net=NetConfig(share="role")))
    with tempfile.TemporaryDirectory() as tmp:
        load0 = os.getloadavg()[0]
        local, want = run(LeagueConfig(**base), Path(tmp) / "local", args.members)
        t = time.perf_counter()
        init_ray(None, args.actors + 1)
        ray_start = time.perf_counter() - t
        remote, got = run(LeagueConfig(**base, runner="ray", ray_learners=args.actors,
                                       ray_workers=1), Path(tmp) / "ray", args.members)
        load1 = os.getloadavg()[0]
    assert got == want, "the Ray league published other snapshots than the in-process one"
    print(f"{args.members} MAPPO members, {args.frames} frames each per generation, "
          f"{args.actors} learner actors; load average {load0:.1f} -> {load1:.1f} on "
          f"{os.cpu_count()} CPUs; Ray start {ray_start:.1f} s (once); snapshots identical\n")
    print("| generation | train in-process (s) | train Ray (s) | ratio | whole in-process (s) "
          "| whole Ray (s) | ratio |")
    print("|---|---|---|---|---|---|---|")
    for g in sorted(k for k in local if k > 0):
        a, b = local[g], remote[g]
        print(f"| {g} | {a['train']:.1f} | {b['train']:.1f} | {a['train'] / b['train']:.2f} | "
              f"{a['total']:.1f} | {b['total']:.1f} | {a['total'] / b['total']:.2f} |")


if __name__ == "__main__":
    main()
