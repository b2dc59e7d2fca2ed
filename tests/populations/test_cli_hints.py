"""One-line CLI errors that say how to fix the command."""

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from populations.cli import reported


def test_an_unquoted_game_string_gets_a_quoting_hint(capsys):
    with pytest.raises(SystemExit) as stop, reported("selfplay-train"):  # OverrideParseException
        OverridesParser.create().parse_overrides(["game.name=openspiel/goofspiel(num_cards=4)"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("selfplay-train: mismatched input '('")
    assert """'game.name="openspiel/goofspiel(num_cards=4)"'""" in err
    # the hint's own spelling parses
    OverridesParser.create().parse_overrides(['game.name="openspiel/goofspiel(num_cards=4)"'])


def test_other_errors_get_no_quoting_hint(capsys):
    with pytest.raises(SystemExit), reported("selfplay-train"):
        raise ValueError("num_envs=0 must be positive")
    assert "quotes" not in capsys.readouterr().err
