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
