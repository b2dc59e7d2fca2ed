"""A game too large for the exact tools is refused before the walk that builds every view
(~20 us a history: nim took 44 s to reach the 2M-history limit, twice per PSRO run with
``payoffs=auto``): counted in walk steps, not seconds."""

import pytest

import games
from games import openspiel as gos
from populations import exploitability as ex
from populations.psro import psro_players, why_not_exact


@pytest.fixture
def counts(monkeypatch):
    """Steps of the view-building walk, size estimates made, and what each count returned."""
    seen = {"walk": 0, "estimates": 0, "counted": []}
    walk = ex._Walker._walk
    estimate = getattr(gos, "estimate_histories", None)
    count = getattr(gos, "count_tree", None)  # what the exact tools count with

    def counting_walk(self, *args):
        seen["walk"] += 1
        return walk(self, *args)

    def counting_estimate(*args, **kwargs):
        seen["estimates"] += 1
        return estimate(*args, **kwargs)

    def counting_count(*args, **kwargs):
        found = count(*args, **kwargs)
        seen["counted"].append(found.histories)
        return found

    monkeypatch.setattr(ex._Walker, "_walk", counting_walk)
    if estimate is not None:  # (the walk alone decided before they existed)
        monkeypatch.setattr(ex, "estimate_histories", counting_estimate)
        monkeypatch.setattr(ex, "count_tree", counting_count)
    ex.forget_trees()  # (liars_dice walked whole by test_exact_view_budget was never walked here)
    yield seen
    ex.forget_trees()  # nothing walked under this module's limits is left to another


def test_auto_refuses_a_far_larger_game_without_walking_it(counts, monkeypatch):
    monkeypatch.setattr(ex, "MAX_HISTORIES", 20_000)  # nim has ~1e8: refused as it is
    game = games.make("openspiel/nim")
    why = why_not_exact(game, psro_players(game.spec))
    assert why is not None and "more than 20000 histories" in why and "\n" not in why
    assert counts["walk"] == 0 and counts["counted"] == []


def test_a_game_just_over_the_limit_is_counted_not_walked(counts, monkeypatch):
    # liars_dice with 4-sided dice: estimated near its true size, so the bounded count
    # decides, and stops one history past the limit
    monkeypatch.setattr(ex, "MAX_HISTORIES", 5_000)
    with pytest.raises(ValueError, match="more than 5000 histories"):
        ex.game_tree("openspiel/liars_dice(dice_sides=4)")
    assert counts["walk"] == 0 and counts["counted"] == [5_001]


def test_a_refusal_is_remembered(counts, monkeypatch):
    """``payoffs=auto`` and the NashConv logging of one PSRO run ask twice."""
    monkeypatch.setattr(ex, "MAX_HISTORIES", 20_000)
    game = games.make("openspiel/trade_comm")
    first = why_not_exact(game, psro_players(game.spec))
    with pytest.raises(ValueError) as again:
        ex.game_tree(game)
    assert str(again.value) == first and counts["estimates"] == 1 and counts["walk"] == 0


def test_a_game_under_the_limit_is_still_walked_whole(counts):
    tree = ex.game_tree("openspiel/liars_dice(dice_sides=3)")
    assert counts["counted"] and counts["counted"][-1] == counts["walk"]  # every history
    assert len(tree.terminals.chance) > 0
