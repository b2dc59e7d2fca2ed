"""Names a registry takes (walk 19): a game name ``games.make`` would read otherwise (``(``
starts the game's arguments) is refused when it is registered, and a policy kind registered
by another class is refused rather than silently replaced."""

from __future__ import annotations

import pytest

import games


@pytest.mark.parametrize("name", ["x<script>alert(1)</script>", "my_game(v2)", "my game",
                                  "a,b", "k=v", "-leading", "x\x1b[2J"])
def test_a_game_name_make_would_not_read_back_is_refused_in_one_line(name, caplog):
    # before: registered; make() of 'my_game(v2)' read 'my_game' with the arguments 'v2',
    # and the <script> name warned 'set spec.name=...' to the name it already was
    from games.registry import registered

    with pytest.raises(games.GameError) as err:
        @games.register(name)
        def factory():  # pragma: no cover - never registered
            raise AssertionError
    message = str(err.value)
    assert "\n" not in message and "\x1b" not in message
    assert message.startswith(f"cannot register {name!r}: "), message
    assert "letters, digits, '_', '-', '.' and '/'" in message, message
    assert name not in registered()


@pytest.mark.parametrize("name", ["walk19_names/ok-1.v2", "w19_names_ünïcode", "_private"])
def test_names_of_letters_digits_and_separators_register(name):
    from games.registry import _REGISTRY

    try:
        games.register(name)(lambda: None)
        assert name in _REGISTRY
    finally:
        _REGISTRY.pop(name, None)


POLICY_CELL = '''
from marl.core import register_policy
from marl.train import RandomPolicy


@register_policy("w19_names_kind")
class CellPolicy(RandomPolicy):
    version = {version}
'''


def _run_cell(source: str, module: str) -> dict:
    """A notebook cell: ``source`` run as the module ``module`` (its classes' __module__)."""
    import sys
    import types

    mod = types.ModuleType(module)
    sys.modules[module] = mod
    try:
        exec(compile(source, f"<{module}>", "exec"), mod.__dict__)
    finally:
        sys.modules.pop(module, None)
    return mod.__dict__


def test_a_policy_kind_of_another_class_is_refused_a_cells_rerun_replaces(monkeypatch):
    # before: register_policy("mappo") (or another module's kind) replaced the class that
    # load_policy rebuilds files of that kind with, silently
    import marl.actor_critic  # noqa: F401 - registers the kind mappo
    from marl import core
    from marl.train import RandomPolicy

    monkeypatch.setattr(core, "_POLICIES", dict(core._POLICIES))
    first = _run_cell(POLICY_CELL.format(version=1), "w19_notebook")["CellPolicy"]
    again = _run_cell(POLICY_CELL.format(version=2), "w19_notebook")["CellPolicy"]
    assert core._POLICIES["w19_names_kind"] is again is not first  # the cell run again

    with pytest.raises(ValueError) as err:
        _run_cell(POLICY_CELL.format(version=3), "w19_other_module")
    assert str(err.value) == ("policy kind 'w19_names_kind' is already registered by "
                              "w19_notebook.CellPolicy; register yours under another kind")
    assert core._POLICIES["w19_names_kind"] is again

    with pytest.raises(ValueError, match="policy kind 'mappo' is already registered by "
                                         "marl.actor_critic.PPOPolicy"):
        core.register_policy("mappo")(type("Mine", (RandomPolicy,), {}))
    core.register_policy("random")(RandomPolicy)  # the same class again: nothing changes
    assert core._POLICIES["random"] is RandomPolicy
