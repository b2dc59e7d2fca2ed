"""The dense GATv2 path of the graph encoder computes what torch_geometric's GATv2Conv
computes on the batched edge list (outputs and gradients, to float rounding)."""

import pytest
import torch

from marl.gnn import DENSE_MAX_NODES, GraphEncoder, batched_edges, ego_view


def _edge_list_forward(enc, nodes, ego):
    """The encoder as torch_geometric's message passing runs it."""
    M, V, F = nodes.shape
    x = ego_view(nodes, ego)
    edges = batched_edges(x, enc.radius)
    h = enc.inp(x.reshape(M * V, F))
    for conv, norm in zip(enc.convs, enc.norms, strict=True):
        h = norm(h + torch.tanh(conv(h, edges)))
    h = h.reshape(M, V, -1)
    return torch.cat([h[torch.arange(M), ego], h.mean(1)], dim=-1)


@pytest.mark.parametrize("radius", [None, 0.8])
@pytest.mark.parametrize("V", [2, 6, DENSE_MAX_NODES])
def test_dense_gatv2_equals_torch_geometric(radius, V):
    torch.manual_seed(V)
    enc = GraphEncoder(9, hidden=16, layers=2, heads=2, layer="gatv2", radius=radius)
    nodes = torch.randn(40, V, 9)
    ego = torch.randint(0, V, (40,))
    grads = []
    for forward in (enc, lambda n, e: _edge_list_forward(enc, n, e)):
        enc.zero_grad()
        out = forward(nodes, ego)
        (out * torch.linspace(-1, 1, out.shape[-1])).sum().backward()
        grads.append((out.detach(), [p.grad.clone() for p in enc.parameters()]))
    (dense, g_dense), (ref, g_ref) = grads
    torch.testing.assert_close(dense, ref, rtol=1e-5, atol=1e-5)
    for a, b in zip(g_dense, g_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    if radius is not None:  # some nodes have no neighbour in range: only their self loop
        pos = nodes[:, :, :2]
        assert (torch.cdist(pos, pos) <= radius).sum(-1).min() == 1


def test_gatv2_score_gradients_match_finite_differences():
    """The hand-written backward of the attention logits (float64 gradcheck)."""
    from marl.gnn import _GATv2Score

    gen = torch.Generator().manual_seed(0)
    x_r, x_l = (torch.randn(3, 4, 2, 3, generator=gen, dtype=torch.float64,
                            requires_grad=True) for _ in range(2))
    att = torch.randn(2, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda r, c, a: _GATv2Score.apply(r, c, a, 0.2),
                                    (x_r, x_l, att))
