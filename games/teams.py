"""Which side each agent plays for, and whether a game is zero-sum.

Leagues, ratings and PSRO seats are built from ``GameSpec`` teams, so a wrong guess
silently turns a competitive game into self-play. Adapters therefore take teams from
what the game declares (OpenSpiel's game type, the MPE world's ``adversary`` flags, a
PettingZoo env's ``metadata``) and fall back to a small table of known games; a user can
always say it explicitly with ``games.make(spec, teams=..., zero_sum=...)``.

``teams=`` accepts either a mapping ``{agent id: team name}`` or a list of teams, each a
list of agent ids (teams are then named ``team_0``, ``team_1``, ...). Every agent must be
named exactly once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from games.core import AgentSpec, Game, GameError

TeamsArg = Mapping[str, str] | Sequence[Sequence[str]]
"""The ``teams=`` override: ``{"agent_0": "red", ...}`` or ``[["agent_0", "agent_1"], [...]]``."""


def parse_teams(teams: Any, agents: Sequence[str], where: str) -> dict[str, str]:
    """Validate a ``teams=`` override and return ``{agent id: team name}``.

    Raises:
        GameError: one line naming what is wrong (an unknown, missing or repeated agent, a
            bad team name or a value that is neither a mapping nor a list of lists).
    """
    expected = list(agents)
    if isinstance(teams, Mapping):
        out = {str(a): t for a, t in teams.items()}
        bad_names = [t for t in out.values() if not isinstance(t, str) or not t]
        if bad_names:
            raise GameError(f"{where}: team names must be non-empty strings, got {bad_names[0]!r}")
        named = list(out)
    elif isinstance(teams, Sequence) and not isinstance(teams, str) and all(
        isinstance(m, Sequence) and not isinstance(m, str) for m in teams
    ):
        named = [str(a) for members in teams for a in members]
        out = {str(a): f"team_{i}" for i, members in enumerate(teams) for a in members}
        empty = [i for i, members in enumerate(teams) if len(members) == 0]
        if empty:
            raise GameError(f"{where}: teams= has an empty team at position {empty[0]}")
    else:
        raise GameError(
            f"{where}: teams= must be a mapping {{agent: team}} or a list of lists of agents, "
            f"got {teams!r}"
        )
    unknown = [a for a in named if a not in expected]
    repeated = sorted({a for a in named if named.count(a) > 1})
    missing = [a for a in expected if a not in named]
    if unknown or repeated or missing:
        parts = [
            f"{label} {names}"
            for label, names in (("unknown", unknown), ("repeated", repeated), ("missing", missing))
            if names
        ]
        raise GameError(
            f"{where}: teams= must name every agent exactly once ({'; '.join(parts)}); "
            f"agents: {expected}"
        )
    return out


def parse_zero_sum(zero_sum: Any, where: str) -> bool:
    """Validate a ``zero_sum=`` override (a bool)."""
    if not isinstance(zero_sum, bool):
        raise GameError(f"{where}: zero_sum= must be True or False, got {zero_sum!r}")
    return zero_sum


def agent_specs(roles: Mapping[str, str], teams: Mapping[str, str]) -> tuple[AgentSpec, ...]:
    """AgentSpecs in the order of ``roles``."""
    return tuple(AgentSpec(a, role, teams[a]) for a, role in roles.items())


def override_sides(game: Game, teams: Any = None, zero_sum: Any = None) -> Game:
    """Replace the teams and/or zero-sum flag of ``game.spec`` (``None`` keeps the game's own).

    Used by ``games.make`` for games that do not take ``teams=`` / ``zero_sum=`` themselves.
    """
    if teams is None and zero_sum is None:
        return game
    spec = game.spec
    where = spec.name
    changes: dict[str, Any] = {}
    if teams is not None:
        team_of = parse_teams(teams, spec.agent_ids, where)
        changes["agents"] = tuple(dataclasses.replace(a, team=team_of[a.id]) for a in spec.agents)
    if zero_sum is not None:
        changes["zero_sum"] = parse_zero_sum(zero_sum, where)
    game.spec = dataclasses.replace(spec, **changes)
    return game
