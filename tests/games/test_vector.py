"""VectorGame matches B independent games and handles turn-based copies out of sync."""

import numpy as np
import pytest

import games


def _policy(rng, legal_BN):
    """Random legal action per copy: [B] int64 (0 where nothing is legal)."""
    scores = rng.random(legal_BN.shape) * legal_BN
    return scores.argmax(axis=1)


@pytest.mark.parametrize(
    ("spec", "kwargs"),
    [
        ("pettingzoo/mpe2.simple_tag_v3", {}),
        ("openspiel/leduc_poker", {}),
        ("pettingzoo/pettingzoo.classic.tictactoe_v3", {}),
        ("openspiel/goofspiel", {"num_cards": 4}),
    ],
)
def test_vector_equals_independent_games(spec, kwargs):
    B, T, seed = 5, 80, 11
    vg = games.VectorGame(spec, num_envs=B, seed=seed, **kwargs)
    solo = [games.make(spec, **kwargs) for _ in range(B)]
    solo_ts = [g.reset(seed + b) for b, g in enumerate(solo)]
    vs = vg.reset()
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(T):
        for b, ts in enumerate(solo_ts):
            for a in vg.spec.agent_ids:
                assert vs.acting[a][b] == (a in ts.acting)
                if a in ts.acting:
                    np.testing.assert_array_equal(vs.obs[a][b], ts.obs[a])
                    np.testing.assert_array_equal(vs.legal[a][b], ts.legal[a])
        actions = {a: _policy(rng, vs.legal[a]) for a in vg.spec.agent_ids}
        vs = vg.step(actions)
        for b, g in enumerate(solo):
            ts = g.step({a: int(actions[a][b]) for a in solo_ts[b].acting})
            for a in vg.spec.agent_ids:
                assert vs.rewards[a][b] == pytest.approx(ts.rewards[a])
                assert vs.terminated[a][b] == ts.terminated[a]
            assert vs.done[b] == ts.done
            if ts.done:
                episodes += 1
                for a in vg.spec.agent_ids:
                    np.testing.assert_array_equal(vs.final_obs[a][b], g.observe(a))
                ts = g.reset(None)
            solo_ts[b] = ts
    assert episodes >= B  # auto-reset happened in every copy


def test_turn_based_copies_wait_on_different_agents():
    vg = games.VectorGame("openspiel/kuhn_poker", num_envs=16, seed=0)
    vs = vg.reset()
    rng = np.random.default_rng(1)
    mixed = False
    for _ in range(20):
        acts = {a: _policy(rng, vs.legal[a]) for a in vg.spec.agent_ids}
        vs = vg.step(acts)
        p0, p1 = vs.acting["player_0"], vs.acting["player_1"]
        assert not np.any(p0 & p1)  # one seat at a time in Kuhn poker
        assert np.all(p0 | p1)  # after auto-reset somebody always acts
        mixed |= bool(p0.any() and p1.any())
        assert np.all(vs.obs["player_0"][~p0] == 0)
    assert mixed


def test_episode_returns_and_truncation_bootstrap_data():
    vg = games.VectorGame(
        "pettingzoo/mpe2.simple_spread_v3", num_envs=3, seed=0, with_state=True, N=2
    )
    vs = vg.reset()
    acc = np.zeros(3)
    for _ in range(25):
        vs = vg.step({a: np.zeros(3, np.int64) for a in vg.spec.agent_ids})
        acc += vs.rewards["agent_0"]
    assert vs.done.all() and vs.truncated["agent_0"].all() and not vs.terminated["agent_0"].any()
    np.testing.assert_allclose(vs.episode_return["agent_0"], acc, rtol=1e-5)
    assert (vs.episode_length == 25).all()
    assert vs.final_state is not None and vs.final_state.shape == (3, *vg.spec.state_shape)
    assert np.abs(vs.final_obs["agent_0"]).sum() > 0


def test_vector_errors():
    with pytest.raises(games.GameError, match="num_envs must be >= 1"):
        games.VectorGame("openspiel/kuhn_poker", num_envs=0)
    vg = games.VectorGame("openspiel/kuhn_poker", num_envs=2)
    with pytest.raises(games.GameError, match="before reset"):
        vg.step({})


def test_graphs_in_vector_steps():
    vg = games.VectorGame("pettingzoo/mpe2.simple_spread_v3", num_envs=2, seed=0,
                          with_graphs=True, N=3)
    vs = vg.reset()
    assert vs.graph.shape == (2, 6, games.graphs.NODE_DIM)
    assert vg.agent_node == {"agent_0": 0, "agent_1": 1, "agent_2": 2}
    direct = vg.games[1].entity_graph().nodes
    np.testing.assert_array_equal(vs.graph[1], direct)
    for _ in range(25):
        vs = vg.step({a: np.ones(2, np.int64) for a in vg.spec.agent_ids})
    assert vs.done.all()
    assert not np.array_equal(vs.final_graph, vs.graph)  # last frame vs. fresh episode
    with pytest.raises(games.GameError, match="no entity graph"):
        games.VectorGame("openspiel/kuhn_poker", num_envs=1, with_graphs=True)


def test_text_views_in_vector_steps():
    vg = games.VectorGame("openspiel/kuhn_poker", num_envs=3, seed=0, with_text=True)
    vs = vg.reset()
    for b in range(3):
        assert vs.text["player_0"][b] == vg.games[b].text_observation("player_0")
        assert vs.legal_text["player_0"][b] == ["Pass", "Bet"]
        assert vs.text["player_1"][b] == "" and vs.legal_text["player_1"][b] == []
    assert games.VectorGame("openspiel/kuhn_poker", num_envs=1).reset().text is None
