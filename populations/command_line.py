"""``selfplay-train``'s command line: the words :mod:`populations.cli` (the entry point),
:mod:`populations.train_overrides`, :mod:`populations.run_guard` and :mod:`populations.sweeps`
(a sweep's folders) read and write. The error a command line
or config causes (:class:`CLIError`), the ``game.name=`` rewrite (:func:`game_overrides`), an
override's values (:func:`override_values`), and the commands printed back to the user to
resume a run (:func:`resume_command`), each word quoted as a shell and Hydra read it back.

Imports nothing heavy: every CLI's startup loads it (Hydra's parser loads in the functions).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TRAIN = "selfplay-train"


class CLIError(Exception):
    """A mistake on the command line or in the config (reported in one line, exit 2)."""


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


def override_values(override: Any) -> list[Any]:
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


def hydra_value(run_dir: Path | str) -> str:
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


_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v",
              "\f": "\\f", "\r": "\\r", "\x1b": "\\e"}


# control characters; format characters (U+202E turns the text after it right to left, a
# zero-width space hides itself); line and paragraph separators (U+2028 breaks a line)
_UNSEEN = frozenset({"Cc", "Cf", "Zl", "Zp"})


def _unseen(c: str) -> bool:
    return unicodedata.category(c) in _UNSEEN


def shell_word(word: str) -> str:
    """``word`` quoted as one shell word (:func:`shlex.quote`). A word holding a control
    character (a newline, ESC: in the name of a run folder made before such names were
    refused), a format character (U+202E, right-to-left override) or a line or paragraph
    separator (U+2028, U+2029) is written in the shell's ``$'...'`` form with each such
    character escaped (``\\n``, ``\\e``, ``\\x7f``, ``\\u202e``): quoted raw, a newline split
    the printed command in two lines, ESC's sequence was run by the terminal instead of
    shown and U+202E showed the rest of the command reversed."""
    if not any(map(_unseen, word)):
        return shlex.quote(word)

    def escaped(c: str) -> str:
        if c in ("\\", "'"):
            return "\\" + c
        if not _unseen(c):
            return c
        o = ord(c)
        return _C_ESCAPES.get(c) or (f"\\x{o:02x}" if o < 0x80 else
                                     f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")

    return "$'" + "".join(map(escaped, word)) + "'"


def run_dir_override(run_dir: Path, key: str = "hydra.run.dir") -> str:
    """``hydra.run.dir=<run_dir>`` as a shell and Hydra can read it back: a sweep job's
    ``0_algo=mappo,seed=1`` (a comma: a list), ``run#1``, spaces or non-ASCII letters are
    refused by Hydra's grammar unquoted, and a space splits the shell's words (a control
    character: :func:`shell_word`)."""
    return shell_word(f"{key}={hydra_value(run_dir)}")


_NOT_REPEATED = ("resume", "resume_override", "keep_going", "hydra.run.dir")
_SEARCHPATH = re.compile(r"^(\+{0,2}hydra\.searchpath=)(.*)$", re.S)


def absolute_config_dirs(words: Sequence[str]) -> list[str]:
    """``words`` (a command line, or :func:`populations.train_overrides.config_flags`'s
    words) with the config folders given relative to the working folder made absolute:
    ``--config-dir D``,
    ``-cd D``, ``--config-dir=D`` and the ``file://`` (or scheme-less) entries of
    ``hydra.searchpath=[...]``; the rest as it was. A printed resume command is pasted from
    any folder: ``hydra.searchpath=[file://myconfigs]`` repeated as typed composed without
    its folder there ("provider=hydra.searchpath in command-line, path=myconfigs is not
    available", then the experiment it holds not found). ``--config-path`` is relative to the
    app's module, not to the working folder: kept."""
    cwd = working_folder()
    out: list[str] = []
    words = list(words)
    for i, word in enumerate(words):
        if i and words[i - 1] in ("--config-dir", "-cd"):
            out.append(os.path.abspath(os.path.join(cwd, word)))  # an absolute one: kept
        elif word.startswith("--config-dir="):
            out.append("--config-dir=" + os.path.abspath(os.path.join(cwd, word.split("=", 1)[1])))
        elif _SEARCHPATH.match(word):
            out.append(_absolute_searchpath(word, cwd))
        else:
            out.append(word)
    return out


def _absolute_searchpath(word: str, cwd: str) -> str:
    """``hydra.searchpath=[...]`` with its file entries absolute (as typed where Hydra's
    grammar cannot read it, or a value is not a plain list of strings)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    key, value = _SEARCHPATH.match(word).groups()  # type: ignore[union-attr]
    try:
        paths = OverridesParser.create().parse_overrides([word])[0].value()
    except Exception:  # noqa: BLE001 - Hydra reports its own grammar errors
        return word
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths) or \
            "${" in value:
        return word
    entries = []
    for path in paths:
        scheme, sep, rest = path.partition("://")
        if not sep:  # Hydra reads a path without a scheme as a file path
            scheme, rest = "file", path
        entries.append(f"file://{os.path.abspath(os.path.join(cwd, rest))}" if scheme == "file"
                       else path)
    return key + "[" + ",".join(map(hydra_value, entries)) + "]"


def shadowed_presets(config_dir: str | None, searchpath: Sequence[str]) -> list[str]:
    """A warning for each config file of the user's folders (``config_dir``, ``--config-dir``,
    and the ``hydra.searchpath`` entries ``searchpath``, as typed) that a shipped one of the
    same group and name hides: Hydra reads the first ``<group>/<name>.yaml`` on its search
    path, and the shipped configs come first, so ``cfg2/game/kuhn.yaml`` (``players: 3``) was
    silently ``configs/game/kuhn.yaml`` for ``game=kuhn``. Hydra has no way to put a user's
    folder first (``--config-dir`` goes after the shipped configs, ``hydra.searchpath`` after
    those; ``--config-path`` replaces them all), so the way out is a name of its own. A copy
    that is the shipped file byte for byte hides nothing and is not named; pkg:// entries
    are not looked into."""
    import importlib.util

    spec = importlib.util.find_spec("configs")
    if spec is None or not spec.submodule_search_locations:
        return []
    shipped = Path(next(iter(spec.submodule_search_locations)))
    folders = [config_dir] if config_dir else []
    for entry in searchpath:
        scheme, sep, rest = entry.partition("://")
        if not sep or scheme == "file":
            folders.append(rest if sep else entry)
    seen, lines = set(), []
    for folder in folders:
        if os.path.abspath(folder) in seen:  # -cd D and hydra.searchpath=[D]: named once
            continue
        seen.add(os.path.abspath(folder))
        for theirs in sorted(shipped.rglob("*.yaml")):
            rel = theirs.relative_to(shipped)
            mine = Path(folder, rel)
            try:
                if not mine.is_file() or mine.read_bytes() == theirs.read_bytes():
                    continue
            except OSError:
                continue
            group, name = rel.parent.as_posix(), rel.stem
            picks = f"{group}={name}" if group != "." else f"--config-name {name}"
            new = f"{group}=my_{name}" if group != "." else f"--config-name my_{name}"
            lines.append(f"warning: {mine} is not used: the shipped {theirs} has the same "
                         f"name and comes first on Hydra's search path ({picks} reads it); "
                         f"give yours a name of its own ({mine.with_stem('my_' + name)}, "
                         f"then {new})")
    return lines


def working_folder() -> str:
    """The folder relative paths of the command line were read from: Hydra's ``runtime.cwd``
    in a run (where a ``hydra.job.chdir=true`` run has moved), else this process's."""
    hydra_config = sys.modules.get("hydra.core.hydra_config")
    if hydra_config is not None and hydra_config.HydraConfig.initialized():
        return str(hydra_config.HydraConfig.get().runtime.cwd)
    return os.getcwd()


def resume_command(run_dir: Path, overrides: Sequence[str] | None = None,
                   flags: Sequence[str] = ()) -> str:
    """``selfplay-train <flags> <the run's overrides> resume=true hydra.run.dir=<run_dir>``,
    each word quoted for a shell (:func:`shell_word`), from the run's task ``overrides`` (Hydra's
    ``hc.overrides.task``, as typed) and the flags that chose its config (``flags``:
    :func:`populations.train_overrides.config_flags` of the command line): ``resume=true
    hydra.run.dir=...`` alone composes the default config, which a run started with
    ``game=kuhn imports=[push]`` (or ``--config-dir D --config-name myexp``) refuses
    ('cannot resume ... with other settings'). An earlier resume's own
    ``resume``/``resume_override`` are not repeated (nor a sweep job's ``keep_going``, which
    a single run does not use), nor
    the ``~game`` this CLI put before ``game.name=`` (:func:`game_overrides` puts it back)."""
    flags = absolute_config_dirs(flags)  # pasted from another folder too
    args = ["~game" if o == "~game=null" else o for o in overrides or ()  # a sweep job's
            if o.split("=", 1)[0].lstrip("+~") not in _NOT_REPEATED]  # spelling of ~game
    if "~game" in args and game_overrides([a for a in args if a != "~game"]) == args:
        args.remove("~game")
    return " ".join([TRAIN, *map(shell_word, [*flags, *args]), "resume=true",
                     run_dir_override(run_dir)])
