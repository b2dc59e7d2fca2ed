"""A game whose exact-tool views are too large is refused by a bounded count, not counted
whole: colored_trails (1.7M histories, under the 2M limit) took minutes of counting before
any PSRO run with ``payoffs=auto`` started (~65 us a history: its last move scores a path
search), and its walk would then have built a 93,123-action legal mask for each of ~400k
information states (~40 GB). What stops the count is the game's tree, never the clock."""

import logging

import pytest

import games
from games import openspiel as gos
from populations import exploitability as ex
from populations.psro import psro_players, why_not_exact


@pytest.fixture
def seen(monkeypatch):
    """Each count's result and the steps of the view-building walk."""
    out = {"counts": [], "walk": 0}
    count, walk = gos.count_tree, ex._Walker._walk

    def counting(*args, **kwargs):
        out["counts"].append(count(*args, **kwargs))
        return out["counts"][-1]

    def walking(self, *args):
        out["walk"] += 1
        return walk(self, *args)

    monkeypatch.setattr(ex, "count_tree", counting)
    monkeypatch.setattr(ex._Walker, "_walk", walking)
    ex.forget_trees()  # (a colored_trails refusal another module left would skip the count)
    yield out
    ex.forget_trees()  # nothing walked under this module's budgets is left to another


def test_colored_trails_goes_sampled_after_a_bounded_count(seen):
    game = games.make("openspiel/colored_trails")
    why = why_not_exact(game, psro_players(game.spec))
    assert why is not None and "\n" not in why
    assert why.startswith("openspiel/colored_trails's information states would need more "
                          "than 1 GiB of views for the exact tools (a legal mask of 93123 "
                          "actions and an observation of 463 values each"), why
    assert why.endswith(ex.SAMPLED_HINT)
    (count,) = seen["counts"]
    assert count.weight > ex.MAX_VIEW_BYTES
    assert count.histories < 100_000  # of its 1,672,304: stopped at the views' budget
    assert seen["walk"] == 0


def test_the_view_budget_decides_by_the_tree_alone(seen, monkeypatch):
    """Two counts of the same game stop at the same node; a game under the budget is
    walked as before (the cached tree cleared: the budget is checked before a walk)."""
    name = "openspiel/liars_dice(dice_sides=3)"
    monkeypatch.setattr(ex, "MAX_VIEW_BYTES", 10_000)  # of its 576 decision histories' 31,680
    for _ in range(2):
        ex.forget_trees()  # the refusal remembered: counted again
        with pytest.raises(ValueError, match=r"would need more than .* GiB of views .* each, "
                                             r"past that after 182 decision histories of "):
            ex.game_tree(name)
    assert seen["counts"][0] == seen["counts"][1] and seen["walk"] == 0
    assert seen["counts"][0].histories < 1_147 // 2
    monkeypatch.undo()
    tree = ex.game_tree(name)  # the default budget: walked whole
    assert len(tree.terminals.chance) > 0


def test_a_long_count_logs_its_progress_and_counts_the_same(monkeypatch, caplog):
    import pyspiel

    game = pyspiel.load_game("tic_tac_toe")
    quiet = gos.count_tree(game, 10**6)
    monkeypatch.setattr(gos, "COUNT_LOG_S", 0.0)  # every 65,536 nodes
    with caplog.at_level(logging.INFO, logger="games.openspiel"):
        logged = gos.count_tree(game, 10**6)
    assert logged == quiet == gos.TreeCount(549_946, 294_778, 0)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 8 and lines[0].startswith(
        "counting the histories of tic_tac_toe(): 65536 so far in "), lines
    assert gos.count_histories(game, 1_000) == 1_001  # "more than the limit", as before
