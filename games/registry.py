"""Game names: ``games.make(spec, **kwargs)`` and ``@games.register(name)``.

A spec is either a registered name (built-in tool tasks, users' games) or one of the
adapter prefixes: ``openspiel/<pyspiel game string>``, ``pettingzoo/<module path>`` and
``vmas/<scenario>`` (natively batched torch games; torch is imported only for these).
Installed packages may declare ``selfplay.games`` entry points (modules whose import
registers games); they are imported the first time a name is not found.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import difflib
import importlib
import importlib.util
import inspect
import logging
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from games.core import Game, GameError, GameSpec, UnknownGameError, where_raised
from games.teams import override_sides

F = TypeVar("F", bound=Callable[..., Game])
logger = logging.getLogger(__name__)

_REGISTRY: dict[str, Callable[..., Game]] = {}
PREFIXES = ("openspiel/", "pettingzoo/", "vmas/")
ENTRY_POINTS = "selfplay.games"
IMPORTS_ENV = "SELFPLAY_IMPORTS"  # comma-separated modules a CLI imported for the user
_loaded_groups: set[str] = set()
# built-in games registered when their module is first needed, by name prefix (no torch)
LAZY_BUILTINS = {"tool/": "games.tool"}


def load_entry_points(group: str = ENTRY_POINTS) -> list[str]:
    """Import every installed entry point of ``group`` (once per process and group).

    A user's package declares, in its ``pyproject.toml``,
    ``[project.entry-points."selfplay.games"] my_games = "mypkg.games"``; importing the
    module registers its games. ``selfplay.learners``, ``selfplay.meta_solvers``,
    ``selfplay.matchmaking_rules``, ``selfplay.loggers`` and ``selfplay.encoders`` work alike.
    Returns the names loaded.

    Raises:
        ImportError: one line naming the entry point that failed, why, and the distribution
            that installed it (fix or uninstall that package).
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
            why = " ".join(str(err).split()) or "no message"
            raise ImportError(f"entry point {ep.name} = {ep.value!r} ({group}) failed to "
                              f"load: {type(err).__name__}: {why}{_installed_by(ep)}"
                              ) from err
        loaded.append(ep.name)
    return loaded


def _installed_by(ep: Any) -> str:
    """`` (installed by <distribution> <version>: fix or uninstall that package)`` for an entry
    point; the distribution unnamed where its metadata holds none."""
    dist = getattr(ep, "dist", None)
    name = getattr(dist, "name", None) if dist is not None else None
    if not name:
        return "; fix or uninstall the package that installed it"
    return (f" (installed by {name} {getattr(dist, 'version', '') or ''}".rstrip()
            + f": fix or uninstall that package, pip uninstall {name})")


def register(name: str) -> Callable[[F], F]:
    """Register a game class or factory under ``name`` (use as a decorator:
    ``@games.register("my_game")``).

    Raises:
        GameError: ``name`` is not a string (``@games.register`` without a name), is empty,
            uses an adapter prefix, or is taken (built-in tool tasks included).
    """
    if not isinstance(name, str):
        what = getattr(name, "__name__", None) or type(name).__name__
        raise GameError(f"games.register needs a name, got {what}: use "
                        '@games.register("name") above the class or factory')
    if not name or name.startswith(PREFIXES):
        raise GameError(f"cannot register {name!r}: names may not be empty or use {PREFIXES}")
    if not _NAME.fullmatch(name):  # make() reads "name(k=v)" as a name and its arguments
        raise GameError(f"cannot register {name!r}: a game name holds letters, digits, '_', "
                        "'-', '.' and '/' only, starting with a letter, digit or '_' (make() "
                        "reads '(...)' after a name as the game's arguments: my_game(v2) is "
                        "my_game given v2)")
    for prefix, module in LAZY_BUILTINS.items():
        if name.startswith(prefix) and module not in sys.modules:
            # the built-ins of this prefix register when their module is imported: before a
            # user's game takes one of their names (the command lines refuse it; Python
            # replaced the built-in silently)
            importlib.import_module(module)

    def deco(factory: F) -> F:
        if name in _REGISTRY and not redefinition(_REGISTRY[name], factory):
            raise GameError(f"game name {name!r} is already registered (by "
                            f"{defined_at(_REGISTRY[name])}); register yours under another name")
        _REGISTRY[name] = factory  # a notebook cell run again: its new class replaces the old
        return factory

    return deco


_NAME = re.compile(r"\w[\w./-]*")  # what a game name may hold (Unicode letters too)

# the framework's own packages: what they register is never replaced by a redefinition
OWN_PACKAGES = ("games", "marl", "llm_agents", "populations")


def defined_at(obj: object) -> str:
    """``module.qualname`` of a registered class or function."""
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', obj)}"


def redefinition(old: object, new: object) -> bool:
    """Whether ``new`` may take the registry name ``old`` holds: it is ``old``, or ``old``
    defined again (the same module and qualified name: a notebook cell or a script run
    again, ``importlib.reload``) outside the framework's own packages. Every registry
    (games, learners, adv_norms) decides so; another object taking a taken name is refused."""
    if new is old:
        return True
    module, qualname = getattr(new, "__module__", None), getattr(new, "__qualname__", None)
    return (isinstance(module, str) and qualname is not None
            and (module, qualname) == (getattr(old, "__module__", None),
                                       getattr(old, "__qualname__", None))
            and module.split(".")[0] not in OWN_PACKAGES)


def registered() -> list[str]:
    """Registered game names (adapter prefixes not included), built-in tool tasks included."""
    with contextlib.suppress(ModuleNotFoundError):  # the built-in cooperative tool tasks
        import games.tool  # noqa: F401
    load_entry_points()
    return sorted(_REGISTRY)


def registered_factory(name: str) -> Callable[..., Game] | None:
    """The factory registered under ``name`` (a bare name, no keyword arguments), or None:
    adapter specs (``openspiel/...``) have none. Only what is registered already: nothing
    is imported to find it (:func:`make` loads the built-in tool tasks and entry points)."""
    return _REGISTRY.get(name)


def make(spec: str, **kwargs: Any) -> Game:
    """Build a game from a registered name or an adapter spec.

    Examples: ``make("openspiel/kuhn_poker")``,
    ``make("pettingzoo/mpe2.simple_spread_v3", N=3)``, ``make("nim", stones=7)``.

    Every game also takes ``teams=`` (``{agent: team}`` or a list of lists of agents) and
    ``zero_sum=`` (bool), which override the sides the game declares (see ``games.teams``).

    Raises:
        UnknownGameError: the name is neither registered nor an adapter prefix.
        GameError: the game rejected its keyword arguments, or ``spec`` is not a str.
    """
    if not isinstance(spec, str):  # else an AttributeError from str.startswith
        raise GameError(f"games.make({spec!r:.60}): the game's name must be a str, e.g. "
                        "'openspiel/kuhn_poker'")
    if spec not in _REGISTRY and spec.startswith("tool/"):
        import games.tool  # noqa: F401  (built-in cooperative tool tasks register on import)
    if spec not in _REGISTRY and not spec.startswith(PREFIXES):
        load_entry_points()
        # modules a command line imported (``imports=``): worker processes (Ray) inherit
        # the variable, not the imports
        for module in filter(None, os.environ.get(IMPORTS_ENV, "").split(",")):
            importlib.import_module(module)
    if spec not in _REGISTRY and "(" in spec and spec.partition("(")[0] in _REGISTRY:
        spec, kwargs = _merge_named(spec, kwargs)  # a registered game's name with its kwargs
    if spec in _REGISTRY:
        return _call(spec, _REGISTRY[spec], kwargs)
    if spec.startswith("openspiel/"):
        from games.openspiel import OpenSpielGame

        return _checked(spec, OpenSpielGame(spec.removeprefix("openspiel/"), **kwargs), kwargs)
    if spec.startswith(("pettingzoo/", "vmas/")):
        spec, kwargs = _merge_named(spec, kwargs)
    if spec.startswith("pettingzoo/"):
        from games.pettingzoo import PettingZooGame

        return _checked(spec, PettingZooGame(spec.removeprefix("pettingzoo/"), **kwargs), kwargs)
    if spec.startswith("vmas/"):
        from games.vmas import VmasGame

        return _checked(spec, VmasGame(spec.removeprefix("vmas/"), **kwargs), kwargs)
    names = ", ".join(registered()) or "(none)"
    raise UnknownGameError(
        f"unknown game {spec!r};{did_you_mean(spec, registered()) or _prefixed(spec)} "
        f"registered: {names}; or "
        "use a prefix: "
        "'openspiel/<game string>', 'pettingzoo/<module>', 'vmas/<scenario>'; a game of your "
        "own is registered when its module is imported: imports=[module] (selfplay-train), "
        "--import module (selfplay-eval, python -m populations.league)"
    )


def _prefixed(spec: str) -> str:
    """`` did you mean 'openspiel/othello'?`` for a name OpenSpiel or VMAS knows given without
    its prefix (``game.name=othello``), else "". Neither torch nor vmas is imported: VMAS's
    scenarios are its package's files."""
    name = spec.partition("(")[0]
    if not name.isidentifier():
        return ""
    try:  # only a hint: a missing or broken library, or another layout, gives none
        import pyspiel

        if name in pyspiel.registered_names():
            return f" did you mean {'openspiel/' + spec!r}?"
    except Exception:  # noqa: BLE001
        pass
    try:
        found = importlib.util.find_spec("vmas")  # the top package's file, not imported
        scenarios = Path(found.origin).parent / "scenarios" if found and found.origin else None
        if scenarios and scenarios.is_dir() and not name.startswith("_") and any(
                (folder / f"{name}.py").is_file()  # scenarios/, scenarios/mpe/, ...
                for folder in (scenarios, *scenarios.iterdir())):
            return f" did you mean {'vmas/' + spec!r}?"
    except (OSError, ImportError, ValueError):
        pass
    return ""


def did_you_mean(name: str, names: Sequence[str]) -> str:
    """`` did you mean 'x'?`` for the registered name nearest ``name`` (a misspelling, or
    another case), else "" (OpenSpiel's and PettingZoo's names got one; a user's own game
    misspelt did not)."""
    lower = {n.lower(): n for n in names}
    close = difflib.get_close_matches(name.lower(), list(lower), n=1)
    return f" did you mean {lower[close[0]]!r}?" if close else ""


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
    missing = sorted(getattr(factory, "__abstractmethods__", ()))
    if isinstance(factory, type) and missing:  # Python's TypeError named no game nor file
        raise GameError(f"{name}: {factory.__qualname__} does not implement {', '.join(missing)}"
                        f" (methods a games.Game must define){_at(factory)}")
    game = override_sides(_checked(name, _built(name, factory, kwargs, sides), kwargs),
                          **sides)
    if (kwargs or sides) and game.spec.name == name:  # the name holds them (tool/lookup(...))
        game.spec = dataclasses.replace(game.spec, name=kwargs_name(name, {**kwargs, **sides}))
    _warn_other_name(name, factory, game.spec.name)
    return game


def _built(name: str, factory: Callable[..., Game], kwargs: dict[str, Any],
           sides: dict[str, Any]) -> Game:
    """``factory(**kwargs)``. A ValueError, TypeError or LookupError it raises on the user's
    arguments (a game's ``float(speed)`` of ``speed="fast"``) is a :class:`GameError` naming
    the game, its arguments and the line that raised: ``<game> cannot be built with the game
    arguments {...} (ValueError: ...); check their values and types (at file:line in
    function)``. Any other exception of a user's game (one registered outside the framework's
    packages), or one built without arguments, is a bug of the game: ``<game>: __init__
    raised <Type>: <message> (at file:line in function)`` (an AttributeError was a traceback
    from selfplay-train after its run folder was made; a ValueError named neither the game
    nor the line). The exception is the error's ``__cause__`` (``HYDRA_FULL_ERROR=1`` shows
    its traceback). A :class:`GameError` (an adapter's or a game's own refusal, already one
    line naming the value) passes as it is, and so does an error of a game of the framework's
    own built without arguments (a bug of ours, with its traceback)."""
    try:
        return factory(**kwargs)
    except GameError:
        raise
    except Exception as err:  # noqa: BLE001 - the game's own code: one line naming its line
        at = where_raised(err, relative=True)
        if kwargs and isinstance(err, ValueError | TypeError | LookupError):
            text, given = str(err).strip().splitlines(), {**kwargs, **sides}
            raise GameError(f"{name} cannot be built with the game arguments {given} "
                            f"({type(err).__name__}: {text[0] if text else ''}); check their "
                            f"values and types (at {at})") from err
        module = getattr(factory, "__module__", None)
        if not isinstance(module, str) or module.split(".")[0] in OWN_PACKAGES:
            raise
        named = getattr(factory, "__qualname__", "<lambda>")
        call = "__init__" if isinstance(factory, type) else \
            "its factory" if "<lambda>" in named else f"{named}()"
        why = " ".join(str(err).split()) or "no message"
        raise GameError(f"{name}: {call} raised {type(err).__name__}: {why} (at {at})"
                        ) from err


def _checked(name: str, game: Any, kwargs: Mapping[str, Any]) -> Game:
    """``game``, once it is a :class:`Game` with a :class:`GameSpec` of one or more agents.

    Raises:
        GameError: one line naming the game: a factory that returned something else, a game
            whose ``__init__`` set no ``self.spec`` (README's skeleton with ``...`` bodies was
            an AttributeError from here), or a spec with no agents (``vmas/flocking`` with
            ``n_agents=0`` built, then failed in the learners with an IndexError); the game
            built is closed first.
    """
    if not isinstance(game, Game):
        what = "None" if game is None else f"a {type(game).__qualname__}"
        raise GameError(f"{name}: its factory {defined_at(_REGISTRY.get(name))} returned "
                        f"{what}, not a games.Game{_at(_REGISTRY.get(name))}")
    spec = getattr(game, "spec", None)
    problem = ""
    if spec is None:
        problem = "its __init__ set no self.spec (a games.GameSpec)"
    elif not isinstance(spec, GameSpec):
        problem = f"its spec is a {type(spec).__qualname__}, not a games.GameSpec"
    elif not spec.agents:
        given = f": check its arguments {dict(kwargs)}" if kwargs else ""
        problem = f"no agents (its spec.agents is empty); a game needs one or more{given}"
    if not problem:
        return game
    with contextlib.suppress(Exception):  # the refusal is the error to show, not close's
        game.close()
    where = _at(type(game).__init__ if "__init__" in vars(type(game)) else type(game))
    shown = spec.name if isinstance(spec, GameSpec) and spec.name else name
    raise GameError(f"{shown}: {problem}{where if spec is None else ''}")


def _at(obj: Any) -> str:
    """`` (at file:line)`` of where ``obj`` (a class or function of the user's) is defined,
    the file relative to the working folder when under it; "" where it cannot be read."""
    try:
        path = inspect.getsourcefile(obj)
        line = inspect.getsourcelines(obj)[1]
    except (TypeError, OSError):
        return ""
    if path and os.path.isabs(path) and not os.path.relpath(path).startswith(".."):
        path = os.path.relpath(path)
    return f" (at {path}:{line})" if path else ""


_warned_names: set[tuple[str, str]] = set()


def _warn_other_name(name: str, factory: Callable[..., Game], spec_name: str) -> None:
    """Warn once per process that the game registered as ``name`` calls itself
    ``spec_name``, a name that does not make it again: snapshots, the runs table and
    ``selfplay-eval`` record ``spec_name`` (a copied game's ``push`` for the ``push2`` that was
    played). A factory returning an adapter's game (``openspiel/...``) or another registered
    name of the same factory is not warned about: its name makes the same game."""
    base = spec_name.partition("(")[0]
    if base == name or base.startswith(PREFIXES) or _REGISTRY.get(base) is factory:
        return
    if (name, base) in _warned_names:
        return
    _warned_names.add((name, base))
    logger.warning(
        "the game registered as %r says spec.name=%r: snapshots, run records and "
        "selfplay-eval will name it %r, %s; set spec.name=%r in the game",
        name, spec_name, base,
        "another registered game" if base in _REGISTRY else "which games.make does not know",
        name)


# ----------------------------------------------------------- names that hold kwargs
# A PettingZoo or VMAS spec names its keyword arguments as OpenSpiel's names hold their
# parameters: ``pettingzoo/mpe2.simple_spread_v3(N=2,max_cycles=25)``. Policies, run
# records and league databases keep the name, and whatever makes the game from it again
# (selfplay-eval's checks, PSRO from a game object) gets the same game, not the defaults.


def as_literals(value: Any) -> Any:
    """``value`` as Python literals: numpy scalars and OmegaConf containers unwrapped."""
    if isinstance(value, Mapping):
        return {as_literals(k): as_literals(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ListConfig":
        out = [as_literals(v) for v in value]
        return tuple(out) if isinstance(value, tuple) else out
    item = getattr(value, "item", None)  # np.int64(2) -> 2
    if callable(item) and type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        return item()
    return value


def kwargs_name(base: str, kwargs: Mapping[str, Any]) -> str:
    """``base(k=v,...)`` with the keys sorted and values as Python literals; ``base`` alone
    for no kwargs. ``split_name`` reads it back."""
    if not kwargs:
        return base
    return f"{base}({','.join(f'{k}={as_literals(v)!r}' for k, v in sorted(kwargs.items()))})"


def split_name(spec: str) -> tuple[str, dict[str, Any]]:
    """``("pettingzoo/mpe2.simple_spread_v3", {"N": 2})`` from
    ``"pettingzoo/mpe2.simple_spread_v3(N=2)"``; a name without ``(...)`` has no kwargs.

    Raises:
        GameError: the part in parentheses is not ``key=literal`` pairs (nothing is run).
    """
    base, paren, rest = spec.partition("(")
    if not paren:
        return spec, {}
    bad = GameError(f"cannot read the game name {spec!r}: expected <name>(key=value,...) with "
                    "Python literal values (2, 0.5, True, 'text', [1, 2]), as a game's "
                    "spec.name writes them")
    try:
        call = ast.parse(f"f({rest}", mode="eval").body
    except SyntaxError:
        raise bad from None
    if not rest.endswith(")") or not isinstance(call, ast.Call) or call.args or any(
            k.arg is None for k in call.keywords) or not isinstance(call.func, ast.Name):
        raise bad
    try:
        return base, {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except (ValueError, TypeError, SyntaxError):
        raise bad from None


def _merge_named(spec: str, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The kwargs a name holds under the ones given; a key both give must agree."""
    base, named = split_name(spec)
    for key, value in named.items():
        if key in kwargs and as_literals(kwargs[key]) != value:
            raise GameError(f"game {spec!r} names {key}={value!r} but its kwargs give "
                            f"{key}={kwargs[key]!r}; give one of them")
    return base, {**named, **kwargs}


# ----------------------------------------------------------- names read from files
# games.make runs what a name says: a PettingZoo name imports its module and calls the
# function it names with the name's arguments (pettingzoo/os:system(command='...') ran the
# command), and OpenSpiel's file games read the file the name gives. A name a user types is
# their own code; one read from a file (a policy file's meta.game, a league database, a
# run's settings) is checked first (recorded_name_refusal).

FILE_PARAMETER = re.compile(
    r"(?<!\w)(filename|path|root|dir|folder|directory"
    r"|\w+_(?:file|path|root|dir|folder|directory))\s*="
    r"(?!\s*(?:''|\"\")?\s*(?:[,)]|$))", re.IGNORECASE)
"""A parameter given a file or folder for the game to read: OpenSpiel's
``nfg_game(filename=...)``, ``efg_game``, ``bargaining(instances_file=...)``,
``crossword(puzzles_root=...)`` (a folder it lists), ``python_hangman``... Only an empty
value (nothing, or exactly ``''`` or ``""``: the game's own data) reads none."""

PETTINGZOO_MAKERS = ("env", "parallel_env", "raw_env")
"""The functions of a PettingZoo game module that build its env."""

_GAME_MODULE = re.compile(r"\w+_v\d+")  # a versioned game module: simple_spread_v3


def recorded_name_refusal(name: str) -> str:
    """Why the game name ``name``, read from a file, is not made unless the user names the
    game themselves; "" when ``games.make`` may make it (and checks it as a name given).

    Refused: a name giving a file for the game to read (:data:`FILE_PARAMETER`), and a
    PettingZoo name unless its module is a game of a package of PettingZoo games
    (``<package>.<game>_v<N>``, :data:`games.pettingzoo.FAMILIES`, building with one of
    :data:`PETTINGZOO_MAKERS`) or lies in a module the command line imported
    (:data:`IMPORTS_ENV`: ``imports=``, ``--import``), the function it names, or the maker
    found by the module's name, defined there or by PettingZoo (not one the module imported
    from elsewhere: ``from os import system as env``). Registered names, VMAS
    scenarios (a fixed list) and other OpenSpiel games are made: their arguments are Python
    literals the game checks. The reason is a phrase to follow the name (``... records the
    game X, <reason>``); what it quotes of the name is escaped (:func:`printable`)."""
    if not isinstance(name, str):
        return f"which is not a game name but a {type(name).__name__}"
    given = FILE_PARAMETER.search(name)
    if given:
        return f"which reads a file its parameter {given[1]} names"
    if not name.startswith("pettingzoo/"):
        return ""
    path = name.removeprefix("pettingzoo/").partition("(")[0]
    module, colon, function = path.partition(":")
    if not all(p.isidentifier() for p in module.split(".")) or (
            colon and not function.isidentifier()):
        return f"whose module {printable(path)} is not a module path"
    from games.pettingzoo import FAMILIES

    package, _, game = module.rpartition(".")
    if package in FAMILIES and _GAME_MODULE.fullmatch(game) and function in (
            "", *PETTINGZOO_MAKERS):
        return ""
    imported = [m for m in os.environ.get(IMPORTS_ENV, "").split(",") if m]
    if not any(_inside(module, m) for m in imported):
        return (f"whose module {printable(module)} is neither a game of a package of "
                f"PettingZoo games ({', '.join(FAMILIES)}: <package>.<game>_v<N>) nor in a "
                "module the command line imported (imports=, --import)")
    from games.pettingzoo import resolve_env

    try:  # imports only below a module the user imported
        factory, _, parallel = resolve_env(path)
    except GameError:
        return ""  # games.make says why, as for a name given
    named = function or {True: "parallel_env", False: "env"}.get(
        parallel, module.rpartition(".")[2])
    owner = getattr(factory, "__module__", None) or "?"
    # a maker's name too (from os import system as env): only PettingZoo's own functions
    # (a game's env it re-exports, parallel_wrapper_fn's) and the imported modules' own
    if not any(_inside(owner, m) for m in (*imported, "pettingzoo", *FAMILIES)):
        return (f"whose function {printable(named)} is {printable(owner)}'s, which its "
                "module imported, not one it defines")
    return ""


def _inside(module: str, package: str) -> bool:
    """Whether ``module`` is ``package`` or one of its modules."""
    return module == package or module.startswith(f"{package}.")


def printable(text: str) -> str:
    """``text`` with each character that is not printable (ESC, ``\\r``, newlines, other
    control and format codes) as its Python escape: text read from a file (a snapshot's game
    name) printed raw could move the cursor, recolour or retitle the terminal, or fake lines."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
