"""Fixtures of the tests that watch the exact tools' walks (populations.exploitability).
A module takes one by naming it at its top (``steps = exact_helpers.steps``): imported by
its own name, ruff takes the test's argument for a redefinition."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from games import openspiel as gos
from populations import exploitability as ex


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Nodes the view-building walk visited (``"walk"``) and the reason each count was made
    with (``"counts"``), spies on the real ones; every tree and refusal ``game_tree``
    remembers is forgotten before and after (a tree another test walked whole would answer
    instead, and a recall refusal left here would answer another module's walk)."""
    seen: dict[str, Any] = {"walk": 0, "counts": []}
    walk, count = ex._Walker._walk, gos.count_tree

    def walking(self: ex._Walker, *args: Any) -> Any:
        seen["walk"] += 1
        return walk(self, *args)

    def counting(*args: Any, **kwargs: Any) -> Any:
        seen["counts"].append(kwargs.get("why"))
        return count(*args, **kwargs)

    monkeypatch.setattr(ex._Walker, "_walk", walking)
    monkeypatch.setattr(ex, "count_tree", counting)
    ex.forget_trees()
    yield seen
    ex.forget_trees()
