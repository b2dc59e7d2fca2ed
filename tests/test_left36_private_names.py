"""No module reads another module's private tables or helpers that its owner names publicly
(session 36): ``populations.cli_common`` read ``marl.registry._LEARNERS`` (now
``registered_learners()``) and ``populations.cli`` imported ``games.registry._plain`` (now
``as_literals``). The same walk as tests/populations/test_tidy35b_public_accessors.py's for
``_REGISTRY``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("games", "marl", "llm_agents", "populations")
PRIVATE = {"marl/registry.py": ("marl.registry", "_LEARNERS"),
           "games/registry.py": ("games.registry", "_plain")}
"""owner's file -> (its module, the private name others must not read)."""


def _reads(path: Path) -> list[str]:
    """Where ``path`` reads another module's name of :data:`PRIVATE`: an import of it,
    ``<module>.<name>``, or ``getattr(<module>, "<name>")`` (``_LEARNERS``, whose name no
    other module uses for its own)."""
    rel = str(path.relative_to(ROOT))
    found = []
    for node in ast.walk(ast.parse(path.read_text(), rel)):
        for owner, (module, name) in PRIVATE.items():
            if owner == rel:
                continue
            if isinstance(node, ast.ImportFrom) and node.module == module and any(
                    a.name == name for a in node.names):
                found.append(f"{rel}:{node.lineno} imports {module}.{name}")
            elif name == "_LEARNERS" and (
                    (isinstance(node, ast.Attribute) and node.attr == name)
                    or (isinstance(node, ast.Constant) and node.value == name)):
                found.append(f"{rel}:{node.lineno} reads {name}")
            elif isinstance(node, ast.Attribute) and node.attr == name and isinstance(
                    node.value, ast.Attribute) and ast.unparse(node.value) == module:
                found.append(f"{rel}:{node.lineno} reads {module}.{name}")
    return found


def test_no_module_reads_another_modules_private_learners_or_literals():
    reads = [where for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             for where in _reads(path)]
    assert reads == [], reads


def test_the_public_names_answer_as_the_private_ones_did():
    import numpy as np

    from games.registry import as_literals
    from marl import registry

    registry.entries()  # marl's own learners loaded
    assert registry.registered_learners() == registry.entries()
    assert as_literals({"a": np.int64(2), "b": (np.float32(0.5),)}) == {"a": 2, "b": (0.5,)}
