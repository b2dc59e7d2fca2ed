"""The note on arguments that differ from a registered game's defaults (``selfplay-eval
--game-kwargs`` on snapshots that name their game bare, fix34c) compares values as the game
would take them (rfix34c, review L4): ``v != default`` called a JSON list given for a tuple
default a difference (``shape ((2, 3) by default, [2, 3] here)``), and a numpy array default
raised ``ValueError: The truth value of an array ... is ambiguous`` out of the note. Lists and
tuples now compare alike, numpy values by value, and a value that cannot be compared with its
default adds nothing for that argument (no crash, no false note). The game is a user's,
registered as a notebook or module would."""

from __future__ import annotations

import numpy as np
import pytest

import games
from populations.eval_notes import _from_defaults

NAME = "rfix34c_shaped"


class Opaque:
    """A default that refuses to be compared (its ``==`` raises)."""

    def __eq__(self, other: object) -> bool:
        raise TypeError("not comparable")

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "Opaque()"


WEIGHTS, SCALE, THING = np.array([1.0, 2.0]), np.float32(0.5), Opaque()  # the defaults


@pytest.fixture(scope="module", autouse=True)
def shaped_game():
    from games.registry import _REGISTRY

    @games.register(NAME)
    def shaped(shape=(2, 3), grid=((1, 2), (3, 4)), weights=WEIGHTS, scale=SCALE,
               label="ab", thing=THING, k=-10.0):
        return games.make("matrix/penalty", k=k)

    try:
        yield
    finally:
        _REGISTRY.pop(NAME, None)


def note(here: str) -> list[str]:
    return _from_defaults("a", NAME, f"{NAME}({here})")


def test_a_list_given_for_a_tuple_default_of_the_same_values_is_no_difference():
    # before: ["a's game differs here from its defaults in shape ((2, 3) by default, ...)"]
    assert note("shape=[2, 3]") == []
    assert note("grid=[[1, 2], [3, 4]]") == []
    assert note("shape=(2, 3)") == []


def test_numpy_defaults_compare_by_value_and_a_real_difference_is_still_named():
    # before: ValueError (the truth value of an array is ambiguous) out of the note
    assert note("weights=[1.0, 2.0], scale=0.5") == []
    assert note("weights=[1.0, 3.0], scale=0.25, shape=[2, 4], label=['a', 'b']") == [
        "a's game differs here from its defaults in label ('ab' by default, ['a', 'b'] "
        "here), scale (np.float32(0.5) by default, 0.25 here), shape ((2, 3) by default, "
        "[2, 4] here), weights (array([1., 2.]) by default, [1.0, 3.0] here)"]


def test_a_value_that_cannot_be_compared_with_its_default_adds_nothing_for_it():
    # before: TypeError out of the note; the other argument's difference is still named
    assert note("thing=1, k=-50.0") == [
        "a's game differs here from its defaults in k (-10.0 by default, -50.0 here)"]
    assert note("weights=[[1.0], [2.0, 3.0]]") == []  # ragged: no comparison numpy makes
