"""What every command line shares (``selfplay-train``, ``selfplay-eval``, ``python -m
populations.league``, the demo): one-line errors (:func:`reported`, :func:`fail`,
:func:`interrupted`) with hints after Hydra's own, the user's modules (``imports=``,
``--import``) and the installed packages' entry points (:data:`PLUGIN_GROUPS`).

Every error a user can cause ends in one line on stderr, ``<prog>: <message>``, with exit
status 2 and no traceback (``HYDRA_FULL_ERROR=1`` shows it); Ctrl-C exits 130, SIGTERM 143.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import shlex
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from populations.command_line import (
    TRAIN,
    CLIError,
    absolute_config_dirs,
)

if TYPE_CHECKING:

    pass


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
    return _member_not_listed("; ".join(parts)) or type(err).__name__


_NOT_LISTED = re.compile(r"Error merging override (\+{0,2}population\.members\.(\d+)"
                         r"(?:[.=].*?)?); list index out of range")


def _member_not_listed(line: str) -> str:
    """Hydra's "Error merging override population.members.5.mappo.epochs=2; list index out of
    range" said which member the run's list lacks: ``line`` with that said, and what to give."""
    found = _NOT_LISTED.fullmatch(line)
    if found is None:
        return line
    at = int(found[2])
    return (f"{found[1]}: the run's population.members holds no member {at} (list index out "
            f"of range): give population.members=[...] with {at + 1} or more members, or the "
            "index of a member it holds")


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
            msg += quoting_hint(str(getattr(err, "override", "")),
                                multirun=prog == TRAIN and bool({"-m", "--multirun"} & {
                                    a.partition("=")[0] for a in _TYPED}))
        if re.match(r"In '[^']*': Could not find '", msg):  # check_command_line's, or
            msg += missing_option_hint(msg)  # Hydra's own (another config folder given)
        fail(prog, msg)


def missing_option_hint(line: str) -> str:
    """The hint (:func:`preset_hint`) after the first "Could not find 'GROUP/OPTION'" of
    ``line`` (Hydra's, a sweep's job's too), with the group's options the line lists; ""
    where it names none."""
    # the option may hold a slash (game=openspiel/kuhn_poker: Hydra's own line)
    missing = re.search(r"In '[^']*': Could not find '([\w-]+)/([^']+)'", line)
    if not missing:
        return ""
    group = missing.group(1)
    listed = re.search(rf"Available options in '{re.escape(group)}':\s*([^;]*)",
                       line[missing.end():])
    presets = re.findall(r"[\w./-]+", listed.group(1)) if listed else []
    hint = preset_hint(*missing.groups(), presets=presets)
    chosen = _user_file_choosing(*missing.groups())
    if chosen is None:
        return hint
    file, key, option = chosen  # the typo sits in the user's own file: named, in its words
    near = hint.removeprefix("; nearest: ").split(", ") if hint.startswith("; nearest: ") else []
    if near:
        hint = "; nearest: " + ", ".join(f"{key}: {n.partition('=')[2]}" for n in near)
    return f"; in {file}'s defaults: {key}: {option}{hint}"


def _user_file_choosing(group: str, option: str) -> tuple[str, str, str] | None:
    """The config file of the user's own folders (``--config-dir``, ``hydra.searchpath``,
    ``--config-path``, as :data:`_TYPED` gives them) whose defaults list chooses ``option`` of
    ``group`` (``override /algo: mapo`` in ``myconfigs/experiment/my_run.yaml``), which Hydra's
    "In 'config': Could not find 'algo/mapo'" does not name: its path (from the working folder
    where it lies under it), the entry's key as written and its value. Files the command line
    chooses (``experiment=my_run``, ``--config-name``) come first. None where the command line
    itself names that option (``algo=mapo``: its own typo) or no such file is found."""
    typed = {(o.partition("=")[0].lstrip("+~").split("@")[0], v) for o in _TYPED if "=" in o
             for v in re.split(r"[,\s]+", o.partition("=")[2])}
    if (group, option) in typed:
        return None
    name = "config"  # the primary config's: --config-name NAME (or =NAME)
    for i, word in enumerate(_TYPED):
        flag, eq, value = word.partition("=")
        if flag in ("--config-name", "-cn"):
            name = value if eq else (_TYPED[i + 1] if i + 1 < len(_TYPED) else name)
    found: list[tuple[bool, str, str, str]] = []
    for folder in _user_config_folders():
        for path in _yaml_files(folder):
            rel = path.relative_to(folder)
            under = "/".join(rel.parts[:-1])
            for key, value in _choosing_keys(path, under, f"{group}/{option}"):
                chosen = (under, rel.stem) in typed or (not under and rel.stem == name)
                shown = os.path.relpath(path)
                found.append((not chosen, str(path) if shown.startswith("..") else shown,
                              key, value))
    return min(found)[1:] if found else None


def _user_config_folders() -> list[Path]:
    """The folders of the user's configs the command line (:data:`_TYPED`) gives: after
    ``--config-dir``/``-cd`` and ``--config-path``/``-cp`` (or ``=``), and the file entries
    of ``hydra.searchpath=[...]``, absolute."""
    words, folders = absolute_config_dirs(_TYPED), []
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if i and words[i - 1] in ("--config-dir", "-cd", "--config-path", "-cp"):
            folders.append(word)
        elif eq and flag in ("--config-dir", "--config-path"):
            folders.append(value)
        elif eq and flag.lstrip("+") == "hydra.searchpath":
            folders += re.findall(r"file://([^,\]'\"]+)", value)
    return [Path(f).resolve() for f in folders if Path(f).is_dir()]


def _yaml_files(folder: Path, depth: int = 3) -> list[Path]:
    """The ``.yaml`` files of ``folder`` down to ``depth`` folders below it, hidden folders
    (a run's ``.hydra``) left out, sorted."""
    found = []
    for root, dirs, files in os.walk(folder):
        level = len(Path(root).relative_to(folder).parts)
        dirs[:] = [] if level >= depth else sorted(d for d in dirs if not d.startswith("."))
        found += [Path(root) / f for f in sorted(files) if f.endswith(".yaml")]
    return found


def _choosing_keys(path: Path, under: str, wanted: str) -> list[tuple[str, str]]:
    """The entries (key and value as written: ``override /algo``, ``mapo``) of ``path``'s
    defaults list that choose ``wanted`` (``algo/mapo``); ``under``: the file's group
    (``experiment``), which a key without a leading ``/`` is relative to."""
    import yaml

    try:
        text = path.read_text()
        if wanted.rpartition("/")[2] not in text:
            return []
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    defaults = data.get("defaults") if isinstance(data, dict) else None
    keys = []
    for entry in defaults if isinstance(defaults, list) else []:
        if isinstance(entry, dict) and len(entry) == 1:
            (key, value), = entry.items()
            bare = re.sub(r"^(override|optional)\s+", "", str(key).strip()).split("@")[0]
            full = bare[1:] if bare.startswith("/") else f"{under}/{bare}".lstrip("/")
            if f"{full}/{value}" == wanted:
                keys.append((str(key), str(value)))
    return keys


def preset_hint(group: str, option: str, presets: Sequence[str] = ()) -> str:
    """After "Could not find 'algo/my_algo'": when ``my_algo`` is a registered learner (by
    ``imports=[...]`` or an entry point; what is loaded, no torch imported for it) or the
    section of one (a section of the schema, ``algo=llm``: the learners are loaded for it),
    how to give it a preset (README, "Add your own learner"); a game's name
    or a typo of a game preset (:func:`_game_preset_hint`); else the options of ``presets``
    (the group's, Hydra's "Available options") spelt like it (``algo=mapo``: ``; nearest:
    algo=mappo``), or ""."""
    if group == "game":
        return _game_preset_hint(option, presets)
    if group != "algo":
        return _nearest_option(group, option, presets)
    from populations.config_checks import section_schemas

    if option in section_schemas():  # a section of the schema (llm, vdn): the learners load
        # (torch, for this refusal only) to name the one whose settings it holds
        import llm_agents.learner  # noqa: F401 - registers llm_grpo
        from marl import registry

        registry.entries()
    registry = sys.modules.get("marl.registry")  # what is loaded: no torch imported for it
    learners = registry.registered_learners() if registry is not None else {}
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
    return _nearest_option(group, option, presets)


def _nearest_option(group: str, option: str, presets: Sequence[str]) -> str:
    """``; nearest: algo=mappo``: the options of ``presets`` spelt like ``option`` (a typo),
    as :func:`~populations.config_checks.nearest_keys` finds a key's; "" where none is."""
    from populations.config_checks import nearest_keys

    near = nearest_keys(option, list(presets), "") if presets else ""
    if not near.startswith("nearest: "):
        return ""
    names = near.removeprefix("nearest: ").split(", ")
    return f"; nearest: {', '.join(f'{group}={n}' for n in names)}"


def _game_preset_hint(option: str, presets: Sequence[str] = ()) -> str:
    """After "Could not find 'game/gridtag'": ``game=`` picks a preset of ``configs/game``;
    a game's name (registered by ``imports=[...]``: what is loaded, nothing imported for it;
    an adapter's spec, ``openspiel/kuhn_poker``; a built-in ``tool/...``) is given by
    ``game.name=``; a name spelt like presets (``kuhnn``) gets the nearest; any other, how
    games are named (``game.name=`` of it would be refused as an unknown game)."""
    module = sys.modules.get("games.registry")
    factory = module.registered_factory(option) if module is not None else None
    if factory is not None:
        return (f"; {option} is a game registered by {getattr(factory, '__module__', '?')}, "
                f"not a preset: game.name={option} plays it")
    prefixes = (*getattr(module, "PREFIXES", ("openspiel/", "pettingzoo/", "vmas/")),
                *getattr(module, "LAZY_BUILTINS", {"tool/": ""}))
    if option.startswith(prefixes) and option not in prefixes:
        named = f"game.name={option}"  # Hydra read the value unquoted: quoted if it must be
        if not re.fullmatch(r"[\w./@+-]*", option):
            named = shlex.quote(f'game.name="{option}"')
        return f"; {option} is a game's name, not a preset: {named} plays it"
    return _nearest_option("game", option, presets) or (
        "; game= picks one of these presets; any other game is named by game.name=NAME: "
        "a game registered by @games.register in a module given by imports=[...], or "
        "openspiel/..., pettingzoo/..., vmas/...")


def quoting_hint(override: str, multirun: bool = True) -> str:
    """The hint after Hydra's grammar error (``mismatched input '('``), which names neither
    the override it could not read (among several) nor how to write it: that override and
    itself quoted (``'game.name="openspiel/dark_hex(num_rows=3)"'``) where a plain
    ``key=value`` can be, else an example. A sweep's values (``multirun``: the command has
    ``-m``) are quoted each by itself; outside a sweep, and for a folder (``hydra.run.dir``,
    ``hydra.sweep.dir``) always, the whole value is: Hydra refuses ``"a","b"`` there as an
    ambiguous sweep."""
    key, eq, value = override.partition("=")
    if eq and value and re.fullmatch(r"[+~]{0,2}[\w.@/-]+", key) and \
            not re.search(r"[\"'\\]|\$\{", value):
        parts, depth, start = [], 0, 0  # a sweep's values (-m): each quoted by itself
        for i, c in enumerate(value):
            depth += (c in "([{") - (c in ")]}")
            if c == "," and depth == 0:
                parts, start = [*parts, value[start:i]], i + 1
        parts.append(value[start:])
        if not multirun or key.lstrip("+~") in ("hydra.run.dir", "hydra.sweep.dir"):
            parts = [value]
        quoted = shlex.quote(key + "=" + ",".join(
            p if re.fullmatch(r"[\w./@+-]*", p) else f'"{p}"' for p in parts))
        return f" (in {override}: a value holding ( ) [ ] , = or spaces needs quotes: {quoted})"
    return (" (a value holding ( ) [ ] , = or spaces needs quotes: "
            "'game.name=\"openspiel/goofspiel(num_cards=4)\"')")


class OneLineParser(argparse.ArgumentParser):
    """argparse with its usage errors in one line (exit 2, as argparse does)."""

    def error(self, message: str) -> NoReturn:
        fail(self.prog, f"{message} (see --help)")


def integer(accepted: str) -> Callable[[str], int]:
    """An argparse ``type`` for a numeric flag whose range is checked later (with the words
    ``expected <accepted>``): text that is no integer raises ``ArgumentTypeError`` naming the
    value and ``accepted``, as the range errors do; argparse's own line ("invalid int value:
    'ten'") did not say what the flag accepts."""

    def convert(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {accepted}") from None

    convert.__name__ = "int"
    return convert


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


def set_typed(args: Sequence[str]) -> None:
    """Record ``selfplay-train``'s command line as typed (before it adds ``~game`` to
    ``sys.argv``): the resume hints and error lines repeat it."""
    _TYPED[:] = args


def typed_words() -> list[str]:
    """``selfplay-train``'s command line as typed (:func:`set_typed`; empty before)."""
    return list(_TYPED)


def typed() -> list[str]:
    """The command line as typed, its config folders absolute (a sweep's resume command is
    pasted from any folder: :func:`populations.command_line.absolute_config_dirs`)."""
    return absolute_config_dirs(_TYPED or sys.argv[1:])


def untyped(message: str) -> str:
    """Hydra's argparse message without the ``~game`` this CLI added (game_overrides)."""
    return message if "~game" in _TYPED else re.sub(r"(?<!\S)~game ", "", message)

