"""A GNN encoder refuses graphs of another node width than it was built for, in one line
naming both and ``games.graphs.NODE_FEATURES``: a narrower graph was an ``IndexError`` in
``ego_view`` (walk 25), a wider one a shape error of the first layer, each a traceback
(``games.VectorGame`` refuses such a game's graphs first; this holds for any other input)."""

from __future__ import annotations

import pytest
import torch

from games.graphs import NODE_DIM
from marl.gnn import GraphEncoder


@pytest.mark.parametrize("width", [5, NODE_DIM + 3])
def test_another_node_width_is_refused_in_one_line(width):
    enc = GraphEncoder(NODE_DIM, hidden=8, layers=1, heads=2)
    with pytest.raises(ValueError, match=(
            rf"^a gnn encoder reads 9 node features \(games.graphs.NODE_FEATURES: x, y, vx, vy, "
            rf"size, is_self, is_agent, is_adversary, is_landmark\); got graphs with {width} "
            r"features per node$")):
        enc(torch.zeros(2, 4, width), torch.zeros(2, dtype=torch.long))
    assert enc(torch.zeros(2, 4, NODE_DIM), torch.zeros(2, dtype=torch.long)).shape == (2, 16)
