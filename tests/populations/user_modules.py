"""Helpers for tests that bring a user's module or run ``selfplay-train`` in this process.

:func:`user_module` writes a module's source into the working directory and imports it, as
``imports=[...]`` finds a user's module beside the folder the run is launched from; the
test undoes what the module registered (``cleanup``). :func:`refused_line` runs
``selfplay-train`` here and returns the one line a refusal ends with.
"""

from __future__ import annotations

import contextlib
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


def refused_line(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``selfplay-train argv`` ends with (exit 2), run in this process."""
    from populations.cli import train_main

    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.setattr(sys, "argv", ["selfplay-train", *argv])
    with pytest.raises(SystemExit) as stop:
        train_main()
    assert stop.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]
