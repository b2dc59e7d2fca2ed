"""Benchmark of ``marl.advantages`` (plain torch), three parts in one run.

1. **10M table** (``--samples``): every adv_norm and GAE against ``global`` and against the
   slow Python reference of ``tests/marl/test_advantages.py``. Layout: 1k groups over 4 games,
   8 trajectories per group (``node`` = group for joint_group), 16 agents taking turns in order
   (one sample per turn), 8 roles (two agents per role), rewards drawn per agent with different
   means and scales, 2% of samples masked. GAE runs on ``[T=125, B, A=16]`` with N elements.
   The reference runs on a layout ``--ref-scale`` (100) times smaller and is extrapolated
   linearly. Our times: best of ``--repeats`` interleaved rounds, diagnostics not read (timed
   on their own row). ``--device cuda`` runs our code on the GPU (synchronized around every
   call); the reference always runs on the CPU. A line under the table says whether every
   grouped adv_norm is within 3× ``global`` (issue 16's goal on CUDA; none on the CPU).
2. **MAPPO's batch** (``[26, 32, 3]``, 5% masked, keys agent and role): the default
   ``normalize_advantages`` call against the plain one-liner ``(a - a.mean()) / (a.std() +
   eps)`` and its masked form, with and without reading the diagnostics.
3. **End to end**: the share of advantage time in real MAPPO updates (simple_spread N=3,
   default ``MAPPOConfig``, 32 copies; ``--updates`` updates, rollout excluded; normalization
   with its diagnostics read, and GAE) and in whole GRPO steps (rollout + update) of the tiny
   LLM preset (Kuhn poker, ``group_role`` and ``role_ema``, 128 episodes, ``--grpo-steps``
   steps; keys from the turn records, turn returns, normalization, diagnostics read, token
   broadcast).
   Shares are sums over the steps, in wall time and in this thread's CPU time: under load a
   short timed span that the scheduler preempts reads several ms of wall time, so the wall
   share scatters from run to run while the CPU-time share stays put. The load average is
   printed with the table. Goal: under 1 %.

Usage: ``python bench/advantages.py [--samples 10000000] [--repeats 5] [--ref-scale 100]
[--device cpu] [--parts table,batch,e2e] [--updates 10] [--grpo-steps 20]``. Prints markdown
tables.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

# bench/games.py is named like the games package: keep bench/ off the import path.
ROOT = Path(__file__).resolve().parents[1]
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from bench._args import at_least  # noqa: E402
from marl.adv_diagnostics import advantage_diagnostics  # noqa: E402
from marl.advantages import (  # noqa: E402
    AdvantageConfig,
    AdvantageKeys,
    RoleEMABaseline,
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
    base = AdvantageConfig(diagnostics="none")
    per_traj = AdvantageConfig(diagnostics="none", per_trajectory=True)
    names = ["global", "agent", "role", "group_role", "role_ema", "player_turn", "joint_group"]
    rows = [(name, name, base) for name in names + ["none"]]
    rows += [("agent (per trajectory)", "agent", per_traj),
             ("role_ema (per trajectory)", "role_ema", per_traj)]  # fmt: skip
    return rows


def keys_of(lay: dict[str, torch.Tensor]) -> AdvantageKeys:
    names = ("game", "group", "agent", "role", "trajectory", "node", "turn")
    return AdvantageKeys(**{k: lay[k] for k in names})


def table(samples: int, repeats: int, ref_scale: int, device: torch.device) -> None:
    """Part 1: the 10M table."""
    big = {k: v.to(device) for k, v in make_layout(samples).items()}
    small = make_layout(max(1, samples // ref_scale))
    lists: dict = {k: v.tolist() for k, v in small.items()}
    lists["weights"] = None
    keys = keys_of(big)
    ours: dict[str, Callable[[], object]] = {}
    refs: dict[str, Callable[[], object]] = {}
    for row, name, cfg in cases():
        ours[row] = partial(normalize_advantages, name, big["values"], keys, big["mask"],
                            cfg=cfg, state=RoleEMABaseline())  # fmt: skip
        ref_cfg = AdvantageConfig(**{**cfg.__dict__, "float64": True})
        refs[row] = partial(ref_scheme, name, lists, ref_cfg, {})
    v = big["values"]
    ours["one-liner, no mask (machine speed)"] = lambda: (v - v.mean()) / (v.std() + 1e-6)
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
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"samples={samples:,} torch={torch.__version__} threads={torch.get_num_threads()}"
          f" device={where}; reference on the CPU at samples/{ref_scale}, extrapolated\n")
    print("| adv_norm | seconds | × global | reference s (extrap.) | speed-up vs reference |")
    print("|---|---:|---:|---:|---:|")
    glob = ours_t["global"]
    for row, sec in ours_t.items():
        ref = refs_t.get(row)
        ref_s = "" if ref is None else f"{ref * ref_scale:.3g}"
        speed = "" if ref is None else f"{_speed_up(ref * ref_scale / sec)}×"
        print(f"| {row} | {sec:.3f} | {sec / glob:.2f} | {ref_s} | {speed} |")
    grouped = [row for row, _, _ in cases() if row not in ("global", "none")]
    over = [f"{row} {ours_t[row] / glob:.1f}×" for row in grouped if ours_t[row] > 3 * glob]
    if device.type == "cuda":  # issue 16: every grouped adv_norm at most 3x `global` on CUDA
        print(f"\nGoal (CUDA): every grouped adv_norm <= 3× global: "
              f"{'met' if not over else 'missed by ' + ', '.join(over)}")
    else:
        print("\nOn the CPU there is no 3× goal; the ratios are recorded as measured.")
    print()


def _speed_up(ratio: float) -> str:
    """A speed-up to 2 significant digits below 10 (0.53, 8.3; ``:,.0f`` said 0 for 0.4) and
    in whole numbers above (12, 1,234)."""
    return f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.2g}"


def profile(samples: int, device: torch.device, top: int = 6) -> None:
    """Part 4 (``--parts profile``): where one call of each adv_norm spends its time at
    ``samples``: wall time, kernel launches and their summed device time (CUDA; on the CPU the
    ops' own CPU time), and the ``top`` kernels. A call whose kernels sum to far less than its
    wall time waits on launches or the host; else the top kernels are the ones to change."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    cuda = device.type == "cuda"
    big = {k: v.to(device) for k, v in make_layout(samples).items()}
    keys = keys_of(big)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    print(f"One call at {samples:,} samples on {device}: kernels (device time) per adv_norm\n")
    print("| adv_norm | wall ms | kernels | kernel ms | top kernels (calls, ms) |")
    print("|---|---:|---:|---:|---|")
    for row, name, cfg in cases():
        fn = partial(normalize_advantages, name, big["values"], keys, big["mask"], cfg=cfg,
                     state=RoleEMABaseline())  # fmt: skip
        fn()
        _sync(device)
        with torch_profile(activities=acts) as prof:
            w0 = time.perf_counter()
            fn()
            _sync(device)
            wall = time.perf_counter() - w0
        evs = [e for e in prof.key_averages()
               if (e.device_type == DeviceType.CUDA) == cuda and not e.key.startswith("cuda")]
        own = "self_device_time_total" if cuda else "self_cpu_time_total"
        evs = [e for e in evs if getattr(e, own, 0) > 0]
        evs.sort(key=lambda e: getattr(e, own), reverse=True)
        total = sum(getattr(e, own) for e in evs) / 1e3
        tops = "; ".join(f"{e.key[:60].replace('|', '/')} ({e.count}, "
                         f"{getattr(e, own) / 1e3:.3f})" for e in evs[:top])
        print(f"| {row} | {wall * 1e3:.3f} | {sum(e.count for e in evs)} | {total:.3f} | "
              f"{tops} |", flush=True)
    print()


def mappo_batch(repeats: int, device: torch.device) -> None:
    """Part 2: one call at MAPPO's batch against the one-liner (best of many interleaved)."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(26, 32, 3, generator=gen).to(device)
    m = (torch.rand(26, 32, 3, generator=gen) > 0.05).to(device)
    keys = AdvantageKeys(agent=torch.arange(3, device=device),
                         role=torch.tensor([0, 0, 1], device=device))  # fmt: skip

    def masked() -> torch.Tensor:
        x = a[m]
        return torch.where(m, (a - x.mean()) / (x.std() + 1e-6), 0.0)

    fns: dict[str, Callable[[], object]] = {
        "one-liner `(a - a.mean()) / (a.std() + eps)`": lambda: (a - a.mean()) / (a.std() + 1e-6),
        "masked one-liner": masked,
    }
    for name in ("global", "agent", "role"):
        fns[f"`{name}`, default call"] = partial(normalize_advantages, name, a, keys, m)
        fns[f"`{name}`, diagnostics read"] = lambda n=name: normalize_advantages(
            n, a, keys, m).diagnostics
    calls = 20
    best = best_times({k: _times(f, calls) for k, f in fns.items()}, 50 * repeats, device)
    best = {k: t / calls for k, t in best.items()}
    base, masked_t = best[next(iter(fns))], best["masked one-liner"]
    print("MAPPO's batch [26, 32, 3], 5% masked; µs per call (best of interleaved rounds)\n")
    print("| call | µs | × one-liner | × masked one-liner |")
    print("|---|---:|---:|---:|")
    for k, t in best.items():
        print(f"| {k} | {t * 1e6:.1f} | {t / base:.2f} | {t / masked_t:.2f} |")
    print()


def _times(fn: Callable[[], object], n: int) -> Callable[[], None]:
    """``fn`` run ``n`` times, so one timing covers ``n`` calls (divided out by the caller)."""

    def run() -> None:
        for _ in range(n):
            fn()

    return run


class _Clock:
    """Wraps a module attribute with a timer: wall time (CUDA synchronized around each call)
    and this thread's CPU time (``time.thread_time``: not the time other processes hold the
    core). ``read`` runs on the output inside the timed span (e.g. reading the diagnostics)."""

    def __init__(self, module: object, name: str, device: torch.device, read=None) -> None:
        self.module, self.name, self.real = module, name, getattr(module, name)
        self.wall, self.cpu = 0.0, 0.0
        self.calls = 0

        def timed(*args, **kwargs):
            _sync(device)
            w0, c0 = time.perf_counter(), time.thread_time()
            out = self.real(*args, **kwargs)
            if read is not None:
                read(out)
            _sync(device)
            self.wall += time.perf_counter() - w0
            self.cpu += time.thread_time() - c0
            self.calls += 1
            return out

        setattr(module, name, timed)

    def restore(self) -> None:
        setattr(self.module, self.name, self.real)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _shares(run_step: Callable[[], object], parts: dict[str, list[_Clock]], device: torch.device,
            steps: int, step_clock: _Clock | None = None) -> dict[str, float]:
    """Runs ``steps`` steps and sums, over them, the wall and thread CPU time of each step (the
    span of ``step_clock`` inside it when given, else all of ``run_step``) and of each part's
    clocked calls inside it. Shares are ratios of these sums (a preemption inside a short
    timed span weighs as much as one elsewhere); the per-step wall shares of all parts
    together give the spread."""
    clocks = [c for cs in parts.values() for c in cs]
    tot = dict.fromkeys(["wall", "cpu", "adv_cpu", *parts], 0.0)
    per_step = []
    for _ in range(steps):
        before = {id(c): (c.wall, c.cpu) for c in [*clocks, *([step_clock] if step_clock else [])]}
        _sync(device)
        w0, c0 = time.perf_counter(), time.thread_time()
        run_step()
        _sync(device)
        w, c = time.perf_counter() - w0, time.thread_time() - c0
        if step_clock is not None:
            w0, c0 = before[id(step_clock)]
            w, c = step_clock.wall - w0, step_clock.cpu - c0
        tot["wall"], tot["cpu"] = tot["wall"] + w, tot["cpu"] + c
        for name, cs in parts.items():
            tot[name] += sum(k.wall - before[id(k)][0] for k in cs)
        tot["adv_cpu"] += sum(k.cpu - before[id(k)][1] for k in clocks)
        per_step.append(sum(k.wall - before[id(k)][0] for k in clocks) / w)
    per_step.sort()
    out = {"step_ms": tot["wall"] / steps * 1e3, "cpu_share": tot["adv_cpu"] / tot["cpu"],
           "share": sum(tot[p] for p in parts) / tot["wall"], "lo": per_step[0],
           "median": per_step[len(per_step) // 2], "hi": per_step[-1]}
    for name in parts:
        out[f"{name}_ms"], out[f"{name}_share"] = tot[name] / steps * 1e3, tot[name] / tot["wall"]
    return out


def end_to_end(device: torch.device, updates: int, grpo_steps: int) -> None:
    """Part 3: share of advantage time in MAPPO updates and GRPO steps."""
    import games
    import llm_agents.trainer as trainer_mod
    import marl.mappo_update as mu
    from llm_agents import ActionConfig, GRPOConfig, MultiTurnGRPO, Team
    from llm_agents.tiny import build_model, build_tokenizer, game_corpus
    from marl.mappo import MAPPO, MAPPOConfig
    from marl.train import train

    load0 = os.getloadavg()[0]
    game = "pettingzoo/mpe2.simple_spread_v3"
    spec = games.make(game, N=3, max_cycles=25).spec
    learner = MAPPO(spec, MAPPOConfig(), device=device, seed=0)
    vg = games.VectorGame(game, 32, seed=0, N=3, max_cycles=25, **learner.vector_game_kwargs)
    train(learner, vg, 32 * 25, progress=False)  # warm-up update
    # MAPPO: a step is one update (``ppo_update``, rollout excluded); advantage time is GAE +
    # normalization with its diagnostics read, both inside it
    update = _Clock(mu, "ppo_update", device)
    parts = {"norm": [_Clock(mu, "normalize_advantages", device, read=lambda r: r.diagnostics)],
             "gae": [_Clock(mu, "agent_gae", device)]}
    try:
        res = _shares(partial(train, learner, vg, 32 * 25, progress=False), parts, device,
                      updates, step_clock=update)  # fmt: skip
        assert update.calls == updates, f"{update.calls} MAPPO updates ran, expected {updates}"
    finally:
        for c in [update, *parts["norm"], *parts["gae"]]:
            c.restore()
    rows = [(f"MAPPO update, simple_spread N=3, 32 copies ({learner.cfg.adv_norm}; update only)",
             updates, res)]  # fmt: skip

    kuhn = "openspiel/kuhn_poker"
    tok = build_tokenizer(game_corpus(kuhn, 200))
    for adv_norm in ("group_role", "role_ema"):  # role_ema: per trajectory, the trainer default
        cfg = GRPOConfig(group_size=8, groups_per_step=16, adv_norm=adv_norm, lr=1e-3,
                         minibatch_turns=1024, action=ActionConfig(mode="score"),
                         device=str(device), seed=0)  # fmt: skip
        grpo = MultiTurnGRPO(Team.shared(build_model(tok), tok), kuhn, cfg)
        grpo.step()  # warm-up
        # keys from the turn records, turn returns, normalization, diagnostics read, and the
        # broadcast of each turn's advantage to its tokens
        clocks = [_Clock(trainer_mod, "turn_advantages", device, read=lambda r: r.diagnostics),
                  _Clock(trainer_mod, "broadcast_to_tokens", device)]
        try:
            res = _shares(grpo.step, {"norm": clocks}, device, grpo_steps)
        finally:
            for c in clocks:
                c.restore()
        rows.append((f"GRPO step, tiny LLM on Kuhn poker ({adv_norm}, "
                     f"{cfg.group_size * cfg.groups_per_step} episodes; rollout + update)",
                     grpo_steps, res))  # fmt: skip
    load1 = os.getloadavg()[0]
    print(f"load average (1 min) {load0:.1f} before, {load1:.1f} after; "
          f"torch threads {torch.get_num_threads()}\n")
    print("| step | steps | ms per step | normalization ms | share | GAE ms | share | "
          "advantage share (wall) | (thread CPU time) | per step: min / median / max |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, n, r in rows:
        gae_s = f"{r['gae_ms']:.3f} | {r['gae_share']:.2%}" if "gae_ms" in r else " | "
        print(f"| {name} | {n} | {r['step_ms']:.1f} | {r['norm_ms']:.3f} | {r['norm_share']:.2%} "
              f"| {gae_s} | {r['share']:.2%} | {r['cpu_share']:.2%} | {r['lo']:.2%} / "
              f"{r['median']:.2%} / {r['hi']:.2%} |")
    grpo_share = max(r["share"] for name, _, r in rows if name.startswith("GRPO"))
    print("\nShares: sums over the steps of advantage time / step time. MAPPO: normalization "
          "(diagnostics read) and GAE inside ``ppo_update``. GRPO: normalization is "
          "``llm_agents.credit.turn_advantages`` (keys from the turn records, turn returns, "
          "normalization, diagnostics read) plus ``broadcast_to_tokens``; the step includes the "
          f"rollout. Goal, GRPO under 1 % (wall): {'met' if grpo_share < 0.01 else 'missed'} "
          f"({grpo_share:.2%}).\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=at_least(1), default=10_000_000)
    parser.add_argument("--repeats", type=at_least(1), default=5)
    parser.add_argument("--ref-scale", type=at_least(1), default=100)
    parser.add_argument("--device", default="cpu", help="where our code runs: cpu, cuda, cuda:1")
    parser.add_argument("--parts", default="table,batch,e2e",
                        help="comma list: table,batch,e2e,profile")
    parser.add_argument("--updates", type=at_least(1), default=10,
                        help="MAPPO updates timed (part 3)")
    parser.add_argument("--grpo-steps", type=at_least(1), default=20,
                        help="GRPO steps timed (part 3)")
    args = parser.parse_args()
    try:
        device = torch.device(args.device)
    except RuntimeError:
        parser.error(f"--device {args.device!r} is not a torch device (cpu, cuda, cuda:1, ...)")
    if device.type not in ("cpu", "cuda"):
        parser.error(f"--device {args.device!r}; expected cpu, cuda or cuda:<index>")
    if device.type == "cuda" and not torch.cuda.is_available():  # one line, exit 2, no traceback
        parser.exit(2, f"--device {args.device}: no CUDA device here (torch {torch.__version__})\n")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        parser.exit(2, f"--device {args.device}: only {torch.cuda.device_count()} CUDA device(s)\n")
    if min(args.samples, args.repeats, args.ref_scale, args.updates, args.grpo_steps) < 1:
        parser.error("--samples, --repeats, --ref-scale, --updates and --grpo-steps must be >= 1")
    parts = set(args.parts.split(","))
    if parts - {"table", "batch", "e2e", "profile"}:
        parser.error(f"--parts {args.parts!r}; choose from table, batch, e2e, profile")
    if "table" in parts:
        table(args.samples, args.repeats, args.ref_scale, device)
    torch.set_num_threads(1)  # as the entry points run learners on a CPU
    if "batch" in parts:
        mappo_batch(args.repeats, device)
    if "e2e" in parts:
        end_to_end(device, args.updates, args.grpo_steps)
    if "profile" in parts:
        profile(args.samples, device)


if __name__ == "__main__":
    main()
