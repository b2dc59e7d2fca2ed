"""Opponents for league play: fixed policies that take one side of a multi-team game.

Any :class:`marl.core.Policy` can sit in the pool -- frozen snapshots of the LLM team
itself (``LLMTrainer.policy()``), classic MARL members loaded with ``marl.core.load_policy``,
tabular or random policies. Each GRPO group draws, with probability ``prob``, one policy
and one side for it; all K episodes of the group share the draw, so the group baseline
compares like with like. Otherwise (and always in single-team, cooperative games) the
team plays every seat: self-play.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from games import GameSpec
from marl.core import Policy


@dataclass
class OpponentPool:
    """Policies the team meets; see the module docstring."""

    policies: list[Policy] = field(default_factory=list)
    prob: float = 0.5  # chance that a group plays against the pool instead of itself
    max_size: int | None = None  # oldest policies are dropped beyond this many

    def __post_init__(self) -> None:
        if not 0.0 <= self.prob <= 1.0:
            raise ValueError(f"prob={self.prob}; expected a value in [0, 1]")

    def add(self, policy: Policy) -> None:
        self.policies.append(policy)
        if self.max_size is not None and len(self.policies) > self.max_size:
            self.policies.pop(0)

    def sample(self, spec: GameSpec, rng: np.random.Generator) -> dict[str, Policy]:
        """Seats -> policy for one group (empty: the team plays every seat)."""
        if not self.policies or len(spec.teams) < 2 or rng.random() >= self.prob:
            return {}
        policy = self.policies[int(rng.integers(len(self.policies)))]
        side = spec.teams[int(rng.integers(len(spec.teams)))]
        return {a.id: policy for a in spec.agents if a.team == side}
