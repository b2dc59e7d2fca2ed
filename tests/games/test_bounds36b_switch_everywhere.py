"""``SELFPLAY_GAME_LIMITS=off`` (games.limits) lifts every family's upper size limits: the
matrix games' ``repeats`` and the tool tasks' sizes too, which kept theirs when OpenSpiel, VMAS
and MPE took the switch (bounds36). Without it both are refused, naming the switch."""

from __future__ import annotations

import pytest

import games
from games.limits import ENV, HINT
from games.matrix import MAX_REPEATS
from games.tool.base import MAX_TURNS

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize(("spec", "kwargs", "line"), [
    ("matrix/climbing", {"repeats": MAX_REPEATS + 1},
     f"matrix/climbing: repeats={MAX_REPEATS + 1} is too large; accepted: an integer in "
     f"[1, {MAX_REPEATS}] ({HINT})"),
    ("tool/lookup", {"max_turns": MAX_TURNS + 1},
     f"tool/lookup: max_turns={MAX_TURNS + 1} is too large; accepted: an integer in "
     f"[5, {MAX_TURNS}] ({HINT})"),
])
def test_refused_by_default_naming_the_switch(monkeypatch, spec, kwargs, line):
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(games.GameError) as info:
        games.make(spec, **kwargs)
    assert str(info.value) == line


def test_the_switch_builds_them(monkeypatch):
    monkeypatch.setenv(ENV, "off")
    g = games.make("matrix/climbing", repeats=MAX_REPEATS + 1)
    assert g.spec.max_steps == MAX_REPEATS + 1
    lookup = games.make("tool/lookup", max_turns=MAX_TURNS + 1)
    lookup.reset(seed=0)
    assert lookup.spec.max_steps >= MAX_TURNS + 1
