"""A notebook cell run again re-registers its game (walk 19).

``@games.register("name")`` raised "already registered" when the same cell ran a second time
(the same module and qualified name, a new class object); the redefined class now replaces the
old one. Another class taking a taken name, and a built-in's name, are still refused."""

from __future__ import annotations

import pytest

import games
import games.registry as reg

CELL = '''
import games

@games.register("w19_cell_game")
class CellGame(games.Game):
    VERSION = {version}
'''


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch):
    """What a test registers is gone after it (the built-in tool tasks are registered before)."""
    import games.tool  # noqa: F401

    monkeypatch.setattr(reg, "_REGISTRY", dict(reg._REGISTRY))


def _run_cell(source: str, namespace: dict) -> None:
    """``source`` run as a notebook runs a cell: in ``__main__``'s namespace."""
    exec(compile(source, "<cell>", "exec"), namespace)  # noqa: S102 - a test's own source


def test_a_cell_run_again_replaces_its_game():
    notebook = {"__name__": "__main__"}
    _run_cell(CELL.format(version=1), notebook)
    first = notebook["CellGame"]
    _run_cell(CELL.format(version=2), notebook)  # before: GameError "already registered"
    assert notebook["CellGame"] is not first
    assert reg._REGISTRY["w19_cell_game"] is notebook["CellGame"]
    assert reg._REGISTRY["w19_cell_game"].VERSION == 2


def test_another_class_still_cannot_take_the_name():
    notebook = {"__name__": "__main__"}
    _run_cell(CELL.format(version=1), notebook)
    other = CELL.format(version=1).replace("class CellGame", "class OtherGame")
    with pytest.raises(games.GameError, match=r"^game name 'w19_cell_game' is already "
                                              r"registered \(by __main__.CellGame\)"):
        _run_cell(other, notebook)
    elsewhere = {"__name__": "other_module"}  # the same class name in another module
    with pytest.raises(games.GameError, match="already registered"):
        _run_cell(CELL.format(version=1), elsewhere)
    assert reg._REGISTRY["w19_cell_game"] is notebook["CellGame"]


def test_a_builtin_name_is_refused_to_a_redefinition_too():
    import games.tool.relay as relay

    # a class of the same module and name as the built-in (a reloaded module) is refused:
    # the framework's own names are not replaced behind its back
    fake = type("RelayTask", (), {"__module__": relay.__name__})
    fake.__qualname__ = relay.RelayTask.__qualname__
    with pytest.raises(games.GameError, match="'tool/relay' is already registered"):
        games.register("tool/relay")(fake)
    games.register("tool/relay")(relay.RelayTask)  # the same class again: nothing changes
    assert reg._REGISTRY["tool/relay"] is relay.RelayTask
