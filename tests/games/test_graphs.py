"""Entity graphs of MPE scenes: fixed feature width across N, relative ego view, edges."""

import numpy as np

import games
from games.graphs import NODE_DIM, NODE_FEATURES, full_edges


def _graph(spec, ego=None, **kwargs):
    g = games.make(spec, **kwargs)
    g.reset(seed=0)
    return g, g.entity_graph(ego)


def test_feature_width_independent_of_n():
    _, g3 = _graph("pettingzoo/mpe2.simple_spread_v3", "agent_0", N=3)
    _, g6 = _graph("pettingzoo/mpe2.simple_spread_v3", "agent_0", N=6)
    assert g3.nodes.shape == (6, NODE_DIM) and g6.nodes.shape == (12, NODE_DIM)
    assert g3.edge_index.shape == (2, 6 * 5) and g6.edge_index.shape == (2, 12 * 11)


def test_ego_view_is_relative_and_types_are_one_hot():
    game, g = _graph("pettingzoo/mpe2.simple_tag_v3", "agent_0")
    world = game.env.unwrapped.world
    me = g.agent_node["agent_0"]
    np.testing.assert_allclose(g.nodes[me, :4], 0.0, atol=1e-7)
    assert g.nodes[me, NODE_FEATURES.index("is_self")] == 1.0
    assert g.nodes[:, NODE_FEATURES.index("is_self")].sum() == 1.0
    # node types: 3 adversaries, 1 good agent, 2 obstacles
    assert g.node_type.tolist() == [1, 1, 1, 0, 2, 2]
    np.testing.assert_array_equal(g.nodes[:, 6:].argmax(1), g.node_type)
    adv = world.agents[0]
    rel = adv.state.p_pos - world.agents[3].state.p_pos
    np.testing.assert_allclose(g.nodes[0, :2], rel, rtol=1e-5)


def test_edges_complete_without_self_loops():
    e = full_edges(4)
    pairs = set(map(tuple, e.T.tolist()))
    assert len(pairs) == 12 and all(s != d for s, d in pairs)


def test_radius_edges():
    from games.graphs import mpe_entity_graph

    game, full = _graph("pettingzoo/mpe2.simple_spread_v3", N=3)
    near = mpe_entity_graph(game.env.unwrapped.world, radius=0.5)
    pos = full.nodes[:, :2]
    for s, d in near.edge_index.T:
        assert np.linalg.norm(pos[s] - pos[d]) <= 0.5
    assert near.edge_index.shape[1] < full.edge_index.shape[1]
