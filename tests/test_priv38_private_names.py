"""No product module reads another module's underscored names (session 38). Session 37's walk
(test_priv37_private_names, which this one replaces: it read the same forms for the
command-line modules only, configs included) covered those alone; the rest still
shared helpers by their private names: ``eval_cli`` imported 13 of ``eval_checks`` and
``eval_notes`` and ``run_folder._holder``, ``train_overrides`` four of ``config_groups``,
``experiment``, ``single_run`` and ``cli`` those of ``single_eval``, ``run_figures`` and
``learner_build``, ``league``, ``league_training`` and ``league_cli`` those of
``league_progress`` and ``league``, ``psro_config`` the ContextVar ``exploitability._WHY``,
``marl.adv_diagnostics`` ``advantages._FlatKeys``, ``llm_agents.settings``
``actions._MODES``, ``bench/league_scale`` three of ``crossplay``. A helper two modules share
is public (renamed, every caller with it); the walk reads every module of the packages below,
``from x import _name`` (relative ones too, and inside functions) and ``<module>._name``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("games", "marl", "llm_agents", "populations", "configs", "bench", "examples")
KNOWN: dict[str, str] = {}
"""Left, with the reason (none now: games38 made public games.pettingzoo.resolve_env and
obs_array_text, marl.returns.accumulate_dtype; games/check.py's reads of games.core went with
split38a's split)."""


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _reads(me: str, rel: str, text: str, modules: set[str]) -> list[str]:
    """Where module ``me`` (file ``rel``, holding ``text``) reads an underscored (not dunder)
    name of another of ``modules``: ``from <module> import _name`` (absolute or relative) or
    ``<module or its alias>._name``."""
    tree = ast.parse(text, rel)
    package = me if rel.endswith("__init__.py") else me.rpartition(".")[0]
    aliases: dict[str, str] = {}  # a local name -> the module it names
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in modules:
                    aliases[a.asname or a.name] = full
                elif _private(a.name) and base != me and base in modules:
                    found.append(f"{rel}:{node.lineno} imports {full}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = ast.unparse(node.value)
            owner = aliases.get(base, base if base in modules else None)
            if owner is not None and owner != me:
                found.append(f"{rel}:{node.lineno} reads {owner}.{node.attr}")
    return found


def _known(where: str) -> bool:
    rel, _, said = where.partition(":")
    name = said.split(" ")[-1]
    return rel in KNOWN and name.startswith(KNOWN[rel])


def test_no_product_module_reads_another_modules_private_name():
    modules = _modules()
    reads = [where for me, path in modules.items()
             for where in _reads(me, str(path.relative_to(ROOT)), path.read_text(), set(modules))
             if not _known(where)]
    assert reads == [], reads


def test_the_known_ones_are_still_there():
    """A KNOWN entry fixed since is taken out: the list says what is left, not what was."""
    modules = _modules()
    by_path = {path: me for me, path in modules.items()}
    for rel in KNOWN:
        path = ROOT / rel
        reads = _reads(by_path[path], rel, path.read_text(), set(modules))
        assert any(_known(where) for where in reads), f"{rel} is fixed: take it out of KNOWN"


def test_the_walk_finds_every_form():
    """The walk's own check: absolute and relative imports of an underscored name (inside a
    function too), an aliased module's and a dotted module's attribute are all found, and a
    module's own names and dunders are not (a walk that finds nothing passes any code)."""
    modules = {"populations.a", "populations.b", "marl.c", "populations"}
    text = ("from populations import b as bee\nfrom populations.a import _x, public\n"
            "import marl.c\nfrom . import b\nfrom .me import _mine\n"
            "def f():\n    from .a import _y\n    bee._z.clear()\n    marl.c._w()\n"
            "    b.__doc__\n    return _x, public\n")
    modules.add("populations.me")
    reads = _reads("populations.me", "populations/me.py", text, modules)
    assert sorted(r.split(" ", 1)[1] for r in reads) == [
        "imports populations.a._x", "imports populations.a._y", "reads marl.c._w",
        "reads populations.b._z"], reads
