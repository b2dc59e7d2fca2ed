"""What drawing every copy's layout on its own costs (vmas41, vmas41b): a reset of all B
copies of a scenario whose reset of all draws part of the layout once for the batch
(passage), reset as VMAS does it (one call: one layout for all), each copy on its own
(vmas41: B single resets) and in groups (vmas41b: --groups resets of all copies, each
keeping one group's), beside a quarter of the copies ended together (one by one against
grouped) and an episode's steps of the same batch, in the same run.

    python bench/vmas41_reset.py [--task passage] [--sizes 32 256 1024] [--device cpu]
        [--repeats 3] [--steps 100] [--groups K]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/ off the path (bench/vmas.py would shadow the vmas package), the root on it
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(ROOT))  # for bench._args and games

from bench._args import at_least  # noqa: E402


def _best(fn, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="passage", help="a VMAS scenario (default passage)")
    p.add_argument("--sizes", type=at_least(1), nargs="+", default=[32, 256, 1024])
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeats", type=at_least(1), default=3)
    p.add_argument("--steps", type=at_least(1), default=100, help="an episode's steps")
    p.add_argument("--groups", type=at_least(1), default=None,
                   help="groups of a grouped reset (default games.vmas_reset.RESET_GROUPS)")
    args = p.parse_args()
    import torch

    import games
    from games.vmas_reset import RESET_GROUPS

    args.groups = args.groups or RESET_GROUPS

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        p.exit(2, f"--device {args.device}: no CUDA device here (torch {torch.__version__})\n")
    torch.set_num_threads(1)
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    print(f"vmas/{args.task} on {args.device} (1 CPU thread), best of {args.repeats}; "
          f"seconds; grouped: {args.groups} groups (RESET_GROUPS)")
    print(f"{'B':>6} {'VMAS one call':>14} {'each copy':>10} {'grouped':>8} {'ratio':>6} "
          f"{'B/4 ended: each':>16} {'grouped':>8} {'ratio':>6} "
          f"{f'{args.steps} steps':>10} {'grouped/episode':>16}")
    one_by_one = 10**9  # more groups than copies: every copy reset on its own
    for n in args.sizes:
        vg = games.VectorGame(f"vmas/{args.task}", n, seed=0, tensors=True,
                              device=args.device, max_steps=10**6)
        sim = vg.native.sim
        each = sim.each_copy
        vg.reset()
        acts = {a: torch.randint(0, sp.n, (n,)) if sp.discrete else torch.zeros(n, *sp.shape)
                for a, sp in vg.spec.action_spaces.items()}

        def full(flag: bool, groups: int, sim=sim) -> None:
            sim.each_copy, sim.groups = flag, groups
            sim.reset()
            sync()

        ended = torch.arange(0, n, 4, device=sim.device)

        def part(groups: int, sim=sim, ended=ended, each=each) -> None:
            sim.each_copy, sim.groups, sim._one_by_one = each, groups, False
            sim.reset_at(ended)
            sync()

        vmas_ = _best(lambda: full(False, args.groups), args.repeats)
        old = _best(lambda e=each: full(e, one_by_one), args.repeats)
        new = _best(lambda e=each: full(e, args.groups), args.repeats)
        p_old = _best(lambda: part(one_by_one), args.repeats)
        p_new = _best(lambda: part(args.groups), args.repeats)
        sim.each_copy, sim.groups = each, args.groups

        def episode(vg=vg, acts=acts) -> None:
            for _ in range(args.steps):
                vg.step(acts)
            sync()

        steps = _best(episode, 1)
        print(f"{n:>6} {vmas_:>14.4f} {old:>10.4f} {new:>8.4f} {old / new:>6.1f} "
              f"{p_old:>16.4f} {p_new:>8.4f} {p_old / p_new:>6.1f} {steps:>10.3f} "
              f"{new / steps:>16.0%}")


if __name__ == "__main__":
    main()
