"""``selfplay-eval``: a round-robin rating of saved policy files into a league database, and
with ``--exploit`` each policy's approximate NashConv (trained best responses,
:mod:`populations.approx_exploit`). On a game of one team (a cooperative tool task,
simple_spread) there is no opponent to rate against: each file plays ``--episodes`` episodes
alone and its mean team return is printed with its 95 % interval (Student's t), recorded in
the database as matches ``alone/<snapshot id>/e00000``... An LLM policy's legal rate (the
share of its moves that named a legal action; the rest were its fallback's) is printed beside
its numbers, with a warning below ``LOW_LEGAL_RATE``: its return or rating then measures the
fallback moves (a match needs a move: ``on_invalid=end`` is a training rule).

Without ``--game`` the game is the one the files record (the same in every file; a name read
from a file that would read another file, or import or call what no ``--import`` named, is
refused: :func:`games.registry.recorded_name_refusal`).
The files are checked against the game before any match (seats, observation shapes, action
sizes), and what a file says is treated as untrusted: its game name is printed escaped
(:func:`escaped`). Errors are one line on stderr and exit 2, as ``selfplay-train``'s
(:func:`populations.cli.reported`); refusals that need only the command line come before torch
loads, and every refusal (a game without two teams for a round robin too) before the database
is written. Stdout holds the ratings table and each pair's line (up to ``--pairs`` pairs, else
those of neighbours in the table); stderr which file each name is (the first ``NAMES_SHOWN``)
and a bar of pairs where it is a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from populations.cli_common import (
    OneLineParser,
    game_modules,
    import_user_modules,
    integer,
    load_plugins,
    reported,
)
from populations.command_line import CLIError
from populations.eval_checks import (
    EPISODES_RANGE,
    EVAL_SEED_END,
    MAX_EPISODES,
    PAIRS_RANGE,
    SEED_RANGE,
    THREADS_RANGE,
    check_eval_values,
    check_exploit_values,
    check_threads,
    escaped,
    exploit_range,
    make_recorded,
    refuse_linked_db,
    refuse_run_folders,
    sidecar_spec,
)
from populations.eval_checks import EXPLOIT_MINIMUMS as EXPLOIT_MINIMUMS  # tests import
from populations.eval_notes import (
    args_may_be_unrecorded,
    game_notes,
    held_seats,
    same_game,
    seatings_note,
)
from populations.eval_notes import field_differs as field_differs  # tests import it here
from populations.eval_seatings import (
    SeatingsInterrupted,
    play_seatings,
    psro_member_advice,
    seating_sides,
    seatings_of,
    seatings_played,
)


def eval_main(argv: list[str] | None = None) -> None:
    """``selfplay-eval``: round-robin rating of saved policy files into a league database
    (a game of one team: each file's mean return alone, with its 95 % interval)."""
    p = OneLineParser(prog="selfplay-eval", description=(eval_main.__doc__ or "").replace("``", ""))
    files = p.add_argument("policies", nargs="+", help="policy files (.pt) written by a run")
    p.add_argument("--game", help="game spec, e.g. openspiel/kuhn_poker (default: the game the "
                                  "policy files record, the same in every file)")
    p.add_argument("--game-kwargs", default="{}", help="JSON keyword arguments of the game")
    db = p.add_argument("--db", required=True,
                        help="league database to write (created if missing)")
    p.add_argument("--episodes", type=integer(EPISODES_RANGE), default=16,
                   help="role-swapped pairs per pairing (a game of one team: episodes per file)")
    p.add_argument("--seed", type=integer(SEED_RANGE), default=0,
                   help=f"seed of the matches and best responses ({SEED_RANGE}; default 0)")
    p.add_argument("--runner", default="local", choices=["local", "ray"],
                   help="local: matches in this process (default); ray: on Ray workers")
    p.add_argument("--torch-threads", type=integer(THREADS_RANGE), default=1, metavar="N",
                   help="torch's intra-op threads in this process (default 1, as "
                        "selfplay-train's torch_threads: small networks are fastest on one, "
                        "and torch's default, one per core, ran --exploit 10-20x slower on a "
                        "busy machine)")
    p.add_argument("--pairs", type=integer(PAIRS_RANGE), default=PAIRS_SHOWN, metavar="N",
                   help="print each pair's win rate and margin when the round robin has at "
                        f"most N pairs (default {PAIRS_SHOWN}: 10 files), else those of the "
                        "policies next to each other in the ratings table; 0: none (the "
                        "database holds every pair)")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (your games), from the working directory; "
                        "repeatable")
    x = p.add_argument_group("approximate exploitability (trained best responses)")
    x.add_argument("--exploit", action="store_true",
                   help="also train a best response per team against each policy and "
                        "print/record its gain (approximate NashConv ± 95%% interval)")
    settings = [  # --exploit's own: not read without it
        x.add_argument("--exploit-algo", default="ippo",
                       help="registered learner of the responses"),
        x.add_argument("--exploit-frames", type=integer(exploit_range("frames")),
                       default=20_000, help="frames per response"),
        x.add_argument("--exploit-seeds", type=integer(exploit_range("seeds")), default=3,
                       help="independent repetitions"),
        x.add_argument("--exploit-episodes", type=integer(exploit_range("eval_episodes")),
                       default=2_000, help="evaluation episodes per value estimate")]
    args = _parse(p, argv, required=(files, db))  # files before and after the flags alike
    unread = [] if args.exploit else _given(p, argv, settings)
    if args.exploit:  # minutes of training: its progress lines (populations.approx_exploit)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    from populations.run_folder import sigterm_as_interrupt

    with sigterm_as_interrupt(), reported(p.prog):  # SIGTERM: as Ctrl-C (run interrupted)
        if not args.db.strip():  # Path(""): the working folder, as a database file
            raise CLIError("--db is empty (an unset shell variable?); give the league database "
                           "file to write, e.g. --db eval.db")
        refuse_linked_db(args.db)
        import_user_modules(args.imports, "--import")
        if args.game is not None:  # else the files' game, once they load (_recorded_game)
            import_user_modules(game_modules(args.game), f"--game {args.game}")
        load_plugins()
        try:
            kwargs = json.loads(args.game_kwargs)
        except json.JSONDecodeError as err:
            raise CLIError(f"--game-kwargs is not JSON ({err}): {args.game_kwargs!r}") from None
        if not isinstance(kwargs, dict):
            raise CLIError(f"--game-kwargs must be a JSON object, got {args.game_kwargs!r}")
        _evaluate(args, kwargs, unread)


def _parse(p: argparse.ArgumentParser, argv: list[str] | None,
           required: Sequence[argparse.Action]) -> argparse.Namespace:
    """``p.parse_intermixed_args(argv)``, an unknown flag said before a missing required
    argument (argparse checks those first: ``selfplay-eval --bogus`` said '--db is
    required', not that ``--bogus`` is unknown). ``required``: the required arguments
    ``p.add_argument`` returned (argparse keeps its own list private)."""
    for action in required:
        action.required = False
    try:
        _, unknown = p.parse_known_intermixed_args(argv)
    finally:
        for action in required:
            action.required = True
    if unknown:
        p.error(f"unrecognized arguments: {' '.join(unknown)}")
    return p.parse_intermixed_args(argv)


def _given(p: argparse.ArgumentParser, argv: list[str] | None,
           actions: Sequence[argparse.Action]) -> list[str]:
    """Of ``actions`` (options ``p.add_argument`` returned), those ``argv`` (which ``p``
    parses) gives, as ``--flag value``: ``argv`` parsed again with their defaults suppressed
    (argparse sets no attribute for a suppressed option not given; its abbreviations,
    ``--flag=value`` and the last of a repeated option count as when parsed)."""
    defaults = [action.default for action in actions]
    for action in actions:
        action.default = argparse.SUPPRESS
    try:
        parsed, _ = p.parse_known_intermixed_args(argv)
    finally:
        for action, default in zip(actions, defaults, strict=True):
            action.default = default
    return [f"{action.option_strings[0]} {getattr(parsed, action.dest)}" for action in actions
            if hasattr(parsed, action.dest)]


def _evaluate(args: argparse.Namespace, kwargs: dict[str, Any], unread: Sequence[str] = ()
              ) -> None:
    """The round robin (and ``--exploit``'s estimates) of ``args``; ``unread``: the
    ``--exploit-*`` settings given without ``--exploit`` (a warning once they pass their
    checks)."""
    from games import make

    # the numbers first, before a game or a file loads (--episodes 0 with a missing file
    # named the file); the --exploit-* values with or without --exploit (README: refused
    # early; without --exploit they were taken and unused)
    if not 0 <= args.seed < EVAL_SEED_END:  # numpy: "expected non-negative integer"; SQLite:
        raise CLIError(f"--seed {args.seed}: expected {SEED_RANGE}")  # an overflow
    check_threads(args.torch_threads)
    if not 1 <= args.episodes <= MAX_EPISODES:  # 10**14 played until it was killed
        raise CLIError(f"--episodes {args.episodes}: expected {EPISODES_RANGE}")
    if args.pairs < 0:
        raise CLIError(f"--pairs {args.pairs}: expected {PAIRS_RANGE}")
    check_exploit_values(args)  # against the registry and game: torch, later (--exploit)
    if unread:  # valid, and not read: said, as selfplay-train says a setting it does not read
        it = "it sets" if len(unread) == 1 else "they set"
        print(f"selfplay-eval: warning: {', '.join(unread)} {'is' if it == 'it sets' else 'are'}"
              f" not used without --exploit ({it} up the best responses --exploit trains)",
              file=sys.stderr)
    spec = make(args.game, **kwargs).spec if args.game is not None else None
    refuse_run_folders(args.policies)
    if not args.exploit:
        check_eval_values(args, spec if spec is not None else
                          sidecar_spec(args.policies, kwargs))
    import torch

    from marl.core import CheckpointError
    from populations.db import EVAL_EXPERIMENT, LeagueDB
    from populations.evaluation import seats_mismatch
    from populations.experiment import league_table
    from populations.runners import make_runner
    from populations.store import PolicyStore, load_policy_file

    torch.set_num_threads(args.torch_threads)  # as selfplay-train: the default used every core
    # bad --exploit-* values fail first (no --game: once the files name the game)
    exploit = _exploit_config(args, spec) if args.exploit and spec is not None else None
    names = _policy_names(args.policies)
    try:  # its messages quote the file (a game name, a payload's keys): escaped
        # a run folder's snapshot is checked against the SHA-256 its .json recorded
        policies = {name: load_policy_file(path) for name, path in names.items()}
    except (CheckpointError, ValueError) as err:
        kind = re.search(r"unknown policy kind ('[^']*')", str(err))
        how = (f"; import the module that registers {kind[1]} with --import MODULE "
               "(importable from this folder; repeatable)") if kind else ""
        raise CLIError(escaped(str(err)) + escaped(how)) from err
    if spec is None:  # no --game: the game the files record, a name read from a file
        args.game = _recorded_game(policies)
        spec = _recorded_spec(args.game, kwargs, next(iter(policies)))
        if kwargs:  # the matches make the game as the spec was made: the recorded arguments
            from games.registry import split_name  # under --game-kwargs

            args.game, named = split_name(args.game)
            kwargs = {**named, **kwargs}
        on_top = ", --game-kwargs on top" if kwargs else ""
        print(f"selfplay-eval: note: no --game given: playing {escaped(spec.name)}, the game the "
              f"policy files record{on_top}", file=sys.stderr)
        exploit = _exploit_config(args, spec) if args.exploit else None
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
    _print_names(names, args.db)
    new = _new_folder(Path(args.db).parent)
    if new is not None:  # as selfplay-train's note on a new top-level folder: a typo shows
        deeper = "" if new == Path(args.db).parent else " (and the folders in it)"
        print(f"selfplay-eval: note: --db {escaped(args.db)} makes the new folder "
              f"{escaped(str(new))}{deeper}", file=sys.stderr)
    _warn_if_in_use(args.db)
    db = LeagueDB(args.db)  # made only once every policy loaded
    run_id = db.create_run("eval", experiment=EVAL_EXPERIMENT, game=spec.name, config={
        "policies": {name: str(Path(path).resolve()) for name, path in names.items()},
        "game_kwargs": kwargs, "episodes": args.episodes, "seed": args.seed})
    store = PolicyStore(eval_snapshot_folder(Path(args.db), run_id), db, run_id)
    snaps: list[Any] = []
    stage = "snapshots"  # what Ctrl-C stopped (_interrupted_line)
    try:  # the run ends finished, failed or interrupted (it stayed 'running' in the dashboard)
        snaps += [store.publish(name, pol) for name, pol in policies.items()]
        stage = "matches"
        if sides is not None:  # files of some seats each (PSRO members): every seating
            runner = make_runner(args.runner)
            try:
                for line in play_seatings(db, run_id, runner, spec, args.game, kwargs, sides,
                                          dict(zip(policies, snaps, strict=True)), names,
                                          args.episodes, args.seed):
                    print(line)
                note = seatings_note(db, run_id, seatings_of(sides), {  # '-1.000 ± 0.000'
                    s.member: s.kind for s in snaps})  # of one game replayed: walk40a M4
                if note is not None:
                    print(note)
            finally:
                runner.close()
        elif len(spec.teams) == 1:  # nobody to rate against: each file's return alone
            _alone(db, run_id, spec, args, kwargs, snaps)
        else:
            runner = make_runner(args.runner)
            try:
                played = _round_robin(db, run_id, runner, spec, args, kwargs, snaps)
            finally:
                runner.close()
            table = league_table(db, run_id) if len(snaps) > 1 else []  # one: no matches
            for row in table:  # padded: elo 1032.9 and elo 963.1 in one column
                print(f"{row['member']:>24}  elo {row['elo']:>6}  mu {row['mu']:>5} ± "
                      f"{row['sigma']:<4}  pairs {row['pairs']}")
            _print_pairs(db, run_id, snaps, [row["member"] for row in table], args.pairs)
            _print_legal_rates(played, snaps, policies)
        if exploit is not None:
            stage = "exploit"
            _exploit(db, run_id, args, kwargs, snaps, policies, exploit, spec)
    except BaseException as err:  # Ctrl-C too
        from populations.cli_common import interrupted
        from populations.run_folder import end_status
        from populations.run_folder import one_line as error_line

        db.set_run_status_quietly(run_id, end_status(err), error_line(err))
        line = None
        if isinstance(err, KeyboardInterrupt):  # SIGTERM too: what the database kept
            with contextlib.suppress(Exception):  # the plain line if it cannot be read
                line = _interrupted_line(db, run_id, spec, args, len(policies), stage, sides)
        db.close()
        if isinstance(err, SeatingsInterrupted):  # the finished seatings' table, above
            print("\n".join(err.lines), flush=True)
        if line is not None:
            interrupted("selfplay-eval", line)
        raise
    db.set_run_status(run_id, "finished")
    db.close()


def _interrupted_line(db: Any, run_id: int, spec: Any, args: argparse.Namespace, files: int,
                      stage: str, sides: Any = None) -> str:
    """Ctrl-C's line, from what the database kept of run ``run_id`` (``files`` policy files;
    ``stage``: snapshots, matches or exploit, where it stopped): ``interrupted after 3 of 10
    pairings (96 of 320 matches); they are kept in eval.db (run 3, status interrupted; no
    ratings: ...); running the same command again starts a new evaluation ...`` (before a
    match ended: ``interrupted after 0 of 10 pairings (0 of 320 matches): no match had ended;
    the run is kept in ...``). A rerun never resumes run ``run_id``: it adds a new run that
    plays everything again. ``sides``: the files' sides when they played seatings
    (:func:`populations.eval_seatings.seatings_played` counts them)."""
    where = (f"kept in {escaped(args.db)} (run {run_id}, status "
             f"{db.run_status(run_id)}")
    again = "running the same command again starts a new evaluation (a new run that plays"
    if stage == "snapshots":
        return (f"interrupted before the first match; the run is {where}); {again} every "
                "file; this one is not resumed)")
    rows = db.matches(run_id)
    alone = len(spec.teams) == 1 and sides is None
    if sides is not None:  # seat/<i>/e0000
        done, redo = seatings_played(rows, sides, args.episodes)
    elif alone:  # alone/<snapshot>/e00000
        played = {m.key.rsplit("/", 1)[0] for m in rows}
        done = f"{len(played)} of {files} files played alone ({len(rows)} episodes)"
        redo = "every file again"
    else:  # rr/<a>-<b>/ab/e0000
        played = {m.key.rsplit("/", 2)[0] for m in rows}
        pairings = files * (files - 1) // 2
        done = (f"{len(played)} of {pairings} pairings ({len(rows)} of "
                f"{pairings * 2 * args.episodes} matches)")
        redo = f"all {pairings} pairings again"
    if stage == "matches" and not rows:  # "they are kept": there was nothing to keep
        unit = "episode" if alone or sides is not None else "match"
        return (f"interrupted after {done}: no {unit} had ended; "
                f"the run is {where}); {again} {redo}; this one is not resumed)")
    if stage == "matches":
        unrated = "" if alone or sides is not None else \
            "; no ratings: they are computed once every pairing has played"
        return (f"interrupted after {done}; they are {where}{unrated}); {again} {redo}; this one "
                "is not resumed)")
    # stage exploit (the matches were all played): the policies estimated so far
    estimates = len({r["snapshot_id"] for r in db.exploitability(run_id)})
    before = ("each file's episodes alone and " if alone else
              "the round robin's matches and ratings and " if files > 1 else "")
    redo = f"{redo} and estimates every policy again" if before else \
        "estimates every policy again"
    again = again.removesuffix(" plays") if not before else again
    return (f"interrupted in --exploit after {estimates} of {files} policies' approximate "
            f"NashConv; {before}the finished estimates are {where}); {again} {redo}; this one "
            "is not resumed)")


def _recorded_game(policies: dict[str, Any]) -> str:
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


def _recorded_spec(game: str, kwargs: dict[str, Any], name: str) -> Any:
    """The spec of the game the files record (:func:`_recorded_game`), ``--game-kwargs`` on top;
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


def _new_folder(folder: Path) -> Path | None:
    """The outermost folder of ``folder`` and its parents that does not exist yet (what
    making ``folder`` creates first); None when it exists."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    return missing[-1] if missing else None


def eval_snapshot_folder(db: Path, run_id: int) -> Path:
    """Where ``selfplay-eval`` keeps the copies of the files it rates into ``db`` as run
    ``run_id``: ``eval_snapshots/<db file>/run<id>/`` beside it. Each evaluation its own folder:
    one ``eval_snapshots/`` for all of them had a second evaluation (into the same database or
    another one beside it) of files of the same names (a run's ``v0000.pt``...) overwrite the
    first one's copies, whose rows then named other weights than their recorded SHA-256."""
    return db.parent / "eval_snapshots" / db.name / f"run{run_id:04d}"


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
    if files < 2 or len(spec.teams) in (1, 2):  # one team: each file alone (_alone)
        return
    count = f"{len(spec.teams)} team{'s' if len(spec.teams) != 1 else ''}"
    raise CLIError(f"a round robin plays pairs of policies on the two teams of a game; "
                   f"{spec.name} has {count} {spec.teams}: give one policy file with --exploit "
                   "(its approximate NashConv, on a game of any number of teams) or a game of "
                   "two teams")


def _warn_if_in_use(db: str) -> None:
    """One warning line when ``--db`` lies in a folder another process holds (its ``.lock``,
    :class:`populations.run_folder.RunLock`): a run training there, whose own rows this
    evaluation's then sit beside in its ``league.db`` (the run's dashboard lists the eval run
    too), or whose folder a refused or failed start cleans up. SQLite lets both write, so
    the evaluation goes on (walk 37c: said nowhere)."""
    from populations.run_folder import LOCK_NAME, lock_holder, locked_elsewhere

    folder = Path(db).parent
    if not locked_elsewhere(folder):
        return
    what = "the database of the run" if Path(db).name == "league.db" else "in the folder of a run"
    print(f"selfplay-eval: warning: --db {escaped(db)} is {what} that process "
          f"{lock_holder(str(folder / LOCK_NAME))} is running (it holds "
          f"{escaped(str(folder / LOCK_NAME))}): this evaluation is recorded there beside the "
          "run's own rows, as a run of its own; a --db outside the run's folder "
          "(--db eval.db) keeps the two apart", file=sys.stderr)

NAMES_SHOWN = 10
"""``selfplay-eval`` prints which file each name is up to this many files (the files of
:data:`PAIRS_SHOWN` pairs), else the first ones and a line for the rest: 400 files printed
400 ``name <- file`` lines before the table."""


def _print_names(names: Mapping[str, str], db: str) -> None:
    """``name <- file`` on stderr for each of ``names`` (stdout holds the table), when there
    are two or more; above :data:`NAMES_SHOWN`, the first ones and one line saying how many
    more and where they are recorded (the eval run's config in the database ``db``)."""
    if len(names) < 2:
        return
    shown = list(names.items())[:NAMES_SHOWN]
    for name, path in shown:
        print(f"selfplay-eval: {name} <- {escaped(path)}", file=sys.stderr)
    if len(shown) < len(names):
        print(f"selfplay-eval: ... and {len(names) - len(shown)} more name <- file lines, "
              f"each recorded in {escaped(db)} (the eval run's config: policies)",
              file=sys.stderr)


PAIRS_SHOWN = 45
"""``selfplay-eval --pairs``'s default: every pair's line up to 10 files (45 pairs); 40 files
printed 780 lines, 400 would print 79,800."""


def _round_robin(db: Any, run_id: int, runner: Any, spec: Any, args: argparse.Namespace,
                 kwargs: dict[str, Any], snaps: Sequence[Any]) -> Any:
    """:func:`populations.evaluation.round_robin` of ``snaps`` with a bar of pairs (and
    pairs/s) on stderr (:mod:`marl.progress`, as every selfplay-train bar: on a terminal the
    bar, in a redirected log a plain line every 30 s and one at the end): the pairs are
    played a few at a time (one in process; two per worker on Ray, which plays a call's jobs
    at once), each with the seed the one call gives it (``--seed`` plus
    7,919 per pairing, in the order of the files) under the same key, so the records are
    the same. A round robin over hundreds of files runs for minutes: it said nothing.
    Returns what :func:`populations.evaluation.evaluate_pairs` played (``PairsPlayed``: the
    LLM policies' moves, counted where they were played, in this process or a Ray worker)."""
    from marl.progress import tqdm
    from populations.evaluation import evaluate_pairs, recompute

    pairs = list(itertools.combinations(snaps, 2))
    size = 2 * len(getattr(runner, "workers", ())) or 1
    with tqdm(total=len(pairs), desc="selfplay-eval round robin", unit="pair", leave=False,
              disable=not pairs, dynamic_ncols=True,
              file=sys.stderr, smoothing=0) as bar:  # the overall rate, as every other bar
        played = evaluate_pairs(db, run_id, runner, spec, args.game, kwargs, pairs,
                                args.episodes, args.seed, "rr", batch=size,
                                tick=lambda done: bar.update(done - bar.n))
    recompute(db, run_id, step=0)
    return played


def _print_pairs(db: Any, run_id: int, snaps: Sequence[Any], table: Sequence[str],
                 most: int) -> None:
    """Each pair's win rate and margin under the ratings: Elo and mu rate the pairs one
    after another, so over a few pairs they may order two policies against their win rate
    (0.50 over 10 pairs, margin +0.20, rated below). Every pair when there are at most
    ``most`` (``--pairs``), else the pairs of the members next to each other in ``table``
    (the ratings table's order, best first; the better one first), where a rating that
    disagrees with a win rate matters; none for ``most`` 0."""
    names = {s.id: s.member for s in snaps}
    count = len(names) * (len(names) - 1) // 2
    if most == 0 or count == 0:
        return
    if count <= most:
        order = list(itertools.combinations(names, 2))
        head = ("each pair (the first against the second; a role-swapped pair is won on its "
                "summed margin):")
    else:
        ids = {member: sid for sid, member in names.items()}
        order = [(ids[a], ids[b]) for a, b in itertools.pairwise(table)]
        head = (f"each pair of policies next to each other in the table ({len(order)} of "
                f"{count} pairs; --pairs {count} prints every pair; the database holds them "
                "all):")
    from populations.crossplay import wilson
    from populations.eval_notes import pair_note

    cells = {(p["row_snapshot"], p["col_snapshot"]): p for p in db.payoffs(run_id)}
    rows = {s.id: s for s in snaps}
    lines = []
    for a, b in order:
        p = cells.get((a, b))
        if p is None or p["win_rate"] is None:
            continue
        lo, hi = wilson(p["win_rate"] * p["count"], p["count"])
        note = pair_note(db, run_id, rows[a], rows[b])  # one game replayed: walk40a M4
        lines += [f"{names[a]:>24}  vs {names[b]}: win rate {p['win_rate']:.2f} (95% Wilson "
                  f"[{lo:.2f}, {hi:.2f}]) over {p['count']} pairs, margin {p['value']:+.3f} "
                  "per episode", *([] if note is None else [f"{'':>24}  {note}"])]
    if lines:
        print(head)
        print("\n".join(lines))


def _policy_names(paths: list[str]) -> dict[str, str]:
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


def _exploit_config(args: argparse.Namespace, spec: Any) -> Any:
    """The ``--exploit-*`` settings, checked against the game (one line when wrong)."""
    from populations.approx_exploit import ApproxConfig, check_response_algo

    cfg = ApproxConfig(algo=args.exploit_algo, frames=args.exploit_frames,
                       seeds=args.exploit_seeds, eval_episodes=args.exploit_episodes,
                       seed=args.seed)
    check_response_algo(spec, cfg)
    return cfg


def _exploit(db: Any, run_id: int, args: argparse.Namespace, kwargs: dict[str, Any],
             snaps: list, policies: dict[str, Any], cfg: Any, spec: Any) -> None:
    """Approximate NashConv of each policy, printed and recorded per snapshot. What it trains
    and plays is said first, then each policy's estimate has a bar of its response training's
    frames on stderr, the stage in progress beside it (:mod:`marl.progress`, as the round
    robin's: on a terminal the bar, in a redirected log a plain line every 30 s and one at
    the end): 3 seeds x 20,000 frames on pentago ran for minutes with no word."""
    from tqdm.contrib.logging import logging_redirect_tqdm

    from marl.progress import tqdm
    from populations.approx_exploit import approx_nash_conv, record, team_seats

    teams = len(team_seats(spec))
    per_policy = cfg.seeds * teams * cfg.frames
    print(f"selfplay-eval: --exploit trains {cfg.seeds} seed{'s' if cfg.seeds != 1 else ''} "
          f"x {teams} best response{'s' if teams != 1 else ''} x {cfg.frames} frames "
          f"({cfg.algo}; {per_policy} frames) and plays {cfg.seeds} x {teams + 1} evaluations "
          f"of {cfg.eval_episodes} episodes for each of {len(policies)} "
          f"polic{'ies' if len(policies) != 1 else 'y'} (--exploit-seeds, --exploit-frames, "
          "--exploit-episodes set them)", file=sys.stderr)
    for snap, (name, pol) in zip(snaps, policies.items(), strict=True):
        with tqdm(total=per_policy, desc=f"--exploit {name}", unit="frame", leave=False,
                  dynamic_ncols=True, file=sys.stderr, smoothing=0) as bar, \
                logging_redirect_tqdm(tqdm_class=tqdm):  # its log lines above the bar

            def progress(frames: int, stage: str, bar: Any = bar) -> None:
                if stage != bar.postfix:  # shown at once: an evaluation moves no frames
                    bar.set_postfix_str(stage, refresh=frames == bar.n)
                bar.update(frames - bar.n)

            res = approx_nash_conv(args.game, pol, cfg, kwargs, progress=progress)
        record(db, run_id, snap.id, name, res)
        print(f"{name:>24}  approx NashConv {res.nash_conv:.4f} ± {res.half_width:.4f} "
              f"(95% {res.interval}; {cfg.algo}, {cfg.frames} frames per response)")


def _print_legal_rates(played: Any, snaps: Sequence[Any], policies: dict[str, Any]) -> None:
    """Each LLM policy's legal rate over its moves in the round robin (``played``: the
    ``PairsPlayed`` of :func:`_round_robin`, whose moves come back from Ray workers too), and
    one warning line for each below ``LOW_LEGAL_RATE`` (its rating measures its fallback
    moves)."""
    from populations.single_eval import LOW_LEGAL_RATE, low_legal_warning

    for snap in snaps:
        rate = played.legal_rate(snap.id)  # None: it counts no moves (a classic learner)
        if rate is None:
            continue
        moves = played.moves[snap.id][0]
        print(f"{snap.member:>24}  legal rate {rate:.3f} over {moves} moves "
              "(the rest its fallback's)")
        if rate < LOW_LEGAL_RATE:
            print("selfplay-eval: warning: " + low_legal_warning(
                snap.member, rate, moves, "its rating", policies[snap.member]),
                file=sys.stderr)


def _alone(db: Any, run_id: int, spec: Any, args: argparse.Namespace,
           kwargs: dict[str, Any], snaps: Sequence[Any]) -> None:
    """A game of one team: each file plays ``--episodes`` episodes alone (seed ``--seed``
    plus 7,919 per file, in their order), in this process; printed as its mean team return
    ± the 95 % half-width (Student's t), its success rate where the game reports whether an
    episode succeeded (a tool task; :func:`games.vector.episode_success`: nothing for one
    that does not say) and, for an LLM policy, its legal rate; recorded as matches
    ``alone/<snapshot id>/e00000``... and metrics ``alone/<name>/return``,
    ``.../return_ci95``, ``.../success_rate`` and ``.../legal_rate`` at step 0."""
    from populations.db import MatchRow
    from populations.single_eval import LOW_LEGAL_RATE, evaluate_alone, low_legal_warning

    if args.runner != "local":
        print(f"selfplay-eval: note: a game of one team is played in this process (--runner "
              f"{args.runner} plays round robins)", file=sys.stderr)
    cache: dict[str, Any] = {}
    print(f"each policy alone on {spec.name}: mean team return over "
          f"{args.episodes} episode{'s' if args.episodes != 1 else ''} ± the half-width of its "
          "95 % interval (Student's t)")
    for i, snap in enumerate(snaps):
        key = f"alone/{snap.id}"
        res = evaluate_alone(snap.path, args.game, kwargs, args.episodes,
                             args.seed + 7919 * i, key, cache)
        db.add_matches(run_id, [MatchRow(f"{key}/e{e:05d}", spec.name, dict.fromkeys(r, snap.id),
                                         r, args.seed + 7919 * i)
                                for e, r in enumerate(res.returns)])
        ev = res.evaluation
        metrics = {f"alone/{snap.member}/return": ev.mean}
        ci = "± n/a (one episode)" if ev.ci95 is None else f"± {ev.ci95:.3f}"
        if ev.ci95 is not None:
            metrics[f"alone/{snap.member}/return_ci95"] = ev.ci95
        said = [bool(s) for s in res.successes if s is not None]  # episodes the game told
        success = ""
        if said:
            rate = sum(said) / len(said)
            metrics[f"alone/{snap.member}/success_rate"] = rate
            of = "" if len(said) == len(res.successes) else f" of {len(res.successes)}"
            plural = "s" if len(res.successes) != 1 else ""
            success = f"  success rate {rate:.3f} over {len(said)}{of} episode{plural}"
        legal = ""
        if ev.legal_rate is not None:
            metrics[f"alone/{snap.member}/legal_rate"] = ev.legal_rate
            legal = f"  legal rate {ev.legal_rate:.3f} over {res.moves.decisions} moves"
        db.log_metrics(run_id, 0, metrics)
        print(f"{snap.member:>24}  return {ev.mean:+.3f} {ci}{success}{legal}")
        if ev.legal_rate is not None and ev.legal_rate < LOW_LEGAL_RATE:
            print("selfplay-eval: warning: " + low_legal_warning(
                snap.member, ev.legal_rate, res.moves.decisions, "its return",
                cache[snap.path]), file=sys.stderr)
