"""What the cooperative tool tasks share: a fixed table of action texts and team rewards.

Text is the whole interface of a tool task: every message and tool call an agent can make
is one entry of a finite table of action texts built from templates (``send 7``,
``calc 7 + 3``, ``lookup neon``), so LLM agents act by text while numeric learners get an
ordinary discrete action space with legal masks. Which entries are legal depends on what
the agent has seen (numbers it holds or was told, results it obtained), which keeps the
legal sets small and grounded in the observation.

Every agent is on team ``team`` and receives the same verifiable reward: 1 when the final
answer is correct, 0 otherwise; the last transition's ``info`` carries ``success``.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

import numpy as np

from games import limits
from games.core import ActionSpace, AgentSpec, Game, GameError, GameSpec, Transition

TEAM = "team"

MAX_TURNS = 1000
"""Most turns a tool task's episode may last (``solver_turns``, ``max_turns``): a game name
read from a file cannot make an episode that never ends in practice."""


def check_at_most(game: str, **values: object) -> None:
    """Refuse, before anything is built, a size argument above its bound.

    ``values`` maps each argument to ``(value, low, high)``; a number above ``high`` is
    refused in one line naming the value and the accepted range, so a name read from a file
    (``tool/relay(max_value=100000000)``, whose action table grows as ``max_value``
    squared) allocates nothing. Values below ``low`` are each task's own check.

    Raises:
        GameError: ``<game>: <name>=<value> is too large; accepted: an integer in [low, high]
            (SELFPLAY_GAME_LIMITS=off ...)``; that environment setting lifts the bounds
            (:mod:`games.limits`).
    """
    for name, (value, low, high) in values.items():
        if (isinstance(value, int | float) and not isinstance(value, bool) and value > high
                and not limits.lifted()):
            raise GameError(limits.too_large(game, name, value, low, high))


class ToolTask(Game):
    """Base of the tool tasks: subclasses fill ``self.actions`` and implement the rules."""

    cooperative = True
    """Every seat gets the same reward, whatever ``teams=`` groups them in: no side can beat
    another (a self-play league refuses the game; its team trains alone)."""

    def __init__(self, name: str, agents: Sequence[tuple[str, str]], actions: Sequence[str],
                 obs_width: int, max_steps: int) -> None:
        if len(set(actions)) != len(actions):
            raise GameError(f"{name}: action texts must be unique")
        self.actions = list(actions)
        self.index = {text: i for i, text in enumerate(self.actions)}
        space = ActionSpace("discrete", n=len(self.actions))
        ids = [a for a, _ in agents]
        self.spec = GameSpec(
            name=name,
            agents=tuple(AgentSpec(a, role=r, team=TEAM) for a, r in agents),
            obs_shapes={a: (obs_width,) for a in ids},
            action_spaces={a: space for a in ids},
            max_steps=max_steps,
        )
        self._rng = np.random.default_rng()
        self.done = True
        self.success = False

    # ---------------------------------------------------------------- for subclasses
    @abc.abstractmethod
    def _new_task(self, rng: np.random.Generator) -> None:
        """Draw a task instance and clear the episode state."""

    @abc.abstractmethod
    def _legal_texts(self, agent: str) -> list[str]:
        """Action texts ``agent`` may use now (any order; must be in ``self.actions``)."""

    @abc.abstractmethod
    def _apply(self, agent: str, text: str) -> None:
        """Apply one action text; set ``self.done`` / ``self.success`` when it ends the task."""

    # ------------------------------------------------------------------- contract
    def _reset(self, seed: int | None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.done, self.success = False, False
        self._new_task(self._rng)

    def _step(self, actions: dict[str, int]) -> Transition:
        for agent, action in actions.items():
            self._apply(agent, self.actions[int(action)])
        ids = self.spec.agent_ids
        reward = 1.0 if (self.done and self.success) else 0.0
        info = {"success": self.success} if self.done else {}
        return Transition({a: reward for a in ids}, {a: self.done for a in ids},
                          {a: False for a in ids}, info)

    def legal_actions(self, agent: str) -> Sequence[int]:
        if self.done or agent not in self.acting_agents():
            return []
        return sorted(self.index[t] for t in set(self._legal_texts(agent)))

    def action_text(self, agent: str, action: int) -> str:
        return self.actions[int(action)]


def one_hot(width: int, index: int | None) -> np.ndarray:
    """float32 ``[width]`` with a 1 at ``index`` (all zeros when ``index`` is None)."""
    out = np.zeros(width, np.float32)
    if index is not None:
        out[index] = 1.0
    return out
