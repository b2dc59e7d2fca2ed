"""OpenSpiel games through the game contract: ``games.make("openspiel/<game string>")``.

* Chance nodes are resolved inside the adapter with the episode's seeded RNG, so the
  agents only ever see decision nodes.
* Numeric observations are information-state tensors (observation tensors for games
  that only provide those); text observations are information-state strings.
* Rewards are the change of ``state.returns()`` over a step, so their sum over an
  episode is the OpenSpiel return.
* Simultaneous-move nodes ask every player with legal actions to act at once.
* Every seat is its own team, except in games of identical utilities (``tiny_hanabi``,
  ``coop_box_pushing``) and those of :data:`COOPERATIVE` (``lewis_signaling``, declared
  general-sum), whose seats are one cooperative team, and in the partnership games
  of :data:`PARTNERSHIPS` (seats 0 and 2 against 1 and 3); ``teams=`` overrides.

The live ``pyspiel`` game and state are exposed (``pyspiel_game``, ``pyspiel_state``)
for exact solvers such as exploitability. A game's parameters are checked before it is
loaded by the rules of :mod:`games.openspiel_params`.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import os
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
import pyspiel

from games.core import (
    ActionSpace,
    AgentSpec,
    Game,
    GameCodeError,
    GameContractError,
    GameError,
    GameSpec,
    Transition,
    UnknownGameError,
    choice_index,
)
from games.openspiel_params import as_declared, check_params, list_brackets, same_types
from games.teams import override_sides

logger = logging.getLogger(__name__)
COOPERATIVE_TEAM = "team"  # the one team of a game whose seats all score the same
# Four-player partnership games: seats 0 and 2 against 1 and 3 (partners' returns are equal
# in every episode; OpenSpiel's game type does not say so). Named as teams=[[0, 2], [1, 3]].
PARTNERSHIPS = ("bridge", "euchre", "spades", "tiny_bridge_4p", "python_team_dominoes")
# Games that pay every seat the same in every episode though OpenSpiel declares them
# GENERAL_SUM: one cooperative team, as games of identical utilities. Found by playing every
# terminal history of each registered game that loads with defaults and is small
# (lewis_signaling: its one payoff matrix pays both players; trade_comm, at num_items=2 and
# 3: a trade pays both the same, and random play of the default agrees).
COOPERATIVE = ("lewis_signaling", "trade_comm")
_warned_sampled: set[str] = set()  # games whose chance OpenSpiel samples itself, warned about
# Lines OpenSpiel's C++ code wrote to stderr, logged once each: loading a game again (every copy
# of it a VectorGame builds) repeats its "known issues" warning
_warned_cpp: set[str] = set()


def _smoke(game: pyspiel.Game, where: str) -> None:
    """Build a first decision state and its tensors: a non-default parameter that OpenSpiel
    accepts but cannot play raises here, at make time, instead of at the first reset."""
    try:
        state = game.new_initial_state()
        if state.is_terminal():  # oware with no seeds: made, then "step() after the episode
            # ended" at the first step of a run
            raise GameError(f"bad parameters for {where}: the game ends before anyone acts (its "
                            "first state is terminal), so it cannot be played; accepted: "
                            "parameters with which a player moves")
        for _ in range(1000):
            if not state.is_chance_node():
                break
            state.apply_action(state.chance_outcomes()[0][0])
        if not state.is_terminal():
            gtype = game.get_type()
            for p in range(game.num_players()):
                if gtype.provides_information_state_tensor:
                    state.information_state_tensor(p)
                elif gtype.provides_observation_tensor:
                    state.observation_tensor(p)
                state.legal_actions(p)
    except GameError:
        raise
    except Exception as err:  # any C++ error: the user's parameters caused it
        first = str(err).splitlines()[0].removeprefix("OpenSpiel exception: ") if str(err) else ""
        raise GameError(
            f"bad parameters for {where}: OpenSpiel cannot start a game with them "
            f"({type(err).__name__}: {first})"
        ) from None


@contextlib.contextmanager
def _cpp_stderr_to_log() -> Iterator[None]:
    """Send what OpenSpiel's C++ code writes to stderr (pyspiel prints every error it raises,
    ``OpenSpiel exception: ...``, and some warnings) to this module's log, so that a refused
    game is reported in the one line of its ``GameError``. A warning is logged once per process
    (``quoridor``'s "known issues" came once per game copy); its repeats go to debug."""
    fd = 2  # std::cerr writes there, whatever sys.stderr is
    try:
        saved = os.dup(fd)
    except OSError:  # no stderr at all: nothing to keep off it
        yield
        return
    sys.stderr.flush()
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            sink.seek(0)
            # the lines after an error's first are the error's too (battleship's lengths
            # after "ship_sizes.size() == ship_values.size()" were a warning of their own)
            raised = False
            for line in sink.read().decode(errors="replace").splitlines():
                raised = raised or line.startswith("OpenSpiel exception:")
                if raised or line in _warned_cpp:
                    logger.debug("openspiel: %s", line)  # the error raised says it / said once
                elif line.strip():
                    _warned_cpp.add(line)
                    logger.warning("openspiel: %s", line)


def _load(game_string: str, params: dict[str, Any]) -> pyspiel.Game:
    short = game_string.split("(", 1)[0]
    names = pyspiel.registered_names()
    if short not in names:
        # OpenSpiel's games written in Python register when their package is imported
        # (python_kuhn_poker..., and chat_game, which has no python_ prefix)
        import open_spiel.python.games  # noqa: F401

        names = pyspiel.registered_names()
    if short not in names:
        close = difflib.get_close_matches(short, names, n=5)
        hint = f" did you mean {close}?" if close else ""
        raise UnknownGameError(
            f"unknown OpenSpiel game {short!r};{hint} any of pyspiel.registered_names() "
            "works, e.g. kuhn_poker, leduc_poker, tic_tac_toe, goofspiel(num_cards=4)"
        )
    gspec = next(g for g in pyspiel.registered_games() if g.short_name == short)
    if gspec.dynamics == pyspiel.GameType.Dynamics.MEAN_FIELD:
        # its states wait for a population distribution (mean-field nodes), not for seats
        raise GameError(f"openspiel/{short} is a mean-field game, which has no seats for agents; "
                        "accepted: sequential or simultaneous-move games")
    params.update(_list_texts(gspec, params))  # in place, as as_declared's
    params.update(as_declared(short, params))  # in place: the spec's name reads it too
    check_params(game_string, params)
    where = f"openspiel/{game_string} {params or ''}".rstrip()
    load_name, load_params = game_string, params
    in_string = (pyspiel.game_parameters_from_string(game_string) if "(" in game_string
                 else {})
    ints = not same_types(in_string, as_declared(short, in_string))
    if ints or params and "(" in game_string:
        # pyspiel.load_game(string, params) takes the string as a bare name: "Unknown game
        # 'goofspiel(num_cards=3)'" and the list of every game on stderr; merged here
        load_params = pyspiel.game_parameters_from_string(game_string)
        load_name = load_params.pop("name")
        twice = sorted(set(load_params) & set(params))
        if twice:
            raise GameError(f"bad parameters for openspiel/{game_string}: {twice} given both in "
                            "the game string and as keyword arguments (game.kwargs); accepted: "
                            "each in one place")
        load_params.update(params)
        load_params = as_declared(short, load_params)  # deep_sea(unscaled_move_cost=2)
    try:
        with _cpp_stderr_to_log():
            game = (pyspiel.load_game(load_name, load_params) if load_params
                    else pyspiel.load_game(game_string))
    except Exception as err:  # SpielError, TypeError, or a bare C++ one (nfg_game: map::at)
        first = str(err).splitlines()[0].removeprefix("OpenSpiel exception: ") if str(err) else ""
        accepted = str(sorted(gspec.parameter_specification))
        given = {*params, *(pyspiel.game_parameters_from_string(game_string)
                            if "(" in game_string else ())}
        # a wrapper's game parameter (misere, zerosum, add_noise...) is a game, which only
        # the game string can give (game.kwargs.game=kuhn_poker is a string)
        for key, default in gspec.parameter_specification.items():
            named = re.search(rf"parameter {key}\b", first)
            if isinstance(default, dict) and (named or key not in given):
                inner = "goofspiel(num_cards=3)" if "simultaneous" in short else "kuhn_poker()"
                accepted += (f"; {key}= is a game, given inside the game string (quoted "
                             f"for Hydra and the shell): 'game.name=\"openspiel/{short}("
                             f"{key}={inner})\"'")
        bad = _refused_value(gspec, first, {**(pyspiel.game_parameters_from_string(
            game_string) if "(" in game_string else {}), **params})
        if bad is not None:  # a name it takes, a value it does not (returns_type=bogus): the
            # parameters' names as "accepted" read as if the name were wrong (walk38a L1), and
            # a game-valued one's (game=goofspiel(returns_type=bogus)) listed the outer game's
            inner, key, value, default = bad
            of = f" of {inner}" if inner else ""
            game_name = inner.split("=")[-1] if inner else short
            takes = game_name if inner else "the game"
            raise GameError(
                f"bad parameter for openspiel/{short}: {key}={value!r}{of} is not a value "
                f"{takes} takes ({type(err).__name__}: {first}); accepted: a value OpenSpiel's "
                f"{game_name} takes for {key}, its default {default!r}") from None
        raise GameError(
            f"bad parameters for {where}: {type(err).__name__}: {first}; accepted: {accepted}"
        ) from None
    if params or "(" in game_string:
        with _cpp_stderr_to_log():
            _smoke(game, where)
    return game


def _refused_value(gspec: Any, first: str, given: dict[str, Any],
                   inner: str = "") -> tuple[str, str, Any, Any] | None:
    """``(inner, key, value, default)`` of the given parameter whose value OpenSpiel's error
    ``first`` refused: one the game takes by name that the error names with the value
    (``Unrecognized returns_type parameter: bogus``); None when no one is. A game-valued
    parameter's own game is searched too: ``inner`` is then where the parameter is
    (``game=goofspiel`` in ``turn_based_simultaneous_game(game=goofspiel(returns_type=x))``),
    "" for the game's own."""
    for key, value in given.items():
        default = gspec.parameter_specification.get(key)
        if key == "name" or default is None:
            continue
        if isinstance(default, dict):  # a game: its own parameters, by its own spec
            name = value.get("name") if isinstance(value, dict) else None
            spec = next((g for g in pyspiel.registered_games() if g.short_name == name), None)
            found = spec and _refused_value(spec, first, value, f"{key}={name}")
            if found:
                return found
            continue
        if re.search(rf"(?<!\w){re.escape(key)}(?!\w)", first) and \
                re.search(rf"(?<!\w){re.escape(str(value))}(?!\w)", first):
            return inner, key, value, default
    return None


def _list_texts(gspec: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Lists of numbers given for string parameters that OpenSpiel reads as lists (its
    default is one: battleship's ``ship_sizes='[2;3;3;4;5]'``, nim's ``pile_sizes='1;3;5;7'``),
    written as it writes them: ``game.kwargs.ship_sizes=[2,3]`` is ``'[2;3]'``,
    ``game.kwargs.pile_sizes=[1,3]`` is ``'1;3'`` (both were refused as "accepted: a
    string")."""
    out = {}
    for name, value in params.items():
        brackets = list_brackets(gspec.parameter_specification.get(name))
        if (isinstance(value, (list, tuple)) and brackets is not None
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
            # (OpenSpiel parses each); nim's pile_sizes is written without brackets
            out[name] = brackets[0] + ";".join(str(v) for v in value) + brackets[1]
    return out


def _param_text(value: Any) -> str:
    """``value`` as a game string writes it, read back as the same value and type."""
    if isinstance(value, dict):  # a game (misere's game=...): given in the string, parsed
        return pyspiel.game_parameters_to_string(value)
    if isinstance(value, float):  # all its digits, no exponent (1e-05 reads as a string)
        return np.format_float_positional(value, trim="0")
    return str(value)


def _misread(text: str, short: str, given: dict[str, Any]) -> tuple[str, Any] | None:
    """The first of ``given`` (parameter: value) that the game string ``text`` does not
    read back as itself (same type, same value), as (name, what it reads); None: none."""
    try:
        with _cpp_stderr_to_log():  # pyspiel prints the error it raises
            back = pyspiel.game_parameters_from_string(text)
    except pyspiel.SpielError as err:  # an unclosed '(': "Missing closing bracket ')'."
        return "name", f"an error ({str(err).splitlines()[0]})"
    if back.get("name") != short:
        return "name", back.get("name")
    for key, value in given.items():
        if key not in back:  # a ',' or '=' cut it: what OpenSpiel reads instead
            return key, {k: v for k, v in back.items() if k != "name"}
        got = back[key]
        if type(got) is not type(value) or got != value:
            return key, got
    return None


# What a string parameter may hold for a game string to read it back as itself (OpenSpiel's
# GameParametersFromString: ',' and '=' end a value outside parentheses, one ending in ')'
# is a game, only digits and signs an int, with a '.' a float, true/True/false/False bools)
_SAYABLE = ("a string that is not a number (only digits, '+', '-', '.') nor true, false, "
            "True or False, does not end in ')', closes each '(' it opens and has ',' or '=' "
            "only inside parentheses")
# spec names that do not make their game again: the name -> why (remaking it is refused)
_UNSAYABLE: dict[str, str] = {}


def _spec_name(game: pyspiel.Game, game_string: str, params: dict[str, Any]) -> str:
    """The game string a spec names, ``params`` (game.kwargs) merged into ``game_string``:
    ``games.make("openspiel/" + name)`` makes this game again (a league records the name;
    evaluation and exploitability make the game from it). OpenSpiel's own ``str(game)``
    where it reads back as given; it does not for nfg_game ('matrix_nfg()') nor for floats
    past 15 digits. A value no game string can say ('1' reads back as 1, a ',' or '=' in
    a file's folder) is no reason to refuse the game: it is named by its parameters written
    out (OpenSpiel's str(game) but for float digits) with a warning, once; making a game
    from that name is refused in this process (``_UNSAYABLE``), where it would make
    another game or fail."""
    short = game_string.split("(", 1)[0]
    given = dict(pyspiel.game_parameters_from_string(game_string)) if "(" in game_string else {}
    given.pop("name", None)
    given.update(params)
    given = as_declared(short, given)  # deep_sea(unscaled_move_cost=2) is 2.0
    given = {k: v.item() if isinstance(v, np.generic) else v for k, v in given.items()}
    if _misread(str(game), short, given) is None:
        return str(game)
    text = f"{short}({','.join(f'{k}={_param_text(v)}' for k, v in sorted(given.items()))})"
    if _misread(text, short, given) is None:
        return text
    key, back = next(  # the value that does not read back, each said alone
        ((k, bad[1]) for k in sorted(given) if (bad := _misread(
            f"{short}({k}={_param_text(given[k])})", short, {k: given[k]})) is not None),
        ("name", text))
    why = (f"{key}={given.get(key, text)!r} cannot be written in an OpenSpiel game string "
           f"(it reads back as {back!r})")
    if f"openspiel/{text}" not in _UNSAYABLE:
        _UNSAYABLE[f"openspiel/{text}"] = why
        logger.warning(
            "openspiel/%s: %s: the game plays, named 'openspiel/%s', but that name does not "
            "make it again, so what makes a game from its recorded name (exact payoffs and "
            "exploitability, selfplay-eval, a rebuild from its GameSpec) refuses it; a value "
            "reads back as given when it is %s", short, why, text, _SAYABLE)
    return text


def _choices(state: pyspiel.State) -> list[int]:
    if state.is_chance_node():
        return [a for a, _ in state.chance_outcomes()]
    return state.legal_actions()


def _no_choices(game: pyspiel.Game, state: pyspiel.State, guard: OpenSpielGame | None
                ) -> NoReturn:
    """Raise that a node a tree walk reached (``state``, not terminal) gives no choice: a
    :class:`GameContractError` naming the game and the history (a game written in Python may;
    the walks drew from an empty range, ``high <= 0``, or counted the node as a leaf)."""
    chance = state.is_chance_node()
    call = "chance_outcomes()" if chance else (
        f"legal_actions() of player {state.current_player()}")
    raise GameContractError(
        guard.spec.name if guard is not None else f"openspiel/{game}",
        f"at history {state.history()}",
        f"no {'outcomes at a chance' if chance else 'legal actions at a decision'} node "
        f"({call} is empty and is_terminal() is False); accepted: a node that is terminal "
        "or has a choice")


@dataclass(frozen=True)
class TreeEstimate:
    """What random playouts tell of a game tree's size (:func:`estimate_histories`)."""

    histories: float  # estimated number of nodes (inf past float range)
    longest: int  # moves (chance outcomes included) of the longest playout, or of the
    # first history depth-first (always the first choice), if longer


def estimate_histories(game: pyspiel.Game, probes: int = 256, seed: int = 0, *,
                       guard: OpenSpielGame | None = None) -> TreeEstimate:
    """Knuth's (1975) estimate of the number of nodes of ``game``'s tree (every history:
    decision, chance and terminal ones), in ``probes`` random playouts.

    On a playout choosing uniformly among the ``b_d`` choices at each depth ``d`` (chance
    outcomes too), ``1 + b_0 + b_0 b_1 + ...`` is an unbiased estimate of the node count;
    the mean of ``probes`` of them costs ``probes`` times the game's length in steps,
    however large the tree. It errs mostly low on lopsided trees (liars_dice: 0.25-1.6x the
    true count over 30 seeds; tiny_bridge_2p: 0.65-2.2x; tic_tac_toe, leduc_poker,
    goofspiel: within 0.85-1.2x). Simultaneous-move games: pass the turn-based version.
    ``guard``: the game whose code ``game`` runs (see :meth:`OpenSpielGame.replay_node`).
    """
    rng = np.random.default_rng(seed)
    total, longest = 0.0, 0
    state = None
    try:
        for _ in range(probes):
            state, width, nodes, moves = game.new_initial_state(), 1.0, 1.0, 0
            while not state.is_terminal():
                choices = _choices(state) or _no_choices(game, state, guard)
                width *= len(choices)
                nodes += width
                moves += 1
                state.apply_action(choices[int(rng.integers(len(choices)))])
            total, longest = total + nodes, max(longest, moves)
        state, moves = game.new_initial_state(), 0
        while not state.is_terminal() and moves <= game.max_game_length():
            state.apply_action((_choices(state) or _no_choices(game, state, guard))[0])
            moves += 1
    except (pyspiel.SpielError, GameError):
        raise
    except Exception:  # a game written in Python raised: one line where it raises again
        if guard is not None:
            guard.replay_node(game, state.history() if state is not None else [])
        raise
    return TreeEstimate(total / probes, max(longest, moves))


@dataclass(frozen=True)
class TreeCount:
    """What a bounded count of a game tree saw (:func:`count_tree`)."""

    histories: int  # nodes counted: ``limit + 1`` means "more than ``limit``"
    decisions: int  # decision nodes (neither chance nor terminal) among them
    weight: int  # summed ``weights`` of those decision nodes (0 without weights)


COUNT_LOG_S = 10.0
"""A count still running after this many seconds logs its progress (at most this often);
the clock only drives the log lines, never what the count returns."""


def count_tree(game: pyspiel.Game, limit: int, weights: Sequence[int] | None = None,
               weight_limit: int | None = None, *,
               guard: OpenSpielGame | None = None, why: str = "") -> TreeCount:
    """Count the nodes of ``game``'s tree (as :func:`estimate_histories` counts them),
    depth-first without building any view, stopping at ``limit + 1`` nodes, or as soon as
    the decision nodes' summed ``weights[player]`` pass ``weight_limit``: what stops it
    depends on the game alone, never on the clock.

    A node costs what the game's own code costs to clone and apply a move: ~1.5-4 us on
    small games (a 2-core CPU), ~65 us on colored_trails, whose last move scores a path
    search on the board. A count running longer than :data:`COUNT_LOG_S` says so in the log,
    its first line ending with ``why`` (the caller's reason for counting, if given).
    ``guard``: the game whose code ``game`` runs (see :meth:`OpenSpielGame.replay_node`).
    """
    count = decisions = weight = 0
    state = None
    start = last = time.monotonic()
    try:
        stack = [game.new_initial_state()]
        while stack:
            state = stack.pop()
            count += 1
            if count > limit:
                break
            if count % 65_536 == 0 and time.monotonic() - last >= COUNT_LOG_S:
                last = time.monotonic()
                logger.info("counting the histories of %s: %d so far in %.0fs (at most %d)%s",
                            game, count, last - start, limit, why)
                why = ""
            if state.is_terminal():
                continue
            if not state.is_chance_node():
                decisions += 1
                if weights is not None:
                    weight += weights[state.current_player()]
                    if weight_limit is not None and weight > weight_limit:
                        break
            stack.extend(state.child(a) for a in
                         (_choices(state) or _no_choices(game, state, guard)))
    except (pyspiel.SpielError, GameError):
        raise
    except Exception:  # a game written in Python raised: one line where it raises again
        if guard is not None:
            guard.replay_node(game, state.history() if state is not None else [])
        raise
    return TreeCount(count, decisions, weight)


def count_histories(game: pyspiel.Game, limit: int) -> int:
    """The number of nodes of ``game``'s tree, stopping at ``limit + 1``: a result above
    ``limit`` means "more than ``limit``" (:func:`count_tree` without weights)."""
    return count_tree(game, limit).histories


def _obs_shape(game: pyspiel.Game, info_state: bool, game_string: str) -> tuple[int, ...]:
    """The tensor shape agents observe; some games declare a tensor they do not implement."""
    try:
        with _cpp_stderr_to_log():
            if info_state:
                return tuple(game.information_state_tensor_shape())
            return tuple(game.observation_tensor_shape())
    except pyspiel.SpielError as err:
        raise GameError(f"openspiel/{game_string} provides no observation tensor "
                        f"({str(err).strip()}); accepted: games with an information-state "
                        "or observation tensor") from None


def _game_modules(game: pyspiel.Game) -> frozenset[str]:
    """The modules of a game written in Python: those of its class, of its state's and its
    observer's classes (a user's game may define each in a module of its own), and of the
    Python classes they derive from (a user's game over ``open_spiel.python.games``'
    kuhn_poker: both); none for a built-in (C++) game. Asked once the game's code raised:
    a state or observer that cannot be made adds nothing."""
    classes = list(type(game).__mro__)
    if type(game).__module__ != "pyspiel":
        makers = [game.new_initial_state]
        if callable(getattr(game, "make_py_observer", None)):
            makers.append(game.make_py_observer)
        for make in makers:
            try:
                classes += type(make()).__mro__
            except Exception:  # noqa: BLE001 - the bug being named; its frames still count
                continue
    return frozenset(cls.__module__ for cls in classes) - {
        "pyspiel", "pybind11_builtins", "builtins"}


def _own_call(err: BaseException, modules: frozenset[str]) -> str | None:
    """The game's own method that this module called when ``err`` was raised (the outermost
    frame of its traceback in the game's ``modules``, :func:`_game_modules`):
    ``_legal_actions``, ``set_from``...; None when no frame is there (not the game's bug)."""
    for frame, _ in traceback.walk_tb(err.__traceback__):
        if frame.f_globals.get("__name__") in modules:
            return frame.f_code.co_name
    return None


def _first_decision_state(game: pyspiel.Game) -> Any:
    """The first state where a player decides (first chance outcomes taken), or None when
    the game ends (or 1,000 chance nodes pass) before one."""
    state = game.new_initial_state()
    for _ in range(1000):
        if not state.is_chance_node():
            break
        state.apply_action(state.chance_outcomes()[0][0])
    if state.is_terminal() or state.is_chance_node():
        return None
    return state


def _first_tensor_size(game: pyspiel.Game) -> int | None:
    """Values in the information-state tensor of the first decision state, or None when the
    game ends before one."""
    state = _first_decision_state(game)
    if state is None:
        return None
    return len(state.information_state_tensor(max(state.current_player(), 0)))


def _check_legal_ids(game: pyspiel.Game, game_string: str) -> None:
    """Refuse a game (written in Python) whose first decision state lists legal actions
    outside its ``num_distinct_actions()`` (chat_game: ids 2..7 of 2), at make time."""
    state = _first_decision_state(game)
    if state is None:
        return
    n = game.num_distinct_actions()
    players = range(game.num_players()) if state.is_simultaneous_node() else [
        state.current_player()]
    for p in players:
        bad = [a for a in state.legal_actions(p) if not 0 <= a < n]
        if bad:
            raise GameError(f"openspiel/{game_string}: legal actions {bad} of player_{p} are "
                            f"outside its {n} actions (ids 0..{n - 1}); the game cannot be "
                            "played")


class OpenSpielGame(Game):
    """Any ``pyspiel`` game (``kuhn_poker``, ``goofspiel(num_cards=4)``, ``matrix_rps``...)."""

    def __init__(
        self, game_string: str, teams: Any = None, zero_sum: Any = None, **params: Any
    ) -> None:
        """``teams=`` / ``zero_sum=`` override what the game type declares (every seat its own
        team; zero-sum from OpenSpiel's utility type), except that ``zero_sum`` is passed on as
        a game parameter to the games that take one (``laser_tag``, ``capture_the_flag``)."""
        short = game_string.split("(", 1)[0]
        why = None if params else _UNSAYABLE.get(f"openspiel/{game_string}")
        if why is not None:  # the name of a game made here that it does not make again
            raise GameError(
                f"openspiel/{game_string} would not make the game made under this name "
                f"earlier: its {why}; accepted: that game made from its game string and "
                f"game.kwargs, or the value given as {_SAYABLE}")
        if zero_sum is not None and short in pyspiel.registered_names():
            gspec = next(g for g in pyspiel.registered_games() if g.short_name == short)
            if "zero_sum" in gspec.parameter_specification:
                params["zero_sum"], zero_sum = zero_sum, None
        self.game = _load(game_string, params)
        gtype = self.game.get_type()
        # A game that samples chance itself (negotiation, stones_and_gems...) draws from its
        # own generator, a fixed stream from its rng_seed: reset(seed) reloads it with
        # rng_seed=seed, so VectorGame's copies differ and a seed replays its episode
        self._reseed: dict[str, Any] | None = None
        if gtype.chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC:
            full = self.game.get_parameters()
            if "rng_seed" in full and "rng_seed" not in params and "rng_seed" not in game_string:
                self._reseed = full
            elif short not in _warned_sampled:  # once per game, not per VectorGame copy
                _warned_sampled.add(short)
                logger.warning("openspiel/%s samples its chance outcomes from the game's own "
                               "generator (rng_seed=%s), not from reset(seed): every copy and "
                               "seed plays the same stream of deals", short,
                               full.get("rng_seed", "none"))
        self._info_state = gtype.provides_information_state_tensor
        perfect = gtype.information == pyspiel.GameType.Information.PERFECT_INFORMATION
        # Boards read better than move histories; hidden information needs the history.
        self._info_string = gtype.provides_information_state_string and not (
            perfect and gtype.provides_observation_string
        )
        if not (self._info_state or gtype.provides_observation_tensor):
            raise GameError(f"openspiel/{game_string} provides no observation tensor; accepted: "
                            "games with an information-state or observation tensor")
        n = self.game.num_players()
        self._ids = tuple(f"player_{i}" for i in range(n))
        try:  # a game written in Python runs its own code here (observer, first states)
            shape = self._observed_shape(game_string)
        except (pyspiel.SpielError, GameError):
            raise
        except Exception as err:  # a bug of a user's pyspiel game: one line naming its line;
            # any other (a built-in game's, ours) raises as it is, with its traceback
            call = _own_call(err, _game_modules(self.game))
            if call is None:
                raise
            raise GameCodeError(f"openspiel/{game_string}", "when made", err, call) from err
        obs_shape = (int(np.prod(shape)),)
        space = ActionSpace("discrete", n=self.game.num_distinct_actions())
        name = _spec_name(self.game, game_string, params) if params else game_string
        # identical utilities (tiny_hanabi, coop_box_pushing) or the same pay by the rules
        # (COOPERATIVE): one cooperative team; the partnership games: two; else every seat
        # its own
        if (gtype.utility == pyspiel.GameType.Utility.IDENTICAL
                or gtype.short_name in COOPERATIVE):
            team_of = dict.fromkeys(self._ids, COOPERATIVE_TEAM)
        elif gtype.short_name in PARTNERSHIPS and n == 4:
            team_of = {a: f"team_{i % 2}" for i, a in enumerate(self._ids)}
        else:
            team_of = {a: a for a in self._ids}
        self.spec = GameSpec(
            name=f"openspiel/{name}",
            agents=tuple(AgentSpec(a, role=a, team=team_of[a]) for a in self._ids),
            obs_shapes={a: obs_shape for a in self._ids},
            action_spaces={a: space for a in self._ids},
            max_steps=int(self.game.max_game_length()),
            zero_sum=gtype.utility == pyspiel.GameType.Utility.ZERO_SUM,
            simultaneous=gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS,
        )
        override_sides(self, teams, zero_sum)
        self._rng = np.random.default_rng()
        self.state_: pyspiel.State | None = None

    def _observed_shape(self, game_string: str) -> tuple[int, ...]:
        """The shape of the tensor agents observe, checked against what a game written in
        Python gives (then ``_info_state`` is False where its information-state tensor is
        not the size it declares)."""
        shape = _obs_shape(self.game, self._info_state, game_string)
        if type(self.game).__module__ != "pyspiel":
            _check_legal_ids(self.game, game_string)
        if self._info_state and type(self.game).__module__ != "pyspiel":
            # a game written in Python may declare an information-state tensor its states do
            # not fill (python_dynamic_routing: shape [1], states give []): VectorGame failed
            # with "could not broadcast input array from shape (0,) into shape (1,)"
            got = _first_tensor_size(self.game)
            if got is not None and got != int(np.prod(shape)):
                if not self.game.get_type().provides_observation_tensor:
                    raise GameError(f"openspiel/{game_string}: its information-state tensor has "
                                    f"{got} values, not the {int(np.prod(shape))} it declares; "
                                    "accepted: games whose tensors match their shapes")
                self._info_state = False
                shape = _obs_shape(self.game, False, game_string)
        return shape

    # --------------------------------------------------------------------- access
    @property
    def pyspiel_game(self) -> pyspiel.Game:
        return self.game

    @property
    def pyspiel_state(self) -> pyspiel.State:
        if self.state_ is None:
            raise GameError(f"{self.spec.name}: call reset() first")
        return self.state_

    def set_state(self, state: pyspiel.State) -> None:
        """Put the game at ``state`` (a decision node of this game), e.g. to read the views
        agents would get there when enumerating information states."""
        if state.is_chance_node():
            raise GameError(f"{self.spec.name}: set_state needs a decision node, got a chance node")
        self.state_ = state

    def replay_node(self, walked: pyspiel.Game, history: Sequence[int]) -> None:
        """Ask again, through :meth:`guarded`, what a walk of ``walked``'s tree (this game or
        its turn-based version) asks at the node after ``history``, rebuilt from the root:
        ``apply_action`` along ``history``, then ``is_terminal()`` and ``returns()``, or
        ``current_player()``, ``chance_outcomes()`` or ``legal_actions()`` and ``child(a)``
        of each. The first that raises is a :class:`GameCodeError` naming the game, the call,
        the history and the user's line; returns when none does (a game whose code is not
        deterministic, or an error that was not the game's: the caller raises it as it is).

        The tree walks (:func:`count_tree`, :func:`estimate_histories`, the exact tools') call
        it once a game written in Python raised: a walk that works pays nothing for it, where
        guarding every call (the history's text on every node) cost a tenth of a big walk."""

        def ask(method: Any, *args: Any, at: Sequence[int] = history) -> Any:
            return self.guarded(method, *args, note=f" at history {list(at)}")

        state = ask(walked.new_initial_state, at=[])
        for i, action in enumerate(history):
            ask(state.apply_action, action, at=history[:i])
        if ask(state.is_terminal):
            ask(state.returns)
            return
        ask(state.current_player)
        if ask(state.is_chance_node):
            actions = [a for a, _ in ask(state.chance_outcomes)]
        elif ask(state.is_simultaneous_node):
            return
        else:
            actions = ask(state.legal_actions)
        for action in actions:
            ask(state.child, action)

    def player(self, agent: str) -> int:
        return self._ids.index(agent)

    # ------------------------------------------------------------------- contract
    def _reset(self, seed: int | None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            if self._reseed is not None:
                short = str(self.game.get_type().short_name)
                self.game = pyspiel.load_game(short, {**self._reseed, "rng_seed": seed % 2**31})
        self.state_ = self.game.new_initial_state()
        self._resolve_chance()

    def _resolve_chance(self) -> None:
        state = self.pyspiel_state
        while state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            p = np.asarray(probs, dtype=np.float64)
            state.apply_action(int(outcomes[choice_index(self._rng, p / p.sum())]))

    def _step(self, actions: dict[str, Any]) -> Transition:
        state = self.pyspiel_state
        before = np.asarray(state.returns(), dtype=np.float64)
        if state.is_simultaneous_node():
            state.apply_actions([int(actions.get(a, 0)) for a in self._ids])
        else:
            (agent,) = actions
            state.apply_action(int(actions[agent]))
        self._resolve_chance()
        gained = np.asarray(state.returns(), dtype=np.float64) - before
        over = state.is_terminal()
        return Transition(
            rewards={a: float(r) for a, r in zip(self._ids, gained, strict=True)},
            terminated={a: over for a in self._ids},
            truncated={a: False for a in self._ids},
        )

    def acting_agents(self) -> tuple[str, ...]:
        state = self.pyspiel_state
        if state.is_terminal():
            return ()
        if state.is_simultaneous_node():
            return tuple(a for i, a in enumerate(self._ids) if state.legal_actions(i))
        return (self._ids[state.current_player()],)

    def observe(self, agent: str) -> np.ndarray:
        p = self.player(agent)
        state = self.pyspiel_state
        t = state.information_state_tensor(p) if self._info_state else state.observation_tensor(p)
        return np.asarray(t, dtype=np.float32)

    def legal_actions(self, agent: str) -> Sequence[int]:
        state = self.pyspiel_state
        if state.is_terminal():
            return []
        return state.legal_actions(self.player(agent))

    def text_observation(self, agent: str) -> str:
        p = self.player(agent)
        state = self.pyspiel_state
        text = (
            state.information_state_string(p) if self._info_string else state.observation_string(p)
        )
        return text or "(nothing observed yet)"

    def action_text(self, agent: str, action: int) -> str:
        return self.pyspiel_state.action_to_string(self.player(agent), int(action))
