"""The command-line modules read one another's helpers and state through public names
(session 37): ``populations.cli`` imported ``experiment._plain``, ``run_guard._before`` and
four more of run_guard's helpers, ``sweeps._SWEPT``, ``train_overrides._hydra_args`` and
``cli_common._untyped``, and cleared or filled run_guard's and cli_common's private lists and
dicts in place; ``psro_run`` imported ``experiment._plain`` and ``run_guard``
``cli_common._typed``. The walk is the one of tests/test_left36_private_names.py, over every
package and over imports inside functions too: no module reads an underscored name of the
modules below except its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("games", "marl", "llm_agents", "populations", "configs", "bench")
OWNERS = tuple(f"populations.{name}" for name in (
    "cli", "cli_common", "command_line", "eval_cli", "experiment", "psro_run", "run_guard",
    "sweeps", "train_overrides"))
"""The modules whose underscored names stay their own."""
KNOWN: dict[str, str] = {}
"""Left, with the reason (none since session 38: ``sweep_summary`` reads
``experiment.finished_run_row``, single_run's public name, re-exported by its old home)."""


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _reads(path: Path, text: str | None = None) -> list[str]:
    """Where ``path`` (holding ``text``: its own by default) reads an underscored (not dunder)
    name of one of :data:`OWNERS` other than itself: ``from <owner> import _name`` or
    ``<owner alias>._name``."""
    me, rel = _module(path), str(path.relative_to(ROOT))
    tree = ast.parse(path.read_text() if text is None else text, rel)
    aliases: dict[str, str] = {}  # a local name -> the owner module it names
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if node.module in OWNERS and node.module != me and _private(a.name):
                    found.append(f"{rel}:{node.lineno} imports {full}")
                if full in OWNERS:
                    aliases[a.asname or a.name] = full
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in OWNERS and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = ast.unparse(node.value)
            owner = aliases.get(base, base if base in OWNERS else None)
            if owner is not None and owner != me:
                found.append(f"{rel}:{node.lineno} reads {owner}.{node.attr}")
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_reads_a_private_name_of_the_command_line_modules():
    reads = [where for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             for where in _reads(path)
             if not where.endswith(KNOWN.get(str(path.relative_to(ROOT)), "\0"))]
    assert reads == [], reads


def test_the_walk_finds_both_forms():
    """The walk's own check: an import of an underscored name and an attribute read are both
    found (a walk that finds nothing passes the test above on any code)."""
    path = ROOT / "populations" / "priv37_probe_never_written.py"
    text = ("from populations import run_guard\nfrom populations.sweeps import _SWEPT\n"
            "def f():\n    from populations.experiment import _plain\n"
            "    run_guard._BEFORE.clear()\n")
    reads = _reads(path, text)
    assert [r.split(" ", 1)[1] for r in reads] == [
        "imports populations.sweeps._SWEPT", "imports populations.experiment._plain",
        "reads populations.run_guard._BEFORE"], reads

