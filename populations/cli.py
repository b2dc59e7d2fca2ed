"""Console entry point ``selfplay-train`` (a Hydra app), and what every CLI shares: one-line
errors (:func:`reported`), the user's modules and plugins. ``selfplay-eval`` is
:mod:`populations.eval_cli`; a sweep's folders and resume commands, :mod:`populations.sweeps`.

``selfplay-train`` composes ``configs/config.yaml`` with the groups ``game``, ``algo``,
``encoder``, ``population``, ``runner``, ``logger`` and ``experiment`` over the typed schema
:class:`populations.experiment.ExperimentConfig` (the ``configs`` package registers it when
Hydra loads it): a misspelt key, a value of the wrong type, an unknown group option or game
stops it before the run folder is made, naming what is accepted.

A user's own code reaches every entry point two ways: modules listed in the config key
``imports`` (``selfplay-train imports=[mypkg.games]``; ``--import MODULE`` for
``selfplay-eval`` and ``python -m populations.league``), importable from the working
directory; and installed packages' entry points in the groups ``selfplay.games``,
``selfplay.learners``, ``selfplay.meta_solvers``, ``selfplay.matchmaking_rules`` and
``selfplay.loggers``, loaded when each CLI starts.

Every error a user can cause ends in one line on stderr, ``<prog>: <message>``, with exit
status 2 and no traceback (``HYDRA_FULL_ERROR=1`` shows it), and leaves no half-made run
folder behind. Startup stays light: torch and the learners load after the arguments parse.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import importlib.util
import json
import logging
import os
import re
import shlex
import shutil
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from hydra.experimental.callback import Callback

from populations.command_line import (
    TRAIN,
    CLIError,
    absolute_config_dirs,
    game_overrides,
    override_values,
    resume_command,
    run_dir_override,
    shadowed_presets,
)
from populations.sweeps import (  # importing it registers the job folders' resolvers
    _SWEPT,
    folder_given,
    pin_sweep_folder,
    refuse_renamed_job,
    register_resolvers,
    sweep_folder,
    sweep_resume_command,
    sweep_started,
    sweep_stopped,
    swept_keys,
)

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from populations.experiment import ExperimentConfig, RunSummary

log = logging.getLogger("selfplay")
PLUGIN_GROUPS = ("selfplay.games", "selfplay.learners", "selfplay.meta_solvers",
                 "selfplay.matchmaking_rules", "selfplay.loggers")


# ----------------------------------------------------------------------------- errors
def user_errors() -> tuple[type[BaseException], ...]:
    """Exception classes a user can cause: bad values, files, imports, configs, snapshots.

    The library's own classes are looked up only where their module is loaded (an error of
    a module that never loaded cannot have been raised), so this costs no imports."""
    found: list[type[BaseException]] = [CLIError, ValueError, OSError]
    for module, name in (("marl.core", "CheckpointError"), ("populations.db", "LeagueDBError"),
                         ("hydra.errors", "HydraException"),
                         ("omegaconf.errors", "OmegaConfBaseException")):
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type):
            found.append(cls)
    return tuple(found)


_NOISE = ("full_key:", "reference_type=", "object_type=", "Set the environment variable")


def one_line(err: BaseException) -> str:
    """``err`` (and an OmegaConf cause) as one line: Hydra's indented option lists become
    comma-separated, its config search path and key diagnostics are dropped; a log file
    Hydra cannot open (logging's "Unable to configure handler 'file'") is named with the
    system's reason."""
    text = str(err)
    cause = err.__cause__
    if isinstance(cause, OSError) and text.startswith("Unable to configure handler"):
        what = f"[Errno {cause.errno}] {cause.strerror}" if cause.strerror else str(cause)
        return f"cannot write the run's log {cause.filename or '(unnamed)'}: {what}"
    if cause is not None and type(cause).__module__.startswith("omegaconf"):
        from populations.config_checks import unknown_key_hint

        hint = unknown_key_hint(cause)  # llm.tem=1: the nearest keys of llm
        if hint:  # the schema is closed: Hydra's "+llm.tem=1" ended in a traceback (CC-8)
            text = re.sub(r"\s*To append to your config use \S+", "", text)
        text += "\n" + str(cause) + (f"\n{hint}" if hint else "")
    elif not err.__suppress_context__ and \
            type(err.__context__).__module__.startswith("omegaconf"):  # a preset's key: Hydra
        from populations.config_checks import unknown_key_hint  # quotes it, raised unchained

        hint = unknown_key_hint(err.__context__)
        text = re.sub(r": \w+ raised while composing config:\n", ": ", text)
        text += f"\n{hint}" if hint else ""
    parts: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Config search path"):
            break
        if not line or line.startswith(_NOISE):
            continue
        if raw[:1] in ("\t", " ") and parts and parts[-1].endswith(":"):
            parts[-1] += " " + line  # the first item of an indented list
        elif raw[:1] in ("\t", " ") and parts and ":" in parts[-1]:
            parts[-1] += ", " + line
        else:
            parts.append(line.rstrip("."))
    return "; ".join(parts) or type(err).__name__


_TOO_LARGE = re.compile(r"can't allocate memory|cannot allocate memory|out of memory|"
                        r"Storage size calculation overflowed|Overflow when unpacking", re.I)


def too_large(err: BaseException) -> BaseException | None:
    """The error behind ``err`` when it is the machine's memory running out or a size that
    overflows an integer (``MemoryError``, ``OverflowError``, torch's "can't allocate memory",
    "CUDA out of memory", "Storage size calculation overflowed", "Overflow when unpacking
    long long"): ``err`` itself, or its ``__cause__`` (a learner that could not be built);
    else None. Not a bug of the code but of sizes the user gave (``vdn.buffer_size=5e9``)."""
    for e in (err, err.__cause__):
        if isinstance(e, (MemoryError, OverflowError)) or (
                isinstance(e, (RuntimeError, TypeError)) and _TOO_LARGE.search(str(e))):
            return e
    return None


def too_large_line(err: BaseException, overrides: Sequence[str] | None = None) -> str:
    """One line for :func:`too_large`'s ``err``: what failed (the error, its line) and the
    command line's sizes to lower (``overrides`` holding numbers of 10**6 or more, but frames,
    seeds and episodes, which take time, not memory)."""
    from games.core import where_raised

    cause = too_large(err) or err
    why = re.sub(r"\[enforce fail at [^\]]*\] err == 0\.\s*", "", str(cause))  # torch's C++
    why = " ".join(why.split("Exception raised from")[0].split()).rstrip(" .") or "no message"
    why += '"' * (why.count('"') % 2)  # the quote its C++ frames closed
    at = re.search(r"\(at ([^()]*)\)(; HYDRA_FULL_ERROR=1 shows the traceback)?$", str(err))
    place = at[1] if at and cause is not err else where_raised(cause)
    what = f"{type(cause).__name__}: {why} (at {place})"
    if cause is err:
        text = f"out of memory or a size too large: {what}"
    else:  # the learner could not be built: its line, the error's C++ frames left out
        text = f"{str(err).partition(f': {type(cause).__name__}: ')[0]}: {what}"
    sizes = [o for o in overrides or () for key, _, value in [o.partition("=")]
             if re.fullmatch(r"[\d\s,\[\]_*.eE+-]+", value)  # numbers (lists too), not paths
             and re.search(r"\d{7}|\d\*\*|\de\d", value)
             and not re.search(r"frames|seed|episodes|_s$", key)]  # time, not memory
    lower = f"lower the sizes given ({', '.join(sizes)})" if sizes else \
        "lower the run's sizes (a replay buffer_size, net.hidden, minibatches, num_envs...)"
    return f"{text}; {lower} to fit this machine's memory and 64-bit integers; " \
        "HYDRA_FULL_ERROR=1 shows the traceback"


def fail(prog: str, message: str, status: int = 2) -> NoReturn:
    """Print ``prog: message`` on stderr and exit with ``status`` (2: a usage error); progress
    bars still open are cleared first, so the message is the line left on the terminal."""
    say(prog, message)
    sys.exit(status)


def say(prog: str, message: str) -> None:
    """Print ``prog: message`` on stderr, progress bars still open cleared first (:func:`fail`
    without the exit: a sweep's failed job under ``keep_going=true``)."""
    bars = getattr(sys.modules.get("tqdm"), "tqdm", None)
    for bar in list(getattr(bars, "_instances", ())):
        bar.leave = False
        bar.close()
    print(f"{prog}: {message}", file=sys.stderr)


def interrupted(prog: str, message: str | Callable[[], str] = "interrupted") -> NoReturn:
    """Ctrl-C, called from ``except KeyboardInterrupt``: ``prog: message`` on stderr and exit
    130 (as a shell's), no traceback; ``HYDRA_FULL_ERROR=1`` re-raises instead (the traceback),
    before ``message`` (a callable: computed only then, with what it does) is made. SIGTERM
    (:func:`populations.run_folder.sigterm_as_interrupt`) says "terminated" and exits 143."""
    from populations.run_folder import stop_status

    status = stop_status(sys.exc_info()[1])
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        if status == 143:  # raised on, Python would exit as after Ctrl-C (130)
            traceback.print_exc()
            sys.exit(status)
        raise  # the KeyboardInterrupt being handled by the caller
    text = message() if callable(message) else message
    fail(prog, sigterm_text(text) if status == 143 else text, status=status)


def sigterm_text(message: str) -> str:
    """Ctrl-C's message (``interrupted...``) as SIGTERM's."""
    return "terminated (SIGTERM)" + message.removeprefix("interrupted")


@contextmanager
def reported(prog: str) -> Iterator[None]:
    """Turn a user error raised inside into one line and exit 2 (``HYDRA_FULL_ERROR=1``:
    the traceback instead); anything else (a bug) keeps its traceback."""
    try:
        yield
    except KeyboardInterrupt:  # Ctrl-C (selfplay-eval...): one line, exit 130 as a shell's
        interrupted(prog)
    except Exception as err:
        if not isinstance(err, user_errors()) and too_large(err) is None:
            raise  # a bug: its traceback
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        if too_large(err) is not None:
            fail(prog, too_large_line(err, _TYPED if prog == TRAIN else ()))
        msg = one_line(err)
        if type(err).__name__ == "OverrideParseException":  # Hydra's grammar, not ours
            msg += quoting_hint(str(getattr(err, "override", "")))
        missing = re.match(r"In '[^']*': Could not find '([\w-]+)/([^'/]+)'", msg)
        if missing:  # check_command_line's, or Hydra's own (another config folder given)
            msg += preset_hint(*missing.groups())
        fail(prog, msg)


def preset_hint(group: str, option: str) -> str:
    """After "Could not find 'algo/my_algo'": when ``my_algo`` is a registered learner (by
    ``imports=[...]`` or an entry point; what is loaded, no torch imported for it) or the
    section of one, how to give it a preset (README, "Add your own learner"); else ""."""
    learners = getattr(sys.modules.get("marl.registry"), "_LEARNERS", {})
    if group != "algo" or not isinstance(learners, dict):
        return ""
    entry = learners.get(option)
    if entry is not None:
        module = entry.cls.__module__
        return (f"; {option} is a learner registered by {module} with no algo preset: add "
                f"one, myconfigs/algo/{option}.yaml holding '# @package _global_' and 'algo: "
                f"{option}', with hydra.searchpath=[file://myconfigs] (an absolute path, or "
                f"relative to this folder), or store it in {module}: ConfigStore.instance()."
                f'store(group="algo", name="{option}", node={{"algo": "{option}"}}, '
                'package="_global_") (README: "Add your own learner")')
    algos = sorted(n for n, e in learners.items() if getattr(e, "section", None) == option)
    if algos:
        return (f"; {option} is the settings section of the learner {' and '.join(algos)}: "
                f"algo={algos[0]} picks it, {option}.KEY=VALUE sets its settings")
    return ""


def quoting_hint(override: str) -> str:
    """The hint after Hydra's grammar error (``mismatched input '('``), which names neither
    the override it could not read (among several) nor how to write it: that override and
    itself quoted (``'game.name="openspiel/dark_hex(num_rows=3)"'``) where a plain
    ``key=value`` can be, else an example."""
    key, eq, value = override.partition("=")
    if eq and value and re.fullmatch(r"[+~]{0,2}[\w.@/-]+", key) and \
            not re.search(r"[\"'\\]|\$\{", value):
        parts, depth, start = [], 0, 0  # a sweep's values (-m): each quoted by itself
        for i, c in enumerate(value):
            depth += (c in "([{") - (c in ")]}")
            if c == "," and depth == 0:
                parts, start = [*parts, value[start:i]], i + 1
        parts.append(value[start:])
        quoted = shlex.quote(key + "=" + ",".join(
            p if re.fullmatch(r"[\w./@+-]*", p) else f'"{p}"' for p in parts))
        return f" (in {override}: a value holding ( ) [ ] , = or spaces needs quotes: {quoted})"
    return (" (a value holding ( ) [ ] , = or spaces needs quotes: "
            "'game.name=\"openspiel/goofspiel(num_cards=4)\"')")


class OneLineParser(argparse.ArgumentParser):
    """argparse with its usage errors in one line (exit 2, as argparse does)."""

    def error(self, message: str) -> NoReturn:
        fail(self.prog, f"{message} (see --help)")


# ------------------------------------------------------------------------ user code
def import_user_modules(modules: Sequence[str], where: str = "imports") -> None:
    """Import ``modules`` (registering their games, learners, meta-solvers), the working
    directory first on ``sys.path``; a module that fails raises :class:`CLIError`."""
    if not modules:
        return
    from games.registry import IMPORTS_ENV

    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    for name in modules:
        if isinstance(name, str) and ("/" in name or "\\" in name or name.startswith(".")
                                      or name.endswith(".py")):
            raise CLIError(f"{where}: {name!r} is a path; give a module name importable from "
                           f"{cwd} (mypkg.games for mypkg/games.py){_module_of(name, cwd)}")
        try:
            importlib.import_module(name)
        except Exception as err:
            raise CLIError(f"{where}: cannot import {name!r} from {cwd}: "
                           f"{type(err).__name__}: {one_line(err)}") from None
    # worker processes (Ray actors, rollout workers) find the modules the same way: from
    # the variables they inherit (``games.make`` imports them on a name it does not know)
    known = [m for m in os.environ.get(IMPORTS_ENV, "").split(",") if m]
    os.environ[IMPORTS_ENV] = ",".join(dict.fromkeys([*known, *modules]))
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if cwd not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([cwd, *filter(None, paths)])


def _module_of(path: str, cwd: str) -> str:
    """What :func:`import_user_modules` adds after refusing ``path`` (a file or folder given
    as a module): its module name when ``path`` lies in ``cwd`` (``mods/games.py``:
    ``mods.games``), else how a module elsewhere is found."""
    try:
        rel = Path(cwd, path).resolve().relative_to(Path(cwd).resolve())
    except ValueError:
        rel = None
    parts = rel.with_suffix("").parts if rel is not None and rel.suffix in ("", ".py") \
        else ()
    if parts and all(p.isidentifier() for p in parts):
        return f"; {path} here is the module {'.'.join(parts)}"
    return "; a module outside this folder: run from its folder, or add that folder to PYTHONPATH"


def game_modules(name: str) -> list[str]:
    """The module of a ``pettingzoo/<module>[:<function>]`` game that only the working
    folder holds (a user's env file, ``mypz.py``), to import as ``imports`` are: an entry
    script's ``sys.path`` does not hold that folder, so ``game.name=pettingzoo/mypz:make_env``
    was 'No module named mypz' unless ``imports=[mypz]`` put it there. Installed modules
    (``mpe2...``) are left to the adapter."""
    if not isinstance(name, str) or not name.startswith("pettingzoo/"):
        return []
    module = name.removeprefix("pettingzoo/").partition("(")[0].partition(":")[0]  # (N=2)
    top = module.split(".")[0]
    if not top.isidentifier() or not all(p.isidentifier() for p in module.split(".")):
        return []
    cwd = Path.cwd()
    if not ((cwd / f"{top}.py").is_file() or (cwd / top / "__init__.py").is_file()):
        return []
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    origin = found and (found.origin or next(iter(found.submodule_search_locations or []), None))
    if origin and Path(origin).resolve().parent not in (cwd.resolve(), (cwd / top).resolve()):
        return []  # an installed module of that name wins, as without the folder on the path
    return [module]


def load_plugins() -> None:
    """Import the installed packages' ``selfplay.*`` entry points (once per process)."""
    from games.registry import load_entry_points

    for group in PLUGIN_GROUPS:
        try:
            load_entry_points(group)
        except ImportError as err:  # a user's package failed: one line naming it
            raise CLIError(str(err)) from None


_TYPED: list[str] = []  # selfplay-train's command line as typed (sys.argv is rewritten)


def _typed() -> list[str]:
    """The command line as typed, its config folders absolute (a sweep's resume command is
    pasted from any folder: :func:`populations.command_line.absolute_config_dirs`)."""
    return absolute_config_dirs(_TYPED or sys.argv[1:])


def _untyped(message: str) -> str:
    """Hydra's argparse message without the ``~game`` this CLI added (game_overrides)."""
    return message if "~game" in _TYPED else re.sub(r"(?<!\S)~game ", "", message)


def replace_game_kwargs(cfg: DictConfig, overrides: Sequence[str]) -> None:
    """``game.kwargs={...}`` replaces the preset's arguments (Hydra merges dicts); later
    ``game.kwargs.KEY=...`` overrides apply on top."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf, open_dict

    kwargs: Any = None
    for o in OverridesParser.create().parse_overrides(list(overrides)):
        key = o.key_or_group
        if key == "game.kwargs":
            kwargs = OmegaConf.create({} if o.is_delete() else o.value() or {})
        elif kwargs is not None and key.startswith("game.kwargs."):
            sub = key.removeprefix("game.kwargs.")
            if o.is_delete():
                kwargs.pop(sub, None)
            else:
                OmegaConf.update(kwargs, sub, o.value(), merge=True)
    if kwargs is not None:
        with open_dict(cfg):
            cfg.game.kwargs = kwargs


# ------------------------------------------------------------- before the schema loads
class _Unparsed(Exception):
    """Arguments Hydra's own parser refuses (it reports them itself, later)."""


def check_command_line(args: Sequence[str]) -> None:
    """Mistakes Hydra would report before using the schema, found before the schema (and
    torch, ~1 s) is imported, in Hydra's own words: an override its grammar cannot parse, and
    ``GROUP=OPTION`` naming an option no file in ``configs/GROUP/`` (nor an installed
    package's config store entry) provides. Skipped where other configs may provide it
    (``--config-dir``, ``--config-path``, ``hydra.searchpath``)."""
    # private, no public equivalent: Hydra's own flag parser (--config-dir, -m, ...) is only
    # reachable here or through hydra.main, which runs the app (pyproject pins hydra-core 1.3)
    from hydra._internal.utils import get_args_parser
    from hydra.core.config_store import ConfigStore
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType

    parser = get_args_parser()

    def refuse(message: str) -> NoReturn:
        raise _Unparsed(message)

    parser.error = refuse  # type: ignore[method-assign]
    try:
        parsed = parser.parse_args(list(args))
    except _Unparsed:
        return
    if parsed.multirun and (parsed.cfg or parsed.info):  # Hydra: a ValueError's traceback
        raise CLIError(f"-m cannot be combined with {'--cfg' if parsed.cfg else '--info'}; "
                       "--cfg job prints one job's config: drop -m and give one value of each "
                       "swept key")
    _check_hydra_flags(parsed)
    overrides = OverridesParser.create().parse_overrides(parsed.overrides)  # grammar errors
    for o in overrides:  # whatever the search path: the schema has no keys under algo
        wrong = _key_under_group(o)
        if wrong:
            raise CLIError(wrong)
    # before the options: their ConfigStore presets count, and their learners name the
    # preset a missing algo=<option> lacks (also where Hydra reports it: other configs)
    import_listed_modules(overrides)
    if parsed.config_path is None:  # --config-path replaces the shipped configs
        searchpath = [entry for o in overrides
                      if o.key_or_group == "hydra.searchpath" and not o.is_delete()
                      and isinstance(o.value(), list) for entry in o.value()]
        for line in shadowed_presets(parsed.config_dir, searchpath):
            print(line, file=sys.stderr)  # Hydra composes with the shipped one: say so
    if parsed.config_dir or parsed.config_path or parsed.config_name or any(
            o.key_or_group.startswith("hydra.searchpath") for o in overrides):
        return
    groups = _config_groups()
    for o in overrides:
        group = o.key_or_group
        value = None if o.is_delete() else o.value()
        if group in ("hydra.run.dir", "hydra.sweep.dir") and value in ("", None):
            raise CLIError(f"{group} is empty (an unset shell variable?), which writes the "
                           "run into this folder; give the run's folder")
        if group in ("hydra.run.dir", "hydra.sweep.dir") and isinstance(value, str) and \
                "\\${" in value:  # Hydra resolves the folder's name again (its logging)
            raise CLIError(f"{group}={value}: a folder name holding a literal '${{' cannot be "
                           "a run folder (Hydra resolves it as an interpolation); rename it")
        if group in ("hydra.run.dir", "hydra.sweep.dir") and isinstance(value, str) and \
                value.startswith("/"):  # $RUN/x with RUN unset: /x, made silently
            first = next((p for p in value.split("/") if p), "")
            if not first:
                raise CLIError(f"{group}={value} is the filesystem's root (an unset shell "
                               "variable, as in $RUN/?); give the run's folder")
            if "$" not in first and not Path("/", first).is_dir():
                if not os.access("/", os.W_OK):  # Hydra could not make it either
                    raise CLIError(f"{group}={value}: /{first} does not exist and cannot be "
                                   "made here (an unset shell variable, as in $RUN/x?); give "
                                   "a folder under an existing one")
                print(f"note: {group}={value} makes the new top-level folder /{first} (if you "
                      "meant $VAR/..., VAR is unset)", file=sys.stderr)  # containers: /results
        if group in ("hydra.run.dir", "hydra.sweep.dir") and isinstance(value, str) and \
                "${" not in value:  # Hydra's makedirs: "[Errno 17] File exists: '...'"
            there = next((p for p in (Path(value), *Path(value).parents) if p.exists()), None)
            if there is not None and not there.is_dir():
                what = "sweep's" if group == "hydra.sweep.dir" else "run's"
                raise CLIError(f"{group}={value}: {there} is a file, not a folder; give the "
                               f"{what} folder")
        if group in groups and o.package is None and not o.is_delete() and \
                o.value_type == ValueType.ELEMENT and o.value() is None:  # Hydra: "Got NoneType"
            known = ", ".join(groups[group])
            raise CLIError(f"{o.input_line}: the config group {group} needs one of its "
                           f"options: {known}")
        if group == "imports" and isinstance(value, str):  # Hydra: "str is not a ListConfig"
            raise CLIError(f"imports={value} must be a list: imports=[{value}]")
        if group not in groups or o.package is not None or o.input_line.startswith(("+", "~")):
            continue
        options = [o.value()] if o.value_type == ValueType.ELEMENT else \
            list(o.value().list) if o.value_type in (ValueType.CHOICE_SWEEP,
                                                     ValueType.SIMPLE_CHOICE_SWEEP) else []
        for option in options:  # a sweep's too (-m algo=mappo,ipo: before the sweep folder)
            if not isinstance(option, str) or "/" in option or option in groups[group]:
                continue
            try:
                stored = [n.removesuffix(".yaml") for n in ConfigStore.instance().list(group)]
            except OSError:
                stored = []
            if option not in stored:
                known = ", ".join(sorted({*groups[group], *stored}))
                raise CLIError(f"In 'config': Could not find '{group}/{option}'; Available "
                               f"options in '{group}': {known}")  # reported() adds preset_hint
    check_values(overrides)


def _key_under_group(override: Any) -> str | None:
    """``algo.adv_norm=median``, a key under a config group that is no section (``algo``,
    ``experiment``, ``encoder``: Hydra said "Cannot convert 'dict' to string"): what the group
    picks and the sections that hold the key (``mappo.adv_norm=median``); None for others."""
    group, dot, rest = override.key_or_group.partition(".")
    if not dot or group in ("game", "hydra") or override.is_delete() or group not in _groups():
        return None
    from populations.config_checks import section_schemas

    schemas = section_schemas()
    if group in schemas:  # llm.model=..., population.kind=...: a section of its own
        return None
    value = override.input_line.partition("=")[2]
    found = []
    for section, (cls, _) in schemas.items():
        try:
            top = cls()
        except Exception:  # noqa: BLE001 - a section needing arguments holds no default keys
            continue
        subs = [("", top)] + [(f"{f.name}.", getattr(top, f.name)) for f in
                              dataclasses.fields(top) if dataclasses.is_dataclass(
                                  getattr(top, f.name))]  # fmt: skip
        for sub, obj in subs:  # mappo.adv_norm, llm.grpo.adv_norm
            for name in rest.split("."):
                obj = getattr(obj, name, _Missing) if dataclasses.is_dataclass(obj) else _Missing
            if obj is not _Missing:
                found.append(f"{section}.{sub}{rest}={value}")
    options = ", ".join(_config_groups().get(group, []))
    where = (f"it goes in a section: {found[0]}"
             + (f" (or {', '.join(found[1:])})" if found[1:] else "")) if found else \
        f"settings go in the sections ({', '.join(f'{n}.*' for n in schemas)})"
    return (f"{override.input_line}: '{group}' is a config group ({group}=<option> picks one "
            f"of {options}), not a section with keys; {where}")


class _Missing:
    """No such key (see :func:`_key_under_group`)."""


def _check_hydra_flags(parsed: argparse.Namespace) -> None:
    """Hydra's flags that it refuses with a traceback (a ValueError, exit 1), in one line:
    two commands (``-r --info``, ``--cfg job --info``), ``--resolve`` without ``--cfg``, and
    ``--experimental-rerun`` of a file that is missing, a folder or no pickle."""
    commands = [flag for flag, given in (
        ("--run", parsed.run), ("-m", parsed.multirun), ("--cfg", parsed.cfg is not None),
        ("--info", parsed.info is not None), ("--shell-completion", parsed.shell_completion))
        if given]
    if len(commands) > 1:
        raise CLIError(f"{' and '.join(commands)} cannot be combined: give one of --run, -m, "
                       "--cfg, --info, --shell-completion")
    if parsed.resolve and parsed.cfg is None:
        raise CLIError("--resolve resolves what --cfg prints: give it with --cfg job, --cfg "
                       "hydra or --cfg all")
    rerun = parsed.experimental_rerun
    if rerun is not None:
        path = Path(rerun)
        if not path.is_file():
            what = "a folder" if path.is_dir() else "no such file"
            raise CLIError(f"--experimental-rerun {rerun!r}: {what} (give a run's "
                           ".hydra/config.pickle)")
        with open(path, "rb") as fh:
            head = fh.read(1)
        if head != b"\x80":  # a pickle of protocol 2 or later, as Hydra writes
            raise CLIError(f"--experimental-rerun {rerun!r} is not a pickle file (give a run's "
                           ".hydra/config.pickle)")


def import_listed_modules(overrides: Sequence[Any]) -> None:
    """Import the command line's ``imports=[...]`` now (the run imports them again): one that
    fails is refused before torch loads, and the games and config presets (ConfigStore) they
    register are known to the checks. The working folder leaves ``sys.path`` again after:
    Hydra has not loaded its ``configs`` package yet, and a project's own ``configs/`` there
    would be taken for it (the run puts the folder back, after Hydra)."""
    from hydra.core.override_parser.types import ValueType

    for o in overrides:
        if o.key_or_group != "imports" or o.package is not None or o.is_delete() or \
                o.value_type != ValueType.ELEMENT:
            continue
        modules = o.value()
        if isinstance(modules, list) and all(isinstance(m, str) for m in modules):
            cwd = os.getcwd()
            added = cwd not in sys.path
            try:
                import_user_modules(modules)
            finally:
                if added and cwd in sys.path:
                    sys.path.remove(cwd)


def check_values(overrides: Sequence[Any]) -> None:
    """Common bad values on the command line (``num_envs=0``, ``seed=abc``, ``device=gpu``,
    an unknown ``game.name``), refused before the schema and torch load, in the words the
    schema's own checks use (:mod:`populations.config_checks`, ``games.make``)."""
    from populations.config_checks import (
        TOP_LEVEL_TYPES,
        check_rollout_share,
        check_run_values,
        check_section_values,
        section_schemas,
        typed_override,
    )

    names, schemas, sections = [], None, {}
    for o in overrides:
        key = o.key_or_group
        first = key.split("@")[0].split(".")[0]  # mappo.lr=-1: mappo (mappo={...} too)
        if first not in ("game", "hydra", "imports", *TOP_LEVEL_TYPES) and (
                "." in key or key not in _groups()):
            schemas = section_schemas() if schemas is None else schemas  # imports marl.configs
            if first in schemas:
                sections.setdefault(first, []).append(o)
        elif key == "llm" and o.package is None:  # llm=hf alone: its preset is checked too
            sections.setdefault("llm", [])
        if o.package is not None or o.input_line.startswith(("+", "~")):
            continue
        values = [v for v in override_values(o) if not (isinstance(v, str) and "${" in v)]
        if key == "game.name":
            names += [v for v in values if isinstance(v, str)]
        elif key in TOP_LEVEL_TYPES:
            for value in values:
                try:
                    check_run_values({key: typed_override(key, value)})
                except ValueError as err:
                    raise CLIError(f"bad config: {err}") from None
                except TypeError:  # a list or a dict: OmegaConf names it
                    continue
    unknown = _unknown_games(names)
    if unknown:
        import games

        games.make(unknown[0])  # raises UnknownGameError listing the registered games
    share = {o.key_or_group: [v for v in override_values(o)
                              if not (isinstance(v, str) and "${" in v)]
             for o in overrides if o.key_or_group in (
                 "num_envs", "runner.rollout_workers", "population.kind", "mappo.net.recurrent",
                 "game.kwargs.continuous_actions")
             and o.package is None and not o.input_line.startswith(("+", "~"))}
    presets = _chosen_presets(overrides) if sections or share else None
    if presets is not None and ("num_envs" in share or "runner.rollout_workers" in share):
        try:  # rollout workers: the learners and copies they take, in the run's words
            check_rollout_share({k: [typed_override(k, v) if k in TOP_LEVEL_TYPES else v
                                     for v in vs] for k, vs in share.items()}, presets)
        except ValueError as err:
            raise CLIError(f"bad config: {err}") from None
    order = list(section_schemas()) if sections else []  # the schema's order
    jobs = [(section, items) for section, found in sorted(
        sections.items(), key=lambda kv: order.index(kv[0])) if presets is not None
            for items in _section_jobs(found)]
    later = []
    with _torch_refused():  # first every check that needs no torch (a good population.* value
        for section, items in jobs:  # before mappo.lr=-1 imported it via the learner registry)
            try:
                check_section_values(items, presets, section)
            except _NeedsTorch:
                later.append((section, items))
            except ValueError as err:
                raise CLIError(f"bad config: {err}") from None
    for section, items in later:  # last: their registry checks import torch
        try:
            check_section_values(items, presets, section)
        except ValueError as err:
            raise CLIError(f"bad config: {err}") from None


class _NeedsTorch(BaseException):
    """An import of torch refused by :func:`_torch_refused` (a BaseException: no library's
    ``except Exception`` or ``except ImportError`` takes it for a missing package)."""


@contextmanager
def _torch_refused() -> Iterator[None]:
    """While inside, importing torch (not loaded yet) raises :class:`_NeedsTorch`; the module
    that imported it is left unloaded, as after any failed import, and loads again later."""
    import importlib.abc

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
            if name == "torch" or name.startswith("torch."):
                raise _NeedsTorch(name)

    finder = Refuse()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def _section_jobs(overrides: Sequence[Any]) -> list[list[tuple[str, Any, str]]]:
    """One section's overrides (``mappo.lr=-1 mappo.net.hidden=[32]``) as each job of the line
    applies them: ``(key, value, input_line)`` in the line's order, once per value of a swept
    key (``-m mappo.lr=0,0.1``). No job where the early check cannot apply them as Hydra does
    (the schema decides, after torch: a false refusal is worse than a late one): two swept
    keys, a range, a key given twice, ``+``/``++``/``~`` lines, an interpolation (``${...}``),
    a package (``@``), the whole section (``mappo={...}``)."""
    from hydra.core.override_parser.types import ValueType

    keys = [o.key_or_group for o in overrides]
    swept = [o for o in overrides if o.value_type != ValueType.ELEMENT]
    if len(set(keys)) < len(keys) or len(swept) > 1 or any(
            o.package is not None or o.input_line.startswith(("+", "~")) or
            "${" in o.input_line or "." not in o.key_or_group for o in overrides) or any(
            o.value_type not in (ValueType.CHOICE_SWEEP, ValueType.SIMPLE_CHOICE_SWEEP)
            for o in swept):
        return []
    values = list(swept[0].value().list) if swept else [None]
    return [[(o.key_or_group, value if o in swept else o.value(), o.input_line)
             for o in overrides] for value in values]


def _unknown_games(names: Sequence[str]) -> list[str]:
    """``names`` that are neither an adapter's prefix nor registered (by the shipped games,
    installed packages, or the command line's ``imports``, imported before)."""
    from games.registry import PREFIXES, registered

    names = [n for n in names if not n.startswith(PREFIXES)]
    if not names:
        return []
    known = registered()
    return [n for n in names if n not in known]


# ------------------------------------------------------------------------ the config
def register_schema() -> None:
    """Store the schema ``configs/config.yaml`` composes over (its ``defaults: - schema``)."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from populations.config_checks import writable
    from populations.experiment import ExperimentConfig

    schema = writable(OmegaConf.structured(ExperimentConfig))
    # open while presets merge, for a learner of the user's own (its section my_algo: {...}
    # in a preset): populations.learner_sections types it and refuses a key no registered
    # learner names; the sections stay closed by their types. Hydra closes the root before
    # the command line applies: a key the schema lacks, typed, still needs a "+".
    OmegaConf.set_struct(schema, False)
    # a game's keyword arguments are open: game.kwargs.num_cards=4 needs no "+"
    OmegaConf.set_struct(schema.game.kwargs, False)
    ConfigStore.instance().store(name="schema", node=schema)


def to_experiment(cfg: DictConfig) -> ExperimentConfig:
    """The typed experiment of a composed config (without its ``hydra`` node); a value a
    section refuses is reported by its dotted path (``mappo.net.init='x' unknown; ...``)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from populations.config_paths import refused_message
    from populations.experiment import ExperimentConfig

    try:
        exp = OmegaConf.to_object(cfg)
    except dataclasses.FrozenInstanceError:  # +mappo.lrr=1 added a key the schema lacks
        raise CLIError(f"bad config: {_added_key(cfg) or _ADDED}") from None
    except (ValueError, TypeError, OmegaConfBaseException) as err:  # named by its dotted path
        raise CLIError(f"bad config: {refused_message(cfg, err, one_line)}") from None
    added = _added_key(cfg, top=False)  # +population.foo=1: a mutable section took it silently
    if added:
        raise CLIError(f"bad config: {added}")
    assert isinstance(exp, ExperimentConfig)
    return exp


_ADDED = "a key the schema does not have was added (check '+' overrides)"


def _added_key(cfg: DictConfig, path: str = "", top: bool = True) -> str:
    """``mappo.lrr: Key 'lrr' not in 'MAPPOConfig'; nearest: mappo.lr``: the first key of
    ``cfg`` its node's dataclass lacks (added by a ``+``/``++`` override; the sections are
    closed), as an unknown key is named elsewhere; ``""`` if none. ``top=False``
    leaves out the top level's own keys (a learner of the user's own: learner_sections)."""
    from omegaconf import DictConfig, OmegaConf

    from populations.config_checks import nearest_keys

    cls = OmegaConf.get_type(cfg)
    names = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) \
        and top else None
    for key in cfg:
        full = f"{path}.{key}" if path else str(key)
        if names is not None and key not in names:
            return (f"{full}: Key '{key}' not in '{cls.__name__}' (a '+' cannot add keys to "
                    f"the schema); {nearest_keys(str(key), names, path)}")
        child = cfg._get_node(key)
        if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
            found = _added_key(child, full)
            if found:
                return found
    return ""


def prepare(cfg: DictConfig, overrides: Sequence[str], check: bool = True,
            hydra: DictConfig | None = None) -> ExperimentConfig:
    """Import the user's modules, settle the game's arguments, validate (``check``: build the
    game too): the experiment to run, or a :class:`CLIError` / game error. ``hydra``: the
    run's Hydra node (default: Hydra's, when it is set), which says where a refused value of
    the user's own preset came from."""
    import_user_modules(list(cfg.get("imports") or []))
    name = cfg.get("game", {}).get("name")
    import_user_modules(game_modules(name), f"game.name={name}")
    replace_game_kwargs(cfg, overrides)
    try:
        exp = to_experiment(cfg)
    except CLIError as err:  # a value of the user's own preset: name its file
        raise CLIError(_in_user_file(str(err), cfg, hydra)) from None
    if check:
        from populations.experiment import check_experiment

        check_experiment(exp)  # unknown game, bad game arguments, an algo that cannot play it
    return exp


def _in_user_file(message: str, cfg: DictConfig, hydra: DictConfig | None) -> str:
    """``bad config: <key>=<value>; ...`` with the file of the user's own config folder that
    set the value, as ``bad config: myconfigs/algo/my_algo.yaml: mappo.lr=-1.0; ...``
    (:func:`populations.config_paths.user_file_of`); ``message`` as it is otherwise."""
    from populations.config_paths import user_file_of

    head = "bad config: "
    if not message.startswith(head):
        return message
    if hydra is None:
        from hydra.core.hydra_config import HydraConfig

        hydra = HydraConfig.get() if HydraConfig.initialized() else None
    try:
        file = user_file_of(message[len(head):], cfg, hydra) if hydra is not None else None
    except Exception:  # noqa: BLE001 - the refusal stands without its file
        file = None
    return message if file is None else f"{head}{file}: {message[len(head):]}"


class ConfigCheck(Callback):
    """Hydra callback (``configs/config.yaml``): validates the composed config before Hydra
    makes the run folder, so a config mistake leaves nothing behind."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        import copy

        from omegaconf import open_dict

        task = copy.deepcopy(config)
        with open_dict(task):
            del task["hydra"]
        _BEFORE.clear()
        with reported(TRAIN):  # before Hydra makes the folder: was it there (_before)?
            _record_before(Path(str(config.hydra.run.dir)))
        with reported(TRAIN), _named_log_lines():  # Hydra turns a callback's exception
            # into a warning: exit here
            prepare(task, list(config.hydra.overrides.task), hydra=config.hydra)
            if task.get("resume") and not task.get("resume_override"):
                _refuse_resume_without_folder(config)


    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _FAILED_JOBS.clear()  # keep_going's lists, per sweep (tests run several in a process)
        _SWEEP_JOBS.clear()
        _JOB_OVERRIDES.clear()
        _SWEPT.clear()  # populations.sweeps' set (loggers reads it there)
        _SWEPT.update(swept_keys(list(config.hydra.overrides.task)))
        folder = None if folder_given(config, "hydra.sweep.dir") else sweep_folder(config)
        _BEFORE.clear()
        with reported(TRAIN):  # before Hydra makes the folders: were they there (_before)?
            _record_before(folder or Path(str(config.hydra.sweep.dir)), depth=1)
        if config.get("resume") is True and not config.get("resume_override"):
            with reported(TRAIN):
                _refuse_resume_without_folder(config, "hydra.sweep.dir", folder)
        if folder is not None:
            pin_sweep_folder(config, folder)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from populations.sweep_summary import JobResult, overrides_of, print_summary

        sweep_dir = Path(str(config.hydra.sweep.dir))
        # one table over the sweep's jobs, finished before this command too (a resume)
        try:
            print_summary(sweep_dir, removed=[
                JobResult(folder, n, overrides_of(_JOB_OVERRIDES.get(n, ())), "failed",
                          error="failed before its first checkpoint: its folder was removed")
                for n, folder in _FAILED_JOBS if not folder.is_dir()])
        except Exception as err:  # noqa: BLE001 - the jobs ran: say so, and how they ended
            log.warning("no summary of the sweep's jobs: %s (python -m "
                        "populations.sweep_summary %s)", one_line(err), shlex.quote(str(sweep_dir)))
        if _FAILED_JOBS:  # keep_going=true: the jobs ran; the failed ones in one line, exit 2
            fail(TRAIN, _failed_jobs_line(sweep_dir))


_FAILED_JOBS: list[tuple[int, Path]] = []
"""``(job number, run folder)`` of each job of this process's sweep that failed while
``keep_going=true`` let the sweep go on (:func:`run_folder_guard`)."""
_SWEEP_JOBS: list[int] = []
"""The job numbers of this process's sweep that started."""
_JOB_OVERRIDES: dict[int, list[str]] = {}
"""Each started job's overrides (a failed job's folder may be gone: the summary names them)."""


def _failed_jobs_line(sweep_dir: Path) -> str:
    """The line that ends a sweep whose jobs ``_FAILED_JOBS`` failed under ``keep_going``:
    which (numbers and folders, as their own lines said why), how many jobs ran, and the
    command that resumes the sweep (finished jobs say nothing to do; a failed job with
    checkpoints goes on from its last one, one without starts again)."""
    listed = ", ".join(f"job {n} ({folder}{'' if folder.is_dir() else ', removed: no checkpoint'})"
                       for n, folder in _FAILED_JOBS)
    others = "; the others finished" if len(_FAILED_JOBS) < len(_SWEEP_JOBS) else ""
    return (f"{len(_FAILED_JOBS)} of {len(_SWEEP_JOBS)} sweep jobs failed: {listed} (each "
            f"said why above){others}. Once the cause is fixed, the sweep resumes "
            f"with: "
            f"{sweep_resume_command(sweep_dir, _typed())}")


def _refuse_resume_without_folder(config: DictConfig, key: str = "hydra.run.dir",
                                  folder: Path | None = None) -> None:
    """``resume=true`` without ``hydra.run.dir`` (a sweep's ``hydra.sweep.dir``): Hydra names
    a new folder after the clock, which holds no run, so such a resume could never go on (it
    made that folder, said 'check the folder name' and removed it). Refused before the folder
    is made, naming the newest run (sweep) beside it as the folder to give. A folder of the
    user's own config (a fixed ``hydra.run.dir``) that holds a run resumes as before.
    ``folder``: the one the run (sweep) would go to, when not the config's own."""
    from populations.run_folder import holds_run

    if folder_given(config, key):
        return  # a folder given: run_folder's own check names it if it holds no run
    sweep = key == "hydra.sweep.dir"
    run_dir = folder or Path(str(config.hydra.sweep.dir if sweep else config.hydra.run.dir))

    def held(folder: Path) -> bool:
        return sweep_started(folder) if sweep else holds_run(folder)

    if run_dir.is_dir() and held(run_dir):
        return
    parent = run_dir.parent
    runs = sorted(p.name for p in parent.iterdir() if p.is_dir() and held(p)) \
        if parent.is_dir() else []
    what = "sweep" if sweep else "run"
    where = (f"the newest {what} there: {run_dir_override(parent / runs[-1], key)}" if runs
             else f"{parent} holds no {what} yet (start one without resume=true)")
    raise CLIError(f"resume=true needs the folder of the {what} to resume, {key}=<folder> "
                   f"(without it the {what} would go to a new folder, {run_dir}); {where}")


@contextmanager
def _named_log_lines() -> Iterator[None]:
    """Before the run's logging is set up, Hydra's own formatter labels every line
    ``[HYDRA]``: the check's lines ('enumerated openspiel/kuhn_poker: 58 histories...') read as
    Hydra's. They are formatted as the run's lines are (Hydra's job_logging default)."""
    root = logging.getLogger()
    saved = [(h, h.formatter) for h in root.handlers]
    named = logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    for handler, _ in saved:
        handler.setFormatter(named)
    try:
        yield
    finally:
        for handler, formatter in saved:
            handler.setFormatter(formatter)


def unused_overrides(exp: ExperimentConfig, overrides: Sequence[str]) -> list[str]:
    """Warnings for command-line settings this run does not read: ``frames=`` sizes a
    single-learner run only (a league trained 20k frames per member and generation after
    ``frames=1000``, silently), and learner settings no learner of the run reads
    (:func:`~populations.learner_sections.unread_settings`)."""
    from populations.learner_sections import unread_settings

    keys = {o.split("=", 1)[0].lstrip("+") for o in overrides if "=" in o}
    kind = exp.population.kind
    unread = unread_settings(exp, overrides)  # encoder=gnn beside members [qmix, maddpg]
    if "runner.rollout_workers" in keys and kind != "none" and not _llm_member(exp):
        unread.append(f"runner.rollout_workers={exp.runner.rollout_workers} is not read with "
                      f"population.kind={kind}: rollout workers play a single MAPPO/IPPO "
                      "run's rollouts (population=none) and an LLM team's; this run trains "
                      "without them")
    unread += _unread_population_keys(exp, overrides)
    if kind == "none" and exp.runner.kind == "ray" and not exp.runner.rollout_workers and \
            not _plays_own_episodes(exp.algo):  # it trained in this process, unsaid
        others = [o.lstrip("+") for o in overrides if o.lstrip("+").startswith("runner.")]
        also = f" ({', '.join(others)} unused too)" if others else ""
        unread.append(
            f"runner=ray is not used by a population=none run without runner.rollout_workers: "
            f"{exp.algo} trains and evaluates in this process{also}; runner.rollout_workers=N "
            "plays a MAPPO/IPPO run's rollouts on N Ray actors, and leagues (population="
            "self_play, fsp, pfsp) and PSRO play their matches on them")
    if "frames" not in keys or kind == "none":
        return unread
    pop = exp.population
    where = (f"population.frames_per_generation={pop.frames_per_generation} per member and "
             "generation" if kind == "league" else
             f"population.oracle_frames={pop.oracle_frames} per RL best response")
    return [f"frames={exp.frames} is not used with population.kind={kind} (it sizes "
            f"population=none runs); this run trains {where}", *unread]


READERS = {"iterations": ("psro",), "oracle": ("psro",), "oracle_frames": ("psro",),
           "psro": ("psro",), "keep_checkpoints": ("league", "none")}
"""The population kinds that read a ``population.*`` setting, where not a league alone
(``kind``: all). ``keep_checkpoints`` sizes a league's and a single run's checkpoints; PSRO
keeps none (it resumes from its database)."""


def _unread_population_keys(exp: ExperimentConfig, overrides: Sequence[str]) -> list[str]:
    """A warning per ``population.<key>=`` on the command line that this run's kind does not
    read, naming the kinds that do (:data:`READERS`): ``population.generations=4`` in a
    single run (``population=none``) was ignored without a word, as ``population.iterations=``
    in a league and ``population.generations=`` in PSRO."""
    kind = exp.population.kind
    notes = []
    for o in overrides:
        key = o.split("=", 1)[0].lstrip("+")
        if "=" not in o or not key.startswith("population.") or key == "population.kind":
            continue
        readers = READERS.get(key.split(".")[1], ("league",))
        if kind not in readers:
            presets = [f"population={p}" for r in readers for p in _population_presets().get(r, [])]
            how = f" ({', '.join(presets)})" if presets else ""
            who = " or ".join(f"population.kind={r}" for r in readers)
            notes.append(f"{o.lstrip('+')} is not used with population.kind={kind}: only "
                         f"{who} reads it{how}")
    return notes


@functools.cache
def _population_presets() -> dict[str, list[str]]:
    """Population kind -> the shipped ``population=`` presets of that kind."""
    import yaml

    out: dict[str, list[str]] = {}
    for path in sorted((_configs_root() / "population").glob("*.yaml")):
        try:
            kind = (yaml.safe_load(path.read_text()) or {}).get("population", {}).get("kind")
        except (OSError, yaml.YAMLError, AttributeError):
            continue
        if isinstance(kind, str):
            out.setdefault(kind, []).append(path.stem)
    return out


def _plays_own_episodes(algo: str) -> bool:
    """Whether the learner ``algo`` plays its own episodes (an LLM team: on Ray rollout
    workers with ``runner=ray``)."""
    from marl import registry

    entry = registry.entries().get(algo)
    return entry is not None and entry.capabilities.own_rollouts


def _llm_member(exp: ExperimentConfig) -> bool:
    """Whether a learner of this league plays its own episodes (an LLM team)."""
    from marl import registry
    from populations.member_specs import parse_members

    algos = [m.algo for m in parse_members(exp.population.members or [exp.algo])]
    entries = registry.entries()
    return exp.population.kind == "league" and any(
        a in entries and entries[a].capabilities.own_rollouts for a in algos)


# ------------------------------------------------------------------------ run folders
_BEFORE: dict[str, frozenset[str] | None] = {}
"""What the folders this process's run or sweep goes to held before Hydra made them
(:class:`ConfigCheck` records them first): each absolute path's entry names, ``None`` where
it did not exist. A sweep's folder is recorded with each folder in it (its jobs')."""
_START_CWD: list[Path] = []
"""The working folder this command started in (never removed, nor a folder above it)."""


def _record_before(folder: Path, depth: int = 0) -> None:
    """Record in :data:`_BEFORE` what ``folder`` (and the folders in it, ``depth`` levels
    down) holds now, before Hydra makes it."""
    path = os.path.abspath(folder)
    try:
        entries = frozenset(p.name for p in Path(path).iterdir())
    except FileNotFoundError:
        _BEFORE[path] = None
        return
    except OSError:  # not a folder, unreadable: left unrecorded (nothing of it is removed)
        return
    _BEFORE[path] = entries
    if depth > 0:
        for name in entries:
            if (Path(path) / name).is_dir():
                _record_before(Path(path) / name, depth - 1)


def _before(run_dir: Path) -> tuple[bool, frozenset[str] | None]:
    """Whether this command made ``run_dir`` (it did not exist before Hydra made it), and
    else what it held before (``None``: not known, as when a config of the user's own runs
    without :class:`ConfigCheck`; nothing of such a folder is removed)."""
    path = Path(os.path.abspath(run_dir))
    for folder in (path, *path.parents):
        if str(folder) in _BEFORE:
            held = _BEFORE[str(folder)]
            if folder == path:
                return held is None, held
            # an ancestor recorded: the folder is new when that one or its next part was
            part = path.relative_to(folder).parts[0]
            return held is None or part not in held, None
    return False, None


def _not_started(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds only what Hydra writes before the task starts (``.hydra``,
    ``*.log``): a sweep job an interrupted sweep never reached. Not the same as made by this
    command (:func:`_before`): a resumed sweep's job folders existed before it."""
    return not run_dir.is_dir() or all(p.name == ".hydra" or p.suffix == ".log"
                                       for p in run_dir.iterdir())


def _below_start(run_dir: Path) -> bool:
    """Whether ``run_dir`` is neither the working folder this command started in nor a
    folder above it (those are never removed)."""
    cwd = (_START_CWD[-1] if _START_CWD else Path.cwd()).resolve()
    folder = run_dir.resolve()
    return folder != cwd and folder not in cwd.parents


def _discard_new(run_dir: Path, sweep_dir: Path | None) -> None:
    """Remove a run folder this process created (:func:`discard_run_dir`), and its sweep's
    folder when no job is left in it."""
    if discard_run_dir(run_dir) and sweep_dir is not None and sweep_dir.is_dir() and \
            {p.name for p in sweep_dir.iterdir()} <= {"multirun.yaml"}:
        discard_run_dir(sweep_dir)


def discard_run_dir(run_dir: Path, root: Path | None = None) -> bool:
    """Remove a run folder this process created if it holds nothing worth keeping (no
    checkpoint, no PSRO iteration recorded: :func:`_psro_recorded`), and its parents left
    empty below ``root`` (the working directory)."""
    if not run_dir.is_dir() or _worth_keeping(run_dir) or not _below_start(run_dir):
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    root = (root or Path.cwd()).resolve()
    parent = run_dir.resolve().parent
    while parent != root and root in parent.parents:
        try:
            parent.rmdir()  # only when empty
        except OSError:
            break
        parent = parent.parent
    return True


def _worth_keeping(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a checkpoint or a recorded PSRO iteration."""
    ckpt = run_dir / "checkpoints"
    return (ckpt.is_dir() and any(ckpt.iterdir())) or _psro_recorded(run_dir)


def _discard_written(run_dir: Path, before: frozenset[str] | None) -> None:
    """In a folder that existed before this command (it held ``before``), remove what the
    command wrote there (Hydra's ``.hydra`` and log, a run's first files) when it holds
    nothing worth keeping (:func:`discard_run_dir`'s test); the folder and what it held stay.
    ``before`` None (not known): nothing is removed."""
    if before is None or not run_dir.is_dir() or _worth_keeping(run_dir):
        return
    for path in run_dir.iterdir():
        if path.name not in before:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def _psro_recorded(run_dir: Path) -> bool:
    """Whether ``<run>/league.db`` records a PSRO iteration: a PSRO run keeps no checkpoint,
    it resumes after the last iteration its database records (so that database, its
    snapshots and settings are worth keeping). A database that cannot be read is kept too:
    nothing is removed that might hold a run."""
    import sqlite3

    from populations.db import LeagueDB, LeagueDBError

    path = run_dir / "league.db"
    if not path.is_file():
        return False
    try:
        db = LeagueDB(path, readonly=True)  # removes the -wal/-shm it made on close
        try:
            row = db.conn.execute("SELECT 1 FROM psro_iterations LIMIT 1").fetchone()
        finally:
            db.close()
    except (LeagueDBError, sqlite3.Error, OSError) as err:  # no such table: nothing recorded
        return "no such table" not in str(err)
    return row is not None


_CONFIG_FLAGS = (("config_path", "--config-path"), ("config_dir", "--config-dir"),
                 ("config_name", "--config-name"))


def config_flags(argv: Sequence[str]) -> list[str]:
    """What in ``argv`` (a ``selfplay-train`` command line as typed) chooses which config
    composes: Hydra's ``--config-path``/``-cp``, ``--config-dir``/``-cd`` and
    ``--config-name``/``-cn`` (by their long names, each followed by its value) and the
    ``hydra.searchpath`` overrides, as typed. Hydra keeps them out of the task's overrides; a
    resume command without them composes the packaged config (refused as 'other settings',
    or an option of the other config dir not found). Empty when Hydra cannot parse ``argv``
    (it reports that itself)."""
    # private, no public equivalent: Hydra's flag parser (as check_command_line uses it)
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()

    def refuse(message: str) -> NoReturn:
        raise _Unparsed(message)

    parser.error = refuse  # type: ignore[method-assign]
    try:
        parsed = parser.parse_args(list(argv))
    except _Unparsed:
        return []
    flags = [word for attr, flag in _CONFIG_FLAGS if getattr(parsed, attr) is not None
             for word in (flag, getattr(parsed, attr))]
    return flags + [o for o in parsed.overrides
                    if o.split("=", 1)[0].lstrip("+~").startswith("hydra.searchpath")]


@contextmanager
def run_folder_guard(prog: str, run_dir: Path, created: bool,
                     sweep_dir: Path | None = None, job: int | None = None,
                     overrides: Sequence[str] | None = None,
                     flags: Sequence[str] = (), resumed: bool = False,
                     keep_going: bool = False,
                     before: frozenset[str] | None = None) -> Iterator[None]:
    """Report user errors in one line; a folder ``created`` by this run and holding nothing
    to resume (no checkpoint, no PSRO iteration: :func:`discard_run_dir`) is removed first
    (and a sweep's folder left with no job in it), so a failed start leaves nothing
    half-made behind. Any other error (a bug) removes such a folder too, and keeps its
    traceback. In a sweep (job number ``job``) the line says
    that the jobs after it did not run, and how the sweep goes on; a single run that failed
    while running and keeps checkpoints says how it resumes. Ctrl-C's line names the command
    that resumes the run, with the run's ``overrides`` and config ``flags``
    (:func:`resume_command`). ``resumed``: the command line gave ``resume=true``.
    ``keep_going`` (a sweep's ``keep_going=true``): a failed job's line says the sweep goes on,
    and the guard returns (Hydra runs the next job); the sweep's end lists the failed jobs
    (:func:`_failed_jobs_line`). Ctrl-C still ends the sweep. A folder that existed before
    this command (holding ``before``) stays: only what the command wrote in it goes
    (:func:`_discard_written`)."""
    try:
        yield
    except KeyboardInterrupt:  # Ctrl-C: no traceback; say how to go on (exit 130, as a shell)
        interrupted(prog, lambda: _how_to_go_on(run_dir, created, sweep_dir, overrides, flags,
                                                before))
    except Exception as err:
        if not isinstance(err, user_errors()) and too_large(err) is None:
            # a bug: its traceback (Hydra's report). The folder goes as after a user error
            # (unless it holds a checkpoint or PSRO iterations): one kept would refuse the
            # same command again ('already holds a run') while holding nothing to resume
            if created:
                _discard_new(run_dir, sweep_dir)
            else:
                _discard_written(run_dir, before)
            raise
        going_on = keep_going and sweep_dir is not None and job is not None
        if created:  # the sweep's folder stays for the next jobs (and multirun.yaml in it)
            discard_run_dir(run_dir) if going_on else _discard_new(run_dir, sweep_dir)
        else:
            _discard_written(run_dir, before)
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        line = too_large_line(err, overrides) if too_large(err) is not None else one_line(err)
        if going_on:
            say(prog, f"{line} (sweep job {job}; keep_going: the sweep goes on with "
                      f"its next job){_resumes_after(err, run_dir, overrides, flags)}")
            _FAILED_JOBS.append((job, run_dir))
            return
        if sweep_dir is not None and job is not None:
            fail(prog, line + sweep_stopped(sweep_dir, job, run_dir, created, resumed,
                                             _typed()))
        fail(prog, line + _resumes_after(err, run_dir, overrides, flags))


def _resumes_after(err: BaseException, run_dir: Path, overrides: Sequence[str] | None,
                   flags: Sequence[str]) -> str:
    """What a single run's error line adds when the run failed while running (a NaN, a game
    error) and keeps checkpoints: the command that resumes it from the last one (it does: the
    error stopped training before the weights changed), as the summary and Ctrl-C name it.
    Nothing for refusals of the command line, the folder or its checkpoints."""
    refusals = [CLIError, *(getattr(sys.modules.get(module), name, CLIError) for module, name in (
        ("populations.run_folder", "RunFolderError"), ("marl.core", "CheckpointError"),
        ("hydra.errors", "HydraException"), ("omegaconf.errors", "OmegaConfBaseException")))]
    ckpt = run_dir / "checkpoints"
    if _damaged_database(err):  # a resume needs the same database: its command would fail so
        return (f"; {run_dir / 'league.db'} is damaged (truncated or overwritten): restore it "
                "from a copy, or start a new run in another folder")
    if isinstance(err, tuple(refusals)):
        return ""
    if ckpt.is_dir() and any(p.suffix == ".pt" for p in ckpt.iterdir()):
        kept = "keeps its checkpoints: once the cause is fixed, it resumes from the last one"
    elif _psro_recorded(run_dir):  # PSRO keeps no checkpoint: it goes on from league.db
        kept = ("keeps the PSRO iterations league.db records: once the cause is fixed, it "
                "resumes after the last one")
    else:
        return ""
    settings = (" (other settings, such as a lower learning rate, also need "
                "resume_override=true)") if type(err).__name__ == "NonFiniteError" else ""
    return f"; {run_dir} {kept} with: {resume_command(run_dir, overrides, flags)}{settings}"


def _damaged_database(err: BaseException) -> bool:
    """Whether ``err`` says SQLite found the league database damaged (a truncated file: "database
    disk image is malformed"; one overwritten: "file is not a database"), as opened
    (:class:`populations.db.LeagueDBError`) or read later (``sqlite3.DatabaseError``)."""
    import sqlite3

    db_error = getattr(sys.modules.get("populations.db"), "LeagueDBError", None)
    kinds = (sqlite3.DatabaseError, *([db_error] if db_error is not None else []))
    return isinstance(err, kinds) and re.search(r"malformed|not a database", str(err)) is not None


def _how_to_go_on(run_dir: Path, created: bool, sweep_dir: Path | None,
                  overrides: Sequence[str] | None = None, flags: Sequence[str] = (),
                  before: frozenset[str] | None = None) -> str:
    """Ctrl-C's message: the command that resumes the run or sweep, or (stopped before the
    run started) "start again", removing the folder ``created`` for it (in a folder that
    existed, holding ``before``: what the command wrote there)."""
    # a folder holding a run resumes (from its last checkpoint, or from the start when it has
    # none yet: PSRO keeps none, it goes on from league.db); the same command again would be
    # refused ("already holds a run")
    if sweep_dir is not None and sweep_dir.is_dir() and sweep_started(sweep_dir):
        return f"interrupted; the sweep resumes with: " \
            f"{sweep_resume_command(sweep_dir, _typed())}"
    from populations.run_folder import holds_run

    if holds_run(run_dir):  # what resume=true accepts (the same test)
        return f"interrupted; {run_dir} resumes with: " \
            f"{resume_command(run_dir, overrides, flags)}"
    if created:  # stopped before the run started: nothing recorded, nothing kept
        _discard_new(run_dir, sweep_dir)
    else:
        _discard_written(run_dir, before)
    return "interrupted before the run started (start again)"


def print_summary(s: RunSummary, resume: str | None = None) -> None:
    """The end-of-run summary: folders, files, the table (``resume``: how the run is
    resumed, default ``selfplay-train resume=true hydra.run.dir=...``: :func:`resume_command`
    without the run's overrides)."""
    print(f"\nrun folder : {s.run_dir}")
    print(f"database   : {s.database}")
    print(f"snapshots  : {s.snapshots}")
    if s.logger_files is not None:
        print(f"metrics    : {s.logger_files}")
    if (s.run_dir / "checkpoints").is_dir():
        resume = resume or resume_command(s.run_dir)
        print(f"checkpoints: {s.run_dir / 'checkpoints'} ({resume})")
    if s.table:
        cols, rows = list(s.table[0]), s.table[:20]
        # a single run whose episodes all outlast its frames has no return: say so
        empty = {"final_return": "no episode ended", "eval_return": "not recorded"}

        def blank(row: dict[str, Any], col: str) -> str:  # eval_ci95: a t interval needs 2
            if col == "eval_ci95":
                return "not recorded" if row.get("eval_return") is None else "under 2 episodes"
            return empty.get(col, "None")

        # a float's + 0.0 turns -0.0 (a return rounded from -0.0001) into 0.0
        cells = [[blank(row, c) if row[c] is None else
                  str(row[c] + 0.0 if isinstance(row[c], float) else row[c]) for c in cols]
                 for row in rows]
        width = [max(12, len(c), *(len(r[k]) for r in cells)) for k, c in enumerate(cols)]
        print("\n" + "  ".join(f"{c:>{w}}" for c, w in zip(cols, width, strict=True)))
        for r in cells:  # long member names (psro-player_0-12) kept the columns aligned
            print("  ".join(f"{v:>{w}}" for v, w in zip(r, width, strict=True)))
        if len(s.table) > len(rows):  # kuhn_psro's 26 members: 6 were left out unsaid
            print(f"... {len(s.table) - len(rows)} more rows: every one on the dashboard "
                  f"(below) and in {s.database}")
        # a single run's two returns side by side (populations.experiment._single_row,
        # _llm_row): which is which (VDN's exploring 0.14 was read as broken beside its
        # greedy snapshot's 0.66, shown nowhere)
        legend = {"final_return": "mean return of the last (up to) 50 training episodes "
                                  "(exploring, or sampling for on-policy learners)",
                  "team_return": "mean team return of the last GRPO iteration's episodes",
                  "eval_return": "mean return over the evaluation episodes of the snapshot "
                                 "(eval_episodes; greedy for off-policy learners)",
                  "eval_ci95": "half-width of the 95 % confidence interval of eval_return "
                               "(Student's t over the evaluation episodes; the evaluation's "
                               "noise, not the spread between seeds)"}
        if "eval_return" in cols:
            print("\n" + "\n".join(f"{c}: {legend[c]}" for c in cols if c in legend))
        if {"member", "version", "mu", "pairs"} <= set(cols) and "seat" not in cols:
            _print_members(s.database)  # a league's: every snapshot above, by mu
    print(f"\ndashboard  : selfplay-dashboard {shlex.quote(str(s.run_dir))}")


def _print_members(database: Path) -> None:
    """Under a league's closing table (every snapshot by mu, the members interleaved: an
    untrained ``v0`` may top it, and no win rate), one row per member: its newest rated
    snapshot, that snapshot's mu, and its win rate with the 95 % Wilson interval, as the
    dashboard computes them (:func:`populations.dashboard.queries.league_table`). Nothing
    when the database cannot be read (the run is over: its table was printed)."""
    from populations.dashboard.queries import league_table
    from populations.db import LeagueDB

    try:
        db = LeagueDB(database, readonly=True)
        try:
            row = db.conn.execute("SELECT id FROM runs ORDER BY id DESC LIMIT 1").fetchone()
            members = league_table(db, int(row[0])) if row is not None else []
        finally:
            db.close()
    except Exception as err:  # noqa: BLE001 - the run is done; its table is out already
        log.debug("no per-member rows from %s: %s", database, one_line(err))
        return
    rows = sorted((m for m in members if m["rated_version"] is not None),
                  key=lambda m: -(m["mu"] if m["mu"] is not None else float("-inf")))
    if not rows:
        return

    def num(x: float | None, digits: int) -> str:
        return "-" if x is None else f"{x:.{digits}f}"

    cols = ["member", "version", "mu", "win_rate", "95 % interval", "pairs"]
    cells = [[str(m["member"]), str(m["rated_version"]), num(m["mu"], 2),
              num(m["win_rate"], 2), "-" if m["win_rate_lo"] is None else
              f"[{m['win_rate_lo']:.2f}, {m['win_rate_hi']:.2f}]", str(m["win_pairs"])]
             for m in rows]
    width = [max(12, len(c), *(len(r[k]) for r in cells)) for k, c in enumerate(cols)]
    print("\neach member's newest rated snapshot (best mu first): its mu, and its win rate "
          "over the role-swapped pairs it played (a draw counts 1/2) with the 95 % Wilson "
          "interval, as the dashboard shows them:")
    for r in [cols, *cells]:
        print("  ".join(f"{v:>{w}}" for v, w in zip(r, width, strict=True)))


# ---------------------------------------------------------------------- selfplay-train
def _train_task(cfg: DictConfig) -> None:
    """Hydra's task: one experiment in the run folder Hydra made."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from populations.experiment import _plain, run_experiment
    from populations.run_folder import HYDRA_WORDS, spelled

    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
    sweep_dir = Path(hc.sweep.dir) if hc.mode == RunMode.MULTIRUN else None
    created, before = _before(run_dir)
    overrides, flags = list(hc.overrides.task), config_flags(_TYPED)
    summary = None
    if sweep_dir is not None:
        _SWEEP_JOBS.append(hc.job.num)
        _JOB_OVERRIDES[hc.job.num] = overrides
    with run_folder_guard(TRAIN, run_dir, created=created, sweep_dir=sweep_dir,
                          job=hc.job.num if sweep_dir is not None else None,
                          overrides=overrides, flags=flags, resumed=cfg.get("resume") is True,
                          keep_going=cfg.get("keep_going") is True, before=before), \
            spelled(HYDRA_WORDS):  # messages say resume_override=true, as typed here
        exp = prepare(cfg, overrides, check=False)  # run_experiment checks
        if sweep_dir is not None and not run_dir.name.startswith(f"{hc.job.num}_"):
            log.info("job %d of the sweep resumes in its folder %s (numbered by the sweep "
                     "that made it)", hc.job.num, run_dir.name)
        if exp.resume and _not_started(run_dir) and sweep_dir is not None and \
                sweep_started(sweep_dir):
            refuse_renamed_job(sweep_dir, hc.job.num, run_dir, _plain(exp), overrides, flags)
            # a job the interrupted sweep never reached (a mistyped sweep folder still fails)
            log.info("resume=true: job %d of the sweep had not started; starting it",
                     hc.job.num)
            from populations.learner_sections import replaced  # keeps +my_algo.* sections

            exp = replaced(exp, resume=False)
        log.info("experiment %s in %s", exp.experiment, run_dir)
        if exp.keep_going and sweep_dir is None:  # ignored: nothing to go on to
            log.warning("keep_going=true is for sweeps (-m): a single run stops where it fails")
        for note in unused_overrides(exp, overrides):
            log.warning(note)
        with recorded_run_settings(exp, run_dir):
            summary = run_experiment(exp, run_dir)
    if summary is not None:  # None: a failed job of a keep_going sweep (its line is out)
        print_summary(summary, resume_command(run_dir, overrides, flags))


@contextmanager
def recorded_run_settings(exp: ExperimentConfig, run_dir: Path) -> Iterator[None]:
    """A single or PSRO run's resume (run in the block) checked against the settings its
    ``league.db`` recorded (``runs.config``) when its ``settings.json`` was deleted, and
    ``runs.config`` kept to the settings in force.

    Such a folder was taken for a run from before settings were recorded: any settings
    resumed silently (a league checks what its database recorded itself, ``League``). The
    recorded ones are written back as ``settings.json`` and the resume is checked as any other
    (:func:`~populations.run_folder.resume_settings`: refused in one line, unless
    ``resume_override``; a finished single run refuses any change); once accepted, the
    folder's ``settings.json`` and ``runs.config`` both hold the settings in force (after a
    ``resume_override``, ``runs.config`` kept the settings the run was created with). The
    folder's lock is held from the check to the run's end."""
    from marl.fileio import atomic_write
    from populations.run_folder import SETTINGS_NAME, RunLock, resume_settings

    db_path, path = run_dir / "league.db", run_dir / SETTINGS_NAME
    if not exp.resume or exp.population.kind == "league" or not db_path.is_file():
        yield
        return
    import games
    from populations.db import LeagueDB, LeagueDBError
    from populations.experiment import RESUME_MAY_CHANGE, _plain, _single_finished

    single = exp.population.kind == "none"
    if not single:  # what run_experiment records: PSRO's `auto` settings decided
        from populations.psro_run import resolve_auto

        exp = resolve_auto(exp, games.make(exp.game.name, **exp.game.kwargs), announce=False)
    current = _plain(exp)
    with RunLock(run_dir):
        db = LeagueDB(db_path)
        try:
            run_id = db.run_id(exp.experiment)
            try:
                recorded = db.run_config(run_id) if run_id is not None else None
            except LeagueDBError as err:  # damaged: nothing to compare with, as before
                if not path.is_file():
                    log.warning("%s: the resume is compared with no recorded settings", err)
                recorded = None
            restored = bool(recorded) and not path.is_file()
            if restored:
                atomic_write(path, json.dumps(recorded, indent=1, sort_keys=True))
            resume_settings(run_dir, current, True, exp.resume_override, RESUME_MAY_CHANGE,
                            (lambda: _single_finished(run_dir, exp.experiment)) if single
                            else None)
            if restored:  # accepted: the settings of this resume, as a fresh run's
                atomic_write(path, json.dumps(current, indent=1, sort_keys=True))
            in_force = json.loads(path.read_text()) if path.is_file() else None
            if run_id is not None and in_force and in_force != recorded:
                db.set_run_config(run_id, in_force)
        finally:
            db.close()
        yield


def _hydra_app() -> Callable[[], None]:
    import hydra
    import hydra._internal.utils as hydra_utils

    register_resolvers()

    # private, no public equivalent: Hydra has no hook for its composition or argparse
    # errors (callbacks start after composition), so its reporter and parser are wrapped;
    # pyproject pins hydra-core 1.3, whose names these are
    # Hydra reports composition errors (unknown key, group option...) with several lines
    # and exit 1; user errors become one line and exit 2, bugs keep Hydra's traceback
    original = getattr(hydra_utils.run_and_report, "__wrapped__", hydra_utils.run_and_report)

    def run_and_report(func: Callable[[], Any]) -> Any:
        def guarded() -> Any:
            with reported(TRAIN):
                return func()

        return original(guarded)

    run_and_report.__wrapped__ = original  # type: ignore[attr-defined]
    hydra_utils.run_and_report = run_and_report
    hydra_main = sys.modules["hydra.main"]  # its argparse errors too (an unknown flag)
    parser = getattr(hydra_main.get_args_parser, "__wrapped__", hydra_main.get_args_parser)

    def get_args_parser() -> argparse.ArgumentParser:
        p = parser()
        p.error = lambda message: fail(TRAIN, f"{_untyped(message)} (see --help)")  # type: ignore[method-assign]
        return p

    get_args_parser.__wrapped__ = parser  # type: ignore[attr-defined]
    hydra_main.get_args_parser = get_args_parser
    _resolve_hydra_node_in_full_config()
    return hydra.main(version_base=None, config_path="pkg://configs",
                      config_name="config")(_train_task)


def _resolve_hydra_node_in_full_config() -> None:
    """``--cfg hydra --resolve``: Hydra drops the job's keys and then resolves the ``hydra``
    node alone, so ``hydra.run.dir: runs/${experiment}/...`` (the run folder is named after
    the job key ``experiment``) failed with "Interpolation key 'experiment' not found". The
    ``hydra`` node is resolved while the job's keys are still there, then they are dropped."""
    import copy

    from hydra._internal.hydra import Hydra  # private: Hydra.show_cfg is its --cfg printer
    from omegaconf import OmegaConf, flag_override

    show = getattr(Hydra.show_cfg, "__wrapped__", Hydra.show_cfg)
    sanitize = Hydra.get_sanitized_hydra_cfg

    def resolved_hydra_cfg(src_cfg: DictConfig) -> DictConfig:
        cfg = copy.deepcopy(src_cfg)
        with flag_override(cfg.hydra, ["struct", "readonly"], [False, False]):
            OmegaConf.resolve(cfg.hydra)  # its interpolations see the whole config
        return sanitize(cfg)

    def show_cfg(self: Any, config_name: Any, overrides: Any, cfg_type: str, package: Any,
                 resolve: bool = False) -> None:
        if resolve and cfg_type == "hydra":
            self.get_sanitized_hydra_cfg = resolved_hydra_cfg  # this Hydra object only
        show(self, config_name, overrides, cfg_type, package, resolve)

    show_cfg.__wrapped__ = show  # type: ignore[attr-defined]
    Hydra.show_cfg = show_cfg  # type: ignore[method-assign]


def _chosen_presets(overrides: Sequence[Any]) -> Any:
    """What the group options of ``configs/config.yaml``'s defaults list set, as the command
    line and an ``experiment=`` choose them, for the early section checks: merged in the
    defaults list's order with the experiment's own values last, and a command-line option
    beats the experiment's ``override /group: option``, as Hydra composes them. None (the
    schema decides, after torch) where it cannot be read so: a group option swept, appended,
    deleted, packaged or given twice, one with no file in ``configs/`` (a ConfigStore preset
    from ``imports=[...]``), a defaults list other than an experiment's overrides, a file that
    does not load (Hydra reports it)."""
    from hydra.core.override_parser.types import ValueType
    from omegaconf import OmegaConf

    from populations.config_checks import group_preset, section_schemas

    root = _configs_root()
    choices: dict[str, str] = {}
    for o in overrides:
        group = o.key_or_group.split("@")[0]
        if group not in _groups():
            continue
        if o.package is not None or o.input_line.startswith(("+", "~")) or group in choices \
                or o.value_type != ValueType.ELEMENT or not isinstance(o.value(), str):
            return None  # (-m population=fsp,self_play: each job's presets differ)
        choices[group] = o.value()

    def load(group: str, option: str, overrides_of: str = "") -> Any:
        path = root / group / f"{option}.yaml"
        text = path.read_text()  # OSError: no file (a ConfigStore preset)
        header = [line for line in text.splitlines() if line.startswith("#")][:20]
        package = next((line.split("@package", 1)[1].strip() for line in header
                        if "@package" in line), group)
        if package != "_global_":
            if package == group and group in section_schemas():  # llm=hf: the llm section
                return group_preset(root, group, option)
            if package.split(".")[0] in section_schemas():
                raise LookupError(package)
            return OmegaConf.create()
        data = OmegaConf.create(text)
        defaults = OmegaConf.to_container(data.pop("defaults", None) or OmegaConf.create([]))
        for item in defaults if isinstance(defaults, list) else [defaults]:
            name, choice = next(iter(item.items())) if isinstance(item, dict) and \
                len(item) == 1 else (item, None)
            if group == overrides_of and isinstance(name, str) and \
                    name.startswith("override /") and isinstance(choice, str):
                choices.setdefault(name.removeprefix("override /"), choice)  # the line wins
            elif item != "_self_":
                raise LookupError(item)
        return data

    try:
        primary = OmegaConf.to_container(OmegaConf.load(root / "config.yaml").defaults)
        order = [next(iter(item.items())) for item in primary if isinstance(item, dict)]
        experiment = choices.get("experiment", dict(order).get("experiment"))
        body = load("experiment", experiment, "experiment") if experiment else None
        out = OmegaConf.create()
        for group, default in order:
            option = choices.get(group, default)
            if group == "experiment" and body is not None:
                out.merge_with(body)
            elif option is not None:
                out.merge_with(load(group, option))
    except Exception:  # noqa: BLE001 - a ConfigStore preset, a defaults list, bad YAML
        return None
    return out


def _configs_root() -> Path:
    """The shipped ``configs`` package's folder (found without importing it)."""
    spec = importlib.util.find_spec("configs")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def _groups() -> set[str]:
    """The config groups of the shipped configs (their folders)."""
    return {d.name for d in _configs_root().iterdir() if d.is_dir()}


def _config_groups() -> dict[str, list[str]]:
    """Group -> options of the shipped configs, read without importing anything heavy."""
    spec = importlib.util.find_spec("configs")
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    return {d.name: sorted(p.stem for p in d.glob("*.yaml"))
            for d in sorted(root.iterdir()) if d.is_dir() and list(d.glob("*.yaml"))}


HELP = """\
usage: selfplay-train [GROUP=OPTION ...] [KEY=VALUE ...] [-m] [--cfg job] [--hydra-help]

Run one experiment (a sweep with -m) in a new run folder (runs/<experiment>/<time>/).

config groups (configs/):
{groups}
common keys:
  seed=0  frames=60000  num_envs=32  eval_episodes=32  device=cpu|cuda|cuda:N|auto
  game.name=NAME game.kwargs.KEY=V   a game by name, from its own defaults (game.kwargs={{}})
  imports=[mypkg.games]              your modules (importable from here) to import first
  resume=true hydra.run.dir=DIR      continue a run;  checkpoint_every_s=300  progress=false
  population.psro.payoffs=sampled  population.oracle=rl  population.members=[mappo,llm_grpo]

examples:
  selfplay-train experiment=kuhn_psro
  selfplay-train algo=ippo game=kuhn seed=3
  selfplay-train imports=[mygames] game.name=my_game population=self_play
  selfplay-train experiment=kuhn_psro --cfg job      # every key, with its value

Installed packages' entry points (selfplay.games, selfplay.learners, selfplay.meta_solvers,
selfplay.matchmaking_rules, selfplay.loggers) load at start. Errors are one line and exit 2;
HYDRA_FULL_ERROR=1 shows the traceback.
"""


def train_main() -> None:
    """``selfplay-train``: run one experiment (or a sweep with ``-m``)."""
    args = sys.argv[1:]
    if "--help" in args or "-h" in args:  # Hydra's own help copies the config store ~90
        groups = "".join(f"  {g:<11} {', '.join(o)}\n" for g, o in _config_groups().items())
        print(HELP.format(groups=groups), end="")  # times: seconds; this one reads files
        return
    for i, arg in enumerate(args):  # the other CLIs' flag (README's walk: 'unrecognized')
        if arg == "--import" or arg.startswith("--import="):
            module = arg.partition("=")[2] or next(
                (a for a in args[i + 1:i + 2] if "=" not in a and not a.startswith("-")), "MODULE")
            fail(TRAIN, f"{arg}: selfplay-train names your modules as imports=[{module}] "
                        "(--import is selfplay-eval's and python -m populations.league's)")
    _TYPED[:] = args  # the resume hints repeat what was typed, not the added ~game
    _START_CWD[:] = [Path.cwd()]
    sys.argv = [sys.argv[0], *game_overrides(args)]
    from populations.run_folder import sigterm_as_interrupt

    with sigterm_as_interrupt():  # SIGTERM (kill, timeout, SLURM) ends the run as Ctrl-C does
        with reported(TRAIN):
            load_plugins()
            check_command_line(sys.argv[1:])
        try:
            _hydra_app()()
        except KeyboardInterrupt:  # Ctrl-C while Hydra composes, before the run and its guard
            interrupted(TRAIN)


if __name__ == "__main__":  # python -m populations.cli: run the module Hydra's callback
    from populations.cli import train_main as _train_main  # (ConfigCheck) is imported from,

    _train_main()  # so both read one _BEFORE (what the run folders held before Hydra)


def __getattr__(name: str) -> Any:
    """``eval_main`` for a ``selfplay-eval`` script written by an install from before it moved
    to :mod:`populations.eval_cli` (an editable install keeps its old scripts until
    reinstalled: ``from populations.cli import eval_main`` would fail at every call)."""
    if name == "eval_main":
        from populations.eval_cli import eval_main

        return eval_main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
