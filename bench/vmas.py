"""Raw stepping of ``VectorGame("vmas/simple_spread")`` against the VMAS loop and mpe2, one run.

Scenario: simple_spread, N=3 agents, 25-step episodes, discrete actions, uniformly random
actions drawn up front (a pool of 16 joint actions cycled, so drawing costs nothing).

* ``vmas loop``: the loop a researcher writes over ``vmas.make_env`` (``env.step`` on a list
  of action tensors, ``env.reset()`` when the copies are done, as they all are together
  with a fixed horizon).
* ``VectorGame tensors``: ``VectorGame(..., tensors=True)``, VecSteps of torch tensors
  (auto-reset, returns, truncation on the device).
* ``VectorGame numpy``: the same with numpy VecSteps (what the learners read today: actions
  copied to torch and every field back to numpy once per step, all copies at once).
* ``mpe2 VectorGame``: PettingZoo's ``mpe2.simple_spread_v3`` stepped copy by copy.

Torch runs on one thread by default (``--threads``), as VMAS's own figure in issue 17 was
taken. Each measurement is repeated, interleaved with the others, and the median reported;
ratios are to the VMAS loop (overhead) and to mpe2 (speed-up), measured in the same run.

With ``--mappo-frames F``, MAPPO (default settings, MLP) also trains F frames on
``vmas/simple_spread`` and on mpe2's simple_spread at ``--mappo-envs`` copies, and on VMAS at
``--mappo-big-envs`` copies: learner frames/s through numpy VecSteps, and at the larger B
with tensor VecSteps (``VectorGame(tensors=True)``, the rollout never leaves torch).

    python bench/vmas.py [--sizes 1024 8192] [--steps 50] [--mpe-envs 64] [--repeats 3]
                         [--mappo-frames 20000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# bench/ holds files named like packages: keep it off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

import numpy as np  # noqa: E402
import torch  # noqa: E402
import vmas  # noqa: E402

import games  # noqa: E402
from bench._args import at_least  # noqa: E402

N_AGENTS, HORIZON, POOL = 3, 25, 16


def vmas_loop(B: int, steps: int, device: str) -> float:
    """Agent-steps/s of the plain VMAS loop."""
    env = vmas.make_env("simple_spread", num_envs=B, device=device, continuous_actions=False,
                        max_steps=HORIZON, seed=0, n_agents=N_AGENTS)
    env.reset()
    g = torch.Generator().manual_seed(0)
    n = env.action_space[0].n
    pool = [[torch.randint(0, n, (B, 1), generator=g).to(device) for _ in range(N_AGENTS)]
            for _ in range(POOL)]
    env.step(pool[-1])  # warm-up (first-call allocations), not timed
    env.reset()
    _sync(device)
    t0 = time.perf_counter()
    for t in range(steps):
        _, _, dones, _ = env.step(pool[t % POOL])
        if bool(dones.all()):
            env.reset()
        elif bool(dones.any()):
            for i in dones.nonzero().squeeze(1).tolist():
                env.reset_at(i)
    _sync(device)
    return steps * B * N_AGENTS / (time.perf_counter() - t0)


def vector_game(B: int, steps: int, device: str, tensors: bool) -> float:
    """Agent-steps/s of ``VectorGame`` over ``vmas/simple_spread``."""
    vg = games.VectorGame("vmas/simple_spread", B, seed=0, tensors=tensors, device=device,
                          n_agents=N_AGENTS, max_steps=HORIZON)
    vg.reset()
    n = vg.spec.action_spaces["agent_0"].n
    rng = np.random.default_rng(0)
    pool = [{a: rng.integers(0, n, B) for a in vg.spec.agent_ids} for _ in range(POOL)]
    if tensors:
        pool = [{a: torch.as_tensor(x, device=device) for a, x in p.items()} for p in pool]
    vg.step(pool[-1])  # warm-up, not timed
    vg.reset()
    _sync(device)
    t0 = time.perf_counter()
    for t in range(steps):
        vg.step(pool[t % POOL])
    _sync(device)
    return steps * B * N_AGENTS / (time.perf_counter() - t0)


def mpe2_vector_game(B: int, steps: int) -> float:
    """Agent-steps/s of ``VectorGame`` over PettingZoo's mpe2 simple_spread (copy by copy)."""
    vg = games.VectorGame("pettingzoo/mpe2.simple_spread_v3", B, seed=0, N=N_AGENTS,
                          max_cycles=HORIZON)
    vg.reset()
    rng = np.random.default_rng(0)
    pool = [{a: rng.integers(0, 5, B) for a in vg.spec.agent_ids} for _ in range(POOL)]
    vg.step(pool[-1])  # warm-up, not timed
    vg.reset()
    t0 = time.perf_counter()
    for t in range(steps):
        vg.step(pool[t % POOL])
    return steps * B * N_AGENTS / (time.perf_counter() - t0)


def mappo_fps(game: str, num_envs: int, frames: int, tensors: bool = False, **kwargs) -> float:
    """Frames/s of MAPPO (default config) training on ``game`` with ``num_envs`` copies
    (``tensors``: the rollout stays in torch, no numpy VecSteps)."""
    from marl.mappo import MAPPO, MAPPOConfig
    from marl.train import train

    spec = games.make(game, **kwargs).spec
    learner = MAPPO(spec, MAPPOConfig(), seed=0)
    vg = games.VectorGame(game, num_envs, seed=0, tensors=tensors, **learner.vector_game_kwargs,
                          **kwargs)
    res = train(learner, vg, frames, progress=False)
    return res.frames / res.seconds


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=at_least(1), nargs="+", default=[1024, 8192])
    p.add_argument("--steps", type=at_least(1), default=50,
                   help="steps of every copy per measurement")
    p.add_argument("--mpe-envs", type=at_least(1), default=64)
    p.add_argument("--mpe-steps", type=at_least(1), default=50)
    p.add_argument("--repeats", type=at_least(1), default=3)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=at_least(1), default=1,
                   help="torch threads (0: torch's default; on a loaded 2-core machine two "
                        "threads contend and run ~10x slower than one)")
    p.add_argument("--mappo-frames", type=at_least(0), default=0)
    p.add_argument("--mappo-envs", type=at_least(1), default=32)
    p.add_argument("--mappo-big-envs", type=at_least(1), default=1024)
    args = p.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        p.exit(2, f"--device {args.device}: no CUDA device here (torch {torch.__version__})\n")
    if args.threads:
        torch.set_num_threads(args.threads)
    runs: dict[str, list[float]] = {}
    for _ in range(args.repeats):  # interleaved, so load changes hit every row alike
        for B in args.sizes:
            runs.setdefault(f"vmas loop B={B}", []).append(vmas_loop(B, args.steps, args.device))
            runs.setdefault(f"VectorGame tensors B={B}", []).append(
                vector_game(B, args.steps, args.device, tensors=True))
            runs.setdefault(f"VectorGame numpy B={B}", []).append(
                vector_game(B, args.steps, args.device, tensors=False))
        runs.setdefault(f"mpe2 VectorGame B={args.mpe_envs}", []).append(
            mpe2_vector_game(args.mpe_envs, args.mpe_steps))
    med = {k: statistics.median(v) for k, v in runs.items()}
    mpe = med[f"mpe2 VectorGame B={args.mpe_envs}"]
    print(f"device={args.device} torch threads={torch.get_num_threads()} "
          f"repeats={args.repeats} steps/copy={args.steps}")
    print(f"{'loop':<28}{'agent-steps/s':>15}{'vs vmas loop':>14}{'vs mpe2':>10}")
    for k, v in med.items():
        B = k.rsplit("=", 1)[1]
        base = med.get(f"vmas loop B={B}")
        own = f"{v / base:.3f}" if base and not k.startswith("mpe2") else "-"
        print(f"{k:<28}{v:>15,.0f}{own:>14}{v / mpe:>9.1f}x")
    if args.mappo_frames:
        _mappo_table(args)


def _mappo_table(args: argparse.Namespace) -> None:
    F, small, big = args.mappo_frames, args.mappo_envs, args.mappo_big_envs
    rows = {
        f"mpe2 B={small}": mappo_fps("pettingzoo/mpe2.simple_spread_v3", small, F, N=N_AGENTS,
                                     max_cycles=HORIZON),
        f"vmas B={small}": mappo_fps("vmas/simple_spread", small, F, n_agents=N_AGENTS,
                                     max_steps=HORIZON),
        f"vmas B={big}": mappo_fps("vmas/simple_spread", big, max(F, big * 25 * 2),
                                   n_agents=N_AGENTS, max_steps=HORIZON),
        f"vmas B={big} tensors": mappo_fps("vmas/simple_spread", big, max(F, big * 25 * 2),
                                           tensors=True, n_agents=N_AGENTS, max_steps=HORIZON),
    }
    base = rows[f"mpe2 B={small}"]
    print(f"\nMAPPO training ({F} frames; {big}-copy run: at least 2 updates)")
    print(f"{'game':<20}{'frames/s':>12}{'vs mpe2':>10}")
    for k, v in rows.items():
        print(f"{k:<20}{v:>12,.0f}{v / base:>9.1f}x")


if __name__ == "__main__":
    main()
