"""Where MAPPO updates on VMAS copies spend their host time (cProfile), for a B where
``bench/vmas_gpu.py`` is slow: the top functions by own time and by cumulative time; on
CUDA also the top kernels of 5 game steps (torch.profiler).

    python bench/vmas_profile.py [--device cuda] [--copies 4096] [--task navigation]
        [--updates 1] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import pstats
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for bench._args

from bench._args import at_least  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default: a GPU profile), cuda:1, cpu")
    p.add_argument("--copies", type=at_least(1), default=4096)
    p.add_argument("--task", default="navigation")
    p.add_argument("--top", type=at_least(1), default=25)
    p.add_argument("--updates", type=at_least(1), default=1,
                   help="updates profiled after the warm-up")
    args = p.parse_args()
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        p.exit(2, f"--device {args.device}: no CUDA device here (torch {torch.__version__})\n")
    spec = importlib.util.spec_from_file_location("vmas_gpu", ROOT / "bench" / "vmas_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tasks = mod._tasks()
    if args.task not in tasks:
        p.error(f"argument --task: invalid choice: {args.task!r} (choose from "
                f"{', '.join(sorted(tasks))})")
    task, kwargs = f"vmas/{args.task}", tasks[args.task]
    run = mod.Run(task, kwargs, args.copies, args.device)
    run.updates(1)  # warm-up
    prof = cProfile.Profile()
    prof.enable()
    frames, secs, up_s, _ = run.updates(args.updates)
    prof.disable()
    print(f"B={args.copies:,} {task} on {args.device}: {frames / secs:,.0f} frames/s, "
          f"update {up_s / secs:.0%} of {secs:.2f} s")
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)
    if args.device.startswith("cuda"):  # the kernels of 5 game steps (acting + VMAS)
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as tp:
            for _ in range(5):
                run.vs = run.vg.step(run.learner.act(run.vs))
            torch.cuda.synchronize()
        print(tp.key_averages().table(sort_by="self_cuda_time_total", row_limit=args.top,
                                      max_name_column_width=70))


if __name__ == "__main__":
    main()
