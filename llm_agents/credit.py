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
from operator import attrgetter

import numpy as np
import torch
from torch import Tensor

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


_COLUMNS = attrgetter("game", "group", "agent", "role", "episode", "index", "reward")


def _turn_columns(turns: Sequence[Turn], games: Sequence[str], index: KeyIndex,
                  device: torch.device | str) -> tuple[AdvantageKeys, Tensor]:
    """``AdvantageKeys`` (``TURN_KEYS``, int64 ``[N]`` each) and rewards (float32 ``[N]``).

    One pass reads the turns' fields into columns; each kind of name gets its ``KeyIndex``
    ids once per distinct name (in order of first appearance, as one call per turn would);
    the six key columns become one ``[6, N]`` array, copied to ``device`` at once.
    """
    cols = list(zip(*map(_COLUMNS, turns), strict=True)) or [()] * 7
    game, group, agent, role, episode, turn, reward = cols

    def ids(kind: str, names: Sequence[str]) -> list[int]:
        known = {n: index.id(kind, n) for n in dict.fromkeys(names)}
        return [known[n] for n in names]

    table = torch.from_numpy(np.array([
        ids("game", [games[g] for g in game]), group, ids("agent", agent), ids("role", role),
        episode, turn], dtype=np.int64)).to(device)  # fmt: skip
    keys = AdvantageKeys(**dict(zip(TURN_KEYS, table.unbind(0), strict=True)))
    return keys, torch.from_numpy(np.array(reward, dtype=np.float32)).to(device)


def turn_keys(turns: Sequence[Turn], games: Sequence[str], index: KeyIndex,
              device: torch.device | str = "cpu") -> AdvantageKeys:
    """``AdvantageKeys`` of the turns (``TURN_KEYS``), each column ``[N]`` int64 on ``device``."""
    return _turn_columns(turns, games, index, device)[0]


def turn_advantages(turns: Sequence[Turn], games: Sequence[str], adv_norm: str,
                    index: KeyIndex, *, gamma: float = 1.0, cfg: AdvantageConfig | None = None,
                    state: RoleEMABaseline | None = None,
                    device: torch.device | str = "cpu") -> AdvantageResult:
    """Advantages ``[N]`` (one per turn) under ``adv_norm``, with ``adv/...`` diagnostics;
    it gets per-turn returns or rewards, whichever it declares it consumes."""
    keys, rewards = _turn_columns(turns, games, index, device)
    if get_adv_norm(adv_norm).consumes == "rewards":
        values = rewards
    else:
        values = turn_returns(rewards, keys.trajectory, keys.agent, keys.turn, gamma=gamma)
    # names: diagnostics say adv/role_scout/..., not adv/role_0/... (the index's ids)
    return normalize_advantages(adv_norm, values, keys, cfg=cfg, state=state, names=index.names)
