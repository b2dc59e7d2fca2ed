"""A snapshot whose file names a registered game bare (its defaults, or an older file that
recorded no arguments), played with other arguments (``selfplay-eval --game-kwargs
'{"size":6}'``), is told which arguments differ from the game's defaults (walk 34a, item 6):
the note said only "names its game gridtag without arguments (the defaults, or not
recorded)", which hid what changed. The defaults are read from the game's factory."""

from __future__ import annotations

import games
from populations.eval_notes import game_notes

BARE = ("a's file names its game matrix/penalty without arguments (the defaults, or not "
        "recorded); it plays {} here")


def test_the_arguments_that_differ_from_the_defaults_are_named_with_both_values():
    spec = games.make("matrix/penalty", k=-50.0, repeats=1).spec
    # before: the first line alone
    assert game_notes("a", "matrix/penalty", spec) == [
        BARE.format(spec.name),
        "a's game differs here from its defaults in k (-10.0 by default, -50.0 here)"]


def test_the_defaults_given_by_name_add_nothing():
    spec = games.make("matrix/penalty", k=-10.0).spec
    assert game_notes("a", "matrix/penalty", spec) == [BARE.format(spec.name)]


def test_several_arguments_are_named_in_order():
    spec = games.make("tool/lookup", num_keys=4, max_turns=9, max_lookups=2).spec
    notes = game_notes("a", "tool/lookup", spec)
    assert notes[1:] == ["a's game differs here from its defaults in max_turns (6 by default, "
                         "9 here), num_keys (8 by default, 4 here)"], notes
