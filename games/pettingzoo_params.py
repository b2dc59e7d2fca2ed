"""The rules PettingZoo's own envs' arguments are checked by before an env is built, where
the envs check few: counts of MPE scenarios and classic games below (or above) what plays
the game (an MPE count above :data:`MAX_MPE_COUNT` too), and a value of the wrong kind for a
parameter's annotation or bool default (:mod:`games.kinds` says what each kind takes)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from games.core import GameError
from games.kinds import is_integer, refusal
from games.limits import HINT, lifted, switch_on, too_large

# The counts an MPE scenario takes (mpe2's raw_env arguments), with the least each plays its
# game with. Below it the env fails deep inside (N=0 or -1 in simple_spread: numpy's "zero-size
# array to reduction operation maximum"; simple_line: "integer modulo by zero") or builds
# another game without a word (simple_tag num_good=-1: two adversaries and no prey; num_good=0:
# no prey, every reward 0; simple_world_comm num_adversaries=0: a good agent named
# leadadversary_0). The neighbour counts may also be None (every agent and landmark).
_NEIGHBOURS = {"num_agent_neighbors": 1, "num_landmark_neighbors": 1}
MPE_COUNTS: dict[str, dict[str, int]] = {
    "simple_adversary": {"N": 1, **_NEIGHBOURS},
    "simple_spread": {"N": 1, **_NEIGHBOURS},
    "simple_formation": {"N": 1},
    "simple_line": {"N": 1},
    "simple_tag": {"num_good": 1, "num_adversaries": 1, "num_obstacles": 0, **_NEIGHBOURS},
    "simple_world_comm": {"num_good": 1, "num_adversaries": 1, "num_obstacles": 0,
                          "num_food": 1, "num_forests": 0},
    "collect_treasure": {"num_collectors": 1, "num_deposits": 1, "num_treasures": 1},
}
MAX_MPE_COUNT = 256
"""Largest MPE count: building and each step grow with the square of the entities
(simple_spread N=256 builds and resets in about 3 s; N=10**8 never finished), so a game name
read from a file cannot hang ``games.make``. Lifted, with :data:`MAX_MPE_ENTITIES`, by
``SELFPLAY_GAME_LIMITS=off`` in the environment (:mod:`games.limits`)."""
MAX_MPE_ENTITIES = 512
"""Largest sum of an MPE scenario's entity counts (those of :data:`MPE_COUNTS` but the
neighbour counts; defaults counted for those not given): at 512 in all simple_tag builds and
resets in ~1 s of CPU, collect_treasure (250 collectors, 6 deposits, 256 treasures) in ~5 s.
:data:`MPE_ENTITY_TOTALS` is lower for a scenario whose cost grows faster.
Lifted by ``SELFPLAY_GAME_LIMITS=off``."""
MPE_ENTITY_TOTALS = {"simple_world_comm": 64}
"""MPE scenarios whose largest sum of entity counts is below :data:`MAX_MPE_ENTITIES`:
simple_world_comm's observations look at every agent and forest for each agent (its cost
grows as agents squared times forests: 42 agents of each side and 43 forests took ~12 s of
CPU to build and reset, its five counts at 256 over a minute); at 64 in all, ~2 s."""
# Counts of classic games the envs do not check, (least, most or None): the rlcard poker
# games' num_players=1 (or true) hung in rlcard's round loop (no_limit) or failed at the first
# showdown, and more than 23 players need more than a deck's 52 cards (two each and five on
# the board): the deal ran out. Go on a board of size 0 has one action, pass.
CLASSIC_COUNTS: dict[str, dict[str, tuple[int, int | None]]] = {
    "texas_holdem": {"num_players": (2, 23)},
    "texas_holdem_no_limit": {"num_players": (2, 23)},
    "go": {"board_size": (1, None)},
}


def check_count(module_path: str, name: str, value: Any, low: int,
                high: int | None = None, *, below_only: bool = False) -> None:
    """Refuse ``name=value`` unless it is an integer >= ``low`` (and <= ``high``; true is
    not a count), naming the range; with ``below_only``, a value above ``high`` is left to
    the caller (a size limit's own line)."""
    if not is_integer(value) or value < low or (
            high is not None and value > high and not below_only):
        accepted = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"
        raise GameError(f"bad parameter for pettingzoo/{module_path}: {name}={value!r}; "
                        f"accepted: {accepted}")


def _kind(p: inspect.Parameter) -> Any:
    """The kind of parameter ``p`` of PettingZoo's own envs: its annotation (``int``,
    ``float``, ``bool``), or bool where it has none and its default is a bool (mpe2's
    ``continuous_actions``); something else (``int | None``) or empty when neither says."""
    kind = {"bool": bool, "int": int, "float": float}.get(p.annotation, p.annotation) \
        if isinstance(p.annotation, str) else p.annotation
    if kind is inspect.Parameter.empty and isinstance(p.default, bool):
        return bool
    return kind


def _kind_accepted(p: inspect.Parameter, value: Any) -> str | None:
    """What parameter ``p`` accepts when ``value`` is not of its :func:`_kind`; None when it
    is, or when the kind does not say (``int | None``; an unannotated number, which the env's
    own error names)."""
    return refusal(_kind(p), value)


def check_kinds(module_path: str, raw: Callable[..., Any], kwargs: dict) -> dict:
    """Refuse a value of the wrong kind for a parameter of PettingZoo's own envs
    (:func:`_kind_accepted`). The envs test a flag for truth, so
    ``continuous_actions='false'`` (a quoted YAML value, a sweep's string) built the game with
    continuous actions without a word; go's ``komi='x'`` failed at the end of an episode.
    Returns ``kwargs`` with a flag given 0 or 1 as the bool, for the env (the game's name
    keeps the 0 or 1 a run recorded before flags were checked holds)."""
    try:
        params = inspect.signature(raw).parameters
    except (TypeError, ValueError):
        return kwargs
    out = dict(kwargs)
    for name, value in kwargs.items():
        accepted = _kind_accepted(params[name], value) if name in params else None
        if accepted is not None:
            raise GameError(f"bad parameter for pettingzoo/{module_path}: {name}={value!r}; "
                            f"accepted: {accepted}")
        if name in params and _kind(params[name]) is bool:
            out[name] = bool(value)
    return out


def check_kwargs(module_path: str, module_name: str, family: str,
                 raw: Callable[..., Any] | None, max_steps: Any, kwargs: dict) -> dict:
    """Refuse a bad count or a value of the wrong kind for PettingZoo's game ``module_path``
    (``module_name`` of family ``family``; ``raw`` its env's constructor, whose signature is
    read, or None for a module that is not PettingZoo's own), in one line naming what is
    accepted; else ``kwargs`` as the env gets them (:func:`check_kinds`)."""
    # max_cycles 0, -3 or true pass PettingZoo's envs and truncate every episode after one
    # step; max_steps=0 fell through `or` to the env's own limit, silently
    check_count(module_path, "max_cycles", kwargs.get("max_cycles", 1), 1)
    if max_steps is not None:
        check_count(module_path, "max_steps", max_steps, 1)
    short_name = module_name.rsplit(".", 1)[-1].rsplit("_v", 1)[0]
    if family == "mpe":
        for key, low in MPE_COUNTS.get(short_name, {}).items():
            if kwargs.get(key) is not None:
                # its range in full, the upper limit too (lifted: SELFPLAY_GAME_LIMITS=off)
                check_count(module_path, key, kwargs[key], low,
                            None if switch_on() else MAX_MPE_COUNT, below_only=True)
                if kwargs[key] > MAX_MPE_COUNT and not lifted():  # before anything is built
                    raise GameError(too_large(f"pettingzoo/{module_path}", key, kwargs[key],
                                              low, MAX_MPE_COUNT))
        check_mpe_total(module_path, short_name, raw, kwargs)
    if family == "classic":
        for key, (low, high) in CLASSIC_COUNTS.get(short_name, {}).items():
            if key in kwargs:
                check_count(module_path, key, kwargs[key], low, high)
    if family and raw is not None:  # PettingZoo's own module: its own signature
        return check_kinds(module_path, raw, kwargs)
    return kwargs


def check_mpe_total(module_path: str, short_name: str, raw: Callable[..., Any] | None,
                    kwargs: dict) -> None:
    """Refuse MPE entity counts each within :data:`MAX_MPE_COUNT` but together above
    :data:`MAX_MPE_ENTITIES` or the scenario's :data:`MPE_ENTITY_TOTALS` (defaults from
    ``raw``'s signature for those not given)."""
    try:
        params = inspect.signature(raw).parameters if raw is not None else {}
    except (TypeError, ValueError):
        params = {}
    counts = {}
    for key in MPE_COUNTS.get(short_name, {}):
        value = kwargs.get(key, params[key].default if key in params else None)
        if key not in _NEIGHBOURS and is_integer(value):
            counts[key] = value
    total = sum(counts.values())
    most = MPE_ENTITY_TOTALS.get(short_name, MAX_MPE_ENTITIES)
    if total > most and not lifted():
        given = " + ".join(f"{key}={value!r}" for key, value in counts.items())
        raise GameError(f"pettingzoo/{module_path}: {given} = {total} entities are too many; "
                        f"accepted: at most {most} in all ({HINT})")
