"""Export any game as a PettingZoo environment: ``games.to_pettingzoo(game)``.

Simultaneous-move games become a ``ParallelEnv``; turn-based games become an
``AECEnv`` whose observations are ``{"observation", "action_mask"}`` dicts (PettingZoo's
convention for legal actions). When a turn-based game asks several agents to act at
once, the AEC export collects their actions one after another and applies them together.
Both pass PettingZoo's own ``api_test`` / ``parallel_api_test``. Their ``metadata`` declares
``teams``, ``roles``, ``zero_sum`` and ``max_steps``, which ``games.make("pettingzoo/...")``
reads back when the export is loaded as a PettingZoo game.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv

from games.core import ActionSpace, Game, TimeStep


def _gym_action_space(space: ActionSpace) -> spaces.Space:
    if space.discrete:
        return spaces.Discrete(space.n)
    low, high = space.bounds()  # per dimension where the game's box gives them so
    return spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)


def _gym_obs_space(game: Game, agent: str, with_mask: bool) -> spaces.Space:
    box = spaces.Box(-np.inf, np.inf, shape=game.spec.obs_shapes[agent], dtype=np.float32)
    space = game.spec.action_spaces[agent]
    if not (with_mask and space.discrete):
        return box
    mask = spaces.Box(0, 1, shape=(space.n,), dtype=np.int8)
    return spaces.Dict({"observation": box, "action_mask": mask})


def _declared(game: Game) -> dict[str, Any]:
    """What the game declares about its seats, so ``games.make("pettingzoo/...")`` of the
    export gets the same teams, roles, zero-sum flag and episode limit back."""
    spec = game.spec
    return {
        "teams": {a.id: a.team for a in spec.agents},
        "roles": {a.id: a.role for a in spec.agents},
        "zero_sum": spec.zero_sum,
        "max_steps": spec.max_steps,
    }


def _to_action(space: ActionSpace, action: Any) -> Any:
    return int(action) if space.discrete else np.asarray(action, dtype=np.float32)


class GameParallelEnv(ParallelEnv):
    """A simultaneous-move game as a PettingZoo ``ParallelEnv``."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self.possible_agents = list(game.spec.agent_ids)
        self.agents: list[str] = []
        self.metadata = {
            "name": game.spec.name,
            "render_modes": ["ansi"],
            "is_parallelizable": True,
            **_declared(game),
        }
        self.render_mode = "ansi"
        self._obs_spaces = {a: _gym_obs_space(game, a, True) for a in self.possible_agents}
        self._act_spaces = {
            a: _gym_action_space(game.spec.action_spaces[a]) for a in self.possible_agents
        }
        if game.spec.state_shape is not None:  # state() without it: a round trip through
            # games.make("pettingzoo/...") lost the state (PettingZoo's convention)
            self.state_space = spaces.Box(-np.inf, np.inf, shape=tuple(game.spec.state_shape),
                                          dtype=np.float32)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_spaces[agent]

    def _observe(self, ts: TimeStep) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for a in self.agents:
            # an agent that left at this step: its final observation, asked outside step(),
            # so held to the contract (a user's observe that fails at a terminal state is one
            # line naming the game, the step, the agent and the user's line)
            obs = ts.obs[a] if a in ts.obs else self.game.observe_checked(a, final=True)
            if isinstance(self._obs_spaces[a], spaces.Dict):
                mask = ts.legal.get(a)
                if mask is None:
                    mask = np.zeros(self.game.spec.action_spaces[a].n, dtype=bool)
                obs = {"observation": obs, "action_mask": mask.astype(np.int8)}
            out[a] = obs
        return out

    def reset(self, seed: int | None = None, options: dict | None = None):
        ts = self.game.reset(seed)
        self.agents = list(ts.acting)
        return self._observe(ts), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        spec = self.game.spec
        acting = self.game.acting_agents()
        acts = {a: _to_action(spec.action_spaces[a], actions[a]) for a in acting}
        ts = self.game.step(acts)
        prev = self.agents
        over = set(prev) - set(ts.acting)
        term = {
            a: bool(ts.terminated.get(a)) or (a in over and not ts.truncated.get(a)) for a in prev
        }
        trunc = {a: bool(ts.truncated.get(a)) for a in prev}
        rewards = {a: float(ts.rewards.get(a, 0.0)) for a in prev}
        infos: dict[str, dict] = {a: {} for a in prev}
        obs = self._observe(ts)  # every agent that acted gets its last observation
        self.agents = [a for a in prev if a in ts.acting]
        return obs, rewards, term, trunc, infos

    def render(self) -> str:
        """The text observation of every live agent."""
        g = self.game
        return "\n".join(f"{a}: {g.guarded(g.text_observation, a)}" for a in self.agents)

    def state(self) -> np.ndarray:
        s = self.game.state_checked()
        if s is None:
            raise NotImplementedError(f"{self.game.spec.name} has no global state")
        return s

    def close(self) -> None:
        self.game.close()


class GameAECEnv(AECEnv):
    """A turn-based game as a PettingZoo ``AECEnv`` with action masks."""

    def __init__(self, game: Game) -> None:
        super().__init__()
        self.game = game
        self.possible_agents = list(game.spec.agent_ids)
        self.metadata = {
            "name": game.spec.name,
            "render_modes": ["ansi"],
            "is_parallelizable": False,
            **_declared(game),
        }
        self.render_mode = "ansi"
        self._obs_spaces = {a: _gym_obs_space(game, a, True) for a in self.possible_agents}
        self._act_spaces = {
            a: _gym_action_space(game.spec.action_spaces[a]) for a in self.possible_agents
        }
        self._pending: list[str] = []
        self._buffer: dict[str, Any] = {}

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_spaces[agent]

    def observe(self, agent: str) -> Any:
        ended = (getattr(self, "terminations", {}).get(agent)
                 or getattr(self, "truncations", {}).get(agent))
        obs = self.game.observe_checked(agent, final=bool(ended))  # asked at any time
        if not isinstance(self._obs_spaces[agent], spaces.Dict):
            return obs
        if agent in self._pending:
            mask = self.game.legal_mask(agent).astype(np.int8)
        else:
            mask = np.zeros(self.game.spec.action_spaces[agent].n, dtype=np.int8)
        return {"observation": obs, "action_mask": mask}

    def render(self) -> str:
        """The text observation of the agent to act."""
        g, a = self.game, self.agent_selection
        return f"{a}: {g.guarded(g.text_observation, a)}"

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        ts = self.game.reset(seed)
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._pending = list(ts.acting)
        self._buffer = {}
        self._skip_agent_selection = None
        self.agent_selection = self._pending[0]

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self._buffer[agent] = _to_action(self.game.spec.action_spaces[agent], action)
        self._pending.pop(0)
        self._clear_rewards()
        if self._pending:
            self.agent_selection = self._pending[0]
            return
        ts = self.game.step(self._buffer)
        self._buffer = {}
        self._pending = list(ts.acting)
        for a in self.agents:
            self.rewards[a] = float(ts.rewards.get(a, 0.0))
            ended = ts.done or ts.terminated.get(a, False) or ts.truncated.get(a, False)
            self.truncations[a] = bool(ts.truncated.get(a, False))
            self.terminations[a] = bool(ended and not self.truncations[a])
        self._accumulate_rewards()
        self.agent_selection = self._pending[0] if self._pending else self.agents[0]
        self._deads_step_first()

    def close(self) -> None:
        self.game.close()


def to_pettingzoo(game: Game) -> GameParallelEnv | GameAECEnv:
    """Export ``game`` as a PettingZoo Parallel (simultaneous) or AEC (turn-based) env."""
    return GameParallelEnv(game) if game.spec.simultaneous else GameAECEnv(game)
