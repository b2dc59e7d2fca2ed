"""Console entry points: ``selfplay-train`` (a Hydra app) and ``selfplay-eval``.

``selfplay-train`` composes ``configs/config.yaml`` with the groups ``game``, ``algo``,
``encoder``, ``population``, ``runner``, ``logger`` and ``experiment`` over the typed schema
:class:`populations.experiment.ExperimentConfig` (the ``configs`` package registers it when
Hydra loads it): a misspelt key, a value of the wrong type, an unknown group option or game
stops it before the run folder is made, naming what is accepted.

A user's own code reaches every entry point two ways: modules listed in the config key
``imports`` (``selfplay-train imports=[mypkg.games]``; ``--import MODULE`` for
``selfplay-eval`` and ``python -m populations.league``), importable from the working
directory; and installed packages' entry points in the groups ``selfplay.games``,
``selfplay.learners`` and ``selfplay.meta_solvers``, loaded when each CLI starts.

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
import itertools
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

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from populations.experiment import ExperimentConfig, RunSummary

log = logging.getLogger("selfplay")
TRAIN = "selfplay-train"
PLUGIN_GROUPS = ("selfplay.games", "selfplay.learners", "selfplay.meta_solvers")


class CLIError(Exception):
    """A mistake on the command line or in the config (reported in one line, exit 2)."""


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
    comma-separated, its config search path and key diagnostics are dropped."""
    text = str(err)
    cause = err.__cause__
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


# ---------------------------------------------------------------------- game presets
_GAME_GROUP = re.compile(r"^[+~]*game(@[^=]*)?(=|$)")
_GAME_NAME = re.compile(r"^\+{0,2}game\.name=")


def game_overrides(args: Sequence[str]) -> list[str]:
    """Command-line overrides with ``game.name=X`` starting from X's own defaults.

    A game preset (``configs/game/``) sets a name *and* that game's keyword arguments;
    naming another game without choosing a preset must not keep the preset's arguments,
    so the preset is dropped (``~game``) and ``game.kwargs`` starts empty. ``~game`` goes
    just before the ``game.name=`` override: Hydra's argparse takes the overrides as one run
    of positionals, so one put before ``-m`` or ``--cfg job`` made the rest unrecognized."""
    args = list(args)
    at = next((i for i, a in enumerate(args) if _GAME_NAME.match(a)), None)
    if at is not None and not any(_GAME_GROUP.match(a) for a in args):
        return [*args[:at], "~game", *args[at:]]
    return args


_TYPED: list[str] = []  # selfplay-train's command line as typed (sys.argv is rewritten)


def _untyped(message: str) -> str:
    """Hydra's argparse message without the ``~game`` this CLI added (game_overrides)."""
    return message if "~game" in _TYPED else re.sub(r"(?<!\S)~game ", "", message)


def job_dirname(override_dirname: str, _root_: Any = None) -> str:
    """A sweep job's folder name from Hydra's ``override_dirname`` (the resolver
    ``job_dirname`` of ``configs/config.yaml``): a ``/`` in a value (``game.name=openspiel/x``,
    ``llm.model=/models/m``) nested the job a folder deeper, where the sweep's resume, its
    Ctrl-C hint and the dashboard did not look, so it becomes ``_``; the ``~game`` this CLI
    adds for ``game.name=`` is left out. A key left out of the names because a resume may
    change it (``exclude_keys``: ``experiment``, ``population.generations``...) stays in
    when the sweep gives it several values (:func:`_with_swept_keys`)."""
    items = [i for i in _with_swept_keys(override_dirname, _root_).split(",")
             if i != "~game=null"]
    return ",".join(items).replace("/", "_")


def _with_swept_keys(override_dirname: str, root: Any) -> str:
    """Hydra's ``override_dirname`` made again from the job's overrides (``root``: the job's
    whole config) with the excluded keys this sweep gives several values (:data:`_SWEPT`)
    kept: ``-m population.generations=1,2`` (or ``experiment=a,b``) made two job folders
    told apart by their numbers alone. Hydra's own rule otherwise (sorted ``key=value``
    items as typed); ``override_dirname`` itself when no such key is swept."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if not _SWEPT or root is None:
        return override_dirname
    try:
        conf = root.hydra.job.config.override_dirname
        excluded = [str(k) for k in conf.exclude_keys]
        kept = [k for k in excluded if k not in _SWEPT]
        if len(kept) == len(excluded):
            return override_dirname
        overrides = OverridesParser.create().parse_overrides(
            [str(o) for o in root.hydra.overrides.task])
        lines = sorted(str(o.input_line) for o in overrides if o.key_or_group not in kept)
        sep, kv = str(conf.get("item_sep", ",")), str(conf.get("kv_sep", "="))
        return sep.join(lines).replace("=", kv)
    except Exception:  # noqa: BLE001 - another config's layout: Hydra's own name
        return override_dirname


_SWEPT: set[str] = set()
"""The keys this process's sweep gives more than one value (:func:`swept_keys`)."""


def swept_keys(overrides: Sequence[str]) -> set[str]:
    """The keys (config groups) a sweep's ``overrides`` give more than one value
    (``seed=0,1``, ``lr=range(...)``, ``experiment=glob(*)``); ``seed=0`` alone is no sweep."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception:  # noqa: BLE001 - Hydra reports what it cannot parse itself
        return set()
    return {o.key_or_group for o in parsed if o.is_sweep_override() and (
        not _values(o) or len({str(v) for v in _values(o)}) > 1)}


def job_folder(default: str, _root_: Any = None) -> str:
    """A sweep job's folder (the resolver ``job_folder`` of ``configs/config.yaml``):
    ``default`` (``<job number>_<overrides>``), or in a resumed sweep the folder in the
    sweep that already holds this job, found by its overrides whatever its number
    (:func:`populations.sweep_summary.find_job_folder`): a longer list (``seed=0,1,2``
    after ``seed=0,1``, seed the inner loop) numbers the jobs anew, and the finished ones
    trained again from frame 0 in new folders beside their own. Keys a resume may change
    (``exclude_keys``) are not compared, unless the sweep gives them several values."""
    from populations.sweep_summary import find_job_folder

    try:
        if _root_ is None or _root_.get("resume") is not True:
            return default
        sweep_dir = Path(str(_root_.hydra.sweep.dir))
        overrides = [str(o) for o in _root_.hydra.overrides.task]
        excluded = set(_root_.hydra.job.config.override_dirname.exclude_keys)
    except Exception:  # noqa: BLE001 - another config's layout: its own default name
        return default
    found = find_job_folder(sweep_dir, overrides, excluded - _SWEPT, default)
    return default if found is None else found.name


def register_resolvers() -> None:
    """The resolvers ``hydra.sweep.subdir`` of ``configs/config.yaml`` uses (on import too:
    a config loaded outside ``selfplay-train`` resolves its job folders alike)."""
    from omegaconf import OmegaConf

    for name, resolver in (("job_dirname", job_dirname), ("job_folder", job_folder)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)


register_resolvers()


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


def _values(override: Any) -> list[Any]:
    """An override's value, or each of a choice sweep's (``num_envs=0,4``); none for ranges,
    intervals, deletions."""
    from hydra.core.override_parser.types import ValueType

    if override.is_delete():
        return []
    if override.value_type == ValueType.ELEMENT:
        return [override.value()]
    if override.value_type in (ValueType.CHOICE_SWEEP, ValueType.SIMPLE_CHOICE_SWEEP):
        return list(override.value().list)
    return []


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
        values = [v for v in _values(o) if not (isinstance(v, str) and "${" in v)]
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
    share = {o.key_or_group: [v for v in _values(o) if not (isinstance(v, str) and "${" in v)]
             for o in overrides if o.key_or_group in (
                 "num_envs", "runner.rollout_workers", "population.kind", "mappo.net.recurrent")
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


def prepare(cfg: DictConfig, overrides: Sequence[str], check: bool = True) -> ExperimentConfig:
    """Import the user's modules, settle the game's arguments, validate (``check``: build the
    game too): the experiment to run, or a :class:`CLIError` / game error."""
    import_user_modules(list(cfg.get("imports") or []))
    name = cfg.get("game", {}).get("name")
    import_user_modules(game_modules(name), f"game.name={name}")
    replace_game_kwargs(cfg, overrides)
    exp = to_experiment(cfg)
    if check:
        from populations.experiment import check_experiment

        check_experiment(exp)  # unknown game, bad game arguments, an algo that cannot play it
    return exp


class ConfigCheck(Callback):
    """Hydra callback (``configs/config.yaml``): validates the composed config before Hydra
    makes the run folder, so a config mistake leaves nothing behind."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        import copy

        from omegaconf import open_dict

        task = copy.deepcopy(config)
        with open_dict(task):
            del task["hydra"]
        with reported(TRAIN), _named_log_lines():  # Hydra turns a callback's exception
            prepare(task, list(config.hydra.overrides.task))  # into a warning: exit here
            if task.get("resume") and not task.get("resume_override"):
                _refuse_resume_without_folder(config)


    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _FAILED_JOBS.clear()  # keep_going's lists, per sweep (tests run several in a process)
        _SWEEP_JOBS.clear()
        _JOB_OVERRIDES.clear()
        _SWEPT.clear()
        _SWEPT.update(swept_keys(list(config.hydra.overrides.task)))
        folder = None if _folder_given(config, "hydra.sweep.dir") else sweep_folder(config)
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
            f"{sweep_resume_command(sweep_dir, _TYPED or sys.argv[1:])}")


def _folder_given(config: DictConfig, key: str) -> bool:
    """Whether the command line gives ``key`` (``hydra.run.dir``, ``hydra.sweep.dir``)."""
    return any(o.split("=", 1)[0].lstrip("+~") == key for o in config.hydra.overrides.hydra)


def sweep_folder(config: DictConfig) -> Path:
    """The one folder of a sweep whose ``hydra.sweep.dir`` the command line does not give: the
    config's pattern as the sweep resolves it, with ``experiment`` the swept experiments joined
    by ``+`` where ``experiment=`` is swept (``multirun/kuhn_psro+psro_maddpg_oracle/<stamp>``;
    the sweep resolved it as ``default``). Hydra resolves the pattern again for each job, with
    the job's ``experiment``: a sweep over experiments went to one folder per experiment, and
    its multirun.yaml to a third one (see :func:`pin_sweep_folder`)."""
    import copy

    from omegaconf import flag_override

    folder = str(config.hydra.sweep.dir)  # the clock read once ($now is cached), for all
    swept = _swept_experiments(list(config.hydra.overrides.task))
    if swept:
        named = copy.deepcopy(config)  # the cache too: the same stamp
        with flag_override(named, ["struct", "readonly"], [False, False]):
            named.experiment = swept
            folder = str(named.hydra.sweep.dir)
    return Path(folder)


def _swept_experiments(overrides: Sequence[str]) -> str | None:
    """``kuhn_psro+psro_maddpg_oracle`` for ``experiment=kuhn_psro,psro_maddpg_oracle`` among
    a sweep's overrides (``sweep`` for a glob or names that are no plain words); None when
    ``experiment`` is not swept."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType

    for o in OverridesParser.create().parse_overrides(list(overrides)):
        if o.key_or_group != "experiment" or o.package is not None or o.is_delete() or \
                o.value_type == ValueType.ELEMENT:
            continue
        values = _values(o)
        if values and all(isinstance(v, str) and re.fullmatch(r"[\w.-]+", v) for v in values):
            name = "+".join(dict.fromkeys(values))
            return name if len(name) <= 120 else "sweep"
        return "sweep"
    return None


def pin_sweep_folder(config: DictConfig, folder: Path) -> None:
    """Give every job of the sweep ``folder`` as its ``hydra.sweep.dir`` (and multirun.yaml
    too): Hydra composes each job's config again from the sweep's ``hydra`` overrides and the
    job's own, resolving ``multirun/${experiment}/...`` with the job's experiment, so one
    sweep over ``experiment=`` was split across folders and its resume command (naming one of
    them) retrained the jobs of the others there from scratch."""
    from omegaconf import flag_override

    value = hydra_value(folder)
    with flag_override(config.hydra, ["struct", "readonly"], [False, False]):
        config.hydra.sweep.dir = str(folder)
        config.hydra.overrides.hydra.append(f"hydra.sweep.dir={value}")


def _refuse_resume_without_folder(config: DictConfig, key: str = "hydra.run.dir",
                                  folder: Path | None = None) -> None:
    """``resume=true`` without ``hydra.run.dir`` (a sweep's ``hydra.sweep.dir``): Hydra names
    a new folder after the clock, which holds no run, so such a resume could never go on (it
    made that folder, said 'check the folder name' and removed it). Refused before the folder
    is made, naming the newest run (sweep) beside it as the folder to give. A folder of the
    user's own config (a fixed ``hydra.run.dir``) that holds a run resumes as before.
    ``folder``: the one the run (sweep) would go to, when not the config's own."""
    from populations.run_folder import holds_run

    if _folder_given(config, key):
        return  # a folder given: run_folder's own check names it if it holds no run
    sweep = key == "hydra.sweep.dir"
    run_dir = folder or Path(str(config.hydra.sweep.dir if sweep else config.hydra.run.dir))

    def held(folder: Path) -> bool:
        return _sweep_started(folder) if sweep else holds_run(folder)

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


PSRO_KEYS = ("iterations", "oracle", "oracle_frames", "psro")
"""``population.*`` settings PSRO reads; a league reads the others (``kind``: both)."""


def _unread_population_keys(exp: ExperimentConfig, overrides: Sequence[str]) -> list[str]:
    """A warning per ``population.<key>=`` on the command line that this run's kind does not
    read, naming the kind that does: ``population.generations=4`` in a single run
    (``population=none``) was ignored without a word, as ``population.iterations=`` in a
    league and ``population.generations=`` in PSRO."""
    kind = exp.population.kind
    notes = []
    for o in overrides:
        key = o.split("=", 1)[0].lstrip("+")
        if "=" not in o or not key.startswith("population.") or key == "population.kind":
            continue
        reader = "psro" if key.split(".")[1] in PSRO_KEYS else "league"
        if reader != kind:
            presets = _population_presets().get(reader)
            how = f" ({', '.join(f'population={p}' for p in presets)})" if presets else ""
            notes.append(f"{o.lstrip('+')} is not used with population.kind={kind}: only "
                         f"population.kind={reader} reads it{how}")
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
def _fresh(run_dir: Path) -> bool:
    """True when ``run_dir`` holds only what Hydra writes before the task starts."""
    return not run_dir.exists() or all(p.name == ".hydra" or p.suffix == ".log"
                                       for p in run_dir.iterdir())


def _sweep_started(sweep_dir: Path) -> bool:
    """True when a job folder of the sweep holds a run (a resumed sweep, not a new one)."""
    return any((job / "settings.json").is_file() for job in sweep_dir.iterdir() if job.is_dir())


def _refuse_renamed_job(sweep_dir: Path, num: int, run_dir: Path, settings: dict[str, Any],
                        overrides: Sequence[str] = (), flags: Sequence[str] = ()) -> None:
    """Refuse to start job ``num`` of a resumed sweep afresh in ``run_dir`` when another
    folder of the sweep, whatever its number, holds a run with these ``settings`` (but for
    those a resume may change, unless swept: :data:`_SWEPT`) that :func:`job_folder` did
    not take, its overrides being typed otherwise (a ``runner.*`` key, which the folder name
    holds, changed) or several folders matching (``population.generations=1,2`` resumed
    with one value): the job would train from frame 0 beside its own run. A job whose
    settings differ (the sweep list changed: ``seed=0,2`` after ``seed=0,1``) is another
    job and starts."""
    from populations.experiment import RESUME_MAY_CHANGE
    from populations.run_folder import flatten, settings_diff
    from populations.sweep_summary import job_folders

    free = [f for f in RESUME_MAY_CHANGE if not any(k == f or f"{k}." == f for k in _SWEPT)]
    mine = flatten(json.loads(json.dumps(settings)))

    def same_job(folder: Path) -> bool:
        try:
            saved = json.loads((folder / "settings.json").read_text())
        except (OSError, ValueError, RecursionError):
            return False  # unreadable: its own resume says so
        if not isinstance(saved, dict) or settings_diff(saved, settings, free):
            return False
        theirs = flatten(json.loads(json.dumps(saved)))
        both = set(theirs) & set(mine)  # none: not a run's settings
        return bool(both) and all(theirs[k] == mine[k] for k in both  # a swept runner.* key
                                  if any(k == s or k.startswith(f"{s}.") for s in _SWEPT))

    earlier = [p for p in job_folders(sweep_dir)
               if p != run_dir and (p / "settings.json").is_file() and same_job(p)]
    if len(earlier) > 1:
        first, second = (json.loads((p / "settings.json").read_text()) for p in earlier[:2])
        keys = sorted({d.split("=", 1)[0] for d in settings_diff(first, second)})
        raise CLIError(
            f"job {num} of the sweep ({run_dir.name}) could be any of {len(earlier)} folders "
            f"of the sweep, which differ only by {', '.join(keys) or 'nothing'} (settings a "
            f"resume may change, swept when they ran): {', '.join(p.name for p in earlier)}; "
            "resume the sweep with the list it started with, or one job alone with "
            "selfplay-train <its overrides> resume=true hydra.run.dir=<its folder>")
    if earlier:
        raise CLIError(
            f"job {num} of the sweep ran in {earlier[0]}, not in {run_dir.name} (job folders are "
            "named by the sweep's settings): resume the sweep with the settings it started "
            f"with, or that job alone with {resume_command(earlier[0], overrides, flags)}")


def _discard_new(run_dir: Path, sweep_dir: Path | None) -> None:
    """Remove a run folder this process created (:func:`discard_run_dir`), and its sweep's
    folder when no job is left in it."""
    if discard_run_dir(run_dir) and sweep_dir is not None and sweep_dir.is_dir() and \
            {p.name for p in sweep_dir.iterdir()} <= {"multirun.yaml"}:
        discard_run_dir(sweep_dir)


def discard_run_dir(run_dir: Path, root: Path | None = None) -> bool:
    """Remove a run folder this process created if it holds nothing worth keeping (no
    checkpoint), and its parents left empty below ``root`` (the working directory)."""
    ckpt = run_dir / "checkpoints"
    if not run_dir.is_dir() or (ckpt.is_dir() and any(ckpt.iterdir())):
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


def run_dir_override(run_dir: Path, key: str = "hydra.run.dir") -> str:
    """``hydra.run.dir=<run_dir>`` as a shell and Hydra can read it back: a sweep job's
    ``0_algo=mappo,seed=1`` (a comma: a list), ``run#1``, spaces or non-ASCII letters are
    refused by Hydra's grammar unquoted, and a space splits the shell's words."""
    return shlex.quote(f"{key}={hydra_value(run_dir)}")


def hydra_value(run_dir: Path) -> str:
    """``run_dir`` as a value Hydra's override grammar reads back as that path (quoted where
    it holds characters the grammar or OmegaConf would take for something else)."""
    path = str(run_dir)
    if not re.fullmatch(r"[\w./:+-]+", path, re.ASCII):
        # OmegaConf resolves ${...} in the value: \${ is a literal ${ (a backslash before it
        # doubled); in Hydra's quoted string a quote and the backslashes before it or before
        # the closing quote are escaped with a backslash
        path = re.sub(r"(\\*)\$\{", lambda m: m[1] * 2 + "\\${", path)
        q = "'" if '"' in path and "'" not in path else '"'
        path = q + re.sub(rf"(\\*)({q}|\Z)", lambda m: m[1] * 2 + ("\\" + q if m[2] else ""),
                          path) + q
    return path


_NOT_REPEATED = ("resume", "resume_override", "keep_going", "hydra.run.dir")
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


def resume_command(run_dir: Path, overrides: Sequence[str] | None = None,
                   flags: Sequence[str] = ()) -> str:
    """``selfplay-train <flags> <the run's overrides> resume=true hydra.run.dir=<run_dir>``,
    each word quoted for a shell, from the run's task ``overrides`` (Hydra's
    ``hc.overrides.task``, as typed) and the flags that chose its config (``flags``:
    :func:`config_flags` of the command line): ``resume=true hydra.run.dir=...`` alone
    composes the default config, which a run started with ``game=kuhn imports=[push]`` (or
    ``--config-dir D --config-name myexp``) refuses ('cannot resume ... with other
    settings'). An earlier resume's own ``resume``/``resume_override`` are not repeated (nor
    a sweep job's ``keep_going``, which a single run does not use), nor
    the ``~game`` this CLI put before ``game.name=`` (:func:`game_overrides` puts it back)."""
    args = ["~game" if o == "~game=null" else o for o in overrides or ()  # a sweep job's
            if o.split("=", 1)[0].lstrip("+~") not in _NOT_REPEATED]  # spelling of ~game
    if "~game" in args and game_overrides([a for a in args if a != "~game"]) == args:
        args.remove("~game")
    return " ".join([TRAIN, *map(shlex.quote, [*flags, *args]), "resume=true",
                     run_dir_override(run_dir)])


def sweep_resume_command(sweep_dir: Path, argv: Sequence[str]) -> str:
    """``selfplay-train -m <the sweep's overrides> resume=true hydra.sweep.dir=<sweep_dir>``
    from the command line ``argv`` that started (or resumed) the sweep."""
    skip = ("resume=", "hydra.sweep.dir=")
    args = [a for a in argv if a not in ("-m", "--multirun") and not a.startswith(skip)]
    return " ".join([TRAIN, "-m", *map(shlex.quote, args), "resume=true",
                     run_dir_override(sweep_dir, "hydra.sweep.dir")])


@contextmanager
def run_folder_guard(prog: str, run_dir: Path, created: bool,
                     sweep_dir: Path | None = None, job: int | None = None,
                     overrides: Sequence[str] | None = None,
                     flags: Sequence[str] = (), resumed: bool = False,
                     keep_going: bool = False) -> Iterator[None]:
    """Report user errors in one line; a folder ``created`` by this run and holding no
    checkpoint is removed first (and a sweep's folder left with no job in it), so a failed
    start leaves nothing half-made behind. In a sweep (job number ``job``) the line says
    that the jobs after it did not run, and how the sweep goes on; a single run that failed
    while running and keeps checkpoints says how it resumes. Ctrl-C's line names the command
    that resumes the run, with the run's ``overrides`` and config ``flags``
    (:func:`resume_command`). ``resumed``: the command line gave ``resume=true``.
    ``keep_going`` (a sweep's ``keep_going=true``): a failed job's line says the sweep goes on,
    and the guard returns (Hydra runs the next job); the sweep's end lists the failed jobs
    (:func:`_failed_jobs_line`). Ctrl-C still ends the sweep."""
    try:
        yield
    except KeyboardInterrupt:  # Ctrl-C: no traceback; say how to go on (exit 130, as a shell)
        interrupted(prog, lambda: _how_to_go_on(run_dir, created, sweep_dir, overrides, flags))
    except Exception as err:
        if not isinstance(err, user_errors()) and too_large(err) is None:
            raise  # a bug: its traceback (Hydra's report), the folder kept to look at
        going_on = keep_going and sweep_dir is not None and job is not None
        if created:  # the sweep's folder stays for the next jobs (and multirun.yaml in it)
            discard_run_dir(run_dir) if going_on else _discard_new(run_dir, sweep_dir)
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        line = too_large_line(err, overrides) if too_large(err) is not None else one_line(err)
        if going_on:
            say(prog, f"{line} (sweep job {job}; keep_going: the sweep goes on with "
                      f"its next job){_resumes_after(err, run_dir, overrides, flags)}")
            _FAILED_JOBS.append((job, run_dir))
            return
        if sweep_dir is not None and job is not None:
            fail(prog, line + _sweep_stopped(sweep_dir, job, run_dir, created, resumed))
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
    if isinstance(err, tuple(refusals)) or not ckpt.is_dir() or \
            not any(p.suffix == ".pt" for p in ckpt.iterdir()):
        return ""
    settings = (" (other settings, such as a lower learning rate, also need "
                "resume_override=true)") if type(err).__name__ == "NonFiniteError" else ""
    return (f"; {run_dir} keeps its checkpoints: once the cause is fixed, it resumes from the "
            f"last one with: {resume_command(run_dir, overrides, flags)}{settings}")


def _sweep_stopped(sweep_dir: Path | None, job: int | None, run_dir: Path | None = None,
                   created: bool = True, resumed: bool = False) -> str:
    """What a sweep's failed job adds to its error line (Hydra's launcher ends the sweep); a
    job run again without ``resume=true`` in the folder ``run_dir`` that holds its run (the
    same sweep command twice: 'already holds a run') says how the sweep goes on, or starts
    anew, not to fix the swept values, which were fine."""
    from populations.run_folder import holds_run

    if sweep_dir is None or job is None:
        return ""
    if not resumed and not created and run_dir is not None and holds_run(run_dir):
        return (f" (sweep job {job}: the sweep in {sweep_dir} has run; add resume=true to go "
                f"on with it, {sweep_resume_command(sweep_dir, _TYPED or sys.argv[1:])}, or "
                "give a new hydra.sweep.dir to start it again)")
    if not (sweep_dir.is_dir() and _sweep_started(sweep_dir)):
        return f" (sweep job {job}; the jobs after it did not run)"
    return (f" (sweep job {job}; the jobs after it did not run: fix the swept values, then "
            f"{sweep_resume_command(sweep_dir, _TYPED or sys.argv[1:])})")


def _how_to_go_on(run_dir: Path, created: bool, sweep_dir: Path | None,
                  overrides: Sequence[str] | None = None, flags: Sequence[str] = ()) -> str:
    """Ctrl-C's message: the command that resumes the run or sweep, or (stopped before the
    run started) "start again", removing the folder ``created`` for it."""
    # a folder holding a run resumes (from its last checkpoint, or from the start when it has
    # none yet: PSRO keeps none, it goes on from league.db); the same command again would be
    # refused ("already holds a run")
    if sweep_dir is not None and sweep_dir.is_dir() and _sweep_started(sweep_dir):
        return f"interrupted; the sweep resumes with: " \
            f"{sweep_resume_command(sweep_dir, _TYPED or sys.argv[1:])}"
    from populations.run_folder import holds_run

    if holds_run(run_dir):  # what resume=true accepts (the same test)
        return f"interrupted; {run_dir} resumes with: " \
            f"{resume_command(run_dir, overrides, flags)}"
    if created:  # stopped before the run started: nothing recorded, nothing kept
        _discard_new(run_dir, sweep_dir)
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

        cells = [[blank(row, c) if row[c] is None else str(row[c]) for c in cols]
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
    created = _fresh(run_dir)
    overrides, flags = list(hc.overrides.task), config_flags(_TYPED)
    summary = None
    if sweep_dir is not None:
        _SWEEP_JOBS.append(hc.job.num)
        _JOB_OVERRIDES[hc.job.num] = overrides
    with run_folder_guard(TRAIN, run_dir, created=created, sweep_dir=sweep_dir,
                          job=hc.job.num if sweep_dir is not None else None,
                          overrides=overrides, flags=flags, resumed=cfg.get("resume") is True,
                          keep_going=cfg.get("keep_going") is True), \
            spelled(HYDRA_WORDS):  # messages say resume_override=true, as typed here
        exp = prepare(cfg, overrides, check=False)  # run_experiment checks
        if sweep_dir is not None and not run_dir.name.startswith(f"{hc.job.num}_"):
            log.info("job %d of the sweep resumes in its folder %s (numbered by the sweep "
                     "that made it)", hc.job.num, run_dir.name)
        if exp.resume and created and sweep_dir is not None and _sweep_started(sweep_dir):
            _refuse_renamed_job(sweep_dir, hc.job.num, run_dir, _plain(exp), overrides, flags)
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
        summary = run_experiment(exp, run_dir)
    if summary is not None:  # None: a failed job of a keep_going sweep (its line is out)
        print_summary(summary, resume_command(run_dir, overrides, flags))


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

Installed packages' entry points (selfplay.games, selfplay.learners, selfplay.meta_solvers)
load at start. Errors are one line and exit 2; HYDRA_FULL_ERROR=1 shows the traceback.
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


# ----------------------------------------------------------------------- selfplay-eval
def eval_main(argv: list[str] | None = None) -> None:
    """``selfplay-eval``: round-robin rating of saved policy files into a league database."""
    p = OneLineParser(prog="selfplay-eval", description=(eval_main.__doc__ or "").replace("``", ""))
    p.add_argument("policies", nargs="+", help="policy files (.pt) written by a run")
    p.add_argument("--game", required=True, help="game spec, e.g. openspiel/kuhn_poker")
    p.add_argument("--game-kwargs", default="{}", help="JSON keyword arguments of the game")
    p.add_argument("--db", required=True, help="league database to write (created if missing)")
    p.add_argument("--episodes", type=int, default=16, help="role-swapped pairs per pairing")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runner", default="local", choices=["local", "ray"])
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (your games), from the working directory; "
                        "repeatable")
    x = p.add_argument_group("approximate exploitability (trained best responses)")
    x.add_argument("--exploit", action="store_true",
                   help="also train a best response per team against each policy and "
                        "print/record its gain (approximate NashConv ± 95%% interval)")
    x.add_argument("--exploit-algo", default="ippo", help="registered learner of the responses")
    x.add_argument("--exploit-frames", type=int, default=20_000, help="frames per response")
    x.add_argument("--exploit-seeds", type=int, default=3, help="independent repetitions")
    x.add_argument("--exploit-episodes", type=int, default=2_000,
                   help="evaluation episodes per value estimate")
    args = p.parse_intermixed_args(argv)  # files before and after the flags alike
    if args.exploit:  # minutes of training: its progress lines (populations.approx_exploit)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    from populations.run_folder import sigterm_as_interrupt

    with sigterm_as_interrupt(), reported(p.prog):  # SIGTERM: as Ctrl-C (run interrupted)
        if not args.db.strip():  # Path(""): the working folder, as a database file
            raise CLIError("--db is empty (an unset shell variable?); give the league database "
                           "file to write, e.g. --db eval.db")
        import_user_modules(args.imports, "--import")
        import_user_modules(game_modules(args.game), f"--game {args.game}")
        load_plugins()
        try:
            kwargs = json.loads(args.game_kwargs)
        except json.JSONDecodeError as err:
            raise CLIError(f"--game-kwargs is not JSON ({err}): {args.game_kwargs!r}") from None
        if not isinstance(kwargs, dict):
            raise CLIError(f"--game-kwargs must be a JSON object, got {args.game_kwargs!r}")
        _evaluate(args, kwargs)


def _evaluate(args: argparse.Namespace, kwargs: dict[str, Any]) -> None:
    from games import make

    spec = make(args.game, **kwargs).spec
    if not 0 <= args.seed < EVAL_SEED_END:  # numpy: "expected non-negative integer"; SQLite:
        raise CLIError(f"--seed {args.seed}: expected an integer from 0 to "  # an overflow
                       f"{EVAL_SEED_END - 1} (2**62 - 1)")
    if args.exploit:  # --exploit's settings first (against the registry and game: torch, later)
        _check_exploit_values(args)
    else:
        _check_eval_values(args)
    from marl.core import CheckpointError, load_policy
    from populations.db import LeagueDB
    from populations.evaluation import round_robin, seats_mismatch
    from populations.experiment import league_table
    from populations.runners import make_runner
    from populations.store import PolicyStore

    exploit = _exploit_config(args, spec) if args.exploit else None  # bad values fail first
    try:  # its messages quote the file (a game name, a payload's keys): escaped
        policies = {name: load_policy(path)
                    for name, path in _policy_names(args.policies).items()}
    except (CheckpointError, ValueError) as err:
        kind = re.search(r"unknown policy kind ('[^']*')", str(err))
        how = (f"; import the module that registers {kind[1]} with --import MODULE "
               "(importable from this folder; repeatable)") if kind else ""
        raise CLIError(escaped(str(err)) + escaped(how)) from err
    if args.episodes < 1:  # 0 played no match and printed ratings of None
        raise CLIError(f"--episodes {args.episodes}: expected an integer >= 1")
    if len(policies) < 2 and not args.exploit:
        raise CLIError(f"a round robin needs two or more policy files, got {args.policies}; "
                       "or add --exploit for one policy's approximate NashConv")
    for name, pol in policies.items():  # each plays every side (a KeyError deep in a match)
        missing = [a for a in spec.agent_ids if a not in pol.meta.agents]
        game = escaped(pol.meta.game)  # read from the file: no terminal codes printed raw
        bare = _unrecorded(pol.meta.game) and _same_game(pol.meta.game, spec.name)
        if missing and not _same_game(pol.meta.game, spec.name):  # not seats of this game
            raise CLIError(f"{name} was trained on {game} (seats "
                           f"{list(pol.meta.agents)}), not on {spec.name} (seats "
                           f"{list(spec.agent_ids)}): evaluate it on its own game")
        if missing:
            raise CLIError(
                f"{name} holds the seats {list(pol.meta.agents)} of {game}, not "
                f"{missing}{f' of {spec.name}' if spec.name != pol.meta.game else ''}: "
                "matches here play each policy on every side (a population=none run trains its "
                "first team only, a PSRO member plays its own seat; a league's snapshots hold "
                "every seat)"
                + (UNRECORDED.format(game=game) if bare else ""))
        for a in spec.agent_ids if not {"graph", "text"} & set(pol.meta.inputs) else ():
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
        for note in _game_notes(name, pol.meta.game, spec):
            print(f"selfplay-eval: note: {note}", file=sys.stderr)
    names = _policy_names(args.policies)
    for name, path in names.items() if len(names) > 1 else ():  # which file each name is
        print(f"selfplay-eval: {name} <- {escaped(path)}", file=sys.stderr)  # (stdout: table)
    new = _new_folder(Path(args.db).parent)
    if new is not None:  # as selfplay-train's note on a new top-level folder: a typo shows
        deeper = "" if new == Path(args.db).parent else " (and the folders in it)"
        print(f"selfplay-eval: note: --db {escaped(args.db)} makes the new folder "
              f"{escaped(str(new))}{deeper}", file=sys.stderr)
    db = LeagueDB(args.db)  # made only once every policy loaded
    run_id = db.create_run("eval", experiment="selfplay-eval", game=spec.name, config={
        "policies": {name: str(Path(path).resolve()) for name, path in names.items()},
        "game_kwargs": kwargs, "episodes": args.episodes, "seed": args.seed})
    store = PolicyStore(eval_snapshot_folder(Path(args.db), run_id), db, run_id)
    snaps = [store.publish(name, pol) for name, pol in policies.items()]
    try:  # the run ends finished, failed or interrupted (it stayed 'running' in the dashboard)
        runner = make_runner(args.runner)
        try:
            round_robin(db, run_id, runner, spec, args.game, kwargs, snaps, args.episodes,
                        args.seed)
        finally:
            runner.close()
        for row in league_table(db, run_id) if len(snaps) > 1 else ():  # one: no matches
            print(f"{row['member']:>24}  elo {row['elo']}  mu {row['mu']} ± {row['sigma']}  "
                  f"pairs {row['pairs']}")
        _print_pairs(db, run_id, snaps)
        if exploit is not None:
            _exploit(db, run_id, args, kwargs, snaps, policies, exploit)
    except BaseException as err:  # Ctrl-C too
        from populations.run_folder import end_status
        from populations.run_folder import one_line as error_line

        db.set_run_status(run_id, end_status(err), error_line(err))
        db.close()
        raise
    db.set_run_status(run_id, "finished")
    db.close()


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


EVAL_SEED_END = 2**62
"""``selfplay-eval --seed`` is below this: numpy's generators take no negative seed, and the
match records' seeds (``--seed`` plus 7,919 per pairing) are SQLite integers (below 2**63)."""

UNRECORDED = ("; its file names the game {game} without arguments (the defaults, or not "
              "recorded: files written before game names held them): give the --game-kwargs "
              "it was trained with")


def escaped(text: str) -> str:
    """``text`` with each character that is not printable (ESC, ``\\r``, newlines, other
    control and format codes) as its Python escape: text read from a file (a snapshot's game
    name) printed raw could move the cursor, recolour or retitle the terminal, or fake lines."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _game_notes(name: str, recorded: str, spec: Any) -> list[str]:
    """What ``selfplay-eval`` says of policy ``name``, trained on the game ``recorded`` (its
    file's name for it) and played on ``spec``'s game, whose seats and shapes it fits: nothing
    for the same game, also where only the names differ (``...simple_tag_v3(max_cycles=25)``,
    the default, and the bare ``...simple_tag_v3``: the game built from each name has the
    same spec); else that it was trained on another game, and, for the same game of other
    arguments, each argument (and spec field) that differs with both values (``max_steps
    (25 in training, 100 here)``: a note that looked the same for both hid a real change)."""
    from games.core import GameSpec
    from games.registry import split_name

    if recorded == spec.name:
        return []
    if _same_game(recorded, spec.name):
        return [f"{name}'s file names its game {escaped(recorded)} without arguments (the "
                f"defaults, or not recorded); it plays {spec.name} here"]
    other = [f"{name} was trained on {escaped(recorded)}; it plays {spec.name} here"]
    try:
        (base, named), (here_base, here) = split_name(recorded), split_name(spec.name)
        trained = _spec_of(recorded) if base == here_base else None
    except Exception:  # noqa: BLE001 - a name no game makes here: the names are all there is
        return other
    if trained is None:
        return other
    fields = [f.name for f in dataclasses.fields(GameSpec) if f.name != "name"]

    def value(args: dict[str, Any], key: str, game: Any) -> str:
        return repr(args[key]) if key in args else repr(getattr(game, key)) \
            if key in fields else "the default"

    keys = sorted(k for k in {*named, *here} if named.get(k, _Missing) != here.get(k, _Missing))
    keys += [f for f in fields if f not in keys and getattr(trained, f) != getattr(spec, f)]
    explicit = any(k in named and k in here for k in keys)  # given both sides, not the same
    if not explicit and all(getattr(trained, f) == getattr(spec, f) for f in fields):
        return []  # the names differ, the games do not (a default given by name or not)
    return [*other, f"{name}'s game differs here in " + ", ".join(
        f"{k} ({escaped(value(named, k, trained))} in training, {value(here, k, spec)} here)"
        for k in keys)]


@functools.lru_cache(maxsize=8)
def _spec_of(name: str) -> Any:
    """The spec of the game ``games.make(name)`` builds (once per name: a run's snapshots
    share one)."""
    from games import make

    return make(name).spec


def _same_game(recorded: str, name: str) -> bool:
    """Whether a snapshot's ``recorded`` game name may name the game ``name``: the same name,
    or ``name``'s base without arguments where those may be unrecorded (:func:`_unrecorded`).
    A PettingZoo or VMAS name recorded before names held their kwargs (399addf) is bare
    whatever the run's kwargs; one recorded since is bare for the defaults: either way the
    base is all the file says, so it is not called another game (its seats and observation
    shapes are checked against the game all the same). A bare OpenSpiel name is the
    defaults', as ever: ``kuhn_poker`` is not ``kuhn_poker(players=3)``."""
    if recorded == name:
        return True
    return _unrecorded(recorded) and name.partition("(")[0] == recorded


def _unrecorded(recorded: str) -> bool:
    """Whether a snapshot's game name may lack the arguments it was trained with: a name
    without ``(...)`` of another family than OpenSpiel's (whose names always held them)."""
    return "(" not in recorded and not recorded.startswith("openspiel/")


def _check_eval_values(args: argparse.Namespace) -> None:
    """The refusals that need only the command line, with the words of the checks below, in
    their order, before torch and the policy files load: such a refusal cost 2.1-2.9 s CPU,
    now 0.4-0.6 s. A file that exists may still fail to load: that error came first and now
    comes after these (a command line with both)."""
    for path in map(Path, args.policies):
        if path.is_dir():  # load_policy says which files it holds: the checks below run then
            return
        if not path.is_file():
            raise CLIError(f"policy file not found: {escaped(str(path))}")
    if args.episodes < 1:
        raise CLIError(f"--episodes {args.episodes}: expected an integer >= 1")
    if len(args.policies) < 2:
        raise CLIError(f"a round robin needs two or more policy files, got {args.policies}; "
                       "or add --exploit for one policy's approximate NashConv")


EXPLOIT_MINIMUMS = {"frames": 1, "seeds": 1, "eval_episodes": 2}
"""The least value of ``ApproxConfig``'s budget fields (``--exploit-frames``...; a test keeps
them in step)."""


def _check_exploit_values(args: argparse.Namespace) -> None:
    """The ``--exploit-*`` values refused before torch loads (the learner registry and the
    game's check come after, in ``_exploit_config``): a budget below its least value, and a
    learner that is none of marl's that train best responses
    (``config_checks.STEPPED_ALGOS``) while nothing registered another (``--import``, a
    plugin: the registry loaded)."""
    from populations.config_checks import STEPPED_ALGOS

    for name, low in EXPLOIT_MINIMUMS.items():
        flag = name.removeprefix("eval_")
        value = getattr(args, f"exploit_{flag}")
        if value < low:  # ApproxConfig's words, which came after torch (~2.5 s CPU)
            raise CLIError(f"approx exploitability: {name} must be an integer >= {low}, got "
                           f"{value!r} (--exploit-{flag})")
    if args.exploit_algo not in STEPPED_ALGOS and "marl.registry" not in sys.modules:
        raise CLIError(f"--exploit-algo {args.exploit_algo!r} cannot train best responses; "
                       f"choose one of {list(STEPPED_ALGOS)} (one compatible with the game)")


def _print_pairs(db: Any, run_id: int, snaps: Sequence[Any]) -> None:
    """Each pair's win rate and margin under the ratings: Elo and mu rate the pairs one
    after another, so over a few pairs they may order two policies against their win rate
    (0.50 over 10 pairs, margin +0.20, rated below)."""
    names = {s.id: s.member for s in snaps}
    cells = {(p["row_snapshot"], p["col_snapshot"]): p for p in db.payoffs(run_id)}
    lines = [f"{names[a]:>24}  vs {names[b]}: win rate {p['win_rate']:.2f} over {p['count']} "
             f"pairs, margin {p['value']:+.3f} per episode"
             for a, b in itertools.combinations(names, 2)
             for p in [cells.get((a, b))] if p is not None and p["win_rate"] is not None]
    if lines:
        print("each pair (the first against the second; a role-swapped pair is won on its "
              "summed margin):")
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
            above = next((p.name for k, p in enumerate(folder.parents, 1) if p.name and all(
                len(f.parents) <= k or f.parents[k - 1].name != p.name for f in same)),
                None) if same else None
            room = 58 - len(base) - 1
            if above is not None and room > 0:
                base = valid(re.sub(r"[^A-Za-z0-9_.\-]", "_", above)[-room:] + "_" + base)
        name, k = base, 2
        while name in names:
            name, k = f"{base}_{k}", k + 1
        names[name] = path
    return names


def _exploit_config(args: argparse.Namespace, spec: Any) -> Any:
    """The ``--exploit-*`` settings, checked against the game (one line when wrong)."""
    from populations.approx_exploit import ApproxConfig, check_response_algo

    cfg = ApproxConfig(algo=args.exploit_algo, frames=args.exploit_frames,
                       seeds=args.exploit_seeds, eval_episodes=args.exploit_episodes,
                       seed=args.seed)
    check_response_algo(spec, cfg)
    return cfg


def _exploit(db: Any, run_id: int, args: argparse.Namespace, kwargs: dict[str, Any],
             snaps: list, policies: dict[str, Any], cfg: Any) -> None:
    """Approximate NashConv of each policy, printed and recorded per snapshot."""
    from populations.approx_exploit import approx_nash_conv, record

    for snap, (name, pol) in zip(snaps, policies.items(), strict=True):
        res = approx_nash_conv(args.game, pol, cfg, kwargs)
        record(db, run_id, snap.id, name, res)
        print(f"{name:>24}  approx NashConv {res.nash_conv:.4f} ± {res.half_width:.4f} "
              f"(95% {res.interval}; {cfg.algo}, {cfg.frames} frames per response)")


if __name__ == "__main__":
    train_main()
