"""PettingZoo environments through the game contract: ``games.make("pettingzoo/<module>")``.

The module path is any importable PettingZoo-style module (``mpe2.simple_spread_v3``,
``pettingzoo.classic.tictactoe_v3``); keyword arguments are forwarded to it.

* A module with ``parallel_env`` (the MPE scenarios) is driven through the Parallel API:
  every live agent acts each step.
* Otherwise ``env()`` is driven through the AEC API: the selected agent acts, its
  ``action_mask`` becomes the legal mask, and agents that are done are stepped out.

Roles are agent names without their index (``adversary_0`` → ``adversary``) in Parallel
games and the seat names in turn-based games, where every seat is its own team.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium import spaces

from games.core import (
    ActionSpace,
    AgentSpec,
    EntityGraph,
    Game,
    GameError,
    GameSpec,
    Transition,
    UnknownGameError,
)
from games.graphs import mpe_entity_graph

MPE_MOVES = ("no_action", "move_left", "move_right", "move_down", "move_up")
# Episode lengths of the classic board games (moves until the board is full).
CLASSIC_MAX_STEPS = {"tictactoe": 9, "connect_four": 42}
DEFAULT_MAX_STEPS = 1000


def _import(module_path: str) -> ModuleType:
    try:
        return importlib.import_module(module_path)
    except ImportError as err:
        raise UnknownGameError(
            f"cannot import PettingZoo module {module_path!r} ({err}); use a module path "
            "such as 'mpe2.simple_spread_v3' or 'pettingzoo.classic.tictactoe_v3'"
        ) from None


def _base_role(agent: str) -> str:
    return re.sub(r"_\d+$", "", agent)


def _action_space(space: spaces.Space, where: str) -> ActionSpace:
    if isinstance(space, spaces.Discrete):
        return ActionSpace("discrete", n=int(space.n))
    if isinstance(space, spaces.Box):
        return ActionSpace(
            "continuous",
            shape=tuple(space.shape),
            low=float(np.min(space.low)),
            high=float(np.max(space.high)),
        )
    raise GameError(f"{where}: unsupported action space {space}; Discrete or Box is accepted")


def _obs_space(space: spaces.Space) -> spaces.Space:
    if isinstance(space, spaces.Dict) and "observation" in space.spaces:
        return space["observation"]
    return space


def _array_text(x: np.ndarray) -> str:
    return np.array2string(np.asarray(x, dtype=np.float32).ravel(), precision=2, separator=" ")


class PettingZooGame(Game):
    """A PettingZoo Parallel or AEC environment behind the game contract."""

    def __init__(self, module_path: str, **kwargs: Any) -> None:
        module = _import(module_path)
        self.parallel = hasattr(module, "parallel_env")
        factory = module.parallel_env if self.parallel else getattr(module, "env", None)
        if factory is None:
            raise UnknownGameError(f"{module_path!r} has neither parallel_env nor env")
        max_steps = kwargs.pop("max_steps", None)
        try:
            self.env = factory(**kwargs)
        except TypeError as err:
            raw = getattr(module, "raw_env", factory)
            accepted = [p for p in inspect.signature(raw).parameters if p != "self"]
            raise GameError(
                f"bad arguments for pettingzoo/{module_path} {kwargs}: {err}; accepted: {accepted}"
            ) from None
        self.name = module_path
        env = self.env
        agents = tuple(env.possible_agents)
        short = module_path.rsplit(".", 1)[-1].rsplit("_v", 1)[0]
        self._world = getattr(env.unwrapped, "world", None)  # MPE scenarios only
        if self.parallel:
            roles = {a: _base_role(a) for a in agents}
            adversarial = any("adversary" in r for r in roles.values())
            teams = {
                a: ("adversary" if "adversary" in r else "good") if adversarial else "team"
                for a, r in roles.items()
            }
            max_steps = max_steps or getattr(env.unwrapped, "max_cycles", None)
        else:
            roles = {a: a for a in agents}
            teams = dict(roles)
            max_steps = max_steps or CLASSIC_MAX_STEPS.get(short)
        self._action_spaces = {a: _action_space(env.action_space(a), module_path) for a in agents}
        obs_spaces = {a: _obs_space(env.observation_space(a)) for a in agents}
        state_space = getattr(env, "state_space", None) if self.parallel else None
        self.spec = GameSpec(
            name=f"pettingzoo/{module_path}",
            agents=tuple(AgentSpec(a, roles[a], teams[a]) for a in agents),
            obs_shapes={a: (int(np.prod(obs_spaces[a].shape)),) for a in agents},
            action_spaces=self._action_spaces,
            max_steps=int(max_steps or DEFAULT_MAX_STEPS),
            zero_sum=not self.parallel and len(agents) == 2 and "classic" in module_path,
            simultaneous=self.parallel,
            state_shape=(int(np.prod(state_space.shape)),) if state_space is not None else None,
            has_entity_graph=self._world is not None,
        )
        self._move_names = short.startswith("simple")
        self._all_legal = {}
        for a, sp in self._action_spaces.items():
            if sp.discrete:
                self._all_legal[a] = np.ones(sp.n, dtype=bool)
                self._all_legal[a].flags.writeable = False
        self._obs: dict[str, np.ndarray] = {}
        self._live: tuple[str, ...] = ()
        self._t = 0
        self._seeded = False

    # ------------------------------------------------------------------- contract
    def _reset(self, seed: int | None) -> None:
        if seed is None and not self._seeded:
            seed = int(np.random.default_rng().integers(2**31))
        self._seeded = True
        self._t = 0
        if self.parallel:
            obs, _ = self.env.reset(seed=seed)
            self._obs = {a: np.asarray(o, dtype=np.float32).ravel() for a, o in obs.items()}
            self._live = tuple(self.env.agents)
        else:
            self.env.reset(seed=seed)
            self._live = self._aec_acting()

    def _step(self, actions: dict[str, Any]) -> Transition:
        self._t += 1
        tr = self._parallel_step(actions) if self.parallel else self._aec_step(actions)
        if self._live and self._t >= self.spec.max_steps:  # our own time limit
            for a in self._live:
                tr.truncated[a] = True
            self._live = ()
        return tr

    def _parallel_step(self, actions: dict[str, Any]) -> Transition:
        obs, rew, term, trunc, info = self.env.step(actions)
        self._obs = {a: np.asarray(o, dtype=np.float32).ravel() for a, o in obs.items()}
        self._live = tuple(a for a in self.env.agents if not (term.get(a) or trunc.get(a)))
        ids = self.spec.agent_ids
        return Transition(
            rewards={a: float(rew.get(a, 0.0)) for a in ids},
            terminated={a: bool(term.get(a, False)) for a in ids},
            truncated={a: bool(trunc.get(a, False)) for a in ids},
            info={"agents": info},
        )

    def _aec_step(self, actions: dict[str, Any]) -> Transition:
        env = self.env
        ((agent, action),) = actions.items()
        env.step(action)
        ids = self.spec.agent_ids
        rewards = {a: float(env.rewards.get(a, 0.0)) for a in ids}
        term = {a: bool(env.terminations.get(a, False)) for a in ids}
        trunc = {a: bool(env.truncations.get(a, False)) for a in ids}
        self._live = self._aec_acting(rewards, term, trunc)
        return Transition(rewards, term, trunc)

    def _aec_acting(
        self,
        rewards: dict[str, float] | None = None,
        term: dict[str, bool] | None = None,
        trunc: dict[str, bool] | None = None,
    ) -> tuple[str, ...]:
        """Step out agents that are done; return the next acting agent (or none)."""
        env = self.env
        while env.agents:
            sel = env.agent_selection
            if not (env.terminations[sel] or env.truncations[sel]):
                return (sel,)
            if all(env.terminations[a] or env.truncations[a] for a in env.agents):
                return ()
            env.step(None)
            if rewards is not None:
                for a in env.agents:
                    rewards[a] += float(env.rewards.get(a, 0.0))
                    term[a] = bool(env.terminations.get(a, False))  # type: ignore[index]
                    trunc[a] = bool(env.truncations.get(a, False))  # type: ignore[index]
        return ()

    def acting_agents(self) -> tuple[str, ...]:
        return self._live

    def observe(self, agent: str) -> np.ndarray:
        if self.parallel:
            return self._obs[agent]
        obs = self.env.observe(agent)
        if isinstance(obs, dict):
            obs = obs["observation"]
        return np.asarray(obs, dtype=np.float32).ravel()

    def legal_actions(self, agent: str) -> Sequence[int]:
        if agent not in self._live:
            return []
        if self.parallel:
            return range(self._action_spaces[agent].n)
        obs = self.env.observe(agent)
        if isinstance(obs, dict) and "action_mask" in obs:
            return np.flatnonzero(obs["action_mask"]).tolist()
        return range(self._action_spaces[agent].n)

    def legal_mask(self, agent: str) -> np.ndarray:
        if self.parallel and agent in self._live:
            return self._all_legal[agent]
        if not self.parallel and agent in self._live:
            obs = self.env.observe(agent)
            if isinstance(obs, dict) and "action_mask" in obs:
                return np.asarray(obs["action_mask"], dtype=bool)
        return super().legal_mask(agent)

    def text_observation(self, agent: str) -> str:
        role = self.spec.agent(agent).role
        return f"{self.name} step {self._t}; you are {agent} ({role}); observation: " + (
            _array_text(self.observe(agent))
        )

    def action_text(self, agent: str, action: int) -> str:
        if self._move_names and self._action_spaces[agent].n == len(MPE_MOVES):
            return MPE_MOVES[int(action)]
        return super().action_text(agent, action)

    def state(self) -> np.ndarray | None:
        if self.spec.state_shape is None:
            return None
        return np.asarray(self.env.state(), dtype=np.float32).ravel()

    def entity_graph(self, agent: str | None = None) -> EntityGraph | None:
        if self._world is None:
            return None
        return mpe_entity_graph(self._world, ego=agent)

    def close(self) -> None:
        self.env.close()
