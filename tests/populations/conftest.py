"""Fixtures of the populations tests."""

from __future__ import annotations

import io
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest


@pytest.fixture
def recorded_bars(monkeypatch) -> Callable[..., list[Any]]:
    """``recorded_bars(module, name="tqdm")``: ``module.<name>`` becomes the real tqdm bar
    class writing to a string (``bar.text``) instead of stderr, and the returned list gets
    every bar made through it, for tests of what a bar counts and shows (``total``, ``n``,
    ``desc``, ``smoothing``). A bar made with ``disable=True`` has no ``desc`` nor
    ``smoothing``: tqdm sets few attributes then."""

    def record(module: ModuleType, name: str = "tqdm") -> list[Any]:
        made: list[Any] = []

        class Recorded(getattr(module, name)):  # the real bar, written to a string
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                self.text = kwargs["file"] = io.StringIO()
                super().__init__(*args, **kwargs)
                made.append(self)

        monkeypatch.setattr(module, name, Recorded)
        return made

    return record


@pytest.fixture(scope="session")
def contested_run(tmp_path_factory):
    """A finished ``selfplay-train`` run (``seed=0``, a user's ``NOTES.txt`` in its folder
    from before) whose folder the same command was refused while the run held it, as
    :class:`tests.populations.contested_folders.Contest`: asserted by
    test_fix27b_folder_in_use, its folder then serves other modules' refused commands
    (tests that change the folder copy it)."""
    from tests.populations.contested_folders import ARGS, contest

    cwd = tmp_path_factory.mktemp("contested_run")
    run = cwd / "r13"
    run.mkdir()
    (run / "NOTES.txt").write_text("notes\n")
    return contest(cwd, run, [*ARGS, f"hydra.run.dir={run}"])


@pytest.fixture(scope="session")
def contested_sweep(tmp_path_factory):
    """:func:`contested_run` for a sweep (``-m``, one job, ``hydra.sweep.dir``)."""
    from tests.populations.contested_folders import ARGS, contest

    cwd = tmp_path_factory.mktemp("contested_sweep")
    sweep = cwd / "sw"
    return contest(cwd, sweep, ["-m", *ARGS, f"hydra.sweep.dir={sweep}"])
