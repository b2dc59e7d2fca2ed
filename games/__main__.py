"""``python -m games [FAMILY ...] [--import MODULE ...]``: the names ``games.make`` and
``selfplay-train game.name=`` take, by family, found without building or training anything.

* ``registered``: the registry's names (the matrix games, the built-in tool tasks, games of
  installed ``selfplay.games`` entry points and of the modules given with ``--import``);
* ``openspiel``: ``openspiel/<game>`` for each of ``pyspiel.registered_names()``;
* ``pettingzoo``: ``pettingzoo/<module>`` for each versioned game module of the PettingZoo
  families found (``mpe2``, ``pettingzoo.classic``, ...); a module that imports a package
  not installed (``multiwalker_v9``: Box2D, ``pistonball_v6``: pymunk) is listed with the
  package and the install command, found from the import statements of its source;
* ``vmas``: ``vmas/<scenario>`` for each VMAS scenario.

Packages are found on disk, not imported: listing VMAS's scenarios loads no torch, listing
PettingZoo's modules builds no environment. A family whose package is not installed says so
in one line. ``selfplay-train``'s game presets (``game=kuhn``) are its configs', not the
package's: ``selfplay-train --help`` lists them.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import importlib.util
import pkgutil
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from games.registry import registered

# the package folders searched for ``pettingzoo/<module>`` names (games.pettingzoo.FAMILIES,
# which imports PettingZoo to be read; here only their folders are listed)
PETTINGZOO_FAMILIES = ("mpe2", "pettingzoo.classic", "pettingzoo.butterfly", "pettingzoo.sisl",
                       "pettingzoo.atari")
VMAS_FOLDERS = ("scenarios", "scenarios/mpe", "scenarios/debug")
FAMILIES = ("registered", "openspiel", "pettingzoo", "vmas")
_VERSIONED = re.compile(r"\w+_v\d+")


def _folder(package: str) -> Path | None:
    """The folder of ``package`` (dotted), found without importing it or its parents
    (``vmas/__init__`` imports torch); None when it is not installed."""
    top, *rest = package.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)), *rest)
    return folder if folder.is_dir() else None


def _modules(folder: Path) -> list[str]:
    """The plain modules (not packages, not private) directly in ``folder``."""
    return sorted(m.name for m in pkgutil.iter_modules([str(folder)])
                  if not m.ispkg and not m.name.startswith("_"))


def openspiel_names() -> list[str] | str:
    """``openspiel/<game>`` names, or why there are none."""
    try:
        import pyspiel
    except ImportError:
        return "pyspiel is not installed (pip install open_spiel)"
    return [f"openspiel/{n}" for n in sorted(pyspiel.registered_names())]


@functools.cache
def _source(module: str) -> Path | None:
    """The file of ``module`` (dotted; a package's ``__init__.py``), found on disk."""
    head, _, tail = module.rpartition(".")
    folder = _folder(module) if "." not in module else _folder(head)
    if folder is None:
        return None
    if "." not in module:
        path = folder / "__init__.py"
    else:
        path = folder / tail / "__init__.py"
        path = path if path.is_file() else folder / f"{tail}.py"
    return path if path.is_file() else None


@functools.cache
def _imported(path: Path, package: str) -> tuple[str, ...]:
    """The modules ``path`` (of ``package``) imports when it loads: its top-level import
    statements, those in a ``try`` (optional ones) left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package (a package's own folder for 1)
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            names.append(base)
            names += [f"{base}.{a.name}" for a in node.names]  # a submodule, maybe
    return tuple(names)


@functools.cache
def missing_packages(module: str) -> tuple[str, ...]:
    """Packages ``module`` imports when it loads (through the modules of its own top-level
    package it imports) that are not installed, found on disk without importing anything:
    ``('Box2D',)`` for ``pettingzoo.sisl.multiwalker_v9``."""
    top = module.split(".")[0]
    missing: set[str] = set()
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        if parts[0] != top:
            if parts[0] not in sys.stdlib_module_names and _spec(parts[0]) is None:
                missing.add(parts[0])
            continue
        for i in range(1, len(parts) + 1):  # its packages' __init__ files load first
            path = _source(".".join(parts[:i]))
            if path is not None and ".".join(parts[:i]) not in seen | {name}:
                todo.append(".".join(parts[:i]))
        path = _source(name)
        if path is not None:
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            todo += _imported(path, package)
    return tuple(sorted(missing))


@functools.cache
def _spec(top: str) -> object | None:
    try:
        return importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None


def _install_hint(module: str) -> str:
    fam = re.match(r"pettingzoo\.(\w+)\.", module)
    return f"pip install 'pettingzoo[{fam.group(1)}]'" if fam else "pip install them"


def pettingzoo_names() -> list[str] | str:
    """``pettingzoo/<package>.<module>`` of every versioned game module found; a module
    that imports a package not installed says which, and how to install it."""
    out = []
    for package in PETTINGZOO_FAMILIES:
        folder = _folder(package)
        for m in _modules(folder) if folder is not None else ():
            if _VERSIONED.fullmatch(m):
                module = f"{package}.{m}"
                lacks = missing_packages(module)
                out.append(f"pettingzoo/{module}" + (
                    f"  (needs {', '.join(lacks)}, not installed: {_install_hint(module)})"
                    if lacks else ""))
    return out or f"none of {list(PETTINGZOO_FAMILIES)} is installed (pip install pettingzoo mpe2)"


def vmas_names() -> list[str] | str:
    """``vmas/<scenario>`` of every scenario module (MPE and debug ones included)."""
    root = _folder("vmas")
    if root is None:
        return "vmas is not installed (pip install vmas)"
    found = {m for sub in VMAS_FOLDERS if (root / sub).is_dir() for m in _modules(root / sub)}
    return [f"vmas/{s}" for s in sorted(found)]


def catalogue(families: Sequence[str] = FAMILIES) -> dict[str, list[str] | str]:
    """Family -> its names (or one line saying why it has none), for ``families``."""
    listers = {"registered": registered, "openspiel": openspiel_names,
               "pettingzoo": pettingzoo_names, "vmas": vmas_names}
    return {f: listers[f]() for f in families}


HEADINGS = {
    "registered": "registered names (games.make(name), game.name=<name>)",
    "openspiel": "OpenSpiel games (game.name=openspiel/<game>; parameters: "
                 "openspiel/<game>(k=v) or game.kwargs)",
    "pettingzoo": "PettingZoo modules (game.name=pettingzoo/<module>; also any module path "
                  "or <module>:<function returning an env>)",
    "vmas": "VMAS scenarios, natively batched (game.name=vmas/<scenario>)",
}


class _OneLineParser(argparse.ArgumentParser):
    """argparse with its usage errors in one line, exit 2, as the other CLIs'
    (``populations.cli_common.OneLineParser``: ``games`` imports nothing of ``populations``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def import_refusal(module: str) -> str | None:
    """Why ``--import module`` cannot be imported, in one line (None: imported), with the
    words of ``selfplay-eval``'s and ``python -m populations.league``'s check: an empty name
    (an unset shell variable) and a path ended in a 14-line traceback (``Empty module
    name``, a relative import)."""
    cwd = Path.cwd()
    if not module.strip():
        return (f"--import: {module!r} is empty (an unset shell variable?); give a module name "
                f"importable from {cwd}")
    if "/" in module or "\\" in module or module.startswith(".") or module.endswith(".py"):
        return (f"--import: {module!r} is a path; give a module name importable from {cwd} "
                "(mypkg.games for mypkg/games.py)")
    if str(cwd) not in sys.path and "" not in sys.path:
        sys.path.insert(0, str(cwd))
    try:
        importlib.import_module(module)
    except Exception as err:  # noqa: BLE001 - the user's module: any error, one line
        why = " ".join(str(err).split()) or type(err).__name__
        return f"--import: cannot import {module!r} from {cwd}: {type(err).__name__}: {why}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = _OneLineParser(
        prog="python -m games", description="List the game names games.make and "
        "selfplay-train game.name= take, by family (nothing is built).")
    parser.add_argument("family", nargs="*", metavar="FAMILY",
                        help=f"families to list (default: all): {', '.join(FAMILIES)}")
    parser.add_argument("--import", dest="imports", action="append", default=[],
                        metavar="MODULE", help="import MODULE first (its @games.register "
                        "games are listed as registered)")
    args = parser.parse_args(argv)
    unknown = [f for f in args.family if f not in FAMILIES]
    if unknown:
        parser.exit(2, f"python -m games: unknown family {unknown[0]!r}; choose from "
                       f"{list(FAMILIES)}\n")
    for module in args.imports:
        refusal = import_refusal(module)
        if refusal:
            parser.exit(2, f"{parser.prog}: {refusal}\n")
    try:
        found = catalogue(args.family or FAMILIES)
    except ImportError as err:  # an installed selfplay.games entry point failed: one line
        parser.exit(2, f"{parser.prog}: {err}\n")  # (selfplay-train's words, not a traceback)
    for family, names in found.items():
        if isinstance(names, str):
            print(f"{HEADINGS[family]}: {names}")
            continue
        lacking = sum("not installed" in n for n in names)
        print(f"{HEADINGS[family]}: {len(names)}" + (
            f" ({lacking} need a package that is not installed, marked)" if lacking else ""))
        for name in names:
            print(f"  {name}")
    if not args.family:
        print("selfplay-train's game presets (game=<preset>, e.g. game=kuhn): selfplay-train "
              "--help")
    return 0


if __name__ == "__main__":
    sys.exit(main())
