"""The notes ``selfplay-eval`` prints on a policy file whose recorded game differs from the one
it plays (:func:`game_notes`: each argument and spec field that differs, short), and whether a
recorded name may be the game played with its arguments unrecorded (:func:`same_game`). Moved
out of :mod:`populations.eval_cli`; :mod:`populations.eval_files` and
:mod:`populations.eval_runs` import them. The text read from a file is printed escaped
(:func:`games.registry.printable`)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from games.registry import printable as escaped


class _Missing:
    """No such argument (see :func:`game_notes`)."""


def game_notes(name: str, recorded: str, spec: Any) -> list[str]:
    """What ``selfplay-eval`` says of policy ``name``, trained on the game ``recorded`` (its
    file's name for it) and played on ``spec``'s game, whose seats and shapes it fits: nothing
    for the same game, also where only the names differ (``...simple_tag_v3(max_cycles=25)``,
    the default, and the bare ``...simple_tag_v3``: the game built from each name has the
    same spec); else that it was trained on another game, and, for the same game of other
    arguments, each argument (and spec field) that differs with both values (``max_steps
    (25 in training, 100 here)``: a note that looked the same for both hid a real change)."""
    from games.core import GameSpec
    from games.registry import recorded_name_refusal, split_name

    if recorded == spec.name:
        return []
    if same_game(recorded, spec.name):
        bare = [f"{name}'s file names its game {escaped(recorded)} without arguments (the "
                f"defaults, or not recorded); it plays {spec.name} here"]
        return bare + _from_defaults(name, recorded, spec.name)
    other = [f"{name} was trained on {escaped(recorded)}; it plays {spec.name} here"]
    if recorded_name_refusal(recorded):  # read from the file: made only once checked
        return other
    try:
        (base, named), (here_base, here) = split_name(recorded), split_name(spec.name)
        trained = _spec_of(recorded) if base == here_base else None
    except Exception:  # noqa: BLE001 - a name no game makes here: the names are all there is
        return other
    if trained is None:
        return other
    fields = [f.name for f in dataclasses.fields(GameSpec) if f.name != "name"]

    def value(args: dict[str, Any], key: str, game: Any) -> Any:  # unnamed: a field's value
        return args[key] if key in args else getattr(game, key) if key in fields else _Missing

    keys = sorted(k for k in {*named, *here} if named.get(k, _Missing) != here.get(k, _Missing))
    explicit = any(k in named and k in here for k in keys)  # given both sides, not the same
    if not explicit and all(getattr(trained, f) == getattr(spec, f) for f in fields):
        return []  # the names differ, the games do not (a default given by name or not)
    diffs = [(k, _short(value(named, k, trained)), _short(value(here, k, spec))) for k in keys]
    diffs += [(f, *field_differs(f, getattr(trained, f), getattr(spec, f))) for f in fields
              if f not in keys and getattr(trained, f) != getattr(spec, f)]
    parts = [escaped(f"{k} ({was} in training, {now} here)" if now is not None else
                     f"{k} ({was})") for k, was, now in diffs if was]
    return [*other, f"{name}'s game differs here in " + ", ".join(parts)]


def _from_defaults(name: str, recorded: str, here: str) -> list[str]:
    """For a registered game named bare (``recorded``) played as ``here``
    (``gridtag(size=6)``): the arguments given here that differ from the defaults its factory
    declares, with both values (``size (4 by default, 6 here)``); the bare note alone hid
    what changed. None for an adapter's game (``pettingzoo/...``: its factory's signature is
    not the game's) or one whose defaults cannot be read."""
    import inspect

    from games.registry import registered_factory, split_name

    factory = registered_factory(recorded)
    try:
        named = split_name(here)[1]
        params = inspect.signature(factory).parameters if factory is not None else {}
    except Exception:  # noqa: BLE001 - a name or factory of no signature: nothing to add
        return []
    defaults = {k: p.default for k, p in params.items() if p.default is not p.empty}
    parts = [escaped(f"{k} ({_short(defaults[k])} by default, {_short(v)} here)")
             for k, v in sorted(named.items()) if k in defaults and _differs(defaults[k], v)]
    return [f"{name}'s game differs here from its defaults in " + ", ".join(parts)] if parts \
        else []


def _differs(default: Any, value: Any) -> bool:
    """Whether ``value`` (read from a game's name: lists for JSON's arrays) differs from a
    factory's ``default`` as the game would take it: a list and a tuple of the same items
    alike, numpy values by value; False where they cannot be compared (no note rather than
    a false one or an error: ``!=`` called ``[2, 3]`` and ``(2, 3)`` different, and raised
    on a numpy array)."""
    try:
        return not _same_value(default, value)
    except Exception:  # noqa: BLE001 - an __eq__ that raises, a ragged array: nothing said
        return False


def _same_value(a: Any, b: Any) -> bool:
    import numpy as np

    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    return bool(a == b)  # numpy scalars too; an array-like answer raises: not comparable


NOTE_VALUE_CHARS = 60
"""The most characters of a value a note of :func:`game_notes` shows (then ``...``)."""

NOTE_KEYS = 4
"""The most seats a note of :func:`game_notes` names for a difference (then ``and N more``)."""


def field_differs(key: str, trained: Any, here: Any) -> tuple[str, str | None]:
    """How the spec field ``key`` of the game a policy was trained on (``trained``) differs
    from the one it plays here, short whatever the values (the whole agents tuples and
    obs-shape and action-space dicts made a note of 1,722 characters): the two values
    (``(25, 100)``: ``25 in training, 100 here``), or one text and None. For the agents,
    their numbers, the seats only one game has and the teams (or roles); for a dict per seat
    (``obs_shapes``, ``action_spaces``), the seats of both games whose values differ and
    their values (the first one's, where they differ among the seats), ``""`` (nothing to
    say) when only the seats differ: said for the agents."""
    if key == "agents":
        return _agents_differ(trained, here), None
    if isinstance(trained, Mapping) and isinstance(here, Mapping):
        changed = [a for a in trained if a in here and trained[a] != here[a]]
        if not changed:
            return "", None
        first = changed[0]
        values = f"{_short(trained[first])} in training, {_short(here[first])} here"
        if all((trained[a], here[a]) == (trained[first], here[first]) for a in changed):
            return f"{_few(changed)}: {values}", None
        return f"{_few(changed)} differ; {first}: {values}", None
    return _short(trained), _short(here)


def _agents_differ(trained: Sequence[Any], here: Sequence[Any]) -> str:
    """:func:`_differs` for the ``agents`` of two specs (``AgentSpec`` tuples)."""
    was, now = {a.id: a for a in trained}, {a.id: a for a in here}
    parts = [f"{len(was)} in training, {len(now)} here"] if len(was) != len(now) else []
    only = [a for a in was if a not in now]
    parts += [f"{_few(only)} only in training"] if only else []
    only = [a for a in now if a not in was]
    parts += [f"{_few(only)} only here"] if only else []
    for what in ("team", "role"):
        a, b = (tuple(dict.fromkeys(getattr(x, what) for x in xs)) for xs in (trained, here))
        if a != b:
            parts.append(f"{what}s {_short(a)} in training, {_short(b)} here")
            break
    else:  # the same teams and roles: held by other seats
        moved = [a for a in was if a in now and was[a] != now[a]]
        if moved:
            x, y = was[moved[0]], now[moved[0]]
            parts.append(f"{_few(moved)} in other teams or roles ({moved[0]}: {x.role} of "
                         f"{x.team} in training, {y.role} of {y.team} here)")
    return "; ".join(parts) or "in another order"


def _few(names: Sequence[str]) -> str:
    """``a, b, c`` for up to :data:`NOTE_KEYS` names, else the first ones ``and N more``."""
    shown = ", ".join(str(n) for n in names[:NOTE_KEYS])
    return shown if len(names) <= NOTE_KEYS else f"{shown} and {len(names) - NOTE_KEYS} more"


def _short(value: Any) -> str:
    """``repr(value)`` cut to :data:`NOTE_VALUE_CHARS` (``the default`` for ``_Missing``)."""
    if value is _Missing:
        return "the default"
    from games import ActionSpace

    if isinstance(value, ActionSpace):  # its repr: ~60 characters, with bounds of no use
        text = f"{value.n} actions" if value.kind == "discrete" else \
            f"continuous {value.shape} in [{value.low}, {value.high}]"
    else:
        text = repr(value)
    return text if len(text) <= NOTE_VALUE_CHARS else text[:NOTE_VALUE_CHARS - 3] + "..."


@functools.lru_cache(maxsize=8)
def _spec_of(name: str) -> Any:
    """The spec of the game ``games.make(name)`` builds (once per name: a run's snapshots
    share one)."""
    from games import make

    return make(name).spec


def same_game(recorded: str, name: str) -> bool:
    """Whether a snapshot's ``recorded`` game name may name the game ``name``: the same name,
    or ``name``'s base without arguments where those may be unrecorded
    (:func:`args_may_be_unrecorded`).
    A PettingZoo or VMAS name recorded before names held their kwargs (399addf) is bare
    whatever the run's kwargs; one recorded since is bare for the defaults: either way the
    base is all the file says, so it is not called another game (its seats and observation
    shapes are checked against the game all the same). A bare OpenSpiel name is the
    defaults', as ever: ``kuhn_poker`` is not ``kuhn_poker(players=3)``."""
    if recorded == name:
        return True
    return args_may_be_unrecorded(recorded) and name.partition("(")[0] == recorded


def args_may_be_unrecorded(recorded: str) -> bool:
    """Whether a snapshot's game name may lack the arguments it was trained with: a name
    without ``(...)`` of another family than OpenSpiel's (whose names always held them)."""
    return "(" not in recorded and not recorded.startswith("openspiel/")


def held_seats(path: str, meta: Any, spec: Any) -> list[str]:
    """The seats policy file ``path`` (its metadata ``meta``) plays in ``selfplay-eval``'s
    seatings on ``spec``'s game: the seats it holds, except for a PSRO run's initial uniform
    member saved before f949086, a random policy of every seat under the member name
    ``psro-<player>-0`` (its ``.json`` sidecar's ``member``, else its folder's name): that
    player's seats, as the run played it and as the runs since save it (``<player>`` a seat,
    or a team of several seats: the team's seats). Without this, a run's members were
    refused as seatings (``psro-player_0-0`` held player_1 too)."""
    import re
    from pathlib import Path

    from populations.eval_seatings import sidecar_member

    agents = list(meta.agents)
    if meta.kind != "random" or set(agents) != set(spec.agent_ids):
        return agents
    player = re.fullmatch(r"psro-(.+)-0", sidecar_member(Path(path)))
    if player is None:
        return agents
    if player[1] in spec.agent_ids:
        return [player[1]]
    return [a.id for a in spec.agents if a.team == player[1]] or agents


def same_every_time(episodes: Sequence[Mapping[str, float]]) -> bool:
    """Whether two or more recorded ``episodes`` (each one's return per seat, of one seating)
    all came out alike: deterministic policies in a game without chance replay one game."""
    return len(episodes) > 1 and all(e == episodes[0] for e in episodes[1:])



def one_game_note(what: str, times: int, greedy: bool) -> str:
    """The note under a result ``what`` (``all 64 pairs``) whose ``times`` episodes, or
    role-swapped pairs, each came out the same (:func:`same_every_time`); ``greedy``: every
    policy there is played by its argmax (``marl.registry.played_greedy``). A Wilson
    interval or a Student's t over them counted one game as ``times`` independent outcomes
    (two greedy VDN snapshots on pentago: 'win rate 1.00 (95% Wilson [0.94, 1.00]) over 64
    pairs'; PSRO seatings on matrix_rpsw: '-1.000 ± 0.000'), narrower with every
    ``--episodes`` and nothing new learnt. Identical outcomes are also what a policy that
    wins every time in a game of chance gives: the note says when it is one game."""
    why = ("every policy is played by its argmax, so unless the game draws chance they"
           if greedy else "if the policies act deterministically in a game without chance, they")
    return (f"note: {what} came out the same (identical returns); {why} replayed one game "
            f"{times} times: the interval, counting them as {times} independent outcomes, is "
            "not informative (more --episodes only narrow it)")


def _greedy(kinds: Sequence[str]) -> bool:
    """Whether every policy kind of ``kinds`` is played by its argmax."""
    from marl.registry import played_greedy

    return all(played_greedy(k) for k in kinds)


def pair_note(db: Any, run_id: int, a: Any, b: Any) -> str | None:
    """:func:`one_game_note` for the role-swapped pair of snapshots ``a`` and ``b`` (rows)
    whose matches recorded in ``db`` (``rr/<a>-<b>/ab/e0000``...) came out the same in each
    seating; None otherwise."""
    seatings: dict[str, list[Mapping[str, float]]] = {}
    for m in db.matches(run_id, f"rr/{a.id}-{b.id}/") + db.matches(run_id, f"rr/{b.id}-{a.id}/"):
        seatings.setdefault(m.key.rpartition("/")[0], []).append(m.returns)
    if len(seatings) != 2 or not all(map(same_every_time, seatings.values())):
        return None
    times = min(len(e) for e in seatings.values())
    return one_game_note(f"all {times} pairs", times, _greedy([a.kind, b.kind]))


def seatings_note(db: Any, run_id: int, seatings: Sequence[Sequence[str]],
                  kinds: Mapping[str, str]) -> str | None:
    """:func:`one_game_note` for the seatings (``seatings[i]``: the files of seating ``i``,
    one per side; ``kinds``: each file's policy kind) whose matches recorded in ``db``
    (``seat/<i>/e0000``...) each came out the same; None where none did."""
    played: dict[int, list[Mapping[str, float]]] = {}
    for m in db.matches(run_id, "seat/"):
        played.setdefault(int(m.key.split("/")[1]), []).append(m.returns)
    same = [i for i, e in sorted(played.items()) if same_every_time(e) and i < len(seatings)]
    if not same:
        return None
    times = min(len(played[i]) for i in same)
    what = (f"every seating's {times} episodes" if len(same) == len(played) else
            f"the episodes of seating{'s' if len(same) > 1 else ''} "
            f"{_few([' vs '.join(seatings[i]) for i in same])}")
    return one_game_note(what, times, _greedy([kinds[n] for i in same for n in seatings[i]]))
