"""``python -m populations.league``: run (or resume) a self-play league
(:class:`populations.league.League`) from the command line, in one run folder; errors and
Ctrl-C end in one line, and a folder this call made holding no run is not left behind.
:mod:`populations.league` runs :func:`main` when it is run as a module.
"""

from __future__ import annotations

import logging
import shlex
import sys
from pathlib import Path
from typing import Any

from populations.config_checks import SEED_END
from populations.league import COUNT_LEAST, COUNT_MOST, League, LeagueConfig


def _accepts(name: str) -> str:
    """What :class:`LeagueConfig` takes for its integer field ``name`` (``num_envs`` 1 to
    10**9): the words its flag says of a value it refuses, no integer or out of range
    (``--generations 0`` said 'expected an integer >= 1', ``--generations x`` 'from 1 to
    1000000')."""
    least = COUNT_LEAST[name]
    return f"an integer from {least} to {COUNT_MOST[name]}" if name in COUNT_MOST else \
        f"an integer >= {least}"


def _check_run_dir(run_dir: str, runner: str, ray_address: str | None) -> str | None:
    """What is wrong with ``--run-dir`` and ``--ray-address`` before any folder is made, or
    None: an empty ``--run-dir`` trained in the working folder, a file failed with
    '[Errno 17] File exists', and ``--ray-address`` without ``--runner ray`` trained
    locally without a word."""
    if not run_dir.strip():  # Path(""): the working folder, as selfplay-train's run.dir=
        return ("--run-dir is empty (an unset shell variable?), which writes the run into "
                "this folder; give the run's folder")
    if Path(run_dir).exists() and not Path(run_dir).is_dir():
        return (f"--run-dir {run_dir} is a file; give a folder (a new one, or the run's own "
                "to --resume)")
    if ray_address is not None and runner != "ray":
        return (f"--ray-address {ray_address} needs --runner ray (runner {runner} joins no "
                "cluster); add --runner ray, or drop --ray-address")
    return None


SEED_RANGE = f"an integer from 0 to {SEED_END - 1} (2**62 - 1)"  # LeagueConfig's seed error


def main(argv: list[str] | None = None) -> None:
    from populations.cli import print_summary
    from populations.cli_common import (
        OneLineParser,
        fail,
        import_user_modules,
        integer,
        load_plugins,
        one_line,
        sigterm_text,
        user_errors,
    )
    from populations.command_line import CLIError
    from populations.experiment import RunSummary, league_table
    from populations.run_folder import (
        LEAGUE_CLI_WORDS,
        holds_run,
        sigterm_as_interrupt,
        spelled,
        stop_status,
    )
    from populations.run_guard import discard_run_dir, kept_note, note_run_folder

    AT_LEAST_ONE = "an integer >= 1"  # LeagueConfig's words: text that is no integer says them
    seed_help = f"the run's seed ({SEED_RANGE}; default 0)"
    p = OneLineParser(prog="python -m populations.league",
                      description="Run (or resume) a self-play league.")
    p.add_argument("--run-dir", required=True,
                   help="the run's folder: league.db, snapshots, checkpoints (made if missing)")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (your games), from the working directory")
    p.add_argument("--resume", action="store_true",
                   help="go on with the run in --run-dir from its newest checkpoint")
    p.add_argument("--resume-override", action="store_true",
                   help="resume with other settings, or start fresh in a folder with no run")
    p.add_argument("--game", default=LeagueConfig.game,
                   help=f"game name as games.make takes it (default {LeagueConfig.game}; "
                        "python -m games lists them)")
    p.add_argument("--game-kwargs", default=None, metavar="JSON",
                   help="the game's keyword arguments as a JSON object, replacing its defaults "
                        "(the default game's: {\"max_cycles\": 25}), e.g. '{\"players\": 3}'")
    p.add_argument("--generations", type=integer(_accepts("generations")), default=None,
                   help=f"snapshots published after the initial one ({_accepts('generations')}"
                        f"; default {LeagueConfig.generations}; a resume goes on to the run's "
                        "own count unless this is given)")
    p.add_argument("--frames-per-generation", type=integer(_accepts("frames_per_generation")),
                   default=LeagueConfig.frames_per_generation,
                   help="training frames between snapshots "
                        f"({_accepts('frames_per_generation')}; default %(default)s)")
    p.add_argument("--num-envs", type=integer(_accepts("num_envs")), default=LeagueConfig.num_envs,
                   help="game copies stepped together while training "
                        f"({_accepts('num_envs')}; default %(default)s)")
    p.add_argument("--eval-episodes", type=integer(_accepts("eval_episodes")),
                   default=LeagueConfig.eval_episodes,
                   help="role-swapped episode pairs per evaluated snapshot pair "
                        f"({_accepts('eval_episodes')}; default %(default)s)")
    p.add_argument("--seed", type=integer(SEED_RANGE), default=0, help=seed_help)
    p.add_argument("--runner", choices=["local", "ray"], default="local",
                   help="ray: members train on learner actors, matches on Ray workers")
    p.add_argument("--ray-address", default=None, help="join this Ray cluster (runner ray)")
    p.add_argument("--keep-checkpoints",
                   type=integer(f"{AT_LEAST_ONE} (the newest checkpoints kept on disk)"),
                   default=LeagueConfig.keep_checkpoints,
                   help="newest checkpoints kept on disk (an integer >= 1; a resume may "
                        "change it)")
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="no progress bars (selfplay-train's progress=false); in a redirected "
                        "log each bar is a plain line every 30 s and one at its end")
    args = p.parse_args(argv)
    wrong = _check_run_dir(args.run_dir, args.runner, args.ray_address)
    if wrong:
        fail(p.prog, wrong)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    created = note_run_folder(Path(args.run_dir))
    # SIGTERM (kill, timeout, SLURM) as Ctrl-C: interrupted; messages say --resume-override
    with sigterm_as_interrupt(), spelled(LEAGUE_CLI_WORDS):
        try:
            import_user_modules(args.imports, "--import")
            load_plugins()
            kwargs = _game_kwargs(args.game, args.game_kwargs, CLIError)
            try:
                cfg = LeagueConfig(game=args.game, game_kwargs=kwargs,
                                   generations=_generations(args),
                                   frames_per_generation=args.frames_per_generation,
                                   num_envs=args.num_envs, eval_episodes=args.eval_episodes,
                                   seed=args.seed, runner=args.runner,
                                   ray_address=args.ray_address,
                                   keep_checkpoints=args.keep_checkpoints)
            except ValueError as err:  # 'generations=0; ...': named as typed here
                raise CLIError(_as_flag(str(err))) from None
            # bars as selfplay-train's (progress=true): on a terminal, tqdm's; in a
            # redirected log, plain lines (marl.progress)
            league = League(cfg, args.run_dir, resume=args.resume,
                            resume_override=args.resume_override, progress=args.progress)
            try:
                league.run()
                table = league_table(league.db, league.run_id)
            finally:
                league.close()
            run_dir = Path(args.run_dir)
            print_summary(RunSummary(run_dir, run_dir / "league.db", run_dir / "snapshots",
                                     None, table), resume=f"{p.prog} {_again(argv)}")
        except KeyboardInterrupt as err:  # Ctrl-C: one line, no traceback (exit 130, as a shell's)
            message = f"interrupted; go on with: {p.prog} {_again(argv)}"
            if not holds_run(args.run_dir):  # --resume would be refused: nothing to go on with
                if created:
                    discard_run_dir(Path(args.run_dir))
                message = "interrupted before the run started (start again)" + \
                    kept_note(Path(args.run_dir))  # the folder kept for another's files
            status = stop_status(err)
            fail(p.prog, sigterm_text(message) if status == 143 else message, status=status)
        except user_errors() as err:  # one line, exit 2; a folder this call made is not left
            if created:
                discard_run_dir(Path(args.run_dir))
            fail(p.prog, one_line(err) + kept_note(Path(args.run_dir)))


_FLAGS = ("generations", "frames_per_generation", "num_envs", "eval_episodes", "keep_checkpoints",
          "seed")


def _as_flag(message: str) -> str:
    """:class:`LeagueConfig`'s ``num_envs=70000: ...`` as this CLI's ``--num-envs 70000:
    ...``: the field's name is not what the user typed."""
    name, eq, rest = message.partition("=")
    if not eq or name not in _FLAGS:
        return message
    value, sep, tail = rest.partition(":") if ":" in rest.split(";")[0] else rest.partition(";")
    if name in COUNT_MOST or name == "seed":  # '0; expected an integer >= 1' where 'x' says the
        whole = SEED_RANGE if name == "seed" else _accepts(name)  # field's whole range
        tail = tail.replace(f"expected an integer >= {COUNT_LEAST[name]}", f"expected {whole}")
    return f"--{name.replace('_', '-')} {value}{sep}{tail}"


def _generations(args: Any) -> int:
    """``--generations``, or on a resume without it the run's recorded count (the default 6
    trained a run started with ``--generations 3`` to 6 while a resume refused every other
    changed setting); a count the run did not record (no readable ``league.db``): the
    default, and the resume's own checks say what is wrong with the folder."""
    if args.generations is not None:
        return args.generations
    if args.resume or args.resume_override:
        recorded = _recorded_generations(Path(args.run_dir))
        if recorded is not None:
            return recorded
    return LeagueConfig.generations


def _recorded_generations(run_dir: Path) -> int | None:
    """The ``generations`` recorded in ``run_dir/league.db`` (None: no such run or value)."""
    import sqlite3

    from populations.db import LeagueDB, LeagueDBError

    path = run_dir / "league.db"
    if not path.is_file():
        return None
    try:
        db = LeagueDB(path, readonly=True)
        try:
            run_id = db.run_id("league")
            config = None if run_id is None else db.run_config(run_id)
        finally:
            db.close()
    except (LeagueDBError, sqlite3.Error, OSError):
        return None
    value = (config or {}).get("generations")  # untrusted: a count the CLI would take, or none
    from populations.league import COUNT_MOST

    ok = (isinstance(value, int) and not isinstance(value, bool)
          and 1 <= value <= COUNT_MOST["generations"])
    return value if ok else None


def _again(argv: list[str] | None) -> str:
    """The league CLI's arguments that resume this run: these, with ``--resume``."""
    given = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(given if "--resume" in given else [*given, "--resume"])


def _game_kwargs(game: str, text: str | None, error: type[Exception]) -> dict[str, Any]:
    """``--game-kwargs``: a JSON object of the game's keyword arguments, checked by building
    the game (before the run folder is made); without it another game than the default
    starts from its own defaults, not the default game's ``max_cycles``."""
    if text is None:
        return {} if game != LeagueConfig.game else LeagueConfig().game_kwargs
    import json

    try:
        kwargs = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise error(f"--game-kwargs is not JSON ({err}): {text!r}; expected an "
                    "object such as '{\"players\": 3}'") from None
    if not isinstance(kwargs, dict):
        raise error(f"--game-kwargs must be a JSON object such as '{{\"players\": 3}}', got "
                    f"{text!r}")
    from populations.config_checks import check_game_kwargs

    check_game_kwargs(game, kwargs)  # built and stepped once: a bad argument in one line
    return kwargs
