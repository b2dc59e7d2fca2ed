"""Game names: ``games.make(spec, **kwargs)`` and ``@games.register(name)``.

A spec is either a registered name (built-in tool tasks, users' games) or one of the
adapter prefixes: ``openspiel/<pyspiel game string>``, ``pettingzoo/<module path>`` and
``vmas/<scenario>`` (natively batched torch games; torch is imported only for these).
Installed packages may declare ``selfplay.games`` entry points (modules whose import
registers games); they are imported the first time a name is not found.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
from collections.abc import Callable
from typing import Any, TypeVar

from games.core import Game, GameError, UnknownGameError
from games.teams import override_sides

F = TypeVar("F", bound=Callable[..., Game])

_REGISTRY: dict[str, Callable[..., Game]] = {}
PREFIXES = ("openspiel/", "pettingzoo/", "vmas/")
ENTRY_POINTS = "selfplay.games"
IMPORTS_ENV = "SELFPLAY_IMPORTS"  # comma-separated modules a CLI imported for the user
_loaded_groups: set[str] = set()


def load_entry_points(group: str = ENTRY_POINTS) -> list[str]:
    """Import every installed entry point of ``group`` (once per process and group).

    A user's package declares, in its ``pyproject.toml``,
    ``[project.entry-points."selfplay.games"] my_games = "mypkg.games"``; importing the
    module registers its games. ``selfplay.learners`` and ``selfplay.meta_solvers`` work
    alike. Returns the names loaded.

    Raises:
        ImportError: one line naming the entry point that failed and why.
    """
    if group in _loaded_groups:
        return []
    _loaded_groups.add(group)
    from importlib.metadata import entry_points

    loaded = []
    for ep in entry_points(group=group):
        try:
            ep.load()
        except Exception as err:  # a user's package: report which one, in one line
            raise ImportError(f"entry point {ep.name} = {ep.value!r} ({group}) failed to "
                              f"load: {type(err).__name__}: {err}") from err
        loaded.append(ep.name)
    return loaded


def register(name: str) -> Callable[[F], F]:
    """Register a game class or factory under ``name`` (use as a decorator)."""
    if not name or name.startswith(PREFIXES):
        raise GameError(f"cannot register {name!r}: names may not be empty or use {PREFIXES}")

    def deco(factory: F) -> F:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise GameError(f"game name {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return deco


def registered() -> list[str]:
    """Registered game names (adapter prefixes not included), built-in tool tasks included."""
    with contextlib.suppress(ModuleNotFoundError):  # the built-in cooperative tool tasks
        import games.tool  # noqa: F401
    load_entry_points()
    return sorted(_REGISTRY)


def make(spec: str, **kwargs: Any) -> Game:
    """Build a game from a registered name or an adapter spec.

    Examples: ``make("openspiel/kuhn_poker")``,
    ``make("pettingzoo/mpe2.simple_spread_v3", N=3)``, ``make("nim", stones=7)``.

    Every game also takes ``teams=`` (``{agent: team}`` or a list of lists of agents) and
    ``zero_sum=`` (bool), which override the sides the game declares (see ``games.teams``).

    Raises:
        UnknownGameError: the name is neither registered nor an adapter prefix.
        GameError: the game rejected its keyword arguments.
    """
    if spec not in _REGISTRY and spec.startswith("tool/"):
        import games.tool  # noqa: F401  (built-in cooperative tool tasks register on import)
    if spec not in _REGISTRY and not spec.startswith(PREFIXES):
        load_entry_points()
        # modules a command line imported (``imports=``): worker processes (Ray) inherit
        # the variable, not the imports
        for module in filter(None, os.environ.get(IMPORTS_ENV, "").split(",")):
            importlib.import_module(module)
    if spec in _REGISTRY:
        return _call(spec, _REGISTRY[spec], kwargs)
    if spec.startswith("openspiel/"):
        from games.openspiel import OpenSpielGame

        return OpenSpielGame(spec.removeprefix("openspiel/"), **kwargs)
    if spec.startswith("pettingzoo/"):
        from games.pettingzoo import PettingZooGame

        return PettingZooGame(spec.removeprefix("pettingzoo/"), **kwargs)
    if spec.startswith("vmas/"):
        from games.vmas import VmasGame

        return VmasGame(spec.removeprefix("vmas/"), **kwargs)
    names = ", ".join(registered()) or "(none)"
    raise UnknownGameError(
        f"unknown game {spec!r}; registered: {names}; or use a prefix: "
        "'openspiel/<game string>', 'pettingzoo/<module>', 'vmas/<scenario>'; a game of your "
        "own is registered when its module is imported: imports=[module] (selfplay-train), "
        "--import module (selfplay-eval, python -m populations.league)"
    )


def _call(name: str, factory: Callable[..., Game], kwargs: dict[str, Any]) -> Game:
    sig = inspect.signature(factory)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    # teams= / zero_sum= override the game's spec unless the game takes them itself
    sides = {
        k: kwargs.pop(k)
        for k in ("teams", "zero_sum")
        if k in kwargs and k not in sig.parameters and not takes_any
    }
    try:
        sig.bind(**kwargs)
    except TypeError as err:
        params = [p for p in sig.parameters if p != "self"]
        raise GameError(f"bad arguments for game {name!r}: {err}; accepted: {params}") from None
    return override_sides(factory(**kwargs), **sides)
