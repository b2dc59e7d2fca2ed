"""Entity graphs of MPE scenes for GNN encoders (InforMARL-style), as plain numpy arrays.

Nodes are the scene's entities: good agents, adversaries and landmarks (obstacles
included). Node features have a fixed width whatever the number of agents:

    [x, y, vx, vy, size, is_self, is_good_agent, is_adversary, is_landmark]

Positions and velocities are relative to the ego agent when one is given (so a
policy sees the scene from its own point of view), absolute otherwise. Edges connect
every ordered pair of distinct nodes (``radius=None``) or only pairs closer than
``radius``; ``marl`` turns these arrays into torch_geometric batches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from games.core import EntityGraph, GameError

NODE_TYPES = ("agent", "adversary", "landmark")
NODE_FEATURES = ("x", "y", "vx", "vy", "size", "is_self", *(f"is_{t}" for t in NODE_TYPES))
NODE_DIM = len(NODE_FEATURES)

_EDGE_CACHE: dict[int, np.ndarray] = {}


def full_edges(num_nodes: int) -> np.ndarray:
    """``[2, V*(V-1)]`` int64 edge index of the complete directed graph without self loops."""
    if num_nodes not in _EDGE_CACHE:
        src, dst = np.nonzero(~np.eye(num_nodes, dtype=bool))
        edges = np.stack([src, dst]).astype(np.int64)
        edges.flags.writeable = False
        _EDGE_CACHE[num_nodes] = edges
    return _EDGE_CACHE[num_nodes]


def mpe_entity_graph(
    world: Any, ego: str | None = None, radius: float | None = None
) -> EntityGraph:
    """Graph of an MPE ``world`` (``env.unwrapped.world``), optionally from ``ego``'s view."""
    entities = list(world.agents) + list(world.landmarks)
    n = len(entities)
    nodes = np.zeros((n, NODE_DIM), dtype=np.float32)
    node_type = np.zeros(n, dtype=np.int64)
    for i, e in enumerate(entities):
        nodes[i, 0:2] = e.state.p_pos
        if e.movable and e.state.p_vel is not None:
            nodes[i, 2:4] = e.state.p_vel
        nodes[i, 4] = e.size
        if i < len(world.agents):
            node_type[i] = 1 if getattr(e, "adversary", False) else 0
        else:
            node_type[i] = 2
    nodes[np.arange(n), 6 + node_type] = 1.0
    agent_node = {a.name: i for i, a in enumerate(world.agents)}
    if ego is not None:
        if ego not in agent_node:
            raise GameError(f"unknown ego agent {ego!r}; agents: {list(agent_node)}")
        me = agent_node[ego]
        nodes[:, 0:4] -= nodes[me, 0:4].copy()
        nodes[me, 5] = 1.0
    if radius is None:
        edges = full_edges(n)
    else:
        d = np.linalg.norm(nodes[:, None, 0:2] - nodes[None, :, 0:2], axis=-1)
        src, dst = np.nonzero((d <= radius) & ~np.eye(n, dtype=bool))
        edges = np.stack([src, dst]).astype(np.int64)
    return EntityGraph(nodes=nodes, edge_index=edges, node_type=node_type, agent_node=agent_node)
