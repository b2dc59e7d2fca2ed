"""The GPU path: every learner trains on a CUDA device, its snapshot loads on the CPU and
acts like the CUDA copy, a CUDA-trained MAPPO beats random play, the LLM trainer updates a
model on the GPU, and an experiment runs end to end with ``device=cuda``. All skip cleanly
where there is no CUDA device (``make test`` on a CPU machine)."""

import json
import os
import sqlite3

import numpy as np
import pytest
import torch

import games
from marl.actor_critic import NetConfig
from marl.core import load_policy
from marl.maddpg import MADDPG, MADDPGConfig
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import RandomPolicy, evaluate, train
from marl.value_decomp import ValueDecomp, ValueDecompConfig

# SELFPLAY_TEST_DEVICE=cpu runs the same checks on the CPU (to debug them without a GPU).
DEVICE = os.environ.get("SELFPLAY_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(DEVICE.startswith("cuda") and not torch.cuda.is_available(),
                                reason="no CUDA device")

SPREAD = "pettingzoo/mpe2.simple_spread_v3"
KUHN = "openspiel/kuhn_poker"


def _mappo(spec, device, **net):
    return MAPPO(spec, MAPPOConfig(rollout_steps=25, epochs=2, net=NetConfig(**net)),
                 device=device, seed=0)


LEARNERS = {
    "vdn": lambda spec, d: ValueDecomp(spec, ValueDecompConfig(mixer="vdn", learning_starts=200,
                                                               batch_size=32), device=d),
    "qmix": lambda spec, d: ValueDecomp(spec, ValueDecompConfig(
        mixer="qmix", learning_starts=200, batch_size=32), device=d),
    "maddpg": lambda spec, d: MADDPG(spec, MADDPGConfig(learning_starts=200, batch_size=32),
                                     device=d),
    "mappo": lambda spec, d: _mappo(spec, d),
    "mappo_gnn": lambda spec, d: _mappo(spec, d, encoder="gnn", critic="gnn"),
}


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_learner_trains_on_cuda_and_its_snapshot_acts_alike_on_cpu(name, tmp_path):
    spec = games.make(SPREAD, N=2, max_cycles=25).spec
    learner = LEARNERS[name](spec, DEVICE)
    kw = getattr(learner, "vector_game_kwargs", {"with_state": True})
    vg = games.VectorGame(SPREAD, 4, seed=0, N=2, max_cycles=25, **kw)
    seen: list[dict[str, float]] = []
    res = train(learner, vg, 1_000, progress=False, on_update=lambda f, m: seen.append(m))
    assert res.updates > 0 and seen
    assert all(np.isfinite(v) for m in seen for v in m.values())
    params = [p for k, v in vars(learner).items() if isinstance(v, torch.nn.Module)
              for p in v.parameters()]
    assert params and all(p.device.type == torch.device(DEVICE).type for p in params)
    on_gpu = learner.policy()
    on_cpu = load_policy(on_gpu.save(tmp_path / f"{name}.pt"))
    vs = vg.reset()
    for agent in spec.agent_ids:
        np.testing.assert_array_equal(on_gpu.act(agent, vs, greedy=True),
                                      on_cpu.act(agent, vs, greedy=True))


def test_mappo_trained_on_cuda_beats_random_on_spread():
    """The CPU learning test's task (simple_spread N=3, 25 steps) with the learner on the GPU."""
    vg = games.VectorGame(SPREAD, 32, seed=0, with_state=True, N=3, max_cycles=25)
    learner = MAPPO(vg.spec, MAPPOConfig(rollout_steps=25, epochs=10, minibatches=4),
                    device=DEVICE, seed=0)
    train(learner, vg, 60_000, progress=False)
    ev = games.VectorGame(SPREAD, 32, seed=1000, N=3, max_cycles=25)
    pol, rnd = learner.policy(), RandomPolicy(vg.spec, seed=0)
    learned = evaluate(ev, {a: pol for a in vg.spec.agent_ids}, 64).per_team["team"]
    random = evaluate(ev, {a: rnd for a in vg.spec.agent_ids}, 64).per_team["team"]
    assert learned > random + 3.0, f"learned {learned:.2f} vs random {random:.2f}"


def test_grpo_updates_a_model_on_cuda_and_its_snapshot_scores_alike_on_cpu(tmp_path):
    from llm_agents.actions import ActionConfig
    from llm_agents.team import Team
    from llm_agents.tiny import build_model, build_tokenizer, game_corpus
    from llm_agents.trainer import GRPOConfig, MultiTurnGRPO

    tok = build_tokenizer(game_corpus(KUHN, 50))
    model = build_model(tok)
    cfg = GRPOConfig(group_size=4, groups_per_step=8, adv_norm="role_ema", lr=1e-3,
                     action=ActionConfig(mode="score"), device=DEVICE)
    trainer = MultiTurnGRPO(Team.shared(model, tok), KUHN, cfg)
    before = [p.detach().clone() for p in model.parameters()]
    metrics = trainer.step()
    assert all(p.device.type == torch.device(DEVICE).type for p in model.parameters())
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
    assert np.isfinite(metrics["losses/grad_norm"])
    policy = trainer.policy()
    loaded = load_policy(policy.save(tmp_path / "llm.pt"))  # loads on the CPU
    vg = games.VectorGame(KUHN, 8, seed=0, with_text=True)
    vs = vg.reset()
    for agent in vg.spec.agent_ids:
        np.testing.assert_allclose(policy.action_probs(agent, vs),
                                   loaded.action_probs(agent, vs), atol=1e-4)


def test_mixed_league_experiment_runs_on_cuda(tmp_path):
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    import populations.cli  # noqa: F401  (registers the schema)
    from populations.experiment import run_experiment

    overrides = ["experiment=mixed_league", f"device={DEVICE}", "population.generations=1",
                 "population.frames_per_generation=512", "llm.iterations=2",
                 "eval_episodes=2", "progress=false", "logger=none"]
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=overrides))
    summary = run_experiment(exp, tmp_path)
    db = sqlite3.connect(summary.database)
    kinds = {k for (k,) in db.execute("SELECT DISTINCT kind FROM members")}
    nash = db.execute("SELECT COUNT(*) FROM metrics WHERE key LIKE 'nash_conv/%'").fetchone()[0]
    db.close()
    assert kinds == {"mappo", "llm"} and nash == 4


VMAS_SPREAD = {"n_agents": 3, "max_steps": 25}


def _on(t: torch.Tensor) -> bool:
    return t.device.type == torch.device(DEVICE).type


@pytest.mark.parametrize("net", [{}, {"encoder": "gnn", "critic": "gnn"},
                                 {"recurrent": True, "critic": "concat"}])
def test_mappo_on_vmas_copies_stepped_on_cuda_keeps_the_rollout_on_the_device(net):
    """Issue 17's device-native path: VMAS steps every copy on the GPU, the VecSteps are
    CUDA tensors, and MAPPO (MLP, GNN, GRU) stores the rollout and updates there."""
    spec = games.make("vmas/simple_spread", **VMAS_SPREAD).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=25, epochs=2, net=NetConfig(**net)),
                    device=DEVICE, seed=0)
    vg = games.VectorGame("vmas/simple_spread", 256, seed=0, tensors=True, device=DEVICE,
                          **learner.vector_game_kwargs, **VMAS_SPREAD)
    vs = vg.reset()
    assert all(_on(vs.obs[a]) for a in spec.agent_ids) and _on(vs.done)
    seen: list[dict[str, float]] = []
    res = train(learner, vg, 256 * 25 * 2, progress=False, on_update=lambda f, m: seen.append(m))
    assert res.updates == 2 and len(res.episode_returns) == 2 * 256
    assert _on(learner.buf.obs)
    assert all(np.isfinite(v) for m in seen for v in m.values())


def test_mappo_on_vmas_spread_stepped_on_cuda_beats_random():
    """256 VMAS copies on the device, 60 updates: the learned team beats random play by 10
    (on the CPU, seeds 0 and 1 beat it by 25 and 23; random play returns -142.6)."""
    spec = games.make("vmas/simple_spread", **VMAS_SPREAD).spec
    learner = MAPPO(spec, MAPPOConfig(), device=DEVICE, seed=0)
    vg = games.VectorGame("vmas/simple_spread", 256, seed=0, tensors=True, device=DEVICE,
                          **learner.vector_game_kwargs, **VMAS_SPREAD)
    train(learner, vg, 256 * 25 * 60, progress=False)
    ev = games.VectorGame("vmas/simple_spread", 256, seed=1000, **VMAS_SPREAD)
    pol, rnd = learner.policy(), RandomPolicy(spec, seed=0)
    learned = evaluate(ev, {a: pol for a in spec.agent_ids}, 256).per_team["team"]
    random = evaluate(ev, {a: rnd for a in spec.agent_ids}, 256).per_team["team"]
    assert learned > random + 10.0, f"learned {learned:.2f} vs random {random:.2f}"


def test_vmas_tag_league_runs_with_its_copies_on_cuda(tmp_path):
    """The league preset, as its comment tells a GPU user to run it (game and learners on
    the device), one small generation."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    import populations.cli  # noqa: F401  (registers the schema)
    from populations.experiment import run_experiment

    overrides = ["experiment=vmas_tag_league", f"game.kwargs.device={DEVICE}",
                 f"device={DEVICE}", "num_envs=512", "population.generations=1",
                 "population.frames_per_generation=12800", "eval_episodes=16",
                 "progress=false", "logger=none"]
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=overrides))
    summary = run_experiment(exp, tmp_path)
    db = sqlite3.connect(summary.database)
    rows = [json.loads(r[0]) for r in db.execute("SELECT seats FROM matches")]
    db.close()
    assert rows
    for seats in rows:  # the three adversaries are one side: one snapshot plays them all
        assert len({seats[f"adversary_{i}"] for i in range(3)}) == 1
        assert seats["agent_0"] != seats["adversary_0"]


def _cuda_syncs(fn) -> int:
    """Host waits for the GPU while ``fn()`` runs, as CUDA's sync debug mode counts them
    (every synchronizing call warns once), not as Python-level calls look."""
    import warnings

    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message) for w in caught)


@pytest.mark.skipif(not DEVICE.startswith("cuda"), reason="counts CUDA synchronizations")
def test_a_vmas_step_and_mappo_observe_wait_for_the_gpu_as_few_times_as_counted_on_the_cpu():
    """tests/games/test_vmas.py counts the waits of a tensor step and of MAPPO's observe
    from Python (one more than VMAS's own step; two in observe); CUDA's own count must agree,
    or a wait hides inside an op those tests do not see."""
    kw = {"n_agents": 3, "max_steps": 50}
    learner = MAPPO(games.make("vmas/simple_spread", **kw).spec, MAPPOConfig(), device=DEVICE,
                    seed=0)
    vg = games.VectorGame("vmas/simple_spread", 64, seed=0, tensors=True, device=DEVICE,
                          **learner.vector_game_kwargs, **kw)
    vs = vg.reset()
    acts = learner.act(vs)
    vs = vg.step(acts)
    learner.observe(vs)
    out = {}
    ours = _cuda_syncs(lambda: out.setdefault("vs", vg.step(acts)))
    theirs = _cuda_syncs(lambda: vg.native.sim.env.step(list(vg.native.game._actions(acts, 64))))
    assert ours <= theirs + 1, (ours, theirs)
    assert _cuda_syncs(lambda: learner.observe(out["vs"])) <= 2
