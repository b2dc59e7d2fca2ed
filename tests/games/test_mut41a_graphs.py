"""Entity graphs' ego view and the large-graph warning's bound (mutation walk mut41a: each
test failed with one mutation of games/graphs.py that the suite let pass)."""

import numpy as np

import games
from games import graphs


def test_the_ego_view_makes_velocities_relative_too():
    """Mutant: only positions made relative to the ego agent (``nodes[:, 0:2]``). At a reset
    every velocity is zero, so the existing test saw no difference: here agents have moved."""
    game = games.make("pettingzoo/mpe2.simple_tag_v3")
    ts = game.reset(seed=0)
    for _ in range(3):
        ts = game.step({a: 4 for a in ts.acting})  # every agent moves up
    absolute = game.entity_graph()
    me = absolute.agent_node["agent_0"]
    assert np.abs(absolute.nodes[:, 2:4]).max() > 0.1  # moving: the check below means something
    ego = game.entity_graph("agent_0")
    np.testing.assert_allclose(ego.nodes[:, 0:4], absolute.nodes[:, 0:4] - absolute.nodes[me, 0:4],
                               atol=1e-6)
    rest = absolute.nodes[:, 4:].copy()
    rest[me, graphs.NODE_FEATURES.index("is_self") - 4] = 1.0  # the ego's row alone
    np.testing.assert_array_equal(ego.nodes[:, 4:], rest)


def test_a_graph_of_exactly_large_graph_edges_is_warned_about(caplog):
    """Mutant: ``edges <= LARGE_GRAPH`` returns early: 1,000 edges were not warned about,
    though the docstring says "LARGE_GRAPH edges or more"."""
    assert graphs.LARGE_GRAPH == 50 * 5 * 4
    assert graphs.warn_large_graph("test/mut41a_exactly", 5, 50)
    assert "1000 edges" in caplog.text


def test_edges_count_no_self_loops():
    """Mutant: ``A * V * V`` edges (self loops counted): 11 agents reading 10 nodes hold
    11 * 10 * 9 = 990 edges, under the bound."""
    assert not graphs.warn_large_graph("test/mut41a_990", 10, 11)


def test_an_agent_row_one_past_the_last_node_is_refused():
    """Mutant: ``0 <= row <= V``: a row one past the last node passed graph_problem (a GNN
    encoder then read another copy's node, or out of range)."""
    nodes = np.zeros((3, graphs.NODE_DIM), np.float32)
    edges = graphs.full_edges(3)
    types = np.zeros(3, np.int64)
    ok = games.EntityGraph(nodes=nodes, edge_index=edges, node_type=types,
                           agent_node={"a": 0, "b": 2})
    assert graphs.graph_problem(ok, ["a", "b"]) is None
    past = games.EntityGraph(nodes=nodes, edge_index=edges, node_type=types,
                             agent_node={"a": 0, "b": 3})
    assert graphs.graph_problem(past, ["a", "b"]) == (
        "entity graph's agent_node rows {'b': 3} are not node rows of its 3 nodes (0..2)")
