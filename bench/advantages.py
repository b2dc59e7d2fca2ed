"""Benchmark of ``marl.advantages``: every scheme and GAE, against ``global`` and against the
slow Python reference of ``tests/marl/test_advantages.py``, in one run.

Layout (``--samples`` N, default 10M): 1k groups spread over 4 games, 8 trajectories per group
(``node`` = group for joint_group), 16 agents taking turns in order (one sample per turn),
8 roles (two agents per role), rewards drawn per agent with different means and scales,
2% of samples masked. GAE runs on ``[T=125, B, A=16]`` with N elements, 1% terminations and
0.5% truncations. The reference runs on a layout ``--ref-scale`` (100) times smaller and its
time (best of 2) is extrapolated linearly. Our times are the best of ``--repeats`` interleaved
rounds (load spikes hit every row alike), diagnostics off (timed on their own row).
On the CPU every row is timed twice: with the ``marl.native`` kernels (the default) and on the
torch path (``native.disabled()``, what runs without a C compiler), whose ``global`` is the
second baseline. ``--device cuda`` runs our code on the GPU (inputs moved there first,
``torch.cuda.synchronize`` around every timing); the reference always runs on the CPU.

Usage: ``python bench/advantages.py [--samples 10000000] [--repeats 5] [--ref-scale 100]
[--device cpu]``. Prints a markdown table. Goal: grouped schemes within 3x of ``global``,
>100x the reference.
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marl import native  # noqa: E402
from marl.advantages import (  # noqa: E402
    AdvantageConfig,
    AdvantageKeys,
    RoleEMABaseline,
    advantage_diagnostics,
    gae,
    normalize_advantages,
)
from tests.marl.test_advantages import ref_gae, ref_scheme  # noqa: E402

GROUPS, GAMES, TRAJ_PER_GROUP, AGENTS, ROLES, T_GAE = 1000, 4, 8, 16, 8, 125


def make_layout(n: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Flat samples in collection order: trajectory-major, then turn (agents interleaved)."""
    gen = torch.Generator().manual_seed(seed)
    n_traj = GROUPS * TRAJ_PER_GROUP
    traj = torch.arange(n) * n_traj // n
    first = torch.searchsorted(traj, torch.arange(n_traj))
    turn = torch.arange(n) - first[traj]
    group = traj // TRAJ_PER_GROUP
    agent = turn % AGENTS
    mu = torch.linspace(-2.0, 3.0, AGENTS)
    sigma = torch.linspace(0.2, 2.0, AGENTS)
    values = torch.randn(n, generator=gen) * sigma[agent] + mu[agent]
    return {
        "values": values,
        "mask": torch.rand(n, generator=gen) > 0.02,
        "game": group % GAMES,
        "group": group,
        "node": group,
        "agent": agent,
        "role": agent // (AGENTS // ROLES),
        "trajectory": traj,
        "turn": turn,
    }


def make_gae(n: int, seed: int = 1) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    b = max(1, n // (T_GAE * AGENTS))
    shape = (T_GAE, b, AGENTS)
    u = torch.rand(T_GAE, b, generator=gen)
    return {
        "rewards": torch.randn(shape, generator=gen),
        "values": torch.randn(shape, generator=gen),
        "next_values": torch.randn(shape, generator=gen),
        "terminated": u < 0.01,
        "truncated": (u >= 0.01) & (u < 0.015),
    }


def best_times(
    fns: dict[str, Callable[[], object]], repeats: int, device: torch.device | None = None
) -> dict[str, float]:
    """Best wall time of each callable; rounds interleave them so load spikes hit all alike.
    The garbage collector is off while they run (as in ``timeit``). On a CUDA ``device`` the
    GPU is synchronized before and after each call."""

    def sync() -> None:
        if device is not None and device.type == "cuda":
            torch.cuda.synchronize(device)

    best = dict.fromkeys(fns, math.inf)
    gc.collect()
    gc.disable()  # as timeit does: a collection over the reference's Python lists takes ~10 ms
    try:
        for _ in range(repeats + 1):  # the first round warms up
            for name, fn in fns.items():
                sync()
                start = time.perf_counter()
                fn()
                sync()
                best[name] = min(best[name], time.perf_counter() - start)
    finally:
        gc.enable()
    return best


def cases() -> list[tuple[str, str, AdvantageConfig]]:
    base = AdvantageConfig(diagnostics=False)
    per_traj = AdvantageConfig(diagnostics=False, per_trajectory=True)
    names = ["global", "agent", "role", "group_role", "role_ema", "player_turn", "joint_group"]
    rows = [(name, name, base) for name in names + ["none"]]
    rows += [("agent (per trajectory)", "agent", per_traj),
             ("role_ema (per trajectory)", "role_ema", per_traj)]  # fmt: skip
    return rows


def keys_of(lay: dict[str, torch.Tensor]) -> AdvantageKeys:
    names = ("game", "group", "agent", "role", "trajectory", "node", "turn")
    return AdvantageKeys(**{k: lay[k] for k in names})


def run(
    samples: int, repeats: int, ref_scale: int, device: torch.device | None = None
) -> list[tuple[str, float, float | None, float | None]]:
    """(row name, seconds at full size, extrapolated reference seconds or None, seconds of the
    torch path or None); our code runs on ``device`` (CPU when None: the ``marl.native``
    kernels, and the torch path with them disabled), the reference on the CPU."""
    device = device or torch.device("cpu")
    big = {k: v.to(device) for k, v in make_layout(samples).items()}
    small = make_layout(max(1, samples // ref_scale))
    lists: dict = {k: v.tolist() for k, v in small.items()}
    lists["weights"] = None
    keys = keys_of(big)
    ours: dict[str, Callable[[], object]] = {}
    refs: dict[str, Callable[[], object]] = {}
    for row, scheme, cfg in cases():
        ours[row] = partial(normalize_advantages, scheme, big["values"], keys, big["mask"],
                            cfg=cfg, state=RoleEMABaseline())  # fmt: skip
        ref_cfg = AdvantageConfig(**{**cfg.__dict__, "float64": True})
        refs[row] = partial(ref_scheme, scheme, lists, ref_cfg, {})
    adv = normalize_advantages("agent", big["values"], keys, big["mask"]).advantages
    ours["diagnostics (agent + role)"] = partial(advantage_diagnostics, big["values"], adv, keys,
                                                 big["mask"])  # fmt: skip
    g_big = {k: v.to(device) for k, v in make_gae(samples).items()}
    g_small = make_gae(max(1, samples // ref_scale))
    ours["gae [125, B, 16]"] = partial(gae, **g_big, gamma=0.99, lam=0.95)
    flat = {k: g_small[k].reshape(T_GAE, -1).tolist() for k in ("rewards", "values", "next_values")}
    flags = [g_small[k].repeat_interleave(AGENTS, 1).tolist() for k in ("terminated", "truncated")]
    refs["gae [125, B, 16]"] = partial(ref_gae, flat["rewards"], flat["values"],
                                       flat["next_values"], *flags, 0.99, 0.95)  # fmt: skip
    refs_t, ours_t = best_times(refs, 2), best_times(ours, repeats, device)
    torch_t: dict[str, float] = {}
    if device.type == "cpu" and native.available():  # the same calls on the torch path
        with native.disabled():
            torch_t = best_times(ours, repeats, device)
    return [(row, t, refs_t[row] * ref_scale if row in refs_t else None, torch_t.get(row))
            for row, t in ours_t.items()]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ref-scale", type=int, default=100)
    parser.add_argument("--device", default="cpu", help="where our code runs: cpu, cuda, cuda:1")
    args = parser.parse_args()
    try:
        device = torch.device(args.device)
    except RuntimeError:
        parser.error(f"--device {args.device!r} is not a torch device (cpu, cuda, cuda:1, ...)")
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit(f"--device {args.device}: CUDA is not available in this torch build / machine")
    rows = run(args.samples, args.repeats, args.ref_scale, device)
    glob = dict((r[0], r[1]) for r in rows)["global"]
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(
        f"samples={args.samples:,} torch={torch.__version__} threads={torch.get_num_threads()}"
        f" device={where} reference on the CPU, samples/{args.ref_scale},"
        f" extrapolated x{args.ref_scale}\n"
    )
    torch_glob = dict((r[0], r[3]) for r in rows)["global"]
    print("| scheme | seconds | x global | reference s (extrap.) | speedup vs reference "
          "| torch path s | x torch global |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, sec, ref, tor in rows:
        ref_s = "" if ref is None else f"{ref:.3g}"
        speed = "" if ref is None else f"{ref / sec:,.0f}x"
        tor_s = "" if tor is None else f"{tor:.3f}"
        tg = "" if torch_glob is None else f"{sec / torch_glob:.2f}"
        print(f"| {name} | {sec:.3f} | {sec / glob:.2f} | {ref_s} | {speed} | {tor_s} | {tg} |")

if __name__ == "__main__":
    main()
