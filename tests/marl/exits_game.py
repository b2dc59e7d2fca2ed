"""A hand-made simultaneous game for the off-policy learners' reference tests: every way a
transition can end, in a few steps of near-random play.

Two agents, 3 actions each, one team. ``agent_0`` playing 2 leaves the game alone
(*terminated* for it only; ``agent_1`` plays on); ``agent_1`` playing 2 ends the episode for
every live agent (*terminated*); at step 4 the live agents are *truncated*. Action 2 is
illegal for both at step 0 and action 1 for ``agent_1`` on odd steps. Observations and the
global state carry fresh random numbers every step, so no two transitions look alike.

``Exits(continuous=True)``: boxes in ``[-2, 3]`` of widths 2 (``agent_0``) and 1 (``agent_1``);
an action's first entry above ``EXIT`` counts as playing 2 (leaving / ending), and the
reward reads the sum of the entries.

``Exits(wait=True)``: ``agent_1`` sits out the last step before the time limit (it does not
act, has not left, and is paid ``WAIT_REWARD``), so a truncation finds it waiting.

``Exits(graph=True)``: an entity graph for GNN encoders: one node per agent (it stays when
the agent leaves, marked gone) and one landmark.

``Exits(cut=True)``: ``agent_0`` has its own time limit: still in at step ``CUT`` (and the
episode not ended by ``agent_1``), it is *truncated alone* while ``agent_1`` plays on.
"""

from collections.abc import Sequence

import numpy as np

from games import ActionSpace, AgentSpec, Game, GameSpec, Transition
from games.core import EntityGraph
from games.graphs import NODE_DIM, full_edges

IDS = ("agent_0", "agent_1")
LIMIT = 4  # steps before the live agents are truncated
EXIT = 0.65  # continuous: a first entry above this leaves (agent_0) / ends the game (agent_1)
WAIT_REWARD = 0.3
CUT = 3  # Exits(cut=True): agent_0 is truncated alone at this step


class Exits(Game):
    def __init__(self, continuous: bool = False, wait: bool = False, cut: bool = False,
                 graph: bool = False) -> None:
        self.continuous, self.wait, self.cut = continuous, wait, cut
        spaces = ({a: ActionSpace("continuous", shape=(2 - i,), low=-2.0, high=3.0)
                   for i, a in enumerate(IDS)} if continuous
                  else {a: ActionSpace("discrete", n=3) for a in IDS})
        self.spec = GameSpec(
            name="test/exits",
            agents=tuple(AgentSpec(a, "worker", "team") for a in IDS),
            obs_shapes={a: (4,) for a in IDS},
            action_spaces=spaces,
            max_steps=LIMIT,
            simultaneous=True,
            state_shape=(5,),
            has_entity_graph=graph,
        )
        self.rng = np.random.default_rng(0)
        self.t, self.live, self.over = 0, list(IDS), False
        self.noise = np.zeros(2, np.float32)

    def _reset(self, seed: int | None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t, self.live, self.over = 0, list(IDS), False
        self.noise = self.rng.normal(size=2).astype(np.float32)

    def _step(self, actions: dict) -> Transition:
        self.t += 1
        if self.continuous:
            actions = {a: 2 if float(u[0]) > EXIT else float(np.sum(u)) for a, u in actions.items()}
        rewards = {a: 0.0 for a in IDS}
        term = {a: False for a in IDS}
        trunc = {a: False for a in IDS}
        for i, a in enumerate(IDS):
            if a in actions:
                rewards[a] = float(actions[a]) - 0.7 * self.t + 0.5 * i + float(self.noise[i])
            elif a in self.live:  # waiting
                rewards[a] = WAIT_REWARD
        if actions.get("agent_0") == 2:
            term["agent_0"] = True
            self.live.remove("agent_0")
        if actions.get("agent_1") == 2:
            for a in self.live:
                term[a] = True
            self.live, self.over = [], True
        elif self.t >= LIMIT:
            for a in self.live:
                trunc[a] = True
            self.live, self.over = [], True
        elif self.cut and self.t == CUT and "agent_0" in self.live:
            trunc["agent_0"] = True
            self.live.remove("agent_0")
        self.noise = self.rng.normal(size=2).astype(np.float32)
        return Transition(rewards, term, trunc)

    def acting_agents(self) -> tuple[str, ...]:
        if self.over:
            return ()
        if self.wait and self.t == LIMIT - 1 and "agent_0" in self.live:
            return tuple(a for a in self.live if a != "agent_1")
        return tuple(self.live)

    def observe(self, agent: str) -> np.ndarray:
        i = IDS.index(agent)
        alive = [float(a in self.live) for a in IDS]
        return np.array([self.t / LIMIT, *alive, self.noise[i]], np.float32)

    def legal_actions(self, agent: str) -> Sequence[int]:
        if agent not in self.acting_agents():
            return []
        if self.continuous:
            return []
        if self.t == 0:
            return [0, 1]
        return [0, 2] if agent == "agent_1" and self.t % 2 else [0, 1, 2]

    def text_observation(self, agent: str) -> str:
        return f"step {self.t}"

    def entity_graph(self, agent: str | None = None) -> EntityGraph | None:
        """Nodes ``[x, y, vx, vy, size, is_self, is_agent, is_adversary, is_landmark]``:
        agent ``i`` at ``(noise_i, alive_i)`` moving ``(t / LIMIT, 0)``, the landmark at 0
        (absolute coordinates; ``marl.gnn`` centres them on each ego)."""
        if not self.spec.has_entity_graph:
            return None
        nodes = np.zeros((3, NODE_DIM), np.float32)
        for i, a in enumerate(IDS):
            nodes[i, :3] = self.noise[i], float(a in self.live), self.t / LIMIT
            nodes[i, 6] = 1.0
        nodes[:2, 4], nodes[2, 4], nodes[2, 8] = 0.1, 0.3, 1.0
        return EntityGraph(nodes=nodes, edge_index=full_edges(3), node_type=np.array([0, 0, 2]),
                           agent_node={a: i for i, a in enumerate(IDS)})

    def state(self) -> np.ndarray:
        alive = [float(a in self.live) for a in IDS]
        return np.array([self.t / LIMIT, *alive, *self.noise], np.float32)


def left_before(rec, agents):
    """Per recorded step, the ``(copy, agent)`` pairs that had left their episode before it
    (terminated or truncated alone; back where the copy's episode ended)."""
    gone, out = set(), []
    for _, _, nxt in rec:
        out.append(set(gone))
        for c in range(len(nxt.done)):
            for a in agents:
                if nxt.done[c]:
                    gone.discard((c, a))
                elif nxt.terminated[a][c] or nxt.truncated[a][c]:
                    gone.add((c, a))
    return out


def record(learner, vg, steps=40):
    """Play ``steps`` steps of ``vg`` with ``learner`` (it records them too); the
    ``(step, actions, next step)`` triples."""
    vs, rec = vg.reset(), []
    for _ in range(steps):
        actions = learner.act(vs)
        nxt = vg.step(actions)
        learner.observe(nxt)
        rec.append((vs, actions, nxt))
        vs = nxt
    return rec
