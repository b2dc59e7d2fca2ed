"""vmas/<scenario>: one copy behind the game contract, B copies natively batched in torch."""

import json
import sqlite3
import subprocess
import sys

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf
from pettingzoo.test import parallel_api_test

import games
from games.vmas import MOVES_3X3, VmasBatch, VmasGame
from marl.train import without_clock


def _random(spec, B, rng):
    out = {}
    for a in spec.agent_ids:
        sp = spec.action_spaces[a]
        out[a] = (rng.integers(0, sp.n, B) if sp.discrete
                  else rng.uniform(sp.low, sp.high, (B, *sp.shape)).astype(np.float32))
    return out


def test_single_copy_passes_check_game_discrete_and_continuous():
    spread = games.make("vmas/simple_spread", max_steps=10)
    assert isinstance(spread, VmasGame)
    assert games.check_game(spread, episodes=2).steps == 20
    assert spread.spec.action_spaces["agent_0"] == games.ActionSpace("discrete", n=9)
    spread.reset(0)
    assert spread.legal_action_texts("agent_0") == list(MOVES_3X3)
    nav = games.make("vmas/navigation", continuous_actions=True, n_agents=2, max_steps=8)
    assert nav.spec.action_spaces["agent_0"].shape == (2,)
    games.check_game(nav, episodes=2)


def test_single_copy_exports_to_pettingzoo():
    parallel_api_test(games.to_pettingzoo(games.make("vmas/simple_spread", max_steps=5)),
                      num_cycles=8)


@pytest.mark.parametrize("scenario, adversaries, good", [
    ("simple_tag", ["adversary_0", "adversary_1", "adversary_2"], ["agent_0"]),
    ("simple_adversary", ["adversary_0"], ["agent_0", "agent_1"]),
])
def test_adversaries_form_their_own_team(scenario, adversaries, good):
    spec = games.make(f"vmas/{scenario}").spec
    assert {a.id: a.team for a in spec.agents} == {
        **{a: "adversary" for a in adversaries}, **{a: "good" for a in good}}
    assert spec.roles == ("adversary", "agent")
    assert not spec.zero_sum


def test_football_with_both_sides_played_is_blue_against_red():
    # its red agents carry no adversary flag: they were one cooperative team with blue
    spec = games.make("vmas/football", ai_red_agents=False, n_blue_agents=2, n_red_agents=2,
                      max_steps=3).spec
    assert {a.id: a.team for a in spec.agents} == {
        "agent_blue_0": "blue", "agent_blue_1": "blue", "agent_red_0": "red", "agent_red_1": "red"}
    assert spec.roles == ("agent_blue", "agent_red")
    scripted_red = games.make("vmas/football", n_blue_agents=2, n_red_agents=2)
    assert scripted_red.spec.teams == ("team",)
    # the GNN's node types: red players (played or scripted) adversaries, the ball an object
    # (all three were the agent type)
    scripted_red.reset(seed=0)
    graph = scripted_red.entity_graph("agent_blue_0")  # nodes: blue 0, 1, red 0, 1, ball, walls
    assert graph.node_type.tolist() == [0, 0, 1, 1] + [2] * (len(graph.node_type) - 4)


def test_cooperative_scenarios_are_one_team_and_teams_can_be_overridden():
    assert games.make("vmas/simple_spread").spec.teams == ("team",)
    spec = games.make("vmas/simple_spread", teams=[["agent_0"], ["agent_1", "agent_2"]]).spec
    assert spec.teams == ("team_0", "team_1")


def test_bad_scenario_and_kwargs_are_one_line_errors():
    with pytest.raises(games.UnknownGameError, match="unknown VMAS scenario 'nope'; accepted:"):
        games.make("vmas/nope")
    with pytest.raises(games.GameError, match=r"\{'colour': 1\} passed but not used") as err:
        games.make("vmas/simple_spread", colour=1)
    assert "\n" not in str(err.value)
    with pytest.raises(games.GameError, match="cannot build vmas/simple_spread .device='nodevice'"):
        games.make("vmas/simple_spread", device="nodevice")
    # a scenario's bare assert (balance needs 2+ agents) still says what happened, on one line
    with pytest.raises(games.GameError, match=r"\{'n_agents': 1\}\): AssertionError: the "
                       r"scenario's own check failed") as err:
        games.make("vmas/balance", n_agents=1)  # 0 is refused before: a count of agents
    assert "\n" not in str(err.value)


def test_batched_steps_all_copies_with_shapes_and_truncation():
    B = 6
    vg = games.VectorGame("vmas/simple_spread", B, seed=1, with_state=True, with_graphs=True,
                          max_steps=3)
    assert isinstance(vg.native, VmasBatch) and len(vg.games) == 1  # one batch, no copies
    vs = vg.reset()
    assert vs.obs["agent_0"].shape == (B, 14) and vs.obs["agent_0"].dtype == np.float32
    assert vs.legal["agent_0"].shape == (B, 9) and vs.legal["agent_0"].all()
    assert vs.state.shape == (B, 42) and vs.graph.shape == (B, 6, games.graphs.NODE_DIM)
    assert vs.agent_node == {"agent_0": 0, "agent_1": 1, "agent_2": 2}
    rng = np.random.default_rng(0)
    total = np.zeros(B)
    for t in range(3):
        before = vs.obs["agent_1"]
        vs = vg.step(_random(vg.spec, B, rng))
        total += vs.rewards["agent_1"]
        assert vs.done.all() == (t == 2)
    assert vs.truncated["agent_1"].all() and not vs.terminated["agent_1"].any()
    assert (vs.episode_length == 3).all()
    np.testing.assert_allclose(vs.episode_return["agent_1"], total, rtol=1e-5)
    assert not np.allclose(vs.final_obs["agent_1"], before)  # the last step moved them
    assert not np.allclose(vs.final_obs["agent_1"], vs.obs["agent_1"])  # and it reset
    vs = vg.step(_random(vg.spec, B, rng))
    assert (vs.episode_length == 1).all() and not vs.done.any()


def test_entity_graph_nodes_are_the_simulated_positions_and_velocities():
    vg = games.VectorGame("vmas/simple_spread", 4, seed=2, with_graphs=True, max_steps=5)
    vs = vg.reset()
    rng = np.random.default_rng(0)
    for _ in range(2):
        vs = vg.step(_random(vg.spec, 4, rng))
    for a, node in vs.agent_node.items():  # simple_spread observes [pos, vel, ...] first
        np.testing.assert_allclose(vs.graph[:, node, 0:4], vs.obs[a][:, 0:4], atol=1e-6)
    assert (vs.graph[:, 3:, 8] == 1).all() and (vs.graph[:, :3, 6] == 1).all()  # landmarks
    one = games.make("vmas/simple_tag")
    one.reset(0)
    g = one.entity_graph("agent_0")
    assert g.node_type.tolist() == [1, 1, 1, 0, 2, 2] and g.nodes[3, 5] == 1.0
    assert np.allclose(g.nodes[3, 0:4], 0.0)  # the ego's own node, relative to itself


def test_rewards_of_shape_b_by_1_are_flattened():
    vg = games.VectorGame("vmas/wheel", 3, seed=0, max_steps=2)  # wheel gives [B, 1] rewards
    vg.reset()
    vs = vg.step({a: np.zeros(3, np.int64) for a in vg.spec.agent_ids})
    assert vs.rewards["agent_0"].shape == (3,) and vs.episode_return["agent_0"].shape == (3,)


def test_auto_reset_resets_only_the_copies_that_ended():
    """Copies 0 and 1 reach max_steps one step early; the others go on untouched."""
    B, rng = 5, np.random.default_rng(3)
    ended = games.VectorGame("vmas/simple_spread", B, seed=7, max_steps=4)
    control = games.VectorGame("vmas/simple_spread", B, seed=7, max_steps=4)
    ended.reset(), control.reset()
    ended.native._len[:2] = 3  # as if they had started one step before the others
    acts = _random(ended.spec, B, rng)
    vs, ref = ended.step(acts), control.step(acts)
    assert vs.done.tolist() == [True, True, False, False, False]
    np.testing.assert_array_equal(vs.obs["agent_0"][2:], ref.obs["agent_0"][2:])
    np.testing.assert_array_equal(vs.final_obs["agent_0"][:2], ref.obs["agent_0"][:2])
    assert not np.allclose(vs.obs["agent_0"][:2], ref.obs["agent_0"][:2])
    assert (vs.final_obs["agent_0"][2:] == 0).all()
    assert vs.episode_length.tolist() == [4, 4, 1, 1, 1]  # the ended episodes' lengths


def test_batched_continuous_actions_and_tensor_vecsteps():
    B = 4
    vg = games.VectorGame("vmas/navigation", B, seed=0, tensors=True, continuous_actions=True,
                          n_agents=2, max_steps=5)
    vs = vg.reset()
    assert isinstance(vs.obs["agent_0"], torch.Tensor) and vs.obs["agent_0"].device.type == "cpu"
    acts = {a: torch.full((B, 2), 5.0) for a in vg.spec.agent_ids}  # out of range: clamped
    for _ in range(5):
        vs = vg.step(acts)
    assert vs.done.dtype == torch.bool and bool(vs.done.all())
    assert vs.episode_return["agent_0"].shape == (B,)


def test_batched_out_of_range_discrete_actions_are_a_one_line_error():
    vg = games.VectorGame("vmas/simple_spread", 2, seed=0, max_steps=4)
    vs = vg.reset()
    acts = {a: np.zeros(2, np.int64) for a in vg.spec.agent_ids}
    acts["agent_1"] = np.array([0, 9])
    with pytest.raises(games.GameError, match=r"vmas/simple_spread: bad actions: Discrete") as e:
        vg.step(acts)
    assert "\n" not in str(e.value)
    acts["agent_1"] = np.array([0, 8])
    assert vg.step(acts).episode_length.tolist() == [1, 1]  # nothing moved on the bad step
    assert vs.episode_length.tolist() == [0, 0]


def test_same_seed_replays_and_the_global_torch_rng_is_left_alone():
    def run(seed):
        vg = games.VectorGame("vmas/simple_tag", 3, seed=seed, max_steps=4)
        vs, out = vg.reset(), []
        rng = np.random.default_rng(0)
        for _ in range(6):
            vs = vg.step(_random(vg.spec, 3, rng))
            out.append(vs.obs["agent_0"].copy())
        return np.stack(out)

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = run(5)
    assert torch.equal(torch.rand(3), expected)
    np.testing.assert_array_equal(a, run(5))
    assert not np.array_equal(a, run(6))


def test_natively_batched_game_rejects_text_views_and_numpy_games_reject_tensors():
    with pytest.raises(games.GameError, match="natively batched; with_text"):
        games.VectorGame("vmas/simple_spread", 2, with_text=True)
    with pytest.raises(games.GameError, match="tensors=True needs a natively batched game"):
        games.VectorGame("openspiel/kuhn_poker", 2, tensors=True)


def test_games_imports_without_torch_for_numpy_games():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import games\n"
            "vg = games.VectorGame('openspiel/kuhn_poker', 2); vg.reset()\n"
            "assert 'vmas' not in sys.modules and 'games.vmas' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("encoder", ["mlp", "gnn"])
def test_selfplay_train_vmas_spread_runs_one_mappo_update(tmp_path, encoder):
    from populations.experiment import run_experiment

    with initialize_config_module(config_module="configs", version_base=None):
        cfg = compose(config_name="config", overrides=[
            "game=vmas_spread", f"encoder={encoder}", "frames=64", "num_envs=8",
            "mappo.rollout_steps=8", "mappo.epochs=1", "eval_episodes=2", "progress=false",
            "logger=none"])
    exp = OmegaConf.to_object(cfg)
    summary = run_experiment(exp, tmp_path / "run")
    db = sqlite3.connect(summary.database)
    frames = [r[0] for r in db.execute("SELECT step FROM metrics")]
    assert frames and max(frames) == 64  # one update after 8 steps of 8 copies


def test_vmas_tag_plays_a_pfsp_league_adversaries_against_the_good_agent(tmp_path):
    from populations.experiment import run_experiment

    with initialize_config_module(config_module="configs", version_base=None):
        cfg = compose(config_name="config", overrides=[
            "game=vmas_tag", "population=pfsp", "population.generations=1",
            "population.frames_per_generation=64", "frames=64", "num_envs=4",
            "mappo.rollout_steps=8", "mappo.epochs=1", "eval_episodes=2", "progress=false",
            "logger=none"])
    summary = run_experiment(OmegaConf.to_object(cfg), tmp_path / "run")
    db = sqlite3.connect(summary.database)
    rows = [json.loads(r[0]) for r in db.execute("SELECT seats FROM matches")]
    assert rows
    for seats in rows:  # the three adversaries are one side: one snapshot plays them all
        assert len({seats[f"adversary_{i}"] for i in range(3)}) == 1
        assert seats["agent_0"] != seats["adversary_0"]


@pytest.mark.parametrize("net", [
    {}, {"encoder": "gnn", "critic": "gnn"}, {"recurrent": True, "critic": "concat"},
    {"critic": "local"},
])
def test_mappo_on_tensor_vecsteps_matches_the_numpy_path(net):
    """The device-native path (VecSteps of tensors, actions back as tensors) trains exactly
    as the numpy path does: same trajectories, same losses."""
    from marl.actor_critic import NetConfig
    from marl.mappo import MAPPO, MAPPOConfig
    from marl.train import train

    kw = {"n_agents": 2, "max_steps": 6}
    spec = games.make("vmas/simple_spread", **kw).spec
    runs = []
    for tensors in (False, True):
        cfg = MAPPOConfig(net=NetConfig(hidden=(16,), gnn_hidden=8, rnn_hidden=8, **net),
                          rollout_steps=8, epochs=2, minibatches=2)
        learner = MAPPO(spec, cfg, seed=3)
        vg = games.VectorGame("vmas/simple_spread", 4, seed=1, tensors=tensors,
                              **learner.vector_game_kwargs, **kw)
        res = train(learner, vg, 4 * 8 * 2, progress=False)
        if tensors:
            assert learner.buf.obs.device == vg.native.device
        runs.append(res)
    numpy_run, tensor_run = runs
    assert tensor_run.updates == numpy_run.updates == 2
    np.testing.assert_allclose(tensor_run.episode_returns, numpy_run.episode_returns, rtol=1e-6)
    for m_np, m_t in zip(without_clock(numpy_run.metrics), without_clock(tensor_run.metrics),
                         strict=True):
        for k, v in m_np.items():
            assert m_t[k] == pytest.approx(v, rel=1e-5, abs=1e-6, nan_ok=True), k


def test_train_gives_fixed_opponents_numpy_from_a_tensor_vecstep():
    from marl.mappo import MAPPO, MAPPOConfig
    from marl.train import RandomPolicy, train

    kw = {"max_steps": 4}
    spec = games.make("vmas/simple_tag", **kw).spec
    adversaries = tuple(a.id for a in spec.agents if a.team == "adversary")
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=4, epochs=1), agents=adversaries, seed=0)
    vg = games.VectorGame("vmas/simple_tag", 3, seed=0, tensors=True,
                          **learner.vector_game_kwargs, **kw)
    # one whole rollout (3 copies x 4 steps): budgets round up to whole rollouts (191db21)
    res = train(learner, vg, 3 * 4, opponents={"agent_0": RandomPolicy(spec)}, progress=False)
    assert res.updates == 1 and len(res.episode_returns) == 3


def test_tensors_auto_gives_tensors_for_vmas_and_numpy_elsewhere():
    vg = games.VectorGame("vmas/simple_spread", 2, seed=0, tensors="auto", max_steps=3)
    assert isinstance(vg.reset().done, torch.Tensor)
    kuhn = games.VectorGame("openspiel/kuhn_poker", 2, tensors="auto")
    assert isinstance(kuhn.reset().done, np.ndarray)
    with pytest.raises(games.GameError, match="tensors='yes'; expected True, False or 'auto'"):
        games.VectorGame("vmas/simple_spread", 2, tensors="yes")


@pytest.mark.parametrize("value", [0, True, 2.5])
def test_a_bad_max_steps_is_refused_in_the_games_own_words(value):
    # true passed as 1 (every episode one step long); the line now reads as every adapter's
    with pytest.raises(games.GameError) as info:
        games.make("vmas/simple_spread", max_steps=value)
    assert str(info.value) == (f"bad parameter for vmas/simple_spread: max_steps={value!r}; "
                               "accepted: an integer >= 1")


def test_a_tensor_step_waits_for_the_device_only_where_the_vmas_loop_does_and_once_more():
    """On a GPU each host read of a device value stalls the step. Ours adds one to VMAS's
    own step (``done.any()``, whether to reset copies); resetting returns and lengths by a
    boolean index added two (a ``nonzero`` each), 12-15 % over the VMAS loop on an H200."""
    from collections import Counter

    from tests.marl.test_advantages_scans import DeviceWaits

    vg = games.VectorGame("vmas/simple_spread", 8, seed=0, tensors=True, n_agents=3,
                          max_steps=50)
    vg.reset()
    acts = {a: torch.zeros(8, dtype=torch.long) for a in vg.spec.agent_ids}
    vg.step(acts)
    with DeviceWaits() as ours:
        vg.step(acts)
    with DeviceWaits() as theirs:
        vg.native.sim.env.step(list(acts.values()))
    assert Counter(ours.ops) - Counter(theirs.ops) == Counter({"__bool__": 1})
    assert not Counter(theirs.ops) - Counter(ours.ops)


def test_mappo_observe_of_a_tensor_step_indexes_nothing_by_a_boolean_mask():
    """Between two steps where no episode ends MAPPO's observe reads the device twice: the
    finite check of the rewards (one read for all) and ``ended.any()``. Storing rewards by a
    boolean index of the pending steps added four waits (a ``nonzero`` each) per step."""
    from collections import Counter

    from marl.mappo import MAPPO, MAPPOConfig
    from tests.marl.test_advantages_scans import DeviceWaits

    kw = {"n_agents": 3, "max_steps": 50}
    learner = MAPPO(games.make("vmas/simple_spread", **kw).spec, MAPPOConfig(), seed=0)
    vg = games.VectorGame("vmas/simple_spread", 8, seed=0, tensors=True,
                          **learner.vector_game_kwargs, **kw)
    vs = vg.reset()
    for _ in range(3):
        vs = vg.step(learner.act(vs))
        with DeviceWaits() as waits:
            learner.observe(vs)
    assert Counter(waits.ops) == Counter({"numpy": 1, "__bool__": 1})  # numpy: CPU finite check


def test_an_unseeded_copy_is_built_and_plays_the_same_every_time():
    """The one copy games.make builds is built from a fixed seed, not OS entropy: a scenario
    that fails for some draws (VMAS's sampling once raised at construction) fails every
    time or never, and an unseeded reset() replays. (A coarser grid than its default 0.05:
    its full reset loops over the grid's cells in Python, ~4 s a reset at 1,600 cells, and
    the copy's seed does not depend on it; as in test_vmas_reset's SCENARIO_KWARGS.)"""
    def play():
        g = games.make("vmas/sampling", grid_spacing=0.25)
        obs = g.reset().obs
        return np.concatenate([np.ravel(obs[a]) for a in sorted(obs)])

    np.testing.assert_array_equal(play(), play())
