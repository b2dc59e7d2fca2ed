"""The kind rules of VMAS scenario parameters, read from the scenarios' own sources.

A scenario reads its parameters with ``kwargs.pop("n_agents", 4)`` / ``kwargs.get(...)``;
:func:`scenario_defaults` collects those literal defaults, and :func:`check_scenario_kwargs`
refuses a value of the wrong kind for one in a line naming what is accepted: true or false
(or 0 or 1) for a flag, an integer for a count ``n_*`` / ``num_*`` (at least 1 for the total
``n_agents`` / ``num_agents``, at least 0 for one team's or anything else's; at most
:data:`MAX_COUNT`), a number for a
number. VMAS checks few: navigation ``n_agents=0`` failed on an assert about
``agents_with_same_goal``, ``n_agents='x'`` on range(), ``continuous_actions='false'`` built
continuous actions. Values are judged as :mod:`games.kinds` says.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import vmas

from games.core import GameError
from games.kinds import is_integer, refusal
from games.limits import HINT, integer_range, lifted, too_large

_SCENARIO_FOLDERS = ("scenarios", "scenarios/mpe", "scenarios/debug")
_COUNT = re.compile(r"(n|num)_\w+")
# The total count of agents needs one; a team's (football's n_red_agents=0: a blue-only
# scoring drill) may be 0, and a game left with no agents at all is refused when built
_TOTAL_AGENTS = re.compile(r"(n|num)_agents")
_AGENT_COUNTS = re.compile(r"(n|num)_(\w+_)?agents")
MAX_COUNT = 256
"""Largest count ``n_*`` / ``num_*`` a scenario is built with: building grows with the square
of its entities (simple_spread with 256 agents builds in about 5 s, 1,000 in over a minute,
10**8 never finishes), so a game name read from a file cannot hang ``games.make``. Lifted,
with :data:`MAX_ENTITIES`, by ``SELFPLAY_GAME_LIMITS=off`` in the environment
(:mod:`games.limits`)."""
MAX_ENTITIES = 256
"""Largest sum of a scenario's entity counts (its counts but lidar rays, steps and points,
defaults counted for those not given), as each count alone (:data:`MAX_COUNT`): simple_spread
with 256 agents builds and resets in ~2 s of CPU. :data:`ENTITY_TOTALS` is lower for the
scenarios measured slower, whose entities interact pair by pair in Python. Lifted by
``SELFPLAY_GAME_LIMITS=off``."""
ENTITY_TOTALS = {"simple_world_comm": 32, "flocking": 64, "discovery": 64, "sampling": 16,
                 "transport": 16}
"""Scenarios whose largest sum of entity counts is below :data:`MAX_ENTITIES` (CPU seconds to
build and reset, measured): flocking 32 agents and 32 obstacles ~3 s, 64 and 64 ~39 s;
discovery 32 and 32 ~3 s, 128 and 128 over a minute; sampling 3 and 3 (its defaults) ~8 s,
8 and 8 ~13 s, 32 and 32 over 40 s;
transport 8 and 8 ~2 s, 32 and 32 over 40 s (football 128 and 128 ~7 s and pollock 86, 85
and 85 ~6 s keep the general total).
simple_world_comm's observations look at every agent and forest for each agent (its cost
grows as agents squared times forests): 10 agents of each side and 11 forests (32 in all)
take ~4 s, 21, 21 and 21 ~15 s. A count alone is bounded by its scenario's total too
(:func:`count_limit`), so ``n_agents=100`` and ``n_agents=300`` state the same maximum."""


def count_limit(scenario: str) -> int:
    """The largest value one count of ``scenario`` accepts: :data:`MAX_COUNT`, or its total
    (:data:`ENTITY_TOTALS`) where that is lower."""
    return min(MAX_COUNT, ENTITY_TOTALS.get(scenario, MAX_ENTITIES))


# counts that are not entities built as Python objects (lidar rays, stored steps, points)
_NOT_ENTITIES = re.compile(r"rays|steps|points|observed")


@functools.cache
def scenario_defaults(scenario: str) -> dict[str, Any]:
    """``{parameter: default}`` of what a scenario reads from its keyword arguments
    (``kwargs.pop("n_agents", 4)`` / ``kwargs.get(...)`` in its source), for the defaults
    that are literals (a default computed from another parameter is left out)."""
    root = os.path.dirname(vmas.__file__)
    path = next((f for sub in _SCENARIO_FOLDERS
                 if os.path.isfile(f := os.path.join(root, sub, f"{scenario}.py"))), None)
    if path is None:
        return {}
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found: dict[str, Any] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("pop", "get") and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "kwargs" and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            continue
        with contextlib.suppress(ValueError, TypeError, SyntaxError):
            found.setdefault(node.args[0].value, ast.literal_eval(node.args[1]))
    return found


def accepted(name: str, default: Any, value: Any, high: int = MAX_COUNT) -> str | None:
    """What parameter ``name`` (whose default is ``default``) accepts when ``value`` is not
    of it, else None: true or false where the default is a bool, an integer for a count,
    a number where the default is one; other defaults (None, tuples) are not judged."""
    if isinstance(default, bool):
        return refusal(bool, value)
    if isinstance(default, int) and _COUNT.fullmatch(name):
        low = 1 if _TOTAL_AGENTS.fullmatch(name) else 0
        # the whole range, its upper limit too ("an integer >= 1" for n_agents='x' hid it)
        return None if is_integer(value) and value >= low else integer_range(low, high)
    return refusal(float, value) if isinstance(default, (int, float)) else None


def check_scenario_kwargs(scenario: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Refuse, in one line naming what is accepted, a scenario parameter of the wrong kind
    (:func:`accepted`), judged against the scenario's own defaults, or a count above
    :data:`MAX_COUNT` (before anything is built); else ``kwargs`` with its
    flags as bools and numpy numbers as Python's, for the scenario (a flag given 0 keeps its
    0 in the game's name, which a run recorded before flags were checked holds)."""
    defaults = scenario_defaults(scenario)
    out = dict(kwargs)
    for name, value in kwargs.items():
        if name not in defaults:
            continue
        high = MAX_COUNT if _NOT_ENTITIES.search(name) else count_limit(scenario)
        why = accepted(name, defaults[name], value, high)
        if why is not None:
            raise GameError(f"bad parameter for vmas/{scenario}: {name}={value!r}; "
                            f"accepted: {why}")
        if (isinstance(defaults[name], int) and not isinstance(defaults[name], bool)
                and _COUNT.fullmatch(name) and value > high and not lifted()):
            low = 1 if _TOTAL_AGENTS.fullmatch(name) else 0
            raise GameError(too_large(f"vmas/{scenario}", name, value, low, high))
        if isinstance(defaults[name], bool):
            out[name] = bool(value)
        elif isinstance(value, np.generic):  # torch refused to assign a numpy.float32
            out[name] = value.item()
    _check_total(scenario, defaults, out)
    return out


def _check_total(scenario: str, defaults: Mapping[str, Any], kwargs: Mapping[str, Any]) -> None:
    """Refuse entity counts that are each within :data:`MAX_COUNT` but together above
    :data:`MAX_ENTITIES` or the scenario's :data:`ENTITY_TOTALS` (the scenario's defaults
    count for those not given)."""
    counts = {name: kwargs.get(name, default) for name, default in defaults.items()
              if _COUNT.fullmatch(name) and not _NOT_ENTITIES.search(name)
              and is_integer(default) and not isinstance(default, bool)}
    total, most = sum(counts.values()), ENTITY_TOTALS.get(scenario, MAX_ENTITIES)
    if total > most and not lifted():
        given = " + ".join(f"{name}={value!r}" for name, value in counts.items())
        raise GameError(f"vmas/{scenario}: {given} = {total} entities are too many; accepted: "
                        f"at most {most} in all ({HINT})")


def zero_agents_line(scenario: str, kwargs: Mapping[str, Any], err: BaseException
                     ) -> str | None:
    """The line for a scenario that failed to build with a team's agent count given 0
    (football ``n_blue_agents=0``: "stack expects a non-empty TensorList", VMAS's error when
    a kind of agent it needs is missing), else None."""
    zeros = [f"{k}={v!r}" for k, v in kwargs.items() if _AGENT_COUNTS.fullmatch(k) and v == 0
             and not isinstance(v, (bool, np.bool_))]
    if not zeros or "non-empty TensorList" not in str(err):
        return None
    return (f"bad parameter for vmas/{scenario}: {', '.join(zeros)} "
            f"{'leaves' if len(zeros) == 1 else 'leave'} the scenario without agents it needs "
            f"({type(err).__name__}: {str(err).strip()}); accepted: an integer >= 1"
            f"{'' if len(zeros) == 1 else ' for one of them'}")
