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

This module is the command line and the order of the steps: the flags and the refusals that
need only them (:mod:`populations.eval_checks`), then the files and their checks against the
game (:mod:`populations.eval_files`), the matches and estimates recorded into the database
(:mod:`populations.eval_runs`) and the tables and lines printed around them
(:mod:`populations.eval_report`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
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
    refuse_linked_db,
    refuse_run_folders,
    sidecar_spec,
)
from populations.eval_files import (
    check_policies,
    load_policies,
    policy_names,
    recorded_game,
    recorded_spec,
)
from populations.eval_report import PAIRS_SHOWN, print_names
from populations.eval_runs import exploit_config, run_evaluation


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
        if Path(args.db).is_dir():  # SQLite's "unable to open database file", once files loaded
            raise CLIError(f"--db {escaped(args.db)} is a folder; give the league database file "
                           f"to write, e.g. --db {escaped(str(Path(args.db) / 'eval.db'))}")
        import_user_modules(args.imports, "--import")
        if args.game is not None:  # else the files' game, once they load (recorded_game)
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

    _check_numbers(args, unread)
    spec = make(args.game, **kwargs).spec if args.game is not None else None
    refuse_run_folders(args.policies)
    if not args.exploit:
        check_eval_values(args, spec if spec is not None else
                          sidecar_spec(args.policies, kwargs))
    import torch

    import populations.experiment  # noqa: F401 - every built-in policy kind registered first:
    # an unknown kind's error lists them all (marl.core.load_policy)

    torch.set_num_threads(args.torch_threads)  # as selfplay-train: the default used every core
    # bad --exploit-* values fail first (no --game: once the files name the game)
    exploit = exploit_config(args, spec) if args.exploit and spec is not None else None
    names = policy_names(args.policies)
    policies = load_policies(names)
    if spec is None:  # no --game: the game the files record, a name read from a file
        args.game = recorded_game(policies)
        spec = recorded_spec(args.game, kwargs, next(iter(policies)))
        if kwargs:  # the matches make the game as the spec was made: the recorded arguments
            from games.registry import split_name  # under --game-kwargs

            args.game, named = split_name(args.game)
            kwargs = {**named, **kwargs}
        on_top = ", --game-kwargs on top" if kwargs else ""
        print(f"selfplay-eval: note: no --game given: playing {escaped(spec.name)}, the game the "
              f"policy files record{on_top}", file=sys.stderr)
        exploit = exploit_config(args, spec) if args.exploit else None
    sides = check_policies(args, spec, names, policies)
    print_names(names, args.db)
    new = _new_folder(Path(args.db).parent)
    if new is not None:  # as selfplay-train's note on a new top-level folder: a typo shows
        deeper = "" if new == Path(args.db).parent else " (and the folders in it)"
        print(f"selfplay-eval: note: --db {escaped(args.db)} makes the new folder "
              f"{escaped(str(new))}{deeper}", file=sys.stderr)
    _warn_if_in_use(args.db)
    run_evaluation(args, kwargs, spec, names, policies, sides, exploit)


def _check_numbers(args: argparse.Namespace, unread: Sequence[str]) -> None:
    """Refuse the numbers of ``args`` out of range, before a game or a file loads (``--episodes
    0`` with a missing file named the file); the ``--exploit-*`` values with or without
    ``--exploit`` (README: refused early; without ``--exploit`` they were taken and unused),
    then warn of ``unread``, those given without ``--exploit``."""
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


def _new_folder(folder: Path) -> Path | None:
    """The outermost folder of ``folder`` and its parents that does not exist yet (what
    making ``folder`` creates first); None when it exists."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    return missing[-1] if missing else None


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
