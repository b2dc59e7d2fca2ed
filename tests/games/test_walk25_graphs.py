"""A user game's entity graph is held to the layout marl's GNN encoders read
(``games.graphs.NODE_FEATURES``, ``NODE_DIM`` wide; a row of ``agent_node`` for every agent)
by ``check_game`` and by ``VectorGame(with_graphs=True)``, in one line naming the game, the
step and what is wrong. Before (walk 25): a graph of 5 features per node passed check_game and
crashed ``selfplay-train encoder=gnn`` with ``IndexError`` in ``marl/gnn.py:ego_view`` (a wider
one would have been read in part), and ``entity_graph()`` returning None with
``AttributeError`` in ``VectorGame.__init__``."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import games
from games.graphs import NODE_DIM
from tests import subprocs

# The walker's cooperative coverage game (3 agents, 3 landmarks), with ``width`` node
# features, ``graph="none"`` (entity_graph() returns None), ``"grow"`` (one more node after
# the first step) or ``"rows"`` (agent_node misses an agent).
COVERAGE = '''
import numpy as np
import games
from games.graphs import NODE_DIM, full_edges

MOVES = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.float32)


class Coverage(games.Game):
    def __init__(self, n=3, steps=4, width=NODE_DIM, graph=""):
        self.n, self.steps, self.width, self.graph = n, steps, width, graph
        ids = tuple(f"agent_{i}" for i in range(n))
        self.spec = games.GameSpec(
            name="w25_coverage",
            agents=tuple(games.AgentSpec(a, role="agent", team="team") for a in ids),
            obs_shapes={a: (4 * n,) for a in ids},
            action_spaces={a: games.ActionSpace("discrete", n=5) for a in ids},
            max_steps=steps, simultaneous=True, state_shape=(4 * n,), has_entity_graph=True)
        self.rng = np.random.default_rng()

    def _reset(self, seed):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents_pos = self.rng.uniform(-1, 1, size=(self.n, 2)).astype(np.float32)
        self.land = self.rng.uniform(-1, 1, size=(self.n, 2)).astype(np.float32)
        self.t = 0

    def _step(self, actions):
        for i, a in enumerate(self.spec.agent_ids):
            self.agents_pos[i] = np.clip(self.agents_pos[i] + 0.1 * MOVES[actions[a]], -1, 1)
        self.t += 1
        d = np.linalg.norm(self.land[:, None] - self.agents_pos[None], axis=-1).min(1).sum()
        rew = {a: -float(d) for a in self.spec.agent_ids}
        return games.Transition(rew, {a: False for a in rew},
                                {a: self.t >= self.steps for a in rew})

    def acting_agents(self):
        return () if self.t >= self.steps else self.spec.agent_ids

    def state(self):
        return np.concatenate([self.agents_pos.ravel(), self.land.ravel()]).astype(np.float32)

    def observe(self, agent):
        own = self.agents_pos[self.spec.agent_ids.index(agent)]
        return np.concatenate([(self.agents_pos - own).ravel(),
                               (self.land - own).ravel()]).astype(np.float32)

    def legal_actions(self, agent):
        return list(range(5))

    def entity_graph(self, agent=None):
        if self.graph == "none":
            return None
        v = 2 * self.n + (self.graph == "grow" and self.t > 0)
        nodes = np.zeros((v, NODE_DIM), dtype=np.float32)
        pos = np.concatenate([self.agents_pos, self.land, np.zeros((v - 2 * self.n, 2))])
        if agent is not None:
            i = self.spec.agent_ids.index(agent)
            pos = pos - self.agents_pos[i]
            nodes[i, 5] = 1.0
        nodes[:, 0:2] = pos
        nodes[:, 4] = 0.05
        node_type = np.array([0] * self.n + [2] * (v - self.n), dtype=np.int64)
        nodes[np.arange(v), 6 + node_type] = 1.0
        if self.width < NODE_DIM:  # the walker's coverage_w5: the first features only
            nodes = nodes[:, :self.width].copy()
        elif self.width > NODE_DIM:  # features of its own after the layout's
            nodes = np.concatenate([nodes, np.ones((v, self.width - NODE_DIM), np.float32)], 1)
        rows = {a: i for i, a in enumerate(self.spec.agent_ids)}
        if self.graph == "rows":
            rows.pop("agent_2")
        return games.EntityGraph(nodes, full_edges(v), node_type, rows)

    def text_observation(self, agent):
        return f"You are {agent}."


games.register("w25_coverage")(Coverage)
'''

LAYOUT = ("in the order of games.graphs.NODE_FEATURES (x, y, vx, vy, size, is_self, is_agent, "
          "is_adversary, is_landmark), zeros for features the game lacks")


@pytest.fixture()
def coverage(tmp_path, monkeypatch):
    """The module of ``COVERAGE``, written in ``tmp_path`` and imported."""
    (tmp_path / "w25_coverage.py").write_text(COVERAGE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("w25_coverage", None)
    __import__("w25_coverage")
    yield tmp_path
    sys.modules.pop("w25_coverage", None)


def test_the_layouts_graph_passes_and_plays(coverage):
    games.check_game(games.make("w25_coverage"), episodes=3)
    vg = games.VectorGame("w25_coverage", 2, with_graphs=True)
    vs = vg.reset()
    for _ in range(5):  # past an episode's end: final graphs too
        vs = vg.step({a: np.ones(2, np.int64) for a in vg.spec.agent_ids})
    assert vs.graph.shape == (2, 6, NODE_DIM) and vs.final_graph.shape == (2, 6, NODE_DIM)
    assert vg.agent_node == {"agent_0": 0, "agent_1": 1, "agent_2": 2}


@pytest.mark.parametrize("width", [5, NODE_DIM + 3])
def test_check_game_refuses_another_node_width(coverage, width):
    with pytest.raises(games.GameCheckError, match=(
            rf"^w25_coverage\(width={width}\) seed 0 step 0: entity graph nodes have {width} "
            rf"features, expected games.graphs.NODE_DIM=9 {re.escape(LAYOUT)}$")):
        games.check_game(games.make("w25_coverage", width=width), episodes=1)


@pytest.mark.parametrize("width", [5, NODE_DIM + 3])
def test_vector_game_refuses_another_node_width_in_one_line(coverage, width):
    """A wider graph is refused too: marl would have read its first 9 features only."""
    with pytest.raises(games.GameContractError) as info:
        games.VectorGame("w25_coverage", 2, with_graphs=True, width=width)
    assert str(info.value) == (f"w25_coverage(width={width}) step 0: entity graph nodes have "
                               f"{width} features, expected games.graphs.NODE_DIM=9 {LAYOUT}")


def test_vector_game_refuses_a_none_graph_in_one_line(coverage):
    with pytest.raises(games.GameContractError, match=(
            r"^w25_coverage\(graph='none'\) step 0: entity_graph\(\) returned None, expected a "
            r"games.EntityGraph \(the spec says has_entity_graph=True\)$")):
        games.VectorGame("w25_coverage", 2, with_graphs=True, graph="none")


def test_agent_node_must_give_every_agent_a_row(coverage):
    with pytest.raises(games.GameContractError, match=(
            r"step 0: entity graph's agent_node has no row for \['agent_2'\]")):
        games.VectorGame("w25_coverage", 2, with_graphs=True, graph="rows")
    with pytest.raises(games.GameCheckError, match=r"agent_node has no row for \['agent_2'\]"):
        games.check_game(games.make("w25_coverage", graph="rows"), episodes=1)


def test_a_graph_that_changes_its_node_count_is_one_line(coverage):
    """Learners keep ``[T, B, V, F]`` graph buffers: numpy's stacking error was a traceback."""
    vg = games.VectorGame("w25_coverage", 2, with_graphs=True, graph="grow")
    vg.reset()
    with pytest.raises(games.GameContractError, match=(
            r"^w25_coverage\(graph='grow'\) step 1: entity graph has 7 nodes, its first had "
            r"6; a game's graphs keep one number of nodes$")):
        vg.step({a: np.zeros(2, np.int64) for a in vg.spec.agent_ids})


def test_a_pettingzoo_graph_passes_as_before():
    game = games.make("pettingzoo/mpe2.simple_tag_v3", max_cycles=5)
    games.check_game(game, episodes=2)
    vg = games.VectorGame("pettingzoo/mpe2.simple_tag_v3", 2, with_graphs=True, max_cycles=5)
    vs = vg.reset()
    assert vs.graph.shape[-1] == NODE_DIM


def test_selfplay_train_refuses_the_graph_in_one_line(coverage):
    """Was an IndexError traceback (marl/gnn.py:ego_view); now exit 2, one line, no run
    folder. The None graph (an AttributeError) is refused at the same place
    (games.graphs.graph_problem, raised by VectorGame as the same GameContractError) and
    its line is checked in process above: a second child cost ~6 s CPU."""
    line = ("w25_coverage(width=5) step 0: entity graph nodes have 5 features, expected "
            f"games.graphs.NODE_DIM=9 {LAYOUT}")
    args = [sys.executable, "-m", "populations.cli", "imports=[w25_coverage]",
            "game.name=w25_coverage", "game.kwargs.width=5", "encoder=gnn", "frames=64",
            "num_envs=2", "progress=false", "logger=none", "hydra.run.dir=runs/r1"]
    res = subprocs.run(args, cwd=coverage, capture_output=True, text=True, timeout=600)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines()[-1] == f"selfplay-train: {line}", res.stderr
    assert "Traceback" not in res.stderr
    assert not (coverage / "runs").exists()
