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
