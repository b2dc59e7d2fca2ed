"""Cooperative matrix games: one simultaneous move, every agent gets the common payoff.

``matrix/climbing`` is Claus & Boutilier's climbing game (1998): the optimal joint action
(0, 0) pays 11 but sits next to -30 penalties, so independent learners drift to the safe
(2, 2) = 5. ``matrix/penalty`` (k = -10 by default) has two optima (0, 0) and (2, 2)
worth 10 flanked by k. Value-decomposition learners (VDN, QMIX) are tested on them.
``repeats`` > 1 plays the same matrix that many times (observation: the step index, one-hot;
at most :data:`MAX_REPEATS`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from games import limits
from games.core import ActionSpace, AgentSpec, Game, GameError, GameSpec, Transition
from games.registry import register

MAX_REPEATS = 10_000
"""Most rounds of a repeated matrix game: the observation one-hot encodes the round, so each
is ``repeats`` floats (10**8 made 400 MB observations, 10**9 failed with a MemoryError)."""
CLIMBING = ((11.0, -30.0, 0.0), (-30.0, 7.0, 6.0), (0.0, 0.0, 5.0))


def penalty_matrix(k: float) -> tuple[tuple[float, ...], ...]:
    return ((10.0, 0.0, k), (0.0, 2.0, 0.0), (k, 0.0, 10.0))


class MatrixGame(Game):
    """A common-payoff 2-player matrix game, optionally repeated."""

    def __init__(self, name: str, payoff: Sequence[Sequence[float]], repeats: int = 1) -> None:
        self.payoff = np.asarray(payoff, dtype=np.float64)
        if self.payoff.ndim != 2 or self.payoff.size == 0:
            raise GameError(f"payoff must be a non-empty 2-D matrix, got {self.payoff.shape}")
        if repeats < 1:
            raise GameError(f"repeats must be >= 1, got {repeats}")
        if repeats > MAX_REPEATS and not limits.lifted():  # before anything is built
            raise GameError(limits.too_large(name, "repeats", repeats, 1, MAX_REPEATS))
        self.repeats = repeats
        ids = ("agent_0", "agent_1")
        n0, n1 = self.payoff.shape
        self.spec = GameSpec(
            name=name,
            agents=tuple(AgentSpec(a, role=a, team="team") for a in ids),
            obs_shapes={a: (repeats,) for a in ids},
            action_spaces={
                "agent_0": ActionSpace("discrete", n=n0),
                "agent_1": ActionSpace("discrete", n=n1),
            },
            max_steps=repeats,
            simultaneous=True,
            state_shape=(repeats,),
        )
        self.t = 0

    def _reset(self, seed: int | None) -> None:
        self.t = 0

    def _step(self, actions: dict) -> Transition:
        r = float(self.payoff[actions["agent_0"], actions["agent_1"]])
        self.t += 1
        over = self.t >= self.repeats
        ids = self.spec.agent_ids
        return Transition({a: r for a in ids}, {a: over for a in ids}, {a: False for a in ids})

    def acting_agents(self) -> tuple[str, ...]:
        return () if self.t >= self.repeats else self.spec.agent_ids

    def observe(self, agent: str) -> np.ndarray:
        obs = np.zeros(self.repeats, dtype=np.float32)
        obs[min(self.t, self.repeats - 1)] = 1.0
        return obs

    def legal_actions(self, agent: str) -> Sequence[int]:
        return range(self.spec.action_spaces[agent].n) if self.t < self.repeats else []

    def action_text(self, agent: str, action: int) -> str:
        return f"choose {'ABCDEFGHIJ'[action] if action < 10 else action}"

    def text_observation(self, agent: str) -> str:
        return f"Round {self.t + 1} of {self.repeats}; you are {agent}. Payoffs:\n{self.payoff}"

    def state(self) -> np.ndarray:
        return self.observe("agent_0")


@register("matrix/climbing")
def climbing(repeats: int = 1) -> MatrixGame:
    return MatrixGame("matrix/climbing", CLIMBING, repeats)


@register("matrix/penalty")
def penalty(k: float = -10.0, repeats: int = 1) -> MatrixGame:
    return MatrixGame("matrix/penalty", penalty_matrix(k), repeats)
