"""A registry's table is read through its owner's accessor, and the test helper that runs a
refused ``selfplay-train`` in this process undoes what the run left (tidy35b).

Before: ``games.check.user_game`` imported ``games.registry._REGISTRY`` and the ``game=NAME``
hint (``populations.cli_common``) read it by ``getattr``, where
``games.registry.registered_factory`` answers the same; ``refused_line`` left the root log
handlers of a run refused inside Hydra's task (its captured stderr, the run's ``cli.log``)
on the root logger of every later test.
"""

from __future__ import annotations

import ast
import logging
import sys
from pathlib import Path

from tests.populations.user_modules import refused_line

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("games", "marl", "llm_agents", "populations")


def _table_reads(path: Path) -> list[str]:
    """Where ``path`` reads a module's ``_REGISTRY`` other than its own: an import of it,
    ``module._REGISTRY``, or ``getattr(module, "_REGISTRY")``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and any(a.name == "_REGISTRY" for a in node.names):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports it")
        elif isinstance(node, ast.Attribute) and node.attr == "_REGISTRY":
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
        elif isinstance(node, ast.Constant) and node.value == "_REGISTRY":
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} '_REGISTRY'")
    return found


def test_no_module_reads_another_modules_registry_table():
    reads = [where for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             for where in _table_reads(path)]
    assert reads == [], reads


def test_a_refused_run_leaves_no_log_handler_and_hydras_config_as_it_was(
        tmp_path, monkeypatch, capsys):
    """``resume=true`` in a folder holding no run is refused inside Hydra's task, after Hydra
    put its handlers (stderr, the run's ``cli.log``) on the root logger."""
    from hydra.core.hydra_config import HydraConfig

    monkeypatch.chdir(tmp_path)
    root = logging.getLogger()
    handlers, level, config = list(root.handlers), root.level, HydraConfig.instance().cfg
    line = refused_line(["game=kuhn", "resume=true", "logger=none", "progress=false",
                         f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, capsys)
    assert line.startswith("selfplay-train: resume=true but ") and "holds no run" in line, line
    # Hydra's logging config closed and took off the handlers it found (pytest's): not put back
    assert [h for h in root.handlers if h not in handlers] == [] and root.level == level
    assert sys.modules["hydra.core.hydra_config"].HydraConfig.instance().cfg is config
