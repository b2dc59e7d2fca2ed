"""``marl.play``: acting with a saved policy outside the framework's loops (MLP, GRU and GNN
MAPPO snapshots on a PettingZoo and a VMAS game), and ``load_policy`` naming a training
checkpoint for what it is."""

import numpy as np
import pytest
import torch

import games
from marl.actor_critic import NetConfig
from marl.core import PolicyLoadError, derive_seed, load_policy
from marl.mappo import MAPPO, MAPPOConfig
from marl.play import PettingZooActor, PolicyPlayer, play
from marl.train import RandomPolicy, evaluate

GAMES = {"pz": ("pettingzoo/mpe2.simple_spread_v3", {"N": 2, "max_cycles": 8}),
         "vmas": ("vmas/simple_spread", {"n_agents": 2, "max_steps": 8})}
NETS = {"mlp": NetConfig(init="torch"),
        "gru": NetConfig(init="torch", recurrent=True, rnn_hidden=8),
        "gnn": NetConfig(init="torch", encoder="gnn")}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(game, net) -> a saved, untrained MAPPO policy file (torch init: decisive argmaxes)."""
    root, cache = tmp_path_factory.mktemp("play"), {}

    def get(game: str, net: str, agents: tuple[str, ...] | None = None):
        key = (game, net, agents)
        if key not in cache:
            name, kw = GAMES[game]
            spec = games.make(name, **kw).spec
            learner = MAPPO(spec, MAPPOConfig(net=NETS[net]), agents=agents, seed=7)
            cache[key] = learner.policy().save(root / f"{game}_{net}_{len(cache)}.pt")
        return cache[key]

    return get


CASES = [(g, n) for g in GAMES for n in NETS]


@pytest.mark.parametrize("game, net", CASES)
def test_greedy_actions_are_the_policys_own_on_each_step(saved, game, net):
    """Step by step on the player's own VecSteps, the player's greedy actions equal those a
    separately loaded copy of the policy chooses, its GRU states carried alike."""
    path = saved(game, net)
    player, ref = PolicyPlayer(path, num_envs=3, seed=1, greedy=True), load_policy(path)
    memoryless = load_policy(path)
    assert player.game.with_graphs == (net == "gnn")
    vs, forgot = player.reset(), False
    for _ in range(12):  # past an episode's end (8 steps): the GRU restarts there
        actions = player.act(vs)
        for a in ref.meta.agents:
            np.testing.assert_array_equal(actions[a], ref.act(a, vs, greedy=True))
            if net == "gru":
                memoryless.reset_state()
                forgot |= not np.array_equal(actions[a], memoryless.act(a, vs, greedy=True))
        vs = player.game.step(actions)
    assert forgot or net != "gru"  # the hidden state mattered: a player that lost it fails


@pytest.mark.parametrize("game, net", CASES)
def test_play_returns_are_evaluates_for_the_same_seed(saved, game, net):
    """``play`` plays the episodes ``marl.train.evaluate`` plays on the same copies, seats and
    streams (the policy in its seat, a random policy in the other), sampling actions."""
    path = saved(game, net, ("agent_0",))
    result = play(path, episodes=5, num_envs=2, seed=3, greedy=False)
    assert result.episodes == 5 and list(result.lengths) == [8] * 5

    pol = load_policy(path)
    inputs = set(pol.meta.inputs)
    vg = games.VectorGame(pol.meta.game, 2, seed=3, with_graphs="graph" in inputs)
    rnd = RandomPolicy(vg.spec, seed=derive_seed(3, "play", "agent_1"))
    pol.reseed(derive_seed(3, "play", "agent_0"))
    expected = evaluate(vg, {"agent_0": pol, "agent_1": rnd}, 5, greedy=False)
    assert result.mean_return == pytest.approx(expected.per_agent, abs=1e-6)
    again = play(path, episodes=5, num_envs=2, seed=3, greedy=False)
    np.testing.assert_array_equal(again.returns["agent_0"], result.returns["agent_0"])


def test_opponents_take_their_seats_and_unknown_seats_are_refused(saved):
    path = saved("pz", "mlp")
    other = load_policy(saved("pz", "gru"))
    player = PolicyPlayer(path, num_envs=2, opponents={"agent_1": other})
    assert player.seats["agent_1"] is other and player.seats["agent_0"] is player.policy
    assert player.greedy == {"agent_0": False, "agent_1": False}  # MAPPO snapshots sample
    with pytest.raises(ValueError, match=r"seats \['agent_9'\] that .* does not have"):
        PolicyPlayer(path, opponents={"agent_9": other})
    with pytest.raises(RuntimeError, match="before reset"):
        player.step()


@pytest.mark.parametrize("net", ["mlp", "gru"])
def test_pettingzoo_actor_plays_as_the_vector_game(saved, net):
    """On ``games.to_pettingzoo`` of the policy's game, reset with the seed of the player's
    one copy, the actor's actions on the env's observation dicts are the player's and the
    episode's returns match."""
    path = saved("pz", net)
    actor = PettingZooActor(path, greedy=True)
    env = games.to_pettingzoo(games.make(actor.policy.meta.game))
    player = PolicyPlayer(path, num_envs=1, seed=5, greedy=True)
    vs = player.reset()  # its copy goes on to a second episode by itself (auto-reset)
    for episode in range(2):
        obs, _ = env.reset(seed=5 if episode == 0 else None)
        actor.reset()
        total = {a: 0.0 for a in env.possible_agents}
        while env.agents:
            mine, theirs = actor.act(obs), player.act(vs)
            assert mine == {a: int(x[0]) for a, x in theirs.items()}
            obs, rew, *_ = env.step(mine)
            vs = player.game.step(theirs)
            for a, r in rew.items():
                total[a] += r
        assert vs.done[0]
        assert total == pytest.approx({a: float(r[0]) for a, r in vs.episode_return.items()})


def test_pettingzoo_actor_refuses_a_gnn_policy_in_one_line(saved):
    with pytest.raises(ValueError, match=r"reads \['graph'\].*carries no \['graph'\].*"
                                         r"PolicyPlayer") as err:
        PettingZooActor(saved("pz", "gnn"))
    assert "\n" not in str(err.value)


def _learner():
    spec = games.make(GAMES["pz"][0], **GAMES["pz"][1]).spec
    return MAPPO(spec, MAPPOConfig(), seed=0)


def test_load_policy_names_a_runs_training_checkpoint(tmp_path):
    """A run's ``checkpoints/ckpt_<step>.pt`` is no policy: the message says what it is, how
    to resume it and which snapshot files of the run are policies."""
    from populations.checkpoint import save_checkpoint

    learner, run = _learner(), tmp_path / "run"
    ckpt = save_checkpoint(run / "checkpoints", 400, {"step": 400, "learner": learner.state_dict()})
    with pytest.raises(PolicyLoadError) as err:
        load_policy(ckpt)
    text = str(err.value)
    assert f"{ckpt} is not a selfplay policy file but a training checkpoint" in text
    assert "\n" not in text
    assert f"resume=true hydra.run.dir={run}" in text and "none written yet" in text
    learner.policy().save(run / "snapshots" / "mappo" / "v0000.pt")
    with pytest.raises(PolicyLoadError, match=r"snapshots, <run>/snapshots/<member>/vNNNN\.pt: "
                                              r"snapshots/mappo/v0000\.pt$"):
        load_policy(ckpt)
    league = save_checkpoint(run / "checkpoints", 2, {"generation": 1, "members": {}})
    with pytest.raises(PolicyLoadError, match="policy file but a training checkpoint"):
        load_policy(league)


def test_load_policy_names_a_learner_checkpoint(tmp_path):
    path = _learner().save(tmp_path / "learner.pt")
    with pytest.raises(PolicyLoadError, match=r"is not a selfplay policy file but a learner "
                       r"checkpoint \(Learner\.save; learner\.load\(path\) restores it\)"):
        load_policy(path)
    torch.save({"format": 1, "other": 1}, tmp_path / "x.pt")
    with pytest.raises(PolicyLoadError, match="x.pt is not a selfplay policy file$"):
        load_policy(tmp_path / "x.pt")
