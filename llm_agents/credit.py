"""Turn-level credit for multi-turn, multi-agent GRPO, computed with ``marl.advantages``.

Each LLM turn is one sample. Its reward is what the agent received until its next turn
(plus any invalid-output penalty). What gets normalized is what the adv_norm declares it
consumes: the agent's return-to-go over its *own* later turns (``consumes="returns"``:
``marl.advantages.turn_returns``, ``gamma`` per own turn), or the raw turn rewards for one that
builds its own returns (``consumes="rewards"``: ``player_turn``), so no return is counted
twice. Normalization is any adv_norm registered in ``marl.advantages`` -- ``global``,
``agent`` (Dr. MAS), ``role``, ``group_role``, ``role_ema`` (SPIRAL)... -- keyed by game, GRPO
group (the K episodes of one seed), agent, role, trajectory and turn (``TURN_KEYS``).

Integer ids of games, agents and roles come from a :class:`KeyIndex` that keeps them stable
across updates (the ``role_ema`` baselines are stored per role id).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from llm_agents.records import Turn
from marl.advantages import (
    AdvantageConfig,
    AdvantageKeys,
    AdvantageResult,
    RoleEMABaseline,
    get_adv_norm,
    normalize_advantages,
    turn_returns,
)

TURN_KEYS = ("game", "group", "agent", "role", "trajectory", "turn")  # keys of every turn


class KeyIndex:
    """Stable small integer ids for names of each kind (``game``, ``agent``, ``role``)."""

    def __init__(self) -> None:
        self.names: dict[str, list[str]] = {"game": [], "agent": [], "role": []}

    def id(self, kind: str, name: str) -> int:
        names = self.names[kind]
        if name not in names:
            names.append(name)
        return names.index(name)

    def state_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.names.items()}

    def load_state_dict(self, state: dict[str, list[str]]) -> None:
        self.names = {k: list(v) for k, v in state.items()}


def turn_keys(turns: Sequence[Turn], games: Sequence[str], index: KeyIndex,
              device: torch.device | str = "cpu") -> AdvantageKeys:
    """``AdvantageKeys`` of the turns, each column ``[N]`` int64 on ``device``."""

    def col(values: list[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.long, device=device)

    return AdvantageKeys(
        game=col([index.id("game", games[t.game]) for t in turns]),
        group=col([t.group for t in turns]),
        agent=col([index.id("agent", t.agent) for t in turns]),
        role=col([index.id("role", t.role) for t in turns]),
        trajectory=col([t.episode for t in turns]),
        turn=col([t.index for t in turns]),
    )


def turn_advantages(turns: Sequence[Turn], games: Sequence[str], adv_norm: str,
                    index: KeyIndex, *, gamma: float = 1.0, cfg: AdvantageConfig | None = None,
                    state: RoleEMABaseline | None = None,
                    device: torch.device | str = "cpu") -> AdvantageResult:
    """Advantages ``[N]`` (one per turn) under ``adv_norm``, with ``adv/...`` diagnostics;
    it gets per-turn returns or rewards, whichever it declares it consumes."""
    keys = turn_keys(turns, games, index, device)
    rewards = torch.tensor([t.reward for t in turns], dtype=torch.float32, device=device)
    if get_adv_norm(adv_norm).consumes == "rewards":
        values = rewards
    else:
        values = turn_returns(rewards, keys.trajectory, keys.agent, keys.turn, gamma=gamma)
    return normalize_advantages(adv_norm, values, keys, cfg=cfg, state=state)
