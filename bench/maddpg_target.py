"""MADDPG's discrete target actions: the target actors' argmax (our default, as in
maddpg-pytorch and EPyMARL) against a straight-through Gumbel sample of the target policy
(hard; OpenAI's MADDPG feeds soft relaxed samples), on MPE ``simple_spread`` (N=2) and
``simple_reference``.

    python bench/maddpg_target.py [--frames 16000] [--seeds 0 1 2] [--games spread reference]

Per run: the greedy team return of the trained policy over 64 evaluation episodes (16
copies, seed 1000) minus that of uniformly random play, and the CPU seconds. Prints one
line per run, then a markdown table of the means.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# bench/games.py is named like the package: keep bench/ off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench._args import at_least  # noqa: E402
from games import VectorGame  # noqa: E402
from marl.maddpg import MADDPG, MADDPGConfig  # noqa: E402
from marl.train import RandomPolicy, evaluate, train  # noqa: E402

GAMES = {
    "spread": ("pettingzoo/mpe2.simple_spread_v3", {"N": 2, "max_cycles": 25}),
    "reference": ("pettingzoo/mpe2.simple_reference_v3", {"max_cycles": 25}),
}


def run(game: str, mode: str, frames: int, seed: int) -> tuple[float, float]:
    name, kw = GAMES[game]
    vg = VectorGame(name, 8, seed=seed, with_state=True, **kw)
    learner = MADDPG(vg.spec, MADDPGConfig(target_action=mode, seed=seed))
    t0 = time.process_time()
    train(learner, vg, frames, progress=False)
    cpu = time.process_time() - t0
    ev = VectorGame(name, 16, seed=1000, **kw)
    ids = ev.spec.agent_ids
    pol, rnd = learner.policy(), RandomPolicy(ev.spec, seed=0)
    learned = evaluate(ev, {a: pol for a in ids}, 64, greedy=True).per_team
    random = evaluate(ev, {a: rnd for a in ids}, 64).per_team
    team = next(iter(learned))
    return learned[team] - random[team], cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=at_least(1), default=16_000)
    ap.add_argument("--seeds", type=at_least(0), nargs="+", default=[0, 1, 2])
    ap.add_argument("--games", nargs="+", default=list(GAMES), choices=list(GAMES))
    args = ap.parse_args()
    torch.set_num_threads(1)
    res: dict[tuple[str, str], list[float]] = {}
    for game in args.games:
        for seed in args.seeds:
            for mode in ("argmax", "gumbel"):  # alternating: load drifts hit both alike
                margin, cpu = run(game, mode, args.frames, seed)
                res.setdefault((game, mode), []).append(margin)
                print(f"{game} {mode} seed {seed}: margin over random {margin:.2f} "
                      f"({cpu:.0f} s CPU)", flush=True)
    print(f"\n| game | target action | margin over random, seeds {args.seeds} | mean |")
    print("|---|---|---|---|")
    for (game, mode), m in res.items():
        print(f"| {game} | {mode} | {' / '.join(f'{x:.2f}' for x in m)} | {np.mean(m):.2f} |")


if __name__ == "__main__":
    main()
