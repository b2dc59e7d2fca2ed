"""PettingZoo environments through the game contract: ``games.make("pettingzoo/<module>")``.

The path after ``pettingzoo/`` is an importable PettingZoo-style module
(``mpe2.simple_spread_v3``, ``pettingzoo.classic.tictactoe_v3``) or a function that builds
an env, written ``<module>:<function>`` (or ``<module>.<function>``), e.g. a user's module
returning ``games.to_pettingzoo(...)``; keyword arguments are forwarded to it.

* A module with ``parallel_env`` (the MPE scenarios), or a function returning a
  ``ParallelEnv``, is driven through the Parallel API: every live agent acts each step.
* Otherwise ``env()`` is driven through the AEC API: the selected agent acts and agents
  that are done are stepped out.
* Dict observations ``{"observation", "action_mask"}`` (PettingZoo's convention, and what
  ``games.to_pettingzoo`` exports) give the numeric observation and the legal-action mask.

Teams and zero-sum come from what the environment declares, in this order: ``teams=`` /
``zero_sum=`` passed to ``games.make``; the env's ``metadata["teams"]`` /
``metadata["zero_sum"]`` (``to_pettingzoo`` exports write them); the MPE world's
``agent.adversary`` flags (adversaries versus good agents: ``simple_adversary``,
``simple_crypto`` with eve versus alice and bob, ``simple_push``, ``simple_tag``,
``simple_world_comm``); the table :data:`KNOWN_SIDES` of PettingZoo's own games (classic
games: every player its own team, zero-sum where the rules are, Hanabi one cooperative
team; the other MPE scenarios one cooperative team). Any other env gets the safe default,
every agent its own team and not zero-sum, with a logged warning.

Roles are agent names without their index (``adversary_0`` → ``adversary``) in MPE and other
Parallel games, and the seat names in classic and turn-based games.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib
import inspect
import logging
import pkgutil
import re
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv

from games.array_text import array_text
from games.core import (
    ActionSpace,
    EntityGraph,
    Game,
    GameError,
    GameSpec,
    Transition,
    UnknownGameError,
)
from games.core import where_raised as _where_raised
from games.graphs import mpe_entity_graph
from games.pettingzoo_params import check_kwargs
from games.registry import kwargs_name
from games.teams import agent_specs, parse_teams, parse_zero_sum

logger = logging.getLogger(__name__)

MPE_MOVES = ("no_action", "move_left", "move_right", "move_down", "move_up")
# Episode lengths of the classic board games (moves until the board is full).
CLASSIC_MAX_STEPS = {"tictactoe": 9, "connect_four": 42}
DEFAULT_MAX_STEPS = 1000

EACH, ONE = "each", "one"
# PettingZoo's own games that declare no teams, by (family, game): every agent its own
# team (EACH) or one team (ONE), and zero-sum, from the games' rules. MPE scenarios with
# adversaries declare them on their world's agents and need no entry.
_ZERO_SUM_CLASSIC = (  # two-player win/loss games, and poker (chips change hands)
    "rps", "tictactoe", "connect_four", "chess", "go",
    "leduc_holdem", "texas_holdem", "texas_holdem_no_limit",
)  # fmt: skip
_COOPERATIVE = {  # one shared (or team) reward
    "mpe": ("simple", "simple_spread", "simple_reference", "simple_speaker_listener",
            "simple_formation", "simple_line", "collect_treasure"),
    "butterfly": ("cooperative_pong", "knights_archers_zombies", "pistonball"),
    "sisl": ("multiwalker", "pursuit", "waterworld"),
}  # fmt: skip
KNOWN_SIDES: dict[tuple[str, str], tuple[str, bool]] = {
    **{("classic", g): (EACH, True) for g in _ZERO_SUM_CLASSIC},
    ("classic", "gin_rummy"): (EACH, False),  # pettingzoo<1.25; competitive, scores not zero-sum
    ("classic", "hanabi"): (ONE, False),  # cooperative: all players share the score
    **{(fam, g): (ONE, False) for fam, names in _COOPERATIVE.items() for g in names},
}
COOPERATIVE_TEAM = "team"
LARGE_OBS = 10_000  # features of a multi-dimensional observation (an image) worth a warning
_warned_large: set[tuple[str, str]] = set()  # (game, "obs" | "state") warned about
_warned_sides: set[str] = set()  # games warned about declaring no teams
# The copies of each game (name and arguments) alive in this process: how many a VectorGame
# had built when building one more ran out of memory
_copies: dict[str, weakref.WeakSet] = {}


FAMILIES = ("mpe2", "pettingzoo.classic", "pettingzoo.butterfly", "pettingzoo.sisl")
"""Packages searched for a misspelt or bare game module (``simple_spread_v3``)."""


def _modules_of(package: str) -> list[str]:
    """Names of the modules directly in ``package`` (none if it does not import)."""
    try:
        path = importlib.import_module(package).__path__
    except (ImportError, AttributeError):
        return []
    return [m.name for m in pkgutil.iter_modules(path)]


def _did_you_mean(module_path: str) -> str:
    """``"; close matches: [...]"`` naming game modules near ``module_path`` (other versions
    of it, near spellings) in its package, or in :data:`FAMILIES` for a bare name; the
    package's game modules when none is near; else ''."""
    head, _, tail = module_path.rpartition(".")
    base = re.sub(r"_v\d+$", "", tail)
    found, in_package = [], bool(head and _modules_of(head))
    for package in (head,) if in_package else FAMILIES:
        names = [n for n in _modules_of(package) if re.search(r"_v\d+$", n)]
        near = [n for n in names if re.sub(r"_v\d+$", "", n) == base]
        near += [n for n in difflib.get_close_matches(tail, names, n=3, cutoff=0.75)
                 if n not in near]
        found += [f"{package}.{n}" for n in near if f"{package}.{n}" != module_path]
        if in_package and not found and names:
            return f"; {head} has {names}"
    return f"; close matches: {found[:5]}" if found else ""


def _import_error(spec: str, err: ImportError) -> UnknownGameError:
    module_path = spec.partition(":")[0]
    missing = err.name if isinstance(err, ModuleNotFoundError) else None
    if missing and not f"{module_path}.".startswith(f"{missing}."):
        # the module exists; a package it imports does not (pistonball needs pymunk)
        fam = re.match(r"pettingzoo\.(\w+)\.", module_path)
        hint = f"pip install 'pettingzoo[{fam.group(1)}]'" if fam else f"pip install {missing}"
        return UnknownGameError(
            f"'pettingzoo/{spec}' needs the package {missing!r}, which is not installed "
            f"({hint})"
        )
    return UnknownGameError(
        f"cannot import PettingZoo module for 'pettingzoo/{spec}' ({err})"
        f"{_did_you_mean(module_path)}; use a module path such as 'mpe2.simple_spread_v3' or "
        "'pettingzoo.classic.tictactoe_v3', or '<module>:<function returning an env>'"
    )


def resolve_env(spec: str) -> tuple[Callable[..., Any], ModuleType, bool | None]:
    """(env factory, its module, parallel?) for ``module``, ``module:fn`` or ``module.fn``.

    ``parallel`` is None for a function: the env it returns says which API it has.
    """
    module_path, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_path)
    except ModuleNotFoundError as err:
        head, _, tail = module_path.rpartition(".")
        if attr or not head or err.name != module_path:  # a missing module or dependency
            raise _import_error(spec, err) from None
        try:  # 'pkg.mod.fn': the last part may be a function of 'pkg.mod'
            module = importlib.import_module(head)
        except ImportError:
            raise _import_error(spec, err) from None
        if not callable(getattr(module, tail, None)):
            raise _import_error(spec, err) from None
        attr = tail
    except ImportError as err:
        raise _import_error(spec, err) from None
    if attr:
        fn = getattr(module, attr, None)
        if not callable(fn):
            raise UnknownGameError(
                f"'pettingzoo/{spec}': module {module.__name__!r} has no function {attr!r}"
            )
        return fn, module, None
    if hasattr(module, "parallel_env"):
        return module.parallel_env, module, True
    if callable(getattr(module, "env", None)):
        return module.env, module, False
    raise UnknownGameError(
        f"'pettingzoo/{spec}': module has neither parallel_env nor env"
        f"{_did_you_mean(module_path)}; name a function that builds the env as "
        "'<module>:<function>'"
    )


_BOX_CAST = r".*WARN: Box (low|high)'s precision lowered by casting to float32"
"""The UserWarning gymnasium's ``Box`` writes (with raw ANSI colour codes) when an env gives
float64 bounds to a float32 space: texas_holdem_no_limit_v6 printed two at every make, before
a one-line refusal too; nothing a user of the game can change."""


@contextlib.contextmanager
def _quiet_box_casts() -> Iterator[None]:
    """Ignore gymnasium's Box precision warnings (:data:`_BOX_CAST`) in the block, and only
    those: any other warning of the env's code shows as before."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_BOX_CAST, category=UserWarning,
                                module=r"gymnasium\.spaces\.box")
        yield


def _family(module_name: str) -> str:
    """``classic`` / ``mpe`` / ``butterfly`` / ``sisl`` for PettingZoo's own games, else ''."""
    if module_name.startswith("mpe2.") or module_name.startswith("pettingzoo.mpe."):
        return "mpe"
    m = re.match(r"pettingzoo\.(classic|butterfly|sisl)\.", module_name)
    return m.group(1) if m else ""


def _base_role(agent: str) -> str:
    return re.sub(r"_\d+$", "", agent)


@dataclass(frozen=True)
class Sides:
    """Roles, teams and zero-sum of an adapted env, and where they came from."""

    roles: dict[str, str]
    teams: dict[str, str]
    zero_sum: bool
    source: str  # "override" | "metadata" | "mpe adversary flags" | "table" | "default"


def _declared_sides(
    env: Any, agents: tuple[str, ...], module: str, parallel: bool, warn: bool = True
) -> Sides:
    """What the env declares (metadata, MPE flags) or the table says; the default otherwise."""
    where = f"pettingzoo/{module}"
    meta = getattr(env, "metadata", None) or {}
    family, short = _family(module), module.rsplit(".", 1)[-1].rsplit("_v", 1)[0]
    if parallel and family != "classic":
        roles = {a: _base_role(a) for a in agents}
    else:
        roles = {a: a for a in agents}
    if isinstance(meta.get("roles"), Mapping) and set(meta["roles"]) == set(agents):
        roles = {a: str(meta["roles"][a]) for a in agents}
    if "teams" in meta:
        try:
            teams = parse_teams(meta["teams"], agents, f"{where} metadata")
            zero_sum = parse_zero_sum(meta.get("zero_sum", False), f"{where} metadata")
            return Sides(roles, teams, zero_sum, "metadata")
        except GameError as err:
            if warn:  # no override given: the declaration is all there is
                raise GameError(f"{err}; pass teams=... to games.make to override") from None
    world = getattr(getattr(env, "unwrapped", env), "world", None)
    flags = {
        a.name: bool(a.adversary) for a in getattr(world, "agents", ()) if hasattr(a, "adversary")
    }
    if flags and set(flags) == set(agents):
        if any(flags.values()) and not all(flags.values()):
            teams = {a: "adversary" if flags[a] else "good" for a in agents}
        else:
            teams = {a: COOPERATIVE_TEAM for a in agents}
        return Sides(roles, teams, bool(meta.get("zero_sum", False)), "mpe adversary flags")
    if (family, short) in KNOWN_SIDES:
        kind, zero_sum = KNOWN_SIDES[family, short]
        teams = {a: a if kind == EACH else COOPERATIVE_TEAM for a in agents}
        return Sides(roles, teams, zero_sum, "table")
    return Sides(roles, {a: a for a in agents}, False, "default")  # PettingZooGame warns


def _skip_check_wrappers(env: Any) -> None:
    """A Parallel env converted from an AEC env (``parallel_wrapper_fn``: every MPE scenario)
    steps it through PettingZoo's ``OrderEnforcingWrapper`` and ``AssertOutOfBoundsWrapper``,
    which check what :meth:`Game.step` has checked already (reset first, legal actions) and
    forward each of the conversion's many attribute reads: about half the CPU time of a
    simple_spread step. Step the env inside them; any other wrapper (``ClipOutOfBounds`` of
    continuous actions, a user's) stays, and the same seed gives the same episodes."""
    from pettingzoo.utils.conversions import aec_to_parallel_wrapper
    from pettingzoo.utils.wrappers import AssertOutOfBoundsWrapper, OrderEnforcingWrapper

    if type(env) is not aec_to_parallel_wrapper:
        return
    inner = env.aec_env
    while type(inner) in (OrderEnforcingWrapper, AssertOutOfBoundsWrapper):
        inner = inner.env
    env.aec_env = inner
    if hasattr(inner, "world") and hasattr(inner, "scenario"):  # MPE (pure observe())
        # the conversion reads last() before each agent's step and drops it: without the
        # observation, which a third of an MPE step's time went to
        inner.last = functools.partial(type(inner).last, inner, observe=False)


def _action_space(space: spaces.Space, where: str) -> ActionSpace:
    if isinstance(space, spaces.Discrete):
        return ActionSpace("discrete", n=int(space.n))
    if isinstance(space, spaces.Box):
        try:  # per dimension (a min and max of them mapped actions outside the box)
            return ActionSpace.box(space.shape, space.low, space.high)
        except GameError as err:
            raise GameError(f"{where}: unsupported action space {space}: {err}") from None
    raise GameError(f"{where}: unsupported action space {space}; Discrete or Box is accepted")


def _obs_space(space: spaces.Space) -> spaces.Space:
    if isinstance(space, spaces.Dict) and "observation" in space.spaces:
        return space["observation"]
    return space


_FLOAT32 = np.dtype(np.float32)


def _split_obs(obs: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """(flat float32 observation, bool action mask or None) of a plain or dict observation."""
    mask = None
    if isinstance(obs, Mapping):
        if "action_mask" in obs:
            mask = np.asarray(obs["action_mask"], dtype=bool).ravel()
        obs = obs["observation"]
    return np.asarray(obs, dtype=np.float32).ravel(), mask


def _image_shape(spaces_: Sequence[spaces.Space | None]) -> tuple[int, ...] | None:
    """The largest shape among ``spaces_`` if it is multi-dimensional and at least
    :data:`LARGE_OBS` features (an image, flattened for the encoders), else None."""
    shape = max((tuple(sp.shape or ()) for sp in spaces_ if sp is not None), key=np.prod,
                default=())
    return shape if len(shape) >= 2 and np.prod(shape) >= LARGE_OBS else None


def _warn_large_obs(module_path: str, obs_spaces: Mapping[str, spaces.Space],
                    state_space: spaces.Space | None) -> None:
    """Warn (once per game and process) that images will be flattened into a vector: the
    encoders are MLPs and GNNs, and on cooperative_pong's 280x480x3 frames (403,200
    features; its global state is the same screen) a MAPPO update took ~65 s on a CPU."""
    shape = _image_shape(list(obs_spaces.values()))
    if shape and (module_path, "obs") not in _warned_large:
        _warned_large.add((module_path, "obs"))
        logger.warning(
            "pettingzoo/%s: observations are %s arrays (images?), flattened to %d features: "
            "the encoders here (MLP, GNN) are not convolutional and will train very slowly on "
            "them; downscale them first: game.name=pettingzoo/<your module>:<function> "
            "returning the env in a wrapper (pettingzoo.utils.BaseParallelWrapper) with "
            "smaller observations (strided, grayscale, cropped)",
            module_path, "x".join(map(str, shape)), int(np.prod(shape)),
        )
    shape = _image_shape([state_space])
    if shape and (module_path, "state") not in _warned_large:
        _warned_large.add((module_path, "state"))
        logger.warning(
            "pettingzoo/%s: the global state is a %s array (an image?), flattened to %d "
            "features for centralized critics, which will train very slowly on it; use "
            "critics on the agents' own observations (mappo.net.critic=local) or a wrapper "
            "whose state_space and state() are smaller",
            module_path, "x".join(map(str, shape)), int(np.prod(shape)),
        )


def _build_error(err: Exception, module_path: str, factory: Callable[..., Any],
                 module: ModuleType, parallel: bool | None, kwargs: dict) -> GameError:
    """The one-line error for an env factory that raised ``err``.

    Bad arguments (a keyword the factory does not take, a value the env rejects) name the
    accepted parameters. PettingZoo's own envs reject bad values deep inside (``local_ratio=5``:
    an AssertionError; MPE and classic counts and the kinds of values are checked before, by
    :mod:`games.pettingzoo_params`), so any
    of their errors reads as bad arguments; a user's factory is
    read so only for a TypeError or ValueError when arguments were given. Anything else is a
    bug in the user's code: the error names the factory, the exception and the line that raised
    it (``HYDRA_FULL_ERROR=1`` shows the traceback).

    Running out of memory (a MemoryError, pygame's ``error: Out of memory``) while building
    one more copy is neither: the error says so, which copy it was, and to lower num_envs."""
    why = str(err).strip().splitlines()[-1] if str(err).strip() else "no message"
    if isinstance(err, MemoryError) or "out of memory" in why.lower():
        copy = len(_copies.get(_copies_key(module_path, kwargs), ())) + 1
        kind = type(err).__qualname__
        if type(err).__module__ != "builtins":  # pygame.error, not a bare 'error'
            kind = f"{type(err).__module__}.{kind}"
        said = f": {why}" if str(err).strip() else ""
        return GameError(f"out of memory building copy {copy} of pettingzoo/{module_path} "
                         f"{kwargs} ({copy - 1} alive in this process; {kind}{said}); "
                         "lower num_envs")
    own_game = bool(_family(module.__name__))
    if kwargs and (own_game or isinstance(err, (TypeError, ValueError))):
        raw = getattr(module, "raw_env", factory) if parallel is not None else factory
        at = "" if own_game else f" (raised at {_where_raised(err)})"
        head = f"bad arguments for pettingzoo/{module_path} {kwargs}"
        keys = _keyword_names(raw)
        if keys is not None and _value_refused(err, why, kwargs, keys):
            said = f"{type(err).__name__}: {why}" if str(err).strip() \
                else f"{type(err).__name__} with no message"
            values = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            one = len(kwargs) == 1
            which = "the value" if one else "one of the values"
            named = all(k in keys[0] for k in kwargs)  # else **kwargs took them: unchecked
            note = ("; the key is one it takes, the value is not" if one else
                    "; the keys are ones it takes, a value is not") if named else ""
            return GameError(f"{head}: the env refused {which} {values} ({said}){at}{note}")
        kind = "" if isinstance(err, TypeError) else f"{type(err).__name__}: "
        return GameError(f"{head}: {kind}{why}{at}; accepted: {_accepted_text(raw, keys)}")
    name = f"{module.__name__}.{getattr(factory, '__name__', 'env')}"
    return GameError(
        f"pettingzoo/{module_path}: the env factory {name} raised {type(err).__name__}: {why} "
        f"(at {_where_raised(err)}); HYDRA_FULL_ERROR=1 shows the traceback"
    )


def _keyword_names(raw: Callable[..., Any]) -> tuple[list[str], bool] | None:
    """The named parameters of ``raw`` (``self`` and ``*args`` left out) and whether it also
    takes ``**kwargs``; None for a callable without a signature."""
    try:
        params = inspect.signature(raw).parameters.values()
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return None
    named = [p.name for p in params if p.name != "self"
             and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return named, any(p.kind is p.VAR_KEYWORD for p in params)


def _value_refused(err: Exception, why: str, kwargs: dict, keys: tuple[list[str], bool]) -> bool:
    """Whether ``err`` refused a value, not a key: every key given is a named parameter, or
    the env takes ``**kwargs`` and the error is not Python's "unexpected keyword argument"
    (chess_v6 ``render_mode='bogus'``, an AssertionError, listed the keys as if the key were
    wrong)."""
    named, any_key = keys
    if all(k in named for k in kwargs):
        return True
    return any_key and not (isinstance(err, TypeError) and "keyword argument" in why)


def _accepted_text(raw: Callable[..., Any], keys: tuple[list[str], bool] | None) -> str:
    """The keyword arguments ``raw`` takes, for an error; its own name where its signature
    cannot list them (``**kwargs``: cooperative_pong_v6 listed ``['kwargs']``)."""
    where = f"{getattr(raw, '__module__', '?')}.{getattr(raw, '__qualname__', 'env')}"
    if keys is None:
        return f"see the signature of {where}"
    named, any_key = keys
    if not any_key:
        return str(named)
    more = f"{named} and " if named else "the "
    return (f"{more}keyword arguments {where} passes on through **kwargs, which its "
            "signature cannot list")


def _check_env(env: Any, module_path: str, factory: Callable[..., Any],
               module: ModuleType) -> None:
    """Refuse, in one line, what an env factory returned when it is no PettingZoo env (a
    user's ``make_env`` without its ``return``: ``'NoneType' object has no attribute
    'possible_agents'``). An env of neither base class passes when it has the Parallel API's
    ``possible_agents``, ``reset`` and ``step``."""
    if isinstance(env, (AECEnv, ParallelEnv)) or (
            hasattr(env, "possible_agents") and callable(getattr(env, "reset", None))
            and callable(getattr(env, "step", None))):
        return
    name = f"{module.__name__}.{getattr(factory, '__name__', 'env')}"
    try:
        text = " ".join(repr(env).split())
    except Exception:  # a broken __repr__ of the user's object: its type says enough
        text = "an object"
    text = text if len(text) <= 60 else f"{text[:57]}..."
    what = "None" if env is None else f"{text} (type {type(env).__qualname__})"
    hint = "; a games.Game becomes one with games.to_pettingzoo(game)" \
        if isinstance(env, Game) else ""
    raise GameError(f"pettingzoo/{module_path}: the env factory {name} returned {what}; "
                    f"accepted: a PettingZoo AEC or Parallel env (pettingzoo.AECEnv, "
                    f"pettingzoo.ParallelEnv){hint}")


def _copies_key(module_path: str, kwargs: dict) -> str:
    return f"{module_path} {sorted(kwargs.items(), key=lambda kv: kv[0])!r}"


def obs_array_text(x: np.ndarray) -> str:
    """``np.array2string`` of ``x`` as flat float32, ``precision=2``: the same text, faster
    (:mod:`games.array_text`). Looked up at each call: bench/array_text.py sets it to each
    formatter it times."""
    return array_text(x)


class PettingZooGame(Game):
    """A PettingZoo Parallel or AEC environment behind the game contract.

    Args:
        module_path: ``<module>``, ``<module>:<function>`` or ``<module>.<function>``.
        teams: override of the declared teams (``{agent: team}`` or a list of lists).
        zero_sum: override of the declared zero-sum flag.
        max_steps: override of the episode limit.
        **kwargs: forwarded to the env factory.
    """

    def __init__(
        self,
        module_path: str,
        teams: Any = None,
        zero_sum: Any = None,
        max_steps: int | None = None,
        **kwargs: Any,
    ) -> None:
        factory, module, parallel = resolve_env(module_path)
        named = {"max_steps": max_steps, "teams": teams, "zero_sum": zero_sum}
        family = _family(module.__name__)
        raw = getattr(module, "raw_env", factory) if parallel is not None else None
        built = check_kwargs(module_path, module.__name__, family, raw, max_steps, kwargs)
        try:
            with _quiet_box_casts():
                self.env = factory(**built)
        except Exception as err:
            raise _build_error(err, module_path, factory, module, parallel, built) from err
        _check_env(self.env, module_path, factory, module)
        _copies.setdefault(_copies_key(module_path, kwargs), weakref.WeakSet()).add(self)
        _skip_check_wrappers(self.env)
        self.parallel = not isinstance(self.env, AECEnv)  # what the factory built decides
        self.name = module_path
        env = self.env
        agents = tuple(env.possible_agents)
        self._world = getattr(env.unwrapped, "world", None)  # MPE scenarios only
        self.sides = self._sides(module.__name__ if parallel is None else module_path,
                                 agents, teams, zero_sum)
        short = module_path.rsplit(".", 1)[-1].rsplit("_v", 1)[0]
        meta = getattr(env, "metadata", None) or {}
        max_steps = (
            max_steps
            or meta.get("max_steps")
            or (getattr(env.unwrapped, "max_cycles", None) if self.parallel else None)
            or CLASSIC_MAX_STEPS.get(short)
        )
        self._action_spaces = {a: _action_space(env.action_space(a), module_path) for a in agents}
        obs_spaces = {a: _obs_space(env.observation_space(a)) for a in agents}
        state_space = getattr(env, "state_space", None) if self.parallel else None
        _warn_large_obs(module_path, obs_spaces, state_space)
        self.spec = GameSpec(
            # the kwargs are part of the name: making the game from it gets this game
            name=kwargs_name(f"pettingzoo/{module_path}", {**kwargs, **{
                k: v for k, v in named.items() if v is not None}}),
            agents=agent_specs(self.sides.roles, self.sides.teams),
            obs_shapes={a: (int(np.prod(obs_spaces[a].shape)),) for a in agents},
            action_spaces=self._action_spaces,
            max_steps=int(max_steps or DEFAULT_MAX_STEPS),
            zero_sum=self.sides.zero_sum,
            simultaneous=self.parallel,
            state_shape=(int(np.prod(state_space.shape)),) if state_space is not None else None,
            has_entity_graph=self._world is not None,
        )
        self._move_names = short.startswith("simple")
        # asked for every agent of every copy at every step: built once (spec.agent_ids
        # builds a tuple at each read)
        self._agent_ids = self.spec.agent_ids
        self._all_legal = {}
        self._all_ids: dict[str, range] = {}  # legal_actions where the env gives no mask
        for a, sp in self._action_spaces.items():
            if sp.discrete:
                self._all_legal[a] = np.ones(sp.n, dtype=bool)
                self._all_legal[a].flags.writeable = False
                self._all_ids[a] = range(sp.n)
        self._obs: dict[str, np.ndarray] = {}
        self._masks: dict[str, np.ndarray] = {}  # Parallel envs with dict observations
        # MPE's state is every agent's observation concatenated: kept from the step's
        # observations instead of computed again (checked against env.state() at the first
        # reset; None: ask the env)
        self._state_from_obs = self.parallel and self._world is not None and state_space is not None
        self._state: np.ndarray | None = None
        self._live: tuple[str, ...] = ()
        self._t = 0
        # reset(None) is the contract's "continue the RNG stream"; an env's own reset(None) may
        # not be (shimmy's OpenSpiel envs, hanabi: fresh OS entropy each time, so runs with one
        # seed differed): it gets seeds drawn from the stream reset(seed) started. MPE's
        # continues its np_random, and keeps its episodes as they were.
        self._seeds: np.random.Generator | None = None
        self._reseed = _family(module.__name__) != "mpe"

    def _sides(self, module: str, agents: tuple[str, ...], teams: Any, zero_sum: Any) -> Sides:
        """Declared sides, with the user's ``teams=`` / ``zero_sum=`` on top."""
        where = f"pettingzoo/{self.name}"
        sides = _declared_sides(self.env, agents, module, self.parallel, warn=teams is None)
        if teams is not None:
            team_of = parse_teams(teams, agents, where)
            sides = Sides(sides.roles, team_of, sides.zero_sum, "override")
        defaulted = sides.source == "default"  # no teams declared, none given
        if zero_sum is not None:
            sides = Sides(sides.roles, sides.teams, parse_zero_sum(zero_sum, where), "override")
        if defaulted and where not in _warned_sides:
            # once per game and process: every copy of a batch (and every match) builds one
            _warned_sides.add(where)
            logger.warning(
                "%s declares no teams (metadata['teams']) and is not a known PettingZoo game: "
                "every agent is its own team and %s; pass teams=...%s to games.make to say "
                "otherwise", where,
                "the game is not zero-sum" if zero_sum is None else
                f"zero_sum={sides.zero_sum} as given",
                " and zero_sum=..." if zero_sum is None else "")
        return sides

    # ------------------------------------------------------------------- contract
    def _reset(self, seed: int | None) -> None:
        if seed is not None:
            self._seeds = np.random.default_rng(seed)
        elif self._seeds is None:  # never seeded: a fresh stream
            self._seeds = np.random.default_rng()
            seed = int(self._seeds.integers(2**31))
        elif self._reseed:  # reset(None) continues the stream reset(seed) started
            seed = int(self._seeds.integers(2**31))
        self._t = 0
        if self.parallel:
            obs, _ = self.env.reset(seed=seed)
            self._take_obs(obs, reset=True)
            self._live = tuple(self.env.agents)
        else:
            self.env.reset(seed=seed)
            self._live = self._aec_acting()

    def _step(self, actions: dict[str, Any]) -> Transition:
        self._t += 1
        tr = self._parallel_step(actions) if self.parallel else self._aec_step(actions)
        if self._live and self._t >= self.spec.max_steps:  # our own time limit
            # every agent still in the episode is cut, also those waiting for their turn in
            # an AEC game (only the one to move is live): else a learner reads their end as
            # terminated and does not bootstrap
            still = self._live if self.parallel else self.env.agents
            for a in still:
                if not (tr.terminated.get(a) or tr.truncated.get(a)):
                    tr.truncated[a] = True
            self._live = ()
        return tr

    def _parallel_step(self, actions: dict[str, Any]) -> Transition:
        obs, rew, term, trunc, info = self.env.step(actions)
        self._take_obs(obs)
        self._live = tuple(a for a in self.env.agents if not (term.get(a) or trunc.get(a)))
        rewards, terminated, truncated = {}, {}, {}
        for a in self._agent_ids:  # one pass (three dict comprehensions before)
            rewards[a] = float(rew.get(a, 0.0))
            terminated[a] = bool(term.get(a, False))
            truncated[a] = bool(trunc.get(a, False))
        return Transition(rewards, terminated, truncated, info={"agents": info})

    def _take_obs(self, obs: Mapping[str, Any], reset: bool = False) -> None:
        """Store the Parallel API's observations (plain arrays or observation/mask dicts).

        An agent the env removed mid-episode (a dead knight in ``knights_archers_zombies``)
        keeps its last observation, the one it got when it left: ``observe`` still answers
        for it, and VectorGame's ``final_obs`` holds it at the step it leaves (an agent
        truncated alone bootstraps from it); at later steps, the episode's end included,
        learners see zeros for it."""
        if reset:
            self._obs, self._masks = {}, {}
        store, plain = self._obs, True
        for a, o in obs.items():
            if type(o) is np.ndarray and o.dtype is _FLOAT32 and o.ndim == 1:
                store[a] = o  # what _split_obs gives for it (MPE's), without its calls
            else:
                plain = False
                store[a], mask = _split_obs(o)
                if mask is not None:
                    self._masks[a] = mask
        self._state = None
        if self._state_from_obs and len(obs) == len(self.spec.agents):
            self._state = np.concatenate(  # flat float32 observations: those just stored
                [store[a] for a in self._agent_ids] if plain else
                [np.asarray(obs[a], dtype=np.float32).ravel() for a in self._agent_ids])
            if reset and self._state_from_obs is True:  # the first reset: the same numbers?
                same = np.array_equal(self._state, np.asarray(self.env.state(),
                                                              dtype=np.float32).ravel())
                self._state_from_obs = "checked" if same else False

    def _aec_step(self, actions: dict[str, Any]) -> Transition:
        env = self.env
        ((agent, action),) = actions.items()
        env.step(action)
        ids = self._agent_ids
        rewards = {a: float(env.rewards.get(a, 0.0)) for a in ids}
        term = {a: bool(env.terminations.get(a, False)) for a in ids}
        trunc = {a: bool(env.truncations.get(a, False)) for a in ids}
        self._live = self._aec_acting(rewards, term, trunc)
        return Transition(rewards, term, trunc)

    def _aec_acting(
        self,
        rewards: dict[str, float] | None = None,
        term: dict[str, bool] | None = None,
        trunc: dict[str, bool] | None = None,
    ) -> tuple[str, ...]:
        """Step out agents that are done; return the next acting agent (or none)."""
        env = self.env
        while env.agents:
            sel = env.agent_selection
            if not (env.terminations[sel] or env.truncations[sel]):
                return (sel,)
            if all(env.terminations[a] or env.truncations[a] for a in env.agents):
                return ()
            env.step(None)
            if rewards is not None:
                for a in env.agents:
                    rewards[a] += float(env.rewards.get(a, 0.0))
                    term[a] = bool(env.terminations.get(a, False))  # type: ignore[index]
                    trunc[a] = bool(env.truncations.get(a, False))  # type: ignore[index]
        return ()

    def acting_agents(self) -> tuple[str, ...]:
        return self._live

    def observe(self, agent: str) -> np.ndarray:
        if self.parallel:
            return self._obs[agent]
        return _split_obs(self.env.observe(agent))[0]

    def _mask(self, agent: str) -> np.ndarray | None:
        """The env's action mask for a live agent, or None when it gives none."""
        if self.parallel:
            return self._masks.get(agent)
        return _split_obs(self.env.observe(agent))[1]

    def legal_actions(self, agent: str) -> Sequence[int]:
        if agent not in self._live:
            return []
        mask = self._mask(agent)
        if mask is not None:
            return np.flatnonzero(mask).tolist()
        ids = self._all_ids.get(agent)  # a box agent's: range(n), as before
        return ids if ids is not None else range(self._action_spaces[agent].n)

    def legal_mask(self, agent: str) -> np.ndarray:
        if agent in self._live and agent in self._all_legal:  # a discrete agent's
            mask = self._mask(agent)
            if mask is not None:
                return mask
            return self._all_legal[agent]
        return super().legal_mask(agent)

    def final_legal_mask(self, agent: str) -> np.ndarray | None:
        """The env's action mask of ``agent`` where its episode ended (a Parallel env's last
        observation's, an AEC env's ``observe``; all False for a seat not to move, which
        counts as every action); None where it gives none (every action is legal)."""
        return self._mask(agent) if self._action_spaces[agent].discrete else None

    def text_observation(self, agent: str) -> str:
        role = self.spec.agent(agent).role
        return f"{self.name} step {self._t}; you are {agent} ({role}); observation: " + (
            obs_array_text(self.observe(agent))
        )

    def action_text(self, agent: str, action: int) -> str:
        if self._move_names and self._action_spaces[agent].n == len(MPE_MOVES):
            return MPE_MOVES[int(action)]
        return super().action_text(agent, action)

    def state(self) -> np.ndarray | None:
        if self.spec.state_shape is None:
            return None
        if self._state is not None and self._state_from_obs:
            return self._state.copy()
        return np.asarray(self.env.state(), dtype=np.float32).ravel()

    def entity_graph(self, agent: str | None = None) -> EntityGraph | None:
        if self._world is None:
            return None
        return mpe_entity_graph(self._world, ego=agent)

    def close(self) -> None:
        self.env.close()
