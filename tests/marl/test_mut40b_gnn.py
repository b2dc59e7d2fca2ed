"""The GNN encoder's ego view and radius graph against plain loops (mutation walk, session 40):
``ego_view`` re-centres positions *and* velocities on each sample's ego node (a ``+=`` or a
positions-only re-centring survived the suite), and an entity exactly ``radius`` away is a
neighbour on the edge-list path (``V > DENSE_MAX_NODES``) as on the dense one (``<``
instead of ``<=`` survived)."""

import numpy as np
import torch

import games
from marl.gnn import DENSE_MAX_NODES, GraphEncoder, batched_edges, ego_view, neighbours


def test_ego_view_matches_a_loop():
    gen = torch.Generator().manual_seed(0)
    M, V, F = 7, 5, 9
    nodes = torch.randn(M, V, F, generator=gen)
    nodes[:, :, 5] = torch.rand(M, V, generator=gen)  # stale is_self values are overwritten
    ego = torch.randint(0, V, (M,), generator=gen)
    out = ego_view(nodes, ego)
    for m in range(M):
        e = int(ego[m])
        for v in range(V):
            want = nodes[m, v].clone()
            want[0:4] = nodes[m, v, 0:4] - nodes[m, e, 0:4]
            want[5] = float(v == e)
            torch.testing.assert_close(out[m, v], want, rtol=0, atol=0)


def test_ego_view_input_is_left_alone():
    nodes = torch.randn(3, 4, 9, generator=torch.Generator().manual_seed(1))
    before = nodes.clone()
    ego_view(nodes, torch.tensor([0, 3, 2]))
    assert torch.equal(nodes, before)


def test_ego_view_of_the_absolute_mpe_graph_is_the_games_own_ego_graph():
    game = games.make("pettingzoo/mpe2.simple_tag_v3", max_cycles=25)
    game.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(4):  # let the agents move: velocities are not zero
        game.step({a: int(rng.integers(5)) for a in game.acting_agents()})
    whole = game.entity_graph(None)
    assert np.abs(whole.nodes[:, 2:4]).max() > 1e-3
    agents = list(whole.agent_node)
    ego = torch.tensor([whole.agent_node[a] for a in agents])
    batch = torch.as_tensor(whole.nodes)[None].expand(len(agents), -1, -1)
    view = ego_view(batch, ego)
    for k, a in enumerate(agents):
        np.testing.assert_allclose(view[k].numpy(), game.entity_graph(a).nodes, rtol=0,
                                   atol=1e-6)
    game.close()


def _far_apart(V: int) -> torch.Tensor:
    """Node 0 at the origin, node 1 exactly 0.5 away, the others far from everything."""
    nodes = torch.zeros(1, V, 9)
    nodes[0, 1, 0] = 0.5
    for v in range(2, V):
        nodes[0, v, 0:2] = torch.tensor([10.0 * v, 10.0])
    return nodes


def test_an_entity_exactly_radius_away_is_a_neighbour_on_both_paths():
    V, radius = DENSE_MAX_NODES + 1, 0.5
    x = ego_view(_far_apart(V), torch.tensor([0]))
    edges = batched_edges(x, radius)
    assert sorted(map(tuple, edges.T.tolist())) == [(0, 1), (1, 0)]
    adj = torch.eye(V, dtype=torch.bool)
    adj[edges[1], edges[0]] = True  # row: target, column: source
    assert torch.equal(neighbours(x, radius)[0], adj)


def test_the_edge_list_encoder_links_nodes_exactly_radius_apart():
    """Past DENSE_MAX_NODES the encoder runs torch_geometric on the edge list: node 0's
    embedding moves with node 1's features only if they are linked (at exactly radius)."""
    torch.manual_seed(0)
    V = DENSE_MAX_NODES + 1
    enc = GraphEncoder(9, hidden=8, layers=1, heads=1, layer="gatv2", radius=0.5)
    nodes = _far_apart(V)
    other = nodes.clone()
    other[0, 1, 4] = 3.0  # node 1's size: not a position, the topology stays
    ego = torch.tensor([0])
    with torch.no_grad():
        a, b = enc(nodes, ego)[0, :8], enc(other, ego)[0, :8]
    assert (a - b).abs().max() > 1e-4
