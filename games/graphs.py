"""Entity graphs of MPE scenes for GNN encoders (InforMARL-style), as plain numpy arrays.

Nodes are the scene's entities: good agents, adversaries and landmarks (obstacles
included). Node features have a fixed width whatever the number of agents:

    [x, y, vx, vy, size, is_self, is_good_agent, is_adversary, is_landmark]

Positions and velocities are relative to the ego agent when one is given (so a
policy sees the scene from its own point of view), absolute otherwise. Edges connect
every ordered pair of distinct nodes (``radius=None``) or only pairs closer than
``radius``; ``marl`` turns these arrays into torch_geometric batches.

A game of one's own gives its entities in the same layout (:func:`graph_problem` says what
of it a graph breaks): ``NODE_DIM`` features per node in the order of ``NODE_FEATURES``,
zeros for what the game does not have, and ``agent_node`` mapping every agent to its row.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from games.core import EntityGraph, GameError

NODE_TYPES = ("agent", "adversary", "landmark")
NODE_FEATURES = ("x", "y", "vx", "vy", "size", "is_self", *(f"is_{t}" for t in NODE_TYPES))
NODE_DIM = len(NODE_FEATURES)

_EDGE_CACHE: dict[int, np.ndarray] = {}
LARGE_GRAPH = 1000
"""Edges a GNN encoder passes messages along per game copy and step, summed over the agents'
graphs (``A * V * (V - 1)``: each of the ``A`` agents reads the complete graph of the ``V``
entities from its own view), from which it is warned about (:func:`warn_large_graph`): an
MLP's cost grows with the observation, a GNN's with this. MAPPO, CPU, 3,200 frames of 32
copies, seconds with encoder=mlp -> encoder=gnn (session 40): vmas/simple_spread 3 agents x 6
nodes, 90 edges: 2.6 -> 19.7 (8x); give_way 2 x 12, 264: 4.3 -> 28.3 (7x); waterfall
5 x 17, 1,360: 9.3 -> 186.8 (20x); multi_give_way 4 x 20, 1,520: 5.9 -> 194.9 (33x; walk40a
measured 14x). Warned: ball_passage, football, joint_passage, multi_give_way, passage,
pollock, road_traffic, waterfall; not discovery or simple_world_comm (660)."""
_warned_large: set[str] = set()  # games warned about (once per game and process)
log = logging.getLogger(__name__)


def graph_problem(graph: Any, agents: Iterable[str]) -> str | None:
    """What of the entity-graph layout ``graph`` (a game's ``entity_graph()``) breaks, as one
    clause (None: nothing): an :class:`EntityGraph` whose ``nodes`` are float32 ``[V,
    NODE_DIM]`` in the order of ``NODE_FEATURES`` (the GNN encoders read features by
    position: a narrower graph cannot be read, a wider one would be read in part, so both are
    refused) and whose ``agent_node`` gives each of ``agents`` a row in ``[0, V)``."""
    if not isinstance(graph, EntityGraph):
        got = "None" if graph is None else f"a {type(graph).__name__}"
        return (f"entity_graph() returned {got}, expected a games.EntityGraph (the spec says "
                "has_entity_graph=True)")
    nodes = graph.nodes
    shape = getattr(nodes, "shape", None)
    if not isinstance(nodes, np.ndarray) or nodes.ndim != 2 or nodes.dtype != np.float32:
        what = f"{nodes.dtype} of shape {shape}" if isinstance(nodes, np.ndarray) \
            else f"a {type(nodes).__name__}"
        return (f"entity graph nodes are {what}, expected a float32 array [V, NODE_DIM] = "
                f"[V, {NODE_DIM}]")
    if shape[1] != NODE_DIM:
        return (f"entity graph nodes have {shape[1]} features, expected games.graphs.NODE_DIM="
                f"{NODE_DIM} in the order of games.graphs.NODE_FEATURES "
                f"({', '.join(NODE_FEATURES)}), zeros for features the game lacks")
    rows = graph.agent_node if isinstance(graph.agent_node, Mapping) else {}
    missing = [a for a in agents if a not in rows]
    if missing:
        return (f"entity graph's agent_node has no row for {missing}; expected "
                f"{{agent: row of its node}} for every agent (got {dict(rows)})")
    bad = {a: rows[a] for a in agents
           if not isinstance(rows[a], (int, np.integer)) or not 0 <= rows[a] < shape[0]}
    if bad:
        return (f"entity graph's agent_node rows {bad} are not node rows of its {shape[0]} "
                f"nodes (0..{shape[0] - 1})")
    return None


def warn_large_graph(game: str, num_nodes: int, num_agents: int) -> bool:
    """Warn once per ``game`` and process that a GNN reads its entity graphs of
    ``num_nodes`` nodes, one per agent of ``num_agents``, when they hold :data:`LARGE_GRAPH`
    edges or more (walk40a: vmas/multi_give_way trained ~14x slower than with an MLP, without
    a word; images get such a warning, ``games.pettingzoo.LARGE_OBS``). Called where a game
    is built for a GNN (``with_graphs=True``). True when it warned."""
    edges = num_agents * num_nodes * (num_nodes - 1)
    if edges < LARGE_GRAPH or game in _warned_large:
        return False
    _warned_large.add(game)
    log.warning("%s: a GNN encoder passes messages along %d edges per game copy and step (%d "
                "agents, each reading the graph of all %d entities): expect training an order "
                "of magnitude slower than with encoder=mlp (waterfall, multi_give_way: 20-33x on a "
                "CPU); encoder=mlp, or fewer agents or entities, trains much faster",
                game, edges, num_agents, num_nodes)
    return True


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
