"""MAPPO on a VMAS task on one device at many copies: frames/s, where the time goes, peak
memory, and the largest number of copies B that fits (issue 17's GPU item).

Task (``--task``): BenchMARL's ``vmas/navigation`` (default) or ``vmas/balance`` settings,
the same as ``bench/vmas_train.py``. Learner: ``MAPPOConfig()`` (64×64 MLPs, 25 steps per
copy per update, 10 epochs × 4 minibatches) on ``--device``, fed tensor VecSteps
(``VectorGame(tensors=True)``: the rollout stays on the device).

1. **Table**: for each B of ``--copies`` (default 4,096 8,192 16,384 32,768), one warm-up
   update (allocations, kernel selection; not timed), then ``--updates`` timed updates,
   stopped early when the part's ``--limit`` seconds have passed (the row says how many it
   timed). Columns: frames/s over the timed updates (one frame = one step of one copy), the
   share of time in stepping (acting, VMAS, storing) against the PPO update (synchronized
   around every update), and peak CUDA memory of that B.
2. **Largest B**: from twice the largest B of the table, doubling, one update per B until
   ``torch.cuda.OutOfMemoryError`` (caught: the row says "out of memory"); the last B that
   ran is "the largest B that fits". Stops early at ``--search-limit`` seconds (then it is
   a lower bound) or at ``--max-copies``; ``--search-limit 0`` skips the part.

Every row is printed when measured, so a run cut off by ``timeout`` keeps its rows.

    python bench/vmas_gpu.py [--device cuda] [--copies 4096 8192 16384 32768] [--updates 5]
        [--limit 60] [--search-limit 180] [--max-copies 8388608] [--task navigation|balance]

CPU smoke check: ``python bench/vmas_gpu.py --device cpu --copies 256 512 --updates 2
--search-limit 20 --max-copies 2048``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path

# bench/games.py is named like the package: keep bench/ off the import path.
ROOT = Path(__file__).resolve().parents[1]
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

import games  # noqa: E402
from bench._args import at_least, seconds  # noqa: E402
from marl.mappo import MAPPO, MAPPOConfig  # noqa: E402
from marl.train import TrainResult, after_step  # noqa: E402


def _tasks() -> dict[str, dict]:
    """BenchMARL's task settings, from ``bench/vmas_train.py`` (one place for them)."""
    spec = importlib.util.spec_from_file_location("vmas_train", ROOT / "bench" / "vmas_train.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.TASKS


class Run:
    """One learner and B copies on ``device``; ``updates(n)`` trains through n more updates
    and returns (frames, seconds, update seconds) of them."""

    def __init__(self, task: str, kwargs: dict, B: int, device: str, seed: int = 0) -> None:
        self.device = device
        self.spec = games.make(task, **kwargs).spec
        self.learner = MAPPO(self.spec, MAPPOConfig(), device=device, seed=seed)
        self.vg = games.VectorGame(task, B, seed=seed, tensors=True, device=device,
                                   **self.learner.vector_game_kwargs, **kwargs)
        self.result = TrainResult(0, 0, 0.0)
        self.bar = tqdm(disable=True)
        self.update_s = 0.0
        inner: Callable[[], dict[str, float]] = self.learner.update

        def timed_update() -> dict[str, float]:  # train's after_step calls learner.update
            self.sync()
            t = time.perf_counter()
            metrics = inner()
            self.sync()
            self.update_s += time.perf_counter() - t
            return metrics

        self.learner.update = timed_update  # type: ignore[method-assign]
        self.vs = self.vg.reset()

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def updates(self, n: int, deadline: float = float("inf")) -> tuple[int, float, float, int]:
        """Train until ``n`` more updates or past ``deadline`` (checked after each update):
        (frames, seconds, update seconds, updates done)."""
        learner, res = self.learner, self.result
        f0, u0, up0 = res.frames, res.updates, self.update_s
        self.sync()
        t0 = time.perf_counter()
        while res.updates < u0 + n:
            self.vs = self.vg.step(learner.act(self.vs))
            learner.observe(self.vs)
            done_before = res.updates
            after_step(learner, self.vs, res, self.bar, None)
            if res.updates > done_before and time.perf_counter() > deadline:
                break
        self.sync()
        return (res.frames - f0, time.perf_counter() - t0, self.update_s - up0,
                res.updates - u0)

    def close(self) -> None:
        self.vg.close()


def _peak() -> str:
    if not torch.cuda.is_available():
        return "-"
    return f"{torch.cuda.max_memory_allocated() / 2**30:.2f} GiB"


def _fresh(device: str) -> None:
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def table(task: str, kwargs: dict, copies: list[int], device: str, updates: int,
          limit: float) -> tuple[int | None, bool]:
    """One row per B; returns (the largest B that ran, whether a B ran out of memory)."""
    ran = None
    print("| B | frames/s | updates timed | step share | update share | peak memory |")
    print("|---:|---:|---:|---:|---:|---:|", flush=True)
    for B in copies:
        _fresh(device)
        deadline = time.perf_counter() + limit
        run = None
        try:
            run = Run(task, kwargs, B, device)
            run.updates(1, deadline)  # warm-up
            frames, secs, up_s, done = run.updates(updates, deadline) \
                if time.perf_counter() < deadline else (0, 0.0, 0.0, 0)
        except torch.cuda.OutOfMemoryError:
            print(f"| {B:,} | out of memory | | | | {_peak()} |", flush=True)
            return ran, True
        finally:
            if run is not None:
                run.close()
            del run
        ran = B
        if not done:
            print(f"| {B:,} | (warm-up alone took the {limit:.0f} s limit) | 0 | | | "
                  f"{_peak()} |", flush=True)
            continue
        print(f"| {B:,} | {frames / secs:,.0f} | {done} | {1 - up_s / secs:.0%} | "
              f"{up_s / secs:.0%} | {_peak()} |", flush=True)
    return ran, False


def largest(task: str, kwargs: dict, start: int, device: str, limit: float,
            max_copies: int) -> None:
    print("\n| B (one update each) | seconds | peak memory | result |")
    print("|---:|---:|---:|---|", flush=True)
    deadline = time.perf_counter() + limit
    fits, why, size, last = None, "", start, 0.0
    while True:
        if size > max_copies:
            why = f"stopped at --max-copies {max_copies:,}"
            break
        if time.perf_counter() + 2.5 * last > deadline:  # twice the copies: ~twice the time
            why = f"stopped: {size:,} would pass the {limit:.0f} s limit"
            break
        _fresh(device)
        t = time.perf_counter()
        run = None
        try:
            run = Run(task, kwargs, size, device)
            run.updates(1)
        except torch.cuda.OutOfMemoryError:
            print(f"| {size:,} | {time.perf_counter() - t:.1f} | {_peak()} | out of memory |",
                  flush=True)
            why = f"{size:,} ran out of memory"
            break
        finally:
            if run is not None:
                run.close()
            del run
        last = time.perf_counter() - t
        print(f"| {size:,} | {last:.1f} | {_peak()} | fits |", flush=True)
        fits, size = size, 2 * size
    _fresh(device)
    bound = "" if why.endswith("out of memory") else "at least "
    print(f"\nlargest B that fits: {bound}{fits:,} ({why})" if fits else
          f"\nlargest B that fits: none from {start:,} ({why})", flush=True)


def main() -> None:
    tasks = _tasks()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda, cuda:1, cpu")
    p.add_argument("--task", default="navigation", choices=sorted(tasks))
    p.add_argument("--copies", type=at_least(1), nargs="+", default=[4096, 8192, 16384, 32768])
    p.add_argument("--updates", type=at_least(1), default=5, help="timed updates per B")
    p.add_argument("--limit", type=seconds(), default=60.0, help="seconds per B of the table")
    p.add_argument("--search-limit", type=seconds(zero_skips=True), default=180.0,
                   help="seconds for the largest-B search (0: skip it)")
    p.add_argument("--max-copies", type=at_least(1), default=1 << 23, help="largest B to try")
    p.add_argument("--threads", type=at_least(1), default=1, help="torch intra-op threads")
    args = p.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"--device {args.device}: no CUDA device here (torch {torch.__version__})",
              file=sys.stderr)
        sys.exit(2)
    torch.set_num_threads(args.threads)
    task, kwargs = f"vmas/{args.task}", tasks[args.task]
    name = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "cpu"
    print(f"MAPPO defaults on {task} {kwargs}, device {args.device} ({name}), "
          f"torch {torch.__version__}, {args.updates} timed updates per B after one warm-up\n",
          flush=True)
    ran, oom = table(task, kwargs, sorted(args.copies), args.device, args.updates, args.limit)
    if oom:  # the table found the limit already
        print(f"\nlargest B that fits: {ran or 0:,} of --copies (the next ran out of memory)")
    elif args.search_limit > 0:
        largest(task, kwargs, 2 * (ran or max(args.copies)), args.device, args.search_limit,
                args.max_copies)


if __name__ == "__main__":
    main()
