"""The rules OpenSpiel games' parameters are checked by before a game is loaded
(:mod:`games.openspiel`), where OpenSpiel checks few: a count or size below what builds a
state (which aborted, segfaulted or hung the process), a value of the wrong kind for the
parameter's default (:mod:`games.kinds` says what each kind takes), a name the game does not
take, and a file parameter that names no file. Values Hydra gives as ints where the game
declares a float (or 0/1 for a bool) are made the declared type first (:func:`as_declared`).
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np
import pyspiel

from games.core import GameError
from games.kinds import is_flag, is_integer, refusal
from games.limits import HINT, integer_range, lifted

# Integer parameters that are not counts or sizes: 0 is a meaningful value for them.
_NOT_A_COUNT = re.compile(
    r"seed$|bonus|threshold|points|insanity|handicap|recall|dealer|starting|fixed|extra|knock"
    r"|num_tricks_in_observation|chance$|bribe|magic_wall"
)
_PLAYERS = re.compile(r"players|num_players|numPlayers")
# Counts of steps (a horizon, a limit on moves or rounds): a large one builds as fast as a
# small one, only each episode is longer, so they may go a hundred times past the default.
_A_LENGTH = re.compile(
    r"horizon|length|max_|turns|rounds|moves|hands|winscore|score_limit|depth_limit"
    r"|num_shots|redeals|time_step"
)
# Sizes whose cost grows as a power of them (cells = size ** dims) or as a binomial (blotto's
# actions: coins + fields - 1 choose fields - 1; negotiation's: symbols ** utterance_dim):
# the rule of ten times the default hung loading them, so they have their own upper limits.
_HIGHEST = {
    ("gomoku", "dims"): 3, ("gomoku", "size"): 100,
    ("blotto", "coins"): 20, ("blotto", "fields"): 6,
    ("negotiation", "utterance_dim"): 5, ("negotiation", "num_symbols"): 10,
    ("negotiation", "num_items"): 10, ("yacht", "dice_sides"): 10,
    ("dark_hex", "board_size"): 20, ("dark_hex_ir", "board_size"): 20,
    ("universal_poker", "numRanks"): 13, ("universal_poker", "numSuits"): 4,
    ("universal_poker", "numHoleCards"): 3, ("universal_poker", "numRounds"): 4,
}
# Limits of the game's own code, which SELFPLAY_GAME_LIMITS=off does not lift: universal_poker's
# card and round tables (ACPC's MAX_RANKS, MAX_SUITS, MAX_HOLE_CARDS, MAX_ROUNDS)
_HARD = {key for key in _HIGHEST if key[0] == "universal_poker"}


def _highest(short: str, name: str, default: int) -> int:
    """The largest value a count or size accepts: a game name read from a snapshot is
    untrusted text, and ``goofspiel(num_cards=1000000000)`` or
    ``liars_dice(numdice=1000000000)`` hung loading (OpenSpiel checks no upper limit). Ten
    times the default or 100 for a size (goofspiel num_cards=130 builds in under a second,
    1000 in 3 s); a hundred times or 10,000 for a length (:data:`_A_LENGTH`)."""
    if (short, name) in _HIGHEST:
        return _HIGHEST[short, name]
    if _A_LENGTH.search(name):
        return max(100 * default, 10_000)
    return max(10 * default, 100)


def _accepted_range(gspec: Any, name: str, value: Any) -> str | None:
    """What ``name`` accepts when ``value`` is outside it, else None.

    OpenSpiel checks few parameters: a negative or zero count or size (``goofspiel
    num_cards=-2``, ``connect_four rows=0``, ``go_fish players=0``) aborts or segfaults the
    process when a state is built, or hangs. The rules here, from the parameters' defaults,
    reject every such value that a probe of all registered games found; the default value
    itself is always accepted (``-1`` and ``0`` often mean "automatic").
    """
    default = gspec.parameter_specification.get(name)
    if (
        value == default
        or not isinstance(default, int)
        or isinstance(default, bool)
        or not isinstance(value, int)
        or isinstance(value, bool)  # wrong types: OpenSpiel's own error names them
    ):
        return None
    if _PLAYERS.fullmatch(name):
        lo, hi = gspec.min_num_players, gspec.max_num_players
        return None if lo <= value <= hi else f"an integer in [{lo}, {hi}]"
    if name.endswith("seed") or default < -1:  # a random seed (not oware's num_seeds_...)
        return None
    count = not _NOT_A_COUNT.search(name)
    if default == -1:  # -1 means automatic
        low = 1 if count else 0
        return None if value == -1 or value >= low else f"-1 (automatic) or an integer >= {low}"
    low = 1 if count and default >= 1 else 0
    high = _upper(gspec, name)
    if value < low or (high is not None and value > high and not _lifts(gspec, name)):
        if high is not None and (gspec.short_name, name) in _HARD:
            return f"an integer in [{low}, {high}]"
        return integer_range(low, high)  # without its upper limit where that is lifted
    return None


def _upper(gspec: Any, name: str) -> int | None:
    """The upper limit of integer parameter ``name`` (:func:`_highest`), None where it has
    none (not a count or size, a count whose default is 0 or -1, a player count)."""
    default = gspec.parameter_specification.get(name)
    if (not isinstance(default, int) or isinstance(default, bool) or default < 1
            or _PLAYERS.fullmatch(name) or name.endswith("seed") or _NOT_A_COUNT.search(name)):
        return None
    return _highest(gspec.short_name, name, default)


def _lifts(gspec: Any, name: str) -> bool:
    """Whether ``name``'s upper limit is lifted (``SELFPLAY_GAME_LIMITS=off``; never for a
    limit of the game's own code, :data:`_HARD`)."""
    return (gspec.short_name, name) not in _HARD and lifted()


def _accepted_kind(gspec: Any, name: str, value: Any) -> str | None:
    """What ``name`` accepts when ``value`` is of the wrong type for its default (an int, a
    float, a bool, a string), else None: OpenSpiel's own "Wrong type for parameter players"
    was followed by the list of the game's parameter names, which the user had right. An
    integer's line names its range as :func:`_accepted_range` judges it."""
    default = gspec.parameter_specification.get(name)
    if isinstance(default, bool):
        return refusal(bool, value)
    if isinstance(default, int):
        if is_integer(value):
            return None
        return _accepted_range(gspec, name, -(10**9)) or "an integer"  # the range
    if isinstance(default, float):
        return refusal(float, value)
    if isinstance(default, str):
        return None if isinstance(value, str) else _string_kind(name, default)
    return None  # a game inside the game (a dict): judged when loaded


def list_brackets(default: Any) -> tuple[str, str] | None:
    """The brackets of a string parameter whose default is one of OpenSpiel's lists of
    numbers separated by ';' (battleship's ``'[2;3;3;4;5]'``: ``('[', ']')``; nim's
    ``pile_sizes='1;3;5;7'`` has none: ``('', '')``), else None."""
    if not isinstance(default, str):
        return None
    bracketed = default.startswith("[") and default.endswith("]")
    items = (default[1:-1] if bracketed else default).split(";")
    if len(items) < 2 or not all(re.fullmatch(r"-?\d+(\.\d+)?", item) for item in items):
        return None
    return ("[", "]") if bracketed else ("", "")


def _string_kind(name: str, default: str) -> str:
    """What a string parameter accepts, with its format where its default is one of
    OpenSpiel's lists (battleship's ``ship_sizes='[2;3;3;4;5]'``, nim's ``pile_sizes='1;3;5;7'``):
    "accepted: a string" gave no word of the format, nor that a list of numbers is written
    for it."""
    if list_brackets(default) is None:
        return "a string"
    items = default.strip("[]").split(";")
    # the command line's two forms, each of the whole default (a shorter list may be refused
    # for another parameter's length: battleship's ship_values)
    return (f"a string like the default {default!r} (game.kwargs.{name}=[{','.join(items)}] "
            f"or \"game.kwargs.{name}='{default}'\")")


def as_declared(short: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with an integer made a float where the game's default is a float:
    Hydra reads ``game.kwargs.unscaled_move_cost=2`` as an int, which OpenSpiel refused
    ("Expected type: kDouble, got kInt"). A bool stays a bool (OpenSpiel refuses it for a
    number, as it should: true is not 1.0); a flag given 0 or 1 is made the bool. A wrapped
    game's parameters alike (misere's ``game=deep_sea(unscaled_move_cost=2)``,
    repeated_game's ``stage_game=``)."""
    gspec = next((g for g in pyspiel.registered_games() if g.short_name == short), None)
    declared = gspec.parameter_specification if gspec is not None else {}
    out = {}
    for k, v in params.items():
        if isinstance(v, dict) and isinstance(v.get("name"), str):  # a game inside the game
            v = {"name": v["name"], **as_declared(v["name"], {a: b for a, b in v.items()
                                                             if a != "name"})}
        elif (isinstance(declared.get(k), float) and isinstance(v, (int, np.integer))
              and not isinstance(v, bool)):
            v = float(v)
        elif isinstance(declared.get(k), bool) and is_flag(v):  # OpenSpiel refuses 0 and 1
            v = bool(v)
        out[k] = v
    return out


def same_types(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` hold values of the same types, into wrapped games' dicts."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_types(a[k], b[k]) for k in a)
    return type(a) is type(b)


def check_params(game_string: str, params: dict[str, Any]) -> None:
    """Reject parameter values that would crash OpenSpiel later, with a one-line error."""
    short = game_string.split("(", 1)[0]
    gspec = next(g for g in pyspiel.registered_games() if g.short_name == short)
    given = dict(params)
    if "(" in game_string:
        try:
            given.update(pyspiel.game_parameters_from_string(game_string))
        except pyspiel.SpielError as err:
            raise GameError(f"bad game string openspiel/{game_string}: {err}") from None
    for name, value in given.items():
        # a game inside the game (misere's game=goofspiel(num_cards=...)): its sizes too
        if isinstance(value, dict) and isinstance(value.get("name"), str) and any(
            g.short_name == value["name"] for g in pyspiel.registered_games()
        ):
            check_params(value["name"], {k: v for k, v in value.items() if k != "name"})
        if name not in gspec.parameter_specification and name != "name":  # else C++ prints
            names = sorted(gspec.parameter_specification)
            raise GameError(f"bad parameter for openspiel/{short}: {name!r} unknown; accepted: "
                            f"{names if names else 'none (the game takes no parameters)'}")
        accepted = _accepted_kind(gspec, name, value) or _accepted_range(gspec, name, value)
        if accepted is not None:
            high = _upper(gspec, name)
            if is_integer(value) and high is not None and value > high:
                hint = "" if (short, name) in _HARD else f" ({HINT})"
                raise GameError(f"bad parameter for openspiel/{short}: {name}={value!r} is too "
                                f"large; accepted: {accepted}{hint}")
            raise GameError(f"bad parameter for openspiel/{short}: {name}={value!r}; "
                            f"accepted: {accepted}")
    if short == "universal_poker":
        check_poker(gspec.parameter_specification, given)
    elif short == "nim" and isinstance(given.get("pile_sizes"), str):
        check_piles(given["pile_sizes"])
    # efg_game / nfg_game read their game from a file: without one OpenSpiel said
    # "CHECK_TRUE(fd_)" or "IndexError: map::at"
    if "filename" in gspec.parameter_specification:
        path = given.get("filename", gspec.parameter_specification["filename"])
        if not (isinstance(path, str) and os.path.isfile(path)):
            raise GameError(f"bad parameter for openspiel/{short}: filename={path!r} is not a "
                            f"file; accepted: the path of a Gambit .{short[:3]} file "
                            f"(game.kwargs.filename=/path/to/game.{short[:3]})")
    # the other file parameters (empty: the game's built-in data): a path that is not a file
    # was CHECK_TRUE(fd_) (colored_trails, crossword, python_hangman) or, in bargaining, a
    # log line and training on the built-in instances
    for name, value in given.items():
        if name.endswith("_file") and value != "" and not (
            isinstance(value, str) and os.path.isfile(value)
        ):
            raise GameError(f"bad parameter for openspiel/{short}: {name}={value!r} is not a "
                            "file; accepted: the path of a file, or '' for the game's own data")


# universal_poker's parameters that are lists of whole numbers separated by spaces, and what
# each has one entry for (ACPC's readGame reads up to that many, and without enough it returns
# no game, which OpenSpiel used: numRounds=3 alone crashed or hung the process)
_PER_PLAYER = ("blind", "stack")
_PER_ROUND = ("numBoardCards", "firstPlayer", "raiseSize", "maxRaises")
_MAX_BOARD_CARDS = 7  # OpenSpiel's universal_poker holds at most 7 board cards
_POKER_ACCEPTED = ("accepted: whole numbers separated by spaces, numBoardCards, firstPlayer "
                   "(each a seat in [1, numPlayers]) and, with betting=limit, raiseSize one per "
                   "round (numRounds), blind and, with betting=nolimit, stack one per player "
                   "(numPlayers), e.g. \"game.kwargs.numRounds=3 game.kwargs.numBoardCards='0 1 "
                   "1' game.kwargs.firstPlayer='1 1 1'\"")


def poker_problem(spec: dict[str, Any], given: dict[str, Any]) -> str | None:
    """What makes universal_poker's parameters ``given`` (its parameter specification
    ``spec`` gives the rest) inconsistent, in words naming the parameters, else None.
    OpenSpiel hands them to ACPC's game reader, whose refusal it does not check: a list with
    fewer entries than rounds or players, a first player who is not a seat, more cards dealt
    than the deck holds or a blind above its stack segfaulted or hung the process, and so did
    every player all-in at the blinds (no-limit, each blind equal to its stack)."""
    p = {**spec, **given}
    players, rounds, limit = p["numPlayers"], p["numRounds"], p["betting"] == "limit"
    lists: dict[str, list[int]] = {}
    for name in (*_PER_PLAYER, *_PER_ROUND):
        items = str(p[name]).split()
        if not all(re.fullmatch(r"[+-]?\d+", item) for item in items):
            return f"{name}={p[name]!r} is not whole numbers separated by spaces"
        lists[name] = [int(item) for item in items]
    needs = [("blind", players, "numPlayers"), ("numBoardCards", rounds, "numRounds")]
    needs += [("raiseSize", rounds, "numRounds")] if limit else [("stack", players, "numPlayers")]
    short = [f"{name}={p[name]!r} has {len(lists[name])} of the {need} entries {what}={need} needs"
             for name, need, what in needs if len(lists[name]) < need]
    if short:
        return ", ".join(short)
    seats = lists["firstPlayer"][:rounds]
    if any(not 1 <= seat <= players for seat in seats):
        return f"firstPlayer={p['firstPlayer']!r} names a seat outside [1, numPlayers={players}]"
    board = lists["numBoardCards"][:rounds]
    if min(board) < 0 or sum(board) > _MAX_BOARD_CARDS:
        return (f"numBoardCards={p['numBoardCards']!r} deals {sum(board)} board cards in "
                f"numRounds={rounds} (at most {_MAX_BOARD_CARDS} in all, none below 0)")
    dealt = players * p["numHoleCards"] + sum(board)
    if dealt > p["numSuits"] * p["numRanks"]:
        return (f"numPlayers={players} x numHoleCards={p['numHoleCards']} + numBoardCards="
                f"{p['numBoardCards']!r} deal {dealt} cards, more than the deck's numSuits="
                f"{p['numSuits']} x numRanks={p['numRanks']}")
    if not limit and any(b > s for b, s in zip(lists["blind"][:players],
                                                          lists["stack"], strict=False)):
        return f"blind={p['blind']!r} is above stack={p['stack']!r} for a player"
    if not limit and all(b >= s for b, s in zip(lists["blind"][:players],
                                                 lists["stack"][:players], strict=False)):
        return (f"blind={p['blind']!r} equals stack={p['stack']!r} for every player: all are "
                f"all-in at the blinds and none can act (at least one stack must be above its "
                f"blind)")
    return None


def check_poker(spec: dict[str, Any], given: dict[str, Any]) -> None:
    """Refuse inconsistent universal_poker parameters (:func:`poker_problem`) in one line."""
    problem = poker_problem(spec, given)
    if problem is not None:
        raise GameError(f"bad parameters for openspiel/universal_poker: {problem}; "
                        f"{_POKER_ACCEPTED}")


def check_piles(text: str) -> None:
    """Refuse nim's ``pile_sizes`` unless it is OpenSpiel's form, whole numbers >= 0
    separated by ';' (``'1;3;5;7'``, no brackets), with at most 100 piles of at most 100
    (its actions are piles x the largest pile: ``'1000000000'`` hung loading; lifted by
    ``SELFPLAY_GAME_LIMITS=off``)."""
    items = text.split(";")
    form = ("accepted: whole numbers >= 0 separated by ';' like the default '1;3;5;7' "
            "(game.kwargs.pile_sizes=[1,3,5,7] or \"game.kwargs.pile_sizes='1;3;5;7'\")")
    if not all(re.fullmatch(r"\+?\d+", item.strip()) for item in items):
        raise GameError(f"bad parameter for openspiel/nim: pile_sizes={text!r}; {form}")
    sizes = [int(item) for item in items]
    if (len(sizes) > _MAX_PILES or max(sizes) > _MAX_PILES) and not lifted():
        raise GameError(f"bad parameter for openspiel/nim: pile_sizes={text!r} is too large; "
                        f"{form}, at most {_MAX_PILES} piles of at most {_MAX_PILES} ({HINT})")


_MAX_PILES = 100  # ten times nim's default or 100, as a size (_highest)
