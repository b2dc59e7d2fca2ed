"""GNN encoders over entity graphs (InforMARL, Nayak et al. 2023) with torch_geometric layers.

Input: node features ``[M, V, F]`` in absolute coordinates (``games.graphs`` layout:
``x, y, vx, vy, size, is_self, one-hot type``) and the row of each sample's ego node
``[M]``. The encoder re-centres the graph on the ego entity (positions and velocities
relative to it, ``is_self`` set), connects nodes fully or within a radius (the topology
is rebuilt on the fly from positions, BenchMARL's ``from_pos``), runs message passing
(GATv2 or graph-transformer convolutions) and reads out the ego node's embedding
concatenated with the mean over nodes. Nothing depends on the number of entities V, so
a policy trained with N agents runs unchanged with more.

Shape legend: ``M`` samples (graphs), ``V`` nodes per graph, ``F`` node features,
``H`` hidden width, ``E`` edges in the batched graph.
"""

from __future__ import annotations

import logging
import sys
import warnings
from typing import Any

import torch
from torch import nn
from torch.autograd.function import once_differentiable

from games.graphs import NODE_FEATURES
from marl.configs import GNN_LAYERS, did_you_mean  # one list: NetConfig checks it pre-torch

log = logging.getLogger(__name__)
POS, VEL, IS_SELF = slice(0, 2), slice(2, 4), 5
DENSE_MAX_NODES = 16
"""GATv2 on graphs of at most this many nodes (any size when fully connected) runs as dense
``[M, V, V]`` attention (:func:`dense_gatv2`) instead of torch_geometric's edge-list
message passing: the same parameters and the same function (to float rounding), about 1.4x
faster forward and backward on CPU for MPE-sized graphs (no gathers, scatters and edge-index
bookkeeping). A fully connected graph has as many edges either way; a radius graph of many
nodes is sparse enough that the edge list wins."""


def ego_view(nodes_MVF: torch.Tensor, ego_M: torch.Tensor) -> torch.Tensor:
    """Positions/velocities relative to each sample's ego node, with its ``is_self`` set."""
    M, V, _ = nodes_MVF.shape
    ar = torch.arange(M, device=nodes_MVF.device)
    out = nodes_MVF.clone()
    me = nodes_MVF[ar, ego_M]  # [M, F]
    out[:, :, 0:4] -= me[:, None, 0:4]
    out[:, :, IS_SELF] = 0.0
    out[ar, ego_M, IS_SELF] = 1.0
    return out


_FULL_CACHE: dict[tuple[int, str], torch.Tensor] = {}


def batched_edges(
    nodes_MVF: torch.Tensor, radius: float | None
) -> torch.Tensor:
    """``[2, E]`` edge index of M graphs of V nodes batched as one (no self loops)."""
    M, V, _ = nodes_MVF.shape
    dev = nodes_MVF.device
    if radius is None:
        key = (V, str(dev))
        if key not in _FULL_CACHE:
            src, dst = torch.nonzero(~torch.eye(V, dtype=torch.bool, device=dev), as_tuple=True)
            _FULL_CACHE[key] = torch.stack([src, dst])
        base = _FULL_CACHE[key]  # [2, V*(V-1)]
        offs = (torch.arange(M, device=dev) * V).repeat_interleave(base.shape[1])
        return base.repeat(1, M) + offs
    pos = nodes_MVF[:, :, POS]
    near = torch.cdist(pos, pos) <= radius  # [M, V, V]
    near &= ~torch.eye(V, dtype=torch.bool, device=dev)
    m, s, d = torch.nonzero(near, as_tuple=True)
    return torch.stack([m * V + s, m * V + d])


def neighbours(nodes_MVF: torch.Tensor, radius: float | None) -> torch.Tensor | None:
    """``[M, V, V]`` adjacency (row: target, column: source) with self loops, as GATv2Conv
    sees :func:`batched_edges` after adding its self loops; None when fully connected."""
    if radius is None:
        return None
    pos = nodes_MVF[:, :, POS]
    V = nodes_MVF.shape[1]
    return (torch.cdist(pos, pos) <= radius) | torch.eye(V, dtype=torch.bool,
                                                          device=nodes_MVF.device)


class _GATv2Score(torch.autograd.Function):
    """GATv2's attention logits ``[M, Vt, Vs, H]``:
    ``score[m, t, s, h] = sum_c att[h, c] * leaky_relu(x_r[m, t, h, c] + x_l[m, s, h, c])``.

    Why a Function: autograd keeps the broadcast sum and its activation as two
    ``[M, V, V, H*C]`` tensors (the largest of the encoder) and its backward makes three
    more; here the activation is taken in place and saved, and the backward writes its
    gradient into one new tensor. The contraction over ``c`` is one matrix product with the
    block-diagonal ``[H, H*C]`` matrix of ``att`` (einsum ran it as a batched product per
    head, ~40 % of the encoder's time). First-order gradients only.
    """

    @staticmethod
    def forward(ctx: Any, x_r: torch.Tensor, x_l: torch.Tensor, att: torch.Tensor,
                slope: float) -> torch.Tensor:
        M, V, H, C = x_r.shape
        z = x_r.reshape(M, V, 1, H * C) + x_l.reshape(M, 1, V, H * C)  # [M, Vt, Vs, H*C]
        nn.functional.leaky_relu(z, slope, inplace=True)
        score = nn.functional.linear(z.view(-1, H * C), torch.block_diag(*att.unbind(0)))
        ctx.save_for_backward(z, att)
        ctx.slope = slope
        return score.view(M, V, V, H)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, g_MVVH: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        z, att = ctx.saved_tensors
        M, V, _, HC = z.shape
        H, C = att.shape
        g = g_MVVH.reshape(-1, H)
        g_att = (g.T @ z.view(-1, HC)).view(H, H, C).diagonal(dim1=0, dim2=1).T  # [H, C]
        g_z = (g @ torch.block_diag(*att.unbind(0))).view(M, V, V, HC)
        # through the activation, in place: z holds its output, whose sign is its input's
        torch.ops.aten.leaky_relu_backward.grad_input(g_z, z, ctx.slope, True, grad_input=g_z)
        return g_z.sum(2).view(M, V, H, C), g_z.sum(1).view(M, V, H, C), g_att, None


def dense_gatv2(conv: nn.Module, h: torch.Tensor, M: int, V: int,
                adj_MVV: torch.Tensor | None) -> torch.Tensor:
    """``conv`` (a torch_geometric ``GATv2Conv``: concat heads, self loops, no dropout, no
    edge features) on M graphs of V nodes ``h`` ``[M*V, D]``, with dense attention over each
    graph's nodes: ``[M*V, H*C]``, equal to ``conv(h, batched_edges(...))`` up to rounding."""
    H, C = conv.heads, conv.out_channels
    x_l = conv.lin_l(h).view(M, V, H, C)  # sources
    x_r = conv.lin_r(h).view(M, V, H, C)  # targets
    score = _GATv2Score.apply(x_r, x_l, conv.att[0], conv.negative_slope)  # [M, Vt, Vs, H]
    if adj_MVV is not None:
        score = score.masked_fill(~adj_MVV[..., None], float("-inf"))
    # every row has its self loop: torch_geometric's softmax (max shift, 1e-16 added to
    # the denominator) is this one to float rounding
    alpha = torch.softmax(score, 2)  # [M, Vt, Vs, H]
    out = torch.matmul(alpha.permute(0, 3, 1, 2), x_l.transpose(1, 2))  # [M, H, Vt, C]
    return out.transpose(1, 2).reshape(M * V, H * C) + conv.bias


def _convs() -> tuple[type[nn.Module], type[nn.Module]]:
    """torch_geometric's ``GATv2Conv`` and ``TransformerConv``, imported on first use.

    Imported here, not at the top: torch_geometric's import takes seconds (its package
    ``__init__`` imports every submodule, torch._dynamo among them) and most runs build no
    graph encoder; the first one says so before it waits. ``transformers`` is kept out of
    that import when nothing imported it yet: torch_geometric.llm imports it only for a type
    annotation (``try: ... except ImportError``), and it was about two thirds of the import's
    CPU time (~1.0 of 1.5 s beside torch._dynamo, which the first optimizer imports anyway);
    it imports normally afterwards. torch 2.14 made the deprecation of torch.jit.script,
    which torch_geometric calls as it imports, a FutureWarning every GNN run printed.
    """
    first = "torch_geometric.nn" not in sys.modules
    if first:
        log.info("building a GNN encoder: importing torch_geometric (seconds, once a process)")
    blocked = first and "transformers" not in sys.modules
    if blocked:
        sys.modules["transformers"] = None  # type: ignore[assignment]  # ImportError: skipped
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "`torch.jit.script` is deprecated", FutureWarning)
            from torch_geometric.nn import GATv2Conv, TransformerConv
    finally:
        if blocked and sys.modules.get("transformers", 0) is None:
            del sys.modules["transformers"]
    return GATv2Conv, TransformerConv


class GraphEncoder(nn.Module):
    """Message passing over ego-centred entity graphs → ``[M, out_dim]`` embeddings."""

    def __init__(
        self,
        node_dim: int,
        hidden: int = 64,
        layers: int = 2,
        heads: int = 2,
        layer: str = "gatv2",
        radius: float | None = None,
        activation: type[nn.Module] = nn.Tanh,
    ) -> None:
        super().__init__()
        if layer not in GNN_LAYERS:
            raise ValueError(f"gnn layer {layer!r} unknown; choose one of {list(GNN_LAYERS)}"
                             f"{did_you_mean(layer, GNN_LAYERS)}")
        GATv2Conv, TransformerConv = _convs()
        self.radius, self.layer = radius, layer
        # ``activation``: nn.Tanh or marl.networks.FastTanh (no parameters: same state dict)
        self.inp = nn.Sequential(nn.Linear(node_dim, hidden), activation())
        self.act = activation()
        conv = GATv2Conv if layer == "gatv2" else TransformerConv
        self.convs = nn.ModuleList(
            conv(hidden, hidden // heads, heads=heads, concat=True) for _ in range(layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.out_dim = 2 * hidden

    def forward(self, nodes_MVF: torch.Tensor, ego_M: torch.Tensor) -> torch.Tensor:
        M, V, F = nodes_MVF.shape
        width = self.inp[0].in_features
        if width != F:  # ego_view and the first layer read features by position
            raise ValueError(
                f"a gnn encoder reads {width} node features "
                f"(games.graphs.NODE_FEATURES: {', '.join(NODE_FEATURES)}); got graphs with "
                f"{F} features per node")
        x_MVF = ego_view(nodes_MVF, ego_M)
        if self.layer == "gatv2" and (self.radius is None or V <= DENSE_MAX_NODES):
            adj = neighbours(x_MVF, self.radius)

            def conv_of(conv: nn.Module, h: torch.Tensor) -> torch.Tensor:
                return dense_gatv2(conv, h, M, V, adj)
        else:
            edges = batched_edges(x_MVF, self.radius)

            def conv_of(conv: nn.Module, h: torch.Tensor) -> torch.Tensor:
                return conv(h, edges)
        h = self.inp(x_MVF.reshape(M * V, F))
        for conv, norm in zip(self.convs, self.norms, strict=True):
            h = norm(h + self.act(conv_of(conv, h)))  # residual keeps isolated nodes informative
        h_MVH = h.reshape(M, V, -1)
        ego_MH = h_MVH[torch.arange(M, device=h.device), ego_M]
        return torch.cat([ego_MH, h_MVH.mean(1)], dim=-1)
