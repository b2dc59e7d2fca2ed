"""selfplay-train's command line as Hydra's own argparse reads it, after the CLI's rewrites
(``game.name=X`` drops the game preset with an added ``~game``)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("argv", [
    ["-m", "game.name=openspiel/goofspiel", "seed=0,1"],  # a sweep: -m first, as README has it
    ["--multirun", "seed=0,1", "game.name=openspiel/goofspiel"],
    ["game.name=openspiel/kuhn_poker", "--cfg", "job"],
    ["--cfg", "job", "game.name=openspiel/kuhn_poker"],
    ["game.name=openspiel/kuhn_poker", "-m"],
])
def test_game_name_keeps_the_command_line_parseable(argv):
    # before: ~game went first, so `-m game.name=X ...` read as `~game -m game.name=X ...`,
    # and Hydra refused every override after -m ("unrecognized arguments")
    from hydra._internal.utils import get_args_parser

    from populations.cli import game_overrides

    args = get_args_parser().parse_args(game_overrides(argv))
    assert "~game" in args.overrides
    assert [a for a in args.overrides if a != "~game"] == \
        [a for a in argv if "=" in a]
    assert args.multirun == ("-m" in argv or "--multirun" in argv)
