"""Walk 20: the game copies PSRO and approximate exploitability play carry what every policy
and learner in them reads.

* PSRO's sampled payoffs and its RL oracle build ``VectorGame`` with the graphs, state and
  text of the members' inputs: a GNN oracle (``encoder=gnn``) crashed in iteration 0 with
  "a GNN policy needs a VectorGame built with with_graphs=True" once its first best
  response had to be evaluated.
* Approximate exploitability with a response learner that declares no
  ``vector_game_kwargs`` (QMIX, MADDPG: they read the global state where the game has one)
  builds copies with the state, as PSRO, the league and the single-learner path do: it
  failed on every MPE game with "the learner reads the global state but the VecStep has
  none".
"""

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
import populations.cli  # noqa: F401  (registers the schema)
from marl import registry
from marl.configs import MAPPOConfig, NetConfig
from populations.approx_exploit import ApproxConfig, approx_nash_conv
from populations.experiment import ExperimentConfig, run_experiment
from populations.payoffs import SampledPayoffs
from populations.psro import Member, Mixture, RLOracle, RLOracleConfig
from populations.psro_run import registry_learner

PUSH = "pettingzoo/mpe2.simple_push_v3"
ADVERSARY = "pettingzoo/mpe2.simple_adversary_v3"
SHORT = {"max_cycles": 10}
PPO = dict(rollout_steps=5, epochs=1, minibatches=1)
GNN = MAPPOConfig(**PPO, net=NetConfig(encoder="gnn", critic="gnn", gnn_hidden=8))


def _policy(game: str, config=None, algo: str = "mappo", seats=None):
    spec = games.make(game, **SHORT).spec
    return registry.get(algo).build(spec, config, seats).policy()


def test_sampled_payoffs_give_a_gnn_member_its_graphs():
    gnn = _policy(PUSH, GNN)
    assert "graph" in gnn.meta.inputs
    est = SampledPayoffs(PUSH, episodes=2, num_envs=2, seed=0, game_kwargs=SHORT)
    for seat in est.spec.agent_ids:
        est.add_member(Member(f"psro/{seat}/0", seat, gnn))
    block = est.block([np.arange(1), np.arange(1)])
    assert block.shape == (2, 1, 1) and np.isfinite(block).all()


def test_rl_oracle_gives_gnn_opponents_their_graphs():
    """An MLP oracle answering a mixture of GNN members: the opponents' graphs are in the
    copies the oracle trains on."""
    spec = games.make(PUSH, **SHORT).spec
    adversary, agent = spec.agent_ids
    opp = Mixture([Member(f"psro/{agent}/0", agent, _policy(PUSH, GNN))], np.ones(1))
    oracle = RLOracle(PUSH, RLOracleConfig(frames=20, num_envs=2),
                      registry_learner("mappo", MAPPOConfig(**PPO)), SHORT)
    pol = oracle.best_response(adversary, {agent: opp}, seed=0)
    assert pol.meta.agents == (adversary,)


def _cfg(*overrides: str) -> ExperimentConfig:
    small = ["progress=false", "logger=none", "eval_episodes=2", "num_envs=4",
             "population=psro", "population.iterations=1", "population.oracle_frames=40",
             "population.psro.episodes_per_entry=2", "population.psro.num_envs=2",
             "mappo.rollout_steps=5", "mappo.epochs=1", "mappo.minibatches=1",
             "game=mpe_tag", f"game.name={PUSH}", "game.kwargs.max_cycles=10"]
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config",
                                           overrides=[*small, *overrides]))


@pytest.mark.parametrize("encoder", ["gnn", "mlp_gru"])
def test_psro_with_a_gnn_or_gru_oracle_runs_an_iteration(tmp_path, encoder):
    """``selfplay-train population=psro population.oracle=mappo encoder=gnn``: the walker's
    run (mpe_tag there; simple_push here, smaller), through the experiment entry point."""
    cfg = _cfg("population.oracle=mappo", f"encoder={encoder}")
    summary = run_experiment(cfg, tmp_path / "run")
    assert len(summary.table) == 2 * len(games.make(PUSH).spec.agent_ids)


@pytest.mark.parametrize("algo", ["qmix", "maddpg"])
def test_state_reading_responses_get_the_state(algo):
    """``selfplay-eval --exploit --exploit-algo qmix|maddpg`` on an MPE game: the response
    learner reads the global state, so its copies carry it."""
    target = _policy(ADVERSARY)
    learner_config = registry.get(algo).default()
    learner_config.learning_starts, learner_config.batch_size = 8, 4
    res = approx_nash_conv(ADVERSARY, target, ApproxConfig(
        algo=algo, frames=40, seeds=1, eval_episodes=2, num_envs=2,
        learner_config=learner_config), SHORT)
    assert np.isfinite(res.nash_conv)


def test_a_response_that_never_updated_is_warned_about(caplog):
    """``--exploit-frames 600`` with QMIX (learning_starts 1000): the responses stay untrained
    and the estimate (-2.7 on simple_adversary) said nothing of it."""
    caplog.set_level("WARNING", logger="populations.approx_exploit")
    approx_nash_conv(ADVERSARY, _policy(ADVERSARY), ApproxConfig(
        algo="qmix", frames=20, seeds=1, eval_episodes=2, num_envs=2), SHORT)
    lines = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"
             and r.name == "populations.approx_exploit"]
    assert len(lines) == 2  # one per team
    # and the training loop's, up front, for each (walk 24: a budget below the warm-up)
    told = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"
            and r.name == "marl.train"]
    assert len(told) == 2 and all("frames=20 ends before the first update" in m and
                                  "qmix.learning_starts=1000" in m for m in told), told
    assert "the qmix response for team adversary (adversary_0) made no update in 20 " \
        "frames" in lines[0]
    assert "the qmix response for team good (agent_0, agent_1) made no update" in lines[1]
