"""Plain records passed between action modes, rollouts and the trainer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from games.vector import episode_success


@dataclass
class Request:
    """One pending LLM decision.

    Attributes:
        prompt: the prompt text.
        legal: the legal action texts.
        candidates: the continuation scored for each legal action (score mode).
        parse: maps generated text to an index into ``legal`` (None when it does not parse).
    """

    prompt: str
    legal: list[str]
    candidates: list[str]
    parse: Callable[[str], int | None]


@dataclass
class Decision:
    """What an action mode decided for one :class:`Request`.

    Attributes:
        index: chosen index into the legal action texts (after any fallback).
        valid: the model's own output named a legal action (always True when scoring).
        text: generated text, or the chosen action text when scoring.
        prompt_ids: prompt token ids.
        completion_ids: generated token ids, or the chosen candidate's token ids.
        logprobs: behaviour log-probabilities of the trained units: one per generated token,
            or ``[log pi(choice)]`` of the softmax over candidates when scoring.
        candidate_ids: token ids of every legal candidate (scoring only).
        probs: ``[C]`` the softmax over candidates (scoring only).
    """

    index: int
    valid: bool
    text: str
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    candidate_ids: list[list[int]] | None = None
    probs: np.ndarray | None = None


@dataclass
class Turn:
    """One LLM decision inside an episode, with everything training needs.

    ``reward`` is the sum of the rewards the agent received from this turn until its next
    turn (or the episode end), plus the invalid-output penalty of this turn.
    """

    episode: int  # index into RolloutBatch.episodes (the trajectory id)
    group: int  # GRPO group: episodes that share a game and a seed
    game: int  # index of the game name in the rollout's game list
    agent: str
    role: str
    model: str  # team model that produced it
    index: int  # order of this turn among all turns of its episode
    decision: Decision
    action: int  # the game action id that was played
    reward: float = 0.0

    @property
    def valid(self) -> bool:
        return self.decision.valid


@dataclass
class EpisodeRecord:
    """One finished episode."""

    game: str
    seed: int
    group: int
    returns: dict[str, float]
    length: int
    info: dict[str, Any] = field(default_factory=dict)
    turns: list[int] = field(default_factory=list)  # indices into RolloutBatch.turns
    seats: dict[str, str] = field(default_factory=dict)  # agent -> "team" or a policy kind

    @property
    def success(self) -> float | None:
        """1.0 / 0.0 where the game said whether the episode succeeded (its last info's
        ``success`` or ``is_success``: :func:`games.vector.episode_success`), else None."""
        s = episode_success(self.info)
        return None if s is None else float(s)
