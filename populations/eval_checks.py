"""``selfplay-eval``'s refusals before torch and the policy files load
(:mod:`populations.eval_cli` runs them): what each numeric flag accepts, in the words of its
range error and of the line a value that is no integer gets (``cli_common.integer``); a
linked ``--db``; a run folder given as a policy; ``--episodes``, ``--torch-threads`` and the
``--exploit-*`` budgets out of range; a lone snapshot's game read from its sidecar
(:func:`sidecar_spec`), for the refusals that need the game before the file loads. Text read
from a file is printed :func:`escaped`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from marl.configs import did_you_mean
from populations.command_line import CLIError
from populations.config_checks import EXPLOIT_SIZES, MAX_THREADS


def refuse_linked_db(db: str) -> None:
    """Refuse (:class:`CLIError`) ``--db`` when it, or SQLite's ``-wal``, ``-shm`` or
    ``-journal`` beside it, is a link: SQLite would write through it, into the file it points
    to. ``LeagueDB`` refuses it too, worded for a run folder's files, after every policy
    loaded; this line names ``--db``, before anything loads."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = f"{db}{suffix}"
        if not os.path.islink(path):
            continue
        target = escaped(os.readlink(path))
        if not suffix:
            raise CLIError(f"--db {escaped(db)} is a link (to {target}); SQLite would write "
                           f"through it: give the database file itself, --db "
                           f"{escaped(os.path.realpath(db))}, or a new file")
        raise CLIError(f"--db {escaped(db)}: SQLite's file {escaped(path)} beside it is a link "
                       f"(to {target}); SQLite would write through it: remove the link")


def make_recorded(game: str, kwargs: dict[str, Any]) -> Any:
    """The recorded game ``game`` (a name with its arguments, ``...(max_cycles=25)``) made
    with ``kwargs`` (``--game-kwargs``) on top: a key both give takes ``kwargs``'s value, as
    README says. ``games.make`` refused the two as a conflict ("names max_cycles=25 but its
    kwargs give max_cycles=50; give one of them"), though the user gave only one."""
    from games import make
    from games.registry import split_name

    base, named = split_name(game) if kwargs else (game, {})
    return make(base, **{**named, **kwargs})


EVAL_SEED_END = 2**62
"""``selfplay-eval --seed`` is below this: numpy's generators take no negative seed, and the
match records' seeds (``--seed`` plus 7,919 per pairing) are SQLite integers (below 2**63)."""


SEED_RANGE = f"an integer from 0 to {EVAL_SEED_END - 1} (2**62 - 1)"


MAX_EPISODES = 10**6
"""``selfplay-eval --episodes`` is at most this, as ``selfplay-train``'s ``eval_episodes``
(``config_checks.MAX_SIZES``): ``--episodes 100000000000000`` was taken and played until
killed; every match is a row of the database."""


EPISODES_RANGE = (f"an integer from 1 to {MAX_EPISODES} (10**6: each match is a row of the "
                  "database)")


PAIRS_RANGE = "an integer >= 0 (the most pairs printed one a line; 0: none)"


THREADS_RANGE = (f"an integer from 1 to {MAX_THREADS} (intra-op threads: more than the cores "
                 "only slow the run)")
"""What ``--episodes``, ``--seed``, ``--pairs`` and ``--torch-threads`` accept: their range
errors' words, and the line when the value is no integer (``cli_common.integer``)."""


def exploit_range(name: str) -> str:
    """What ``--exploit-<name>`` accepts (``EXPLOIT_MINIMUMS``, ``config_checks.EXPLOIT_SIZES``),
    said when its value is no integer."""
    top, why = EXPLOIT_SIZES[name]
    return f"an integer from {EXPLOIT_MINIMUMS[name]} to {top} ({why})"


def escaped(text: str) -> str:
    """``text`` with each character that is not printable (ESC, ``\\r``, newlines, other
    control and format codes) as its Python escape (:func:`games.registry.printable`): text
    read from a file (a snapshot's game name) printed raw could move the cursor, recolour or
    retitle the terminal, or fake lines."""
    from games.registry import printable

    return printable(text)


SNAPSHOT_GLOBS = ("snapshots/*/v*.pt", "*/v*.pt", "*/snapshots/*/v*.pt")
"""Where a folder given as a policy keeps snapshots when it holds no ``.pt`` itself: a run
folder (``<run>/snapshots/<member>/vN.pt``), its ``snapshots`` folder, a sweep's folder."""


def refuse_run_folders(paths: Sequence[str]) -> None:
    """A folder given as a policy that holds no ``.pt`` file itself but snapshots below
    (:data:`SNAPSHOT_GLOBS`), refused in one line naming the newest snapshot of each member
    (at most 4): it said "give a .pt file (it holds none)", read as a run without policies."""
    for path in map(Path, paths):
        if not path.is_dir() or any(path.glob("*.pt")):
            continue  # load_policy names the files a folder holds, or that it holds none
        found = next((hits for pattern in SNAPSHOT_GLOBS if (hits := list(path.glob(pattern)))),
                     [])
        newest: dict[Path, Path] = {}
        for file in sorted(found, key=lambda f: (f.parent, int(f.stem[1:] or 0)
                                                 if f.stem[1:].isdigit() else -1)):
            newest[file.parent] = file  # the last, by version number, of each member's folder
        if not newest:
            continue
        shown = [escaped(str(f)) for f in list(newest.values())[:4]]
        more = f" (and {len(newest) - 4} more members)" if len(newest) > 4 else ""
        raise CLIError(f"policy {escaped(str(path))} is a folder; give snapshot files (.pt), "
                       f"such as its members' newest: {' '.join(shown)}{more}")


def check_eval_values(args: argparse.Namespace, spec: Any = None) -> None:
    """The refusals that need only the command line and the files' names (the numbers are
    checked before, in :mod:`populations.eval_cli`), with the words of the checks made after
    the files load, in their order, before torch and the policy files load: such a refusal
    cost 2.1-2.9 s CPU, now 0.4-0.6 s. A file that exists may still fail to load: that error
    came first and now comes after these (a command line with both)."""
    for path in map(Path, args.policies):
        if path.is_dir():  # load_policy says which files it holds: eval_cli checks then
            return
        if not path.is_file():  # missing, or a FIFO or device (a link to /dev/zero)
            from marl.fileio import not_a_file

            raise CLIError(not_a_file(path, "policy").replace(str(path), escaped(str(path))))
    if len(args.policies) < 2 and spec is not None and len(spec.teams) != 1:  # else alone
        raise CLIError(f"a round robin needs two or more policy files, got {args.policies}; "
                       "or add --exploit for one policy's approximate NashConv")


def check_threads(threads: int) -> None:
    """``--torch-threads``, refused before torch loads with ``torch_threads``' bounds."""
    if not 1 <= threads <= MAX_THREADS:
        raise CLIError(f"--torch-threads {threads}: expected {THREADS_RANGE}")


SIDECAR_HASHED = 64 << 20
"""The largest policy file whose sidecar's game :func:`sidecar_spec` reads (hashing it to
match the sidecar's SHA-256 costs about what loading it does past this)."""


def sidecar_spec(policies: Sequence[str], kwargs: dict[str, Any]) -> Any:
    """The spec of the game a lone snapshot's ``.json`` sidecar (a run's ``vNNNN.json``)
    records, read without torch, for the refusals before torch loads (one file and no
    ``--game`` took 4.4 s to refuse a round robin of one: the game name came from the loaded
    file). Only a sidecar whose SHA-256 is that of the file, whose name passes the checks a
    name read from a file passes, and that makes a game; None otherwise (the file is loaded,
    and what is wrong said then)."""
    import hashlib

    from marl.fileio import read_regular

    if len(policies) != 1:
        return None
    path = Path(policies[0])
    try:
        if not path.is_file() or path.stat().st_size > SIDECAR_HASHED:
            return None
        side = json.loads(read_regular(path.with_suffix(".json"), "snapshot sidecar",
                                       max_bytes=1 << 20))
        game, sha = side.get("game"), side.get("sha256")
        if not (isinstance(game, str) and game.strip() and isinstance(sha, str)):
            return None
        if hashlib.sha256(path.read_bytes()).hexdigest() != sha:
            return None
    except (OSError, ValueError, RecursionError, AttributeError):  # no sidecar, or not one
        return None
    from games.registry import recorded_name_refusal

    if recorded_name_refusal(game):
        return None
    try:
        built = make_recorded(game, kwargs)
    except Exception:  # noqa: BLE001 - said once the file loads (eval_files.recorded_spec)
        return None
    with contextlib.suppress(Exception):  # its spec is all that is read: close what it holds
        built.close()
    return built.spec


EXPLOIT_MINIMUMS = {"frames": 1, "seeds": 1, "eval_episodes": 2}
"""The least value of ``ApproxConfig``'s budget fields (``--exploit-frames``...; a test keeps
them in step)."""


def check_exploit_values(args: argparse.Namespace) -> None:
    """The ``--exploit-*`` values refused before torch loads (the learner registry and the
    game's check come after, in ``eval_runs.exploit_config``): a budget below its least value, and a
    learner that is none of marl's that train best responses
    (``config_checks.STEPPED_ALGOS``) while nothing registered another (``--import``, a
    plugin: the registry loaded), and a budget past its bound (``config_checks.EXPLOIT_SIZES``,
    as ``population.exploit.*``: ``--exploit-frames 100000000000000000000`` was refused only
    after torch and the policy files loaded). Checked with or without ``--exploit`` (README:
    refused early; without it they were taken and the round robin ran)."""
    from populations.config_checks import STEPPED_ALGOS

    for name, low in EXPLOIT_MINIMUMS.items():
        flag = name.removeprefix("eval_")
        value = getattr(args, f"exploit_{flag}")
        if value < low:  # ApproxConfig's words, which came after torch (~2.5 s CPU)
            raise CLIError(f"approx exploitability: {name} must be an integer >= {low}, got "
                           f"{value!r} (--exploit-{flag})")
        top, why = EXPLOIT_SIZES[name]
        if value > top:
            raise CLIError(f"approx exploitability: {name} must be an integer from {low} to "
                           f"{top} ({why}), got {value!r} (--exploit-{flag})")
    registry = sys.modules.get("marl.registry")
    if registry is not None:  # an unknown name in the registry's words (eval_runs.exploit_config)
        registry.get(args.exploit_algo)
    elif args.exploit_algo not in STEPPED_ALGOS:
        raise CLIError(f"--exploit-algo {args.exploit_algo!r} cannot train best responses; "
                       f"choose one of {list(STEPPED_ALGOS)} (one compatible with the game)"
                       f"{did_you_mean(args.exploit_algo, STEPPED_ALGOS)}")
