"""PettingZoo, VMAS and registered games' names hold their kwargs: the game made from a
spec's name is that game.

Before, ``make("pettingzoo/mpe2.simple_spread_v3", N=2).spec.name`` was the bare module
path, so anything that made the game again from the name (a snapshot's meta.game, a run's
record, PSRO given a game object) got N=3.
"""

from __future__ import annotations

import pytest

import games
from games.core import GameError

SPREAD = "pettingzoo/mpe2.simple_spread_v3"


@pytest.mark.parametrize("name, kwargs", [
    (SPREAD, {"N": 2}),
    (SPREAD, {"N": 2, "max_cycles": 7, "local_ratio": 0.1}),
    (SPREAD, {"continuous_actions": True}),
    (SPREAD, {"max_steps": 9}),
    (SPREAD, {"N": 2, "teams": [["agent_0"], ["agent_1"]], "zero_sum": True}),
    ("vmas/simple_spread", {"n_agents": 2}),
    ("vmas/simple_spread", {"n_agents": 2, "teams": {"agent_0": "a", "agent_1": "b"}}),
    ("vmas/simple_spread", {"n_agents": 2, "continuous_actions": True, "max_steps": 9}),
    ("tool/lookup", {"num_keys": 4}),  # a registered game whose name is its registry name
    ("tool/relay", {"max_value": 3, "ops": "+"}),
    ("matrix/climbing", {"zero_sum": True}),
])
def test_the_name_makes_the_same_game(name, kwargs):
    spec = games.make(name, **kwargs).spec
    assert spec.name != name  # the kwargs are in it
    again = games.make(spec.name).spec
    assert again == spec and again.name == spec.name
    assert games.make(spec.name, **kwargs).spec == spec  # name and the same kwargs agree


def test_names_without_kwargs_are_unchanged():
    assert games.make(SPREAD).spec.name == SPREAD
    assert games.make("vmas/simple_spread").spec.name == "vmas/simple_spread"
    assert games.make("vmas/simple_spread", device="cpu").spec.name == "vmas/simple_spread"
    assert games.make("tool/lookup").spec.name == "tool/lookup"


def test_a_rebuilt_game_object_keeps_its_kwargs():
    from populations.payoffs import resolve_game

    game = games.make(SPREAD, N=2)
    name, kwargs = resolve_game(game)  # PSRO given a game object makes copies from this
    assert len(games.make(name, **kwargs).spec.agents) == 2


@pytest.mark.parametrize("name, kwargs, says", [
    (SPREAD + "(N=2)", {"N": 3}, "names N=2 but its kwargs give N=3"),
    (SPREAD + "(N=__import__('os'))", {}, "Python literal values"),
    (SPREAD + "(2)", {}, "expected <name>(key=value,...)"),
    (SPREAD + "(N=2", {}, "expected <name>(key=value,...)"),
    # two sets of arguments: the first was dropped silently (N=2 read as the default 3)
    (SPREAD + "(N=2)(max_cycles=5)", {}, "expected <name>(key=value,...)"),
    (SPREAD + "(N=2)[0]", {}, "expected <name>(key=value,...)"),
])
def test_a_bad_name_is_one_line(name, kwargs, says):
    with pytest.raises(GameError, match=r"^[^\n]*$") as err:
        games.make(name, **kwargs)
    assert says in str(err.value)


def test_a_registered_game_object_is_rebuilt_from_its_name():
    from populations.payoffs import resolve_game

    relay = games.make("tool/relay", max_value=2)  # was refused: 'cannot rebuild copies'
    name, kwargs = resolve_game(relay)
    assert games.make(name, **kwargs).spec == relay.spec and name == "tool/relay(max_value=2)"
