"""Helpers for tests that bring a user's module or run ``selfplay-train`` in this process.

:func:`user_module` writes a module's source into the working directory and imports it, as
``imports=[...]`` finds a user's module beside the folder the run is launched from; the
test undoes what the module registered (``cleanup``). :func:`train_here` runs
``selfplay-train`` (or another console script) in this process and undoes what the run left
process-wide; :func:`refused_line` runs it here and returns the one line a refusal ends with.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest


@contextlib.contextmanager
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str,
                cleanup: Callable[[], None] = lambda: None) -> Iterator[ModuleType]:
    """Module ``name`` holding ``source``, importable from ``tmp_path`` (made the working
    directory) and imported; on exit it is dropped from ``sys.modules`` and ``cleanup`` runs
    (taking its games, rules or solvers out of their registries)."""
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    try:
        yield __import__(name)
    finally:
        sys.modules.pop(name, None)
        cleanup()


def unregister_games(*names: str) -> Callable[[], None]:
    """A ``cleanup`` taking games ``names`` out of the game registry."""
    def cleanup() -> None:
        from games.registry import _REGISTRY

        for game in names:
            _REGISTRY.pop(game, None)
    return cleanup


def train_here(argv: list[str], monkeypatch: pytest.MonkeyPatch, cwd: Path | None = None,
               main: Callable[[], object] | None = None, prog: str = "selfplay-train") -> object:
    """``prog argv`` run in this process (``main``: ``selfplay-train``'s by default), from
    ``cwd`` when given: what ``main`` returns; its ``SystemExit`` reaches the caller.

    After it, what the run left process-wide is undone: the root log handlers Hydra added
    (on this test's captured stderr and the run's ``cli.log``: a later test's log line hit a
    closed file) and the root's level, and Hydra's config (``HydraConfig``, put back as it
    was: a later read of ``runtime.cwd``, as :func:`populations.command_line.working_folder`
    does, named this test's folder)."""
    if main is None:
        from populations.cli import train_main as main
    if cwd is not None:
        monkeypatch.chdir(cwd)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.setattr(sys, "argv", [prog, *argv])
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    hydra_config = _hydra_config()
    try:
        return main()
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        root.setLevel(level)
        if "hydra.core.hydra_config" in sys.modules:  # not imported by a run refused early
            sys.modules["hydra.core.hydra_config"].HydraConfig.instance().cfg = hydra_config


def _hydra_config() -> object:
    """Hydra's config of this process (None before a Hydra run, or before Hydra loads)."""
    module = sys.modules.get("hydra.core.hydra_config")
    return module.HydraConfig.instance().cfg if module is not None else None


def refused_line(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``selfplay-train argv`` ends with (exit 2), run in this process by
    :func:`train_here` (what the run left process-wide undone)."""
    with pytest.raises(SystemExit) as stop:
        train_here(argv, monkeypatch)
    assert stop.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]
