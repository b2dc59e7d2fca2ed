"""MAPPO training on VMAS beside BenchMARL's MAPPO on the same task, in the same run.

Task (``--task``): ``vmas/navigation`` (default) with BenchMARL's task settings (3 agents,
100-step episodes, collisions, LIDAR range 0.35, own goals, individual rewards), or
``vmas/balance`` with BenchMARL's (4 agents, 100-step episodes, package mass 5, random
package position on the line; a shared reward, episodes end when the package falls or
reaches the goal).

Actions (``--actions``): ``discrete`` (default; BenchMARL gets
``experiment.prefer_continuous_actions=False``) or ``continuous`` (BenchMARL's own default
on VMAS; ours: the game made with ``continuous_actions=True``, so MAPPO plays its diagonal
Gaussian, ``marl.actor_critic``). What stays different with continuous actions: ours has
a learned state-independent log-std per dimension starting at std 0.5 and clips its samples
to the box on their way to the game (the log-probability is the unclipped Gaussian's);
BenchMARL's actor outputs a state-dependent scale per dimension (``biased_softplus_1.0``:
std 1 at a zero input, at least 1e-2), squashed by ``TanhNormal`` onto the box
(``algorithm.use_tanh_normal=True``), with a one-sample Monte-Carlo entropy estimate
(TanhNormal has no closed form); ``--peers '{"": [], "normal":
["algorithm.use_tanh_normal=False"]}'`` adds BenchMARL with an unsquashed ``IndependentNormal``
(VMAS clamps its actions to the box, as ours does). Both sides pass VMAS
``clamp_actions=True``.

Settings (``--settings``):

* ``defaults``: each framework's defaults. Ours: ``MAPPOConfig()`` (64×64 MLPs, 25-step
  rollouts, 10 epochs × 4 minibatches, lr 1e-3) on ``num_envs`` 32 copies (the
  ``selfplay-train`` default); BenchMARL: 6,000 frames per iteration from 10 VMAS copies,
  45 epochs × 15 minibatches of 400, 256×256 MLPs, lr 5e-5.
* ``matched``: the same hyperparameters on both sides: ``--copies`` copies (default 128),
  25 steps per copy per update, 10 epochs × 4 minibatches, 64×64 Tanh MLPs, lr 1e-3,
  γ 0.99, GAE λ 0.95, entropy 0.01, gradient-norm clip 10 (BenchMARL:
  ``on_policy_collected_frames_per_batch=25·B on_policy_n_envs_per_worker=B
  on_policy_n_minibatch_iters=10 on_policy_minibatch_size=25·B/4 ...
  model.num_cells=[64,64] critic_model.num_cells=[64,64]``: BenchMARL's critic has a model
  config of its own, 256×256 unless set). Left as each has it: our value normalization and
  per-copy truncation bootstrap, BenchMARL's shared critic parameters (ours share too);
  ``--nets`` can set ours to BenchMARL's MAPPO switch by switch (README, MAPPO).
* ``ours_big``: ours only, default hyperparameters on ``--big-copies`` (1,024) copies for
  ``--big-frames`` (204,800: two 100-step episodes per copy; fewer frames end no episode).

Measured per run: frames/s over training (startup and imports excluded on both sides:
ours from ``train``'s clock, BenchMARL from its own iteration timers), the return (each
agent's episode return averaged over agents, BenchMARL's convention) over the training
episodes of the last 10 % of frames, and for our runs the wall-clock seconds until the
mean return of the last 50 episodes first reaches BenchMARL's final return of the same
setting and seed (BenchMARL's time to it: its whole run), and the critic loss over fifths of
the run in BenchMARL's units (``critic_loss``: mean squared error in return units; every
update's in ``--json``). Ours trains with tensor VecSteps
(``VectorGame(tensors=True)``): the rollout never leaves torch.

    nice -n 10 python bench/vmas_train.py [--task navigation|balance] [--frames 30000]
        [--actions discrete|continuous] [--seeds 0 1 2]
        [--settings defaults matched ours_big] [--copies 128]
        [--big-copies 1024] [--no-peer] [--nets '{"seat": {}, "shared": {"value": "shared"}}']
        [--peers '{"": [], "normal": ["algorithm.use_tanh_normal=False"]}']

The matched rows of BENCHMARKS.md's "shared value + FastTanh" table came from ``--settings
matched --frames 120000 --nets '{"seat": {"value": "seat", "fast_tanh": false},
"shared+fast": {"value": "shared", "fast_tanh": true}}'``; the continuous-action table from
``--actions continuous --settings matched --frames 120000 --peers '{"": [], "normal":
["algorithm.use_tanh_normal=False"]}'``.
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import subprocess
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
from marl.mappo import MAPPO, MAPPOConfig  # noqa: E402
from marl.train import train  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PEERS = Path(os.environ.get("PEERS_DIR", ROOT.parent / "shared" / "bench" / "peers"))
PEERS_ROOT = Path(os.environ.get("PEERS_ROOT", Path.home() / ".cache" / "selfplay-peers"))
# BenchMARL's conf/task/vmas/<task>.yaml, passed to both sides (``--task``)
TASKS = {
    "navigation": {"n_agents": 3, "max_steps": 100, "collisions": True,
                   "agents_with_same_goal": 1, "split_goals": False,
                   "observe_all_goals": False, "shared_rew": False, "lidar_range": 0.35,
                   "agent_radius": 0.1},
    "balance": {"n_agents": 4, "max_steps": 100, "random_package_pos_on_line": True,
                "package_mass": 5},
}
GAME = "vmas/navigation"
BM_TASK = "vmas/navigation"
TASK_KW = TASKS["navigation"]
CONTINUOUS = False  # --actions continuous: both sides play box actions
STEPS, EPOCHS, MINIBATCHES, HIDDEN, LR = 25, 10, 4, 64, 1e-3


def our_config(setting: str, copies: int, big: int,
               net: dict | None = None) -> tuple[MAPPOConfig, int]:
    """Our MAPPO settings and copies for ``setting``; ``net``: NetConfig or MAPPOConfig
    options on top (``--nets``: e.g. ``{"value": "shared"}``, BenchMARL's one value per
    copy, or ``{"optim": "separate", "value_norm": false}``)."""
    net = dict(net or {})
    algo = {k: net.pop(k) for k in list(net) if k in MAPPOConfig.__dataclass_fields__}
    if setting == "matched":
        return MAPPOConfig(rollout_steps=STEPS, epochs=EPOCHS, minibatches=MINIBATCHES, lr=LR,
                           gamma=0.99, gae_lambda=0.95, ent_coef=0.01, max_grad_norm=10.0,
                           net=NetConfig(hidden=(HIDDEN, HIDDEN), **net), **algo), copies
    return MAPPOConfig(net=NetConfig(**net), **algo), big if setting == "ours_big" else 32


def our_game_kwargs() -> dict:
    """The scenario's keyword arguments for our side (BenchMARL's task settings, plus box
    actions under ``--actions continuous``)."""
    return {**TASK_KW, **({"continuous_actions": True} if CONTINUOUS else {})}


def bm_overrides(setting: str, copies: int) -> list[str]:
    common = [f"experiment.prefer_continuous_actions={CONTINUOUS}",
              "experiment.evaluation=False"]
    common += [f"task.{k}={v}" for k, v in TASK_KW.items()]
    if setting == "defaults":
        return common
    batch = STEPS * copies
    return common + [
        f"experiment.on_policy_collected_frames_per_batch={batch}",
        f"experiment.on_policy_n_envs_per_worker={copies}",
        f"experiment.on_policy_n_minibatch_iters={EPOCHS}",
        f"experiment.on_policy_minibatch_size={batch // MINIBATCHES}",
        f"experiment.lr={LR}", "experiment.gamma=0.99", "experiment.clip_grad_val=10",
        "algorithm.lmbda=0.95", "algorithm.entropy_coef=0.01",
        # the critic has its own model config (default 256×256): both must be matched
        f"model.num_cells=[{HIDDEN},{HIDDEN}]", f"critic_model.num_cells=[{HIDDEN},{HIDDEN}]"]


def run_ours(setting: str, seed: int, frames: int, copies: int, big: int,
             target: float | None, net: dict | None = None) -> dict:
    cfg, B = our_config(setting, copies, big, net)
    kwargs = our_game_kwargs()
    spec = games.make(GAME, **kwargs).spec
    learner = MAPPO(spec, cfg, seed=seed)
    vg = games.VectorGame(GAME, B, seed=seed, tensors=True, **learner.vector_game_kwargs,
                          **kwargs)
    curve: list[tuple[float, int, float]] = []  # (seconds, frames, mean of last 50 returns)
    # per update: the critic's loss as BenchMARL logs it (TorchRL's l2: the mean squared
    # error in return units, without our 0.5), from our v_loss (0.5 x the squared error of
    # normalized targets under value normalization: times the running variance)
    critic_mse: list[float] = []
    entropy: list[float] = []  # per update, per sample (continuous: the Gaussian's, nats)
    t0 = time.perf_counter()

    def on_update(f: int, metrics: dict[str, float]) -> None:
        if "charts/episode_return" in metrics:
            curve.append((time.perf_counter() - t0, f, metrics["charts/episode_return"]))
        scale = float(learner.value_rms.var) if cfg.value_norm else 1.0
        critic_mse.append(2.0 * metrics.get("losses/v_loss", float("nan")) * scale)
        entropy.append(metrics.get("losses/entropy", float("nan")))

    res = train(learner, vg, frames, progress=False, on_update=on_update)
    vg.close()
    rets = np.asarray(res.episode_returns)
    reach = None
    if target is not None:
        reach = next((s for s, _, r in curve if r >= target), None)
    return {"fps": res.frames / res.seconds, **_first_last(rets.tolist(), res.frames),
            "seconds": res.seconds, "copies": B,
            "reach_s": reach, "critic_loss": _tenths(critic_mse), "entropy": _tenths(entropy),
            "curve": [(round(s, 1), f, round(r, 3)) for s, f, r in curve],
            "critic_mse": [round(x, 4) for x in critic_mse]}


def _first_last(returns: list[float], frames: int, counted: str = "episodes") -> dict:
    """The mean of the first and the last tenth of ``returns`` (None where there are none: the
    mean of nothing printed as nan), how many under ``counted`` and in how many frames.
    ``returns``: our finished episodes' returns (``"episodes"``), or BenchMARL's mean episode
    return of each training iteration that logged one (``"iterations"``)."""
    tenth = max(1, len(returns) // 10)
    first = float(np.mean(returns[:tenth])) if returns else None
    last = float(np.mean(returns[-tenth:])) if returns else None
    return {"first": first, "last": last, counted: len(returns), "frames": frames}


def _nothing(r: dict) -> str:
    """What an empty record means: none of our episodes finished, or no BenchMARL iteration
    logged a mean episode return (none finished in it), in its frames."""
    what = "no episode finished" if "episodes" in r else "no iteration logged an episode return"
    return f"{what} in {r['frames']:,} frames"


def _tenths(xs: list[float], parts: int = 5) -> list[float]:
    """Means of ``xs`` over ``parts`` equal spans of the run (a trajectory in brief)."""
    spans = np.array_split(np.asarray(xs, dtype=float), parts) if xs else []
    return [round(float(np.mean(s)), 2) for s in spans if len(s)]


def _scalars(run_dir: str, name: str) -> list[float]:
    files = sorted(glob.glob(os.path.join(run_dir, "**", "scalars", name + ".csv"),
                             recursive=True), key=os.path.getmtime)
    if not files:
        return []
    with open(files[-1]) as fh:
        return [float(r[1]) for r in csv.reader(fh) if len(r) >= 2]


def run_benchmarl(setting: str, seed: int, frames: int, copies: int,
                  extra: list[str] | None = None, tag: str = "") -> dict | None:
    """One BenchMARL MAPPO run; ``extra``: hydra overrides after ours (``--peers``),
    ``tag``: appended to its run folder's name."""
    script = PEERS / "benchmarl_bench.sh"
    if not (script.exists() and (PEERS_ROOT / "bm" / "bin" / "python").exists()):
        return None
    cmd = ["bash", str(script), "mappo", BM_TASK, str(frames), str(seed),
           *bm_overrides(setting, copies), *(extra or [])]
    # one intra-op thread, as ours: two threads contend on a loaded 2-core machine
    tag = "_".join(x for x in (setting, "cont" if CONTINUOUS else "", tag) if x)
    env = {**os.environ, "TAG": tag, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("SUMMARY ")]
    if not line:
        print(out.stdout[-2000:], out.stderr[-2000:])
        return None
    s = json.loads(line[-1][8:])
    rewards = _scalars(s["run_dir"], "collection_reward_episode_reward_mean")
    iter_s = sum(_scalars(s["run_dir"], "timers_iteration_time"))
    critic = _scalars(s["run_dir"], "train_agents_loss_critic")
    # per sample; under TanhNormal a one-sample estimate with the squash's Jacobian, so not
    # the same quantity as ours
    entropy = _scalars(s["run_dir"], "train_agents_entropy")
    return {"fps": s["total_frames"] / iter_s, "wall_s": s["wall_s"], "seconds": iter_s,
            **_first_last(rewards, s["total_frames"], "iterations"),
            "critic_loss": _tenths(critic),
            "entropy": _tenths(entropy),
            "curve": [round(r, 3) for r in rewards]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=at_least(1), default=30_000)
    parser.add_argument("--task", default="navigation", choices=sorted(TASKS),
                        help="VMAS scenario, with BenchMARL's task settings on both sides")
    parser.add_argument("--actions", default="discrete", choices=["discrete", "continuous"],
                        help="action kind on both sides (continuous: BenchMARL's default)")
    parser.add_argument("--seeds", type=at_least(0), nargs="+", default=[0, 1, 2])
    parser.add_argument("--settings", nargs="+", default=["defaults", "matched", "ours_big"],
                        choices=["defaults", "matched", "ours_big"])
    parser.add_argument("--copies", type=at_least(1), default=128)
    parser.add_argument("--big-copies", type=at_least(1), default=1024)
    parser.add_argument("--big-frames", type=at_least(1), default=204_800,
                        help="ours_big's frames: 2 episodes of 100 steps per copy at least")
    parser.add_argument("--no-peer", action="store_true", help="skip BenchMARL")
    parser.add_argument("--json", type=Path, help="append every run's figures here")
    parser.add_argument("--nets", type=json.loads, default={"": {}}, metavar="JSON",
                        help='our variants, each run after BenchMARL per seed and setting: '
                        'name -> NetConfig or MAPPOConfig options, e.g. \'{"seat": '
                        '{"fast_tanh": false}, "shared": {"value": "shared", "optim": '
                        '"separate"}}\' (default: ours as configured)')
    parser.add_argument("--peers", type=json.loads, default={"": []}, metavar="JSON",
                        help="BenchMARL's variants, each run per seed and setting before ours: "
                        "name -> extra hydra overrides, e.g. '{\"\": [], \"normal\": "
                        "[\"algorithm.use_tanh_normal=False\"]}' (the first one's final "
                        "return is our target)")
    args = parser.parse_args()
    global GAME, BM_TASK, TASK_KW, CONTINUOUS  # one task per process: the runs read these
    GAME = BM_TASK = f"vmas/{args.task}"
    TASK_KW = TASKS[args.task]
    CONTINUOUS = args.actions == "continuous"
    print(f"task {GAME} {TASK_KW}, {args.actions} actions", flush=True)
    torch.set_num_threads(1)  # small networks: one thread is fastest (our default)
    rows: dict[str, list[dict]] = {}
    for seed in args.seeds:
        target: dict[str, float] = {}
        for setting in args.settings:  # BenchMARL first: its final return is our target
            if setting == "ours_big" or args.no_peer:
                continue
            for variant, extra in args.peers.items():
                peer = run_benchmarl(setting, seed, args.frames, args.copies, extra, variant)
                if peer is None:
                    continue
                target.setdefault(setting, peer["last"])  # the first variant's
                name = f"BenchMARL {setting}" + (f" {variant}" if variant else "")
                rows.setdefault(name, []).append(peer)
                _report(f"{name} seed {seed}", peer, args.json)
        for setting in args.settings:
            goal = target.get("defaults" if setting == "ours_big" else setting)
            frames = args.big_frames if setting == "ours_big" else args.frames
            for variant, net in args.nets.items():
                ours = run_ours(setting, seed, frames, args.copies, args.big_copies, goal, net)
                name = f"selfplay {setting}" + (f" {variant}" if variant else "")
                rows.setdefault(name, []).append(ours)
                _report(f"{name} seed {seed}", ours, args.json)
    big = f" ({args.big_frames} ours_big)" if "ours_big" in args.settings else ""
    print(f"\n{GAME}, {args.actions} actions: {args.frames} frames per run{big}, "
          f"seeds {args.seeds}")
    print("| run | frames/s | return first 10 % | return last 10 % | s to BenchMARL's final |")
    print("|---|---:|---:|---:|---:|")
    for name, rs in rows.items():
        fps = float(np.mean([r["fps"] for r in rs]))
        reach = [r.get("reach_s") for r in rs]
        reach_txt = ("never" if any(x is None for x in reach) else f"{np.mean(reach):.0f}") \
            if name.startswith("selfplay") else f"{np.mean([r['seconds'] for r in rs]):.0f}"
        print(f"| {name} | {fps:,.0f} | {_mean_return(rs, 'first')} | "
              f"{_mean_return(rs, 'last')} | {reach_txt} |")


def _mean_return(rs: list[dict], key: str) -> str:
    """A table cell: the mean over the seeds of ``key`` ("first"/"last"), over those seeds
    where an episode finished (naming how many), or that none did."""
    done = [r[key] for r in rs if r[key] is not None]
    if not done:
        return _nothing(max(rs, key=lambda r: r["frames"]))
    return f"{np.mean(done):.2f}" + (f" ({len(done)} of {len(rs)} seeds)" if len(done) < len(rs)
                                     else "")


def _report(name: str, r: dict, path: Path | None) -> None:
    brief = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()
             if k not in ("curve", "critic_mse")}
    print(f"{name}: {json.dumps(brief)}", flush=True)
    if not r.get("episodes", r.get("iterations")):
        print(f"{name}: {_nothing(r)} (no return to report; give more --frames)", flush=True)
    if path is not None:
        with path.open("a") as fh:
            fh.write(json.dumps({"run": name, **r}) + "\n")


if __name__ == "__main__":
    main()
