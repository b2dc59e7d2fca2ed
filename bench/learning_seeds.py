"""The spread learning tests of ``tests/marl`` on other seeds: learned - random per seed, with
its standard error, for the table in BENCHMARKS.md ("The test suite: ... seeds").

    python bench/learning_seeds.py maddpg-continuous maddpg-gumbel vdn qmix mappo-mlp ippo gru \
        [--seeds 3 4 5 6 7] [--episodes 64] [--checks 30000 40000]

maddpg-continuous, vdn, ippo and gru are the suite's VMAS tests (``vmas/simple_spread``, two
agents, 25 steps; evaluated on 256 copies, seed 1234: pass ``--episodes 256`` as they do);
maddpg-gumbel and qmix the mpe2 benchmarks (``make bench-tests``), mappo-mlp the suite's one
mpe2 learning test.

Each run trains exactly as its test (settings, frames, evaluation games and baselines), with
the learner, torch and the training game seeded by the seed; seed 0 is the test itself.
``--checks``: also evaluate at these frames of the same run (evaluation uses its own random
streams and no schedule depends on the total, so this equals a shorter run). One JSON line
per seed and evaluation; run with ``OMP_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# bench/games.py is named like the package: keep bench/ off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

import numpy as np  # noqa: E402
import torch  # noqa: E402

import games  # noqa: E402
from bench._args import at_least  # noqa: E402
from marl.actor_critic import NetConfig  # noqa: E402
from marl.maddpg import MADDPG, MADDPGConfig  # noqa: E402
from marl.mappo import MAPPO, MAPPOConfig, ippo_config  # noqa: E402
from marl.train import RandomPolicy, train  # noqa: E402
from marl.value_decomp import ValueDecomp, ValueDecompConfig  # noqa: E402

SPREAD = "pettingzoo/mpe2.simple_spread_v3"
VMAS = "vmas/simple_spread"
FAST = dict(rollout_steps=25, epochs=10, minibatches=4)  # tests/marl/test_mappo.py
TESTS = {  # name: (frames, bar, test)
    "maddpg-continuous": (48_000, 5.0,
                          "test_maddpg.py::test_continuous_shared_beats_random_on_vmas_spread"),
    "maddpg-gumbel": (16_000, 5.0,
                      "test_maddpg.py::test_gumbel_per_agent_beats_random_on_simple_spread"),
    "vdn": (32_000, 3.0, "test_value_decomp.py::test_vdn_beats_random_on_vmas_spread"),
    "qmix": (24_000, 4.0, "test_value_decomp.py::test_qmix_beats_random_on_simple_spread"),
    "mappo-mlp": (50_000, 3.0, "test_mappo.py::test_mappo_mlp_beats_random_on_spread"),
    "ippo": (32_000, 10.0, "test_mappo.py::test_ippo_learns_on_vmas_spread"),
    "gru": (24_000, 5.0, "test_mappo_gru.py::test_gru_mappo_beats_random_on_vmas_spread"),
}
ON_VMAS = {"maddpg-continuous": 64, "vdn": 32, "ippo": 64, "gru": 64}  # name: copies


def episode_returns(vg: games.VectorGame, policy, episodes: int, greedy: bool) -> np.ndarray:
    """Team return (mean over agents) of each of the first ``episodes`` episodes, in the
    order ``marl.train.evaluate`` counts them."""
    ids = vg.spec.agent_ids
    vs, out = vg.reset(), []
    while len(out) < episodes:
        vs = vg.step({a: policy.act(a, vs, greedy=greedy) for a in ids})
        out += [float(np.mean([vs.episode_return[a][b] for a in ids]))
                for b in np.flatnonzero(vs.done)]
    return np.array(out[:episodes])


def run(name: str, seed: int, episodes: int, checks: list[int]) -> None:
    frames, bar, _ = TESTS[name]
    torch.manual_seed(seed)
    if name in ON_VMAS:
        kw = {"n_agents": 2, "max_steps": 25}
        if name == "maddpg-continuous":
            kw["continuous_actions"] = True
        spec, copies = games.make(VMAS, **kw).spec, ON_VMAS[name]
        if name == "maddpg-continuous":
            learner, greedy = MADDPG(spec, MADDPGConfig(share_parameters=True, seed=seed)), True
        elif name == "vdn":
            learner, greedy = ValueDecomp(spec, ValueDecompConfig(
                mixer="vdn", eps_decay_frames=15_000, gamma=0.95, target_update="polyak",
                seed=seed)), True
        else:
            cfg = (ippo_config(**FAST) if name == "ippo" else MAPPOConfig(
                rollout_steps=25, epochs=5, minibatches=4, net=NetConfig(recurrent=True)))
            learner, greedy = MAPPO(spec, cfg, seed=seed), False
        extra = ({"with_state": True} if name in ("maddpg-continuous", "vdn")
                 else {"tensors": True, **learner.vector_game_kwargs})
        vg = games.VectorGame(VMAS, copies, seed=seed, **extra, **kw)

        def eval_game() -> games.VectorGame:
            return games.VectorGame(VMAS, 256, seed=1234, **kw)
    elif name.startswith("maddpg"):
        cont = name == "maddpg-continuous"
        kw, n, greedy = {"continuous_actions": cont}, 2, True
        vg = games.VectorGame(SPREAD, 8, seed=seed, with_state=True, N=2, max_cycles=25, **kw)
        learner = MADDPG(vg.spec, MADDPGConfig(share_parameters=cont, seed=seed))
        ev_seed, ev_envs = 1000, 16
    elif name in ("vdn", "qmix"):
        kw, n, greedy = {}, 2, True
        vg = games.VectorGame(SPREAD, 8, seed=seed, with_state=True, N=2, max_cycles=25)
        learner = ValueDecomp(vg.spec, ValueDecompConfig(
            mixer=name, eps_decay_frames=15_000, gamma=0.95, target_update="polyak", seed=seed))
        ev_seed, ev_envs = 1000, 16
    else:
        n, greedy = (3 if name == "mappo-mlp" else 2), False
        spec = games.make(SPREAD, N=n, max_cycles=25).spec
        cfg = MAPPOConfig(**FAST) if name == "mappo-mlp" else ippo_config(**FAST)
        learner = MAPPO(spec, cfg, seed=seed)
        kw = dict(learner.vector_game_kwargs)
        vg = games.VectorGame(SPREAD, 32, seed=seed, N=n, max_cycles=25, **kw)
        ev_seed, ev_envs = 1234, 16
    if name not in ON_VMAS:
        def eval_game() -> games.VectorGame:
            return games.VectorGame(SPREAD, ev_envs, seed=ev_seed, N=n, max_cycles=25, **kw)

    rand = episode_returns(eval_game(), RandomPolicy(vg.spec, seed=0), episodes, False)
    todo, start = sorted({*checks, frames}), time.process_time()

    def on_step(done: int) -> None:
        while todo and done >= todo[0]:
            at = todo.pop(0)
            learned = episode_returns(eval_game(), learner.policy(), episodes, greedy)
            se = np.sqrt(learned.var(ddof=1) / episodes + rand.var(ddof=1) / episodes)
            diff = learned.mean() - rand.mean()
            print(json.dumps({"test": name, "seed": seed, "frames": at, "bar": bar,
                              "learned": round(learned.mean(), 3), "random": round(rand.mean(), 3),
                              "diff": round(diff, 3), "se": round(se, 3),
                              "cpu_s": round(time.process_time() - start, 1)}), flush=True)

    train(learner, vg, max(todo), progress=False, on_step=on_step)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tests", nargs="+", choices=sorted(TESTS))
    p.add_argument("--seeds", type=at_least(0), nargs="+", default=[3, 4, 5, 6, 7])
    p.add_argument("--episodes", type=at_least(1), default=64,
                   help="per evaluation (the mpe2 benchmarks: 64; mappo-mlp and the VMAS tests: "
                   "256)")
    p.add_argument("--checks", type=at_least(1), nargs="*", default=[],
                   help="more frames to evaluate at")
    args = p.parse_args()
    torch.set_num_threads(1)
    for name in args.tests:
        for seed in args.seeds:
            run(name, seed, args.episodes, args.checks)


if __name__ == "__main__":
    main()
