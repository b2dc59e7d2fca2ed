"""``selfplay-eval``'s policy files, before any database is written: the name each file plays
under (:func:`policy_names`), loading them (:func:`load_policies`), the game they record when
no ``--game`` is given (:func:`recorded_game`, :func:`recorded_spec`) and the checks of each
file against the game played (:func:`check_policies`: its seats, observation shapes and action
sizes; the notes on a file of the same seats and other game arguments; whether the files make a
round robin, seatings or one team's episodes alone). Split out of :mod:`populations.eval_cli`,
which runs them in this order; what a file says is untrusted and printed :func:`escaped`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from populations.command_line import CLIError
from populations.eval_checks import escaped, make_recorded
from populations.eval_notes import args_may_be_unrecorded, game_notes, held_seats, same_game
from populations.eval_seatings import psro_member_advice, seating_sides


def policy_names(paths: list[str]) -> dict[str, str]:
    """``{name: path}``, one per file given: its stem; where stems repeat, and for a run's
    snapshots (``<member>/v0000.pt``...) always, ``<folder>_<stem>``; where those repeat too
    (two runs' ``runA/snapshots/llm/v0002.pt``, ``runB/...``) the nearest folder above that
    tells them apart goes first, ``runA_llm_v0002`` (it was ``llm_v0002`` and
    ``llm_v0002_2``, by the order of the arguments); then ``_2``, ``_3``... (the same file
    twice: two files of one name were one player). Names are made valid member names
    (letters, digits, ``_-.``, starting with a letter or digit, at most 64)."""
    def valid(text: str) -> str:
        text = re.sub(r"[^A-Za-z0-9_.\-]", "_", text).lstrip("_.-")[:58]
        return text or "policy"

    stems = [valid(Path(p).stem) for p in paths]
    folders = [Path(p).resolve().parent for p in paths]
    names: dict[str, str] = {}
    for stem, path, folder in zip(stems, paths, folders, strict=True):
        base = stem
        if stems.count(stem) > 1 or re.fullmatch(r"v\d+", stem):  # a run's snapshot: named
            # by its member's folder even when unique (v0001 alone lost which member it was)
            base = valid(f"{Path(path).parent.name}_{stem}")
            same = [f for f, q, s in zip(folders, paths, stems, strict=True) if s == stem and
                    Path(q).parent.name == Path(path).parent.name and f != folder]
            level = next((k for k, p in enumerate(folder.parents, 1) if p.name and all(
                len(f.parents) <= k or f.parents[k - 1].name != p.name for f in same)),
                None) if same else None
            room = 58 - len(base) - 1
            if level is not None and room > 0:
                above = folder.parents[level - 1].name
                others = [f.parents[level - 1].name for f in same if len(f.parents) >= level]
                base = valid(_folder_words(above, others, room) + "_" + base)
        name, k = base, 2
        while name in names:
            name, k = f"{base}_{k}", k + 1
        names[name] = path
    return names


_SWEEP_JOB = re.compile(r"(\d+)_(.+)")  # Hydra's job folder: <job>_<key=value,key=value...>


def _folder_words(name: str, others: Sequence[str], room: int) -> str:
    """The folder ``name`` that tells a policy from those under ``others`` (the folders at the
    same level above theirs), at most ``room`` characters in letters, digits, ``_.-``: whole
    where it fits; a sweep's job folder (``3_frames=3000,mappo.lr=0.001,seed=1``) as its job
    number and the settings not all of ``others`` share, whole ones while they fit
    (``3_mappo.lr_0.001_seed_1``); any other as its end cut where a word starts. The end of
    the name alone gave ``ridtag_imports__gridtag__mappo.lr_0.001_seed_0`` for the first,
    and one name for two jobs that differed in their first setting only."""
    def plain(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9_.\-]+", "_", text).strip("_")

    whole = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    if len(whole) <= room:
        return whole
    job = _SWEEP_JOB.fullmatch(name)
    if job is None:
        cuts = [i for i in range(len(whole) - room, len(whole)) if whole[i - 1] in "_.-"]
        return whole[cuts[0]:] if cuts else whole[-room:]
    def settings(folder: str) -> list[str]:
        match = _SWEEP_JOB.fullmatch(folder)
        return re.findall(r"(?:\[[^\]]*\]|[^,\[])+", match[2]) if match else []

    theirs = [set(settings(o)) for o in others]
    words = job[1]
    for setting in settings(name):
        word = plain(setting)
        if word and any(setting not in t for t in theirs) and len(words) + 1 + len(word) <= room:
            words += "_" + word
    return words[:room]



def load_policies(names: dict[str, str]) -> dict[str, Any]:
    """``{name: policy}`` of ``names`` (:func:`policy_names`), each file loaded; a damaged or
    unloadable file is one line (:class:`CLIError`), escaped, naming ``--import`` for a
    policy kind no imported module registers."""
    from marl.core import CheckpointError
    from populations.store import load_policy_file

    try:  # its messages quote the file (a game name, a payload's keys): escaped
        # a run folder's snapshot is checked against the SHA-256 its .json recorded
        return {name: load_policy_file(path) for name, path in names.items()}
    except (CheckpointError, ValueError) as err:
        kind = re.search(r"unknown policy kind ('[^']*')", str(err))
        how = (f"; import the module that registers {kind[1]} with --import MODULE "
               "(importable from this folder; repeatable)") if kind else ""
        raise CLIError(escaped(str(err)) + escaped(how)) from err


def recorded_game(policies: dict[str, Any]) -> str:
    """The game ``--game`` defaults to: the one every policy file names (``meta.game``, its
    arguments included), which must be the same in all of them. The name is read from a file:
    one that would read a file or import a module the user did not name is refused
    (:func:`games.registry.recorded_name_refusal`); ``games.make`` checks the rest as it checks
    a name given."""
    first: dict[str, str] = {}  # game -> the first file that names it
    for name, pol in policies.items():
        if not pol.meta.game.strip():
            raise CLIError(f"{name} records no game (an old or hand-made file): give the game "
                           "to play with --game, e.g. --game openspiel/kuhn_poker")
        first.setdefault(pol.meta.game, name)
    if len(first) > 1:
        (one, a), (two, b) = list(first.items())[:2]
        raise CLIError(f"no --game given and the policy files record different games: "
                       f"{a} {escaped(one)}, {b} {escaped(two)}; give the game to play them "
                       "on with --game")
    [(game, name)] = first.items()
    from games.registry import recorded_name_refusal

    why = recorded_name_refusal(game)
    if why:
        raise CLIError(f"{name} records the game {escaped(game)}, {why}: give the game with "
                       "--game (a game you name is played as given)")
    return game


def recorded_spec(game: str, kwargs: dict[str, Any], name: str) -> Any:
    """The spec of the game the files record (:func:`recorded_game`), ``--game-kwargs`` on top;
    an error names the file it came from, or ``--game-kwargs`` when it names a key given there
    (``max_cycles='x'``: not the file's to fix, nor ``--game``'s)."""
    try:
        return make_recorded(game, kwargs).spec
    except ValueError as err:  # GameError: unknown, bad arguments; quoted from the file
        line = escaped(str(err).splitlines()[0] if str(err) else repr(err))
        # 'foo' unknown (OpenSpiel), 'foo': ..., argument 'foo' (Python's), foo=1
        if any(re.search(rf"(?<![\w.]){re.escape(key)}=|{re.escape(repr(key))}(?::| unknown)"
                         rf"|argument {re.escape(repr(key))}", line) for key in kwargs):
            raise CLIError(f"--game-kwargs on the game the files record ({escaped(game)}): "
                           f"{line}") from None
        raise CLIError(f"{name} records the game {escaped(game)}: {line}; give the game with "
                       "--game (--import the module of a game of your own)") from None



def check_policies(args: argparse.Namespace, spec: Any, names: dict[str, str],
                   policies: dict[str, Any]) -> Any:
    """Refuse (:class:`CLIError`, before any database is written) ``policies`` (``{name:
    policy}`` of the files ``names``) that cannot play ``spec``'s game as ``args`` asks: one
    file without ``--exploit`` on a game of two or more teams, a file of another game's seats,
    of some seats only where the files do not make seatings, of other observation shapes or
    action sizes, a round robin on a game of three or more teams; print a note on each file
    trained on other arguments of the game. Returns the files' sides when they play seatings
    (files of some seats each, :func:`populations.eval_seatings.seating_sides`), else None."""
    from populations.evaluation import seats_mismatch

    if len(policies) < 2 and not args.exploit and len(spec.teams) != 1:
        raise CLIError(f"a round robin needs two or more policy files, got {args.policies}; "
                       "or add --exploit for one policy's approximate NashConv")
    held = {name: list(pol.meta.agents) for name, pol in policies.items()}
    if any(len(seats) < len(spec.agent_ids) for seats in held.values()):  # seatings: an old
        held = {name: held_seats(names[name], pol.meta, spec)  # PSRO run's first members
                for name, pol in policies.items()}  # play their player's seats
    sides = None if args.exploit or not all(  # files of some seats each: their seatings
        same_game(pol.meta.game, spec.name) for pol in policies.values()) else seating_sides(
        spec, held)
    for name, pol in policies.items():  # each plays every side (a KeyError deep in a match)
        missing = [a for a in spec.agent_ids if a not in pol.meta.agents] if sides is None \
            else []
        game = escaped(pol.meta.game)  # read from the file: no terminal codes printed raw
        bare = args_may_be_unrecorded(pol.meta.game) and same_game(pol.meta.game, spec.name)
        if missing and not same_game(pol.meta.game, spec.name):  # not seats of this game
            raise CLIError(f"{name} was trained on {game} (seats "
                           f"{list(pol.meta.agents)}), not on {spec.name} (seats "
                           f"{list(spec.agent_ids)}): evaluate it on its own game")
        if missing:  # a snapshot of whole teams is one side's by design, whatever the kwargs
            teams = {a.team for a in spec.agents if a.id in pol.meta.agents}
            whole = set(pol.meta.agents) == {a.id for a in spec.agents if a.team in teams}
            head = (f"{name} holds the seats {list(pol.meta.agents)} of {game}, not "
                    f"{missing}{f' of {spec.name}' if spec.name != pol.meta.game else ''}: ")
            psro = psro_member_advice(names[name], escaped)
            if psro is not None:  # retraining with self_play is no answer for a PSRO member
                raise CLIError(head + psro)
            raise CLIError(
                head + "matches here play each policy on every side (a population=none run "
                "trains its first team only, a PSRO member plays its own seat; a league's "
                "snapshots hold every seat): train with population=self_play (or fsp, pfsp) "
                "for snapshots that play every side"
                + (UNRECORDED.format(game=game) if bare and not whole else ""))
        for a in [a for a in spec.agent_ids if a in pol.meta.agents] \
                if not {"graph", "text"} & set(pol.meta.inputs) else ():
            want, got = tuple(pol.meta.obs_shapes[a]), tuple(spec.obs_shapes[a])
            if want != got:  # kuhn snapshots on leduc: "could not broadcast (8,30)..."
                raise CLIError(f"{name} was trained on {game} (observations of "
                               f"shape {want} for {a}); {spec.name} gives {got}"
                               + (UNRECORDED.format(game=game) if bare else ""))
        why = seats_mismatch(pol.meta, spec)  # actions too, a GNN's: "size of tensor a (9)"
        if why:
            raise CLIError(f"{name} ({game}) was {escaped(why)}"
                           + (UNRECORDED.format(game=game) if bare else ""))
    for name, pol in policies.items():  # same seats and sizes, other parameters (max_cycles)
        for note in game_notes(name, pol.meta.game, spec):
            print(f"selfplay-eval: note: {note}", file=sys.stderr)
    if sides is None:  # seatings play any number of teams
        _check_teams(spec, len(policies))  # after the notes: they may say why (football's AI)
    return sides


UNRECORDED = ("; its file names the game {game} without arguments (the defaults, or not "
              "recorded: files written before game names held them): give the --game-kwargs "
              "it was trained with")


def _check_teams(spec: Any, files: int) -> None:
    """A round robin (two or more ``files``) plays each pair of policies on the two teams of
    the game, roles swapped: a game of one team (a cooperative one) or of three or more is
    refused here, after the checks of each file's seats (a file of another game is named as
    one) and before any database is written (it was refused by the first match, after the
    run row and the files' copies were made). One policy with ``--exploit`` plays any
    number of teams (a best response per team)."""
    if files < 2 or len(spec.teams) in (1, 2):  # one team: each file alone (eval_runs.play_alone)
        return
    count = f"{len(spec.teams)} team{'s' if len(spec.teams) != 1 else ''}"
    raise CLIError(f"a round robin plays pairs of policies on the two teams of a game; "
                   f"{spec.name} has {count} {spec.teams}: give one policy file with --exploit "
                   "(its approximate NashConv, on a game of any number of teams) or a game of "
                   "two teams")


