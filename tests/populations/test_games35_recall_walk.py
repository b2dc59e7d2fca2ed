"""PSRO's exact-tool checks stop at the first sign of imperfect recall: with sampled
payoffs, 3-player goofspiel with 4 cards was counted and then walked whole (653,141
histories, about a minute) to learn that its information states forget, and the progress
lines never said why the run walked the game or what skips the walk."""

import logging

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
import populations.cli  # noqa: F401  (registers the schema)
from games import openspiel as gos
from populations import exploitability as ex
from populations.psro_run import resolve_auto, walk_reason
from tests.populations import exact_helpers

GOOF3P = ("openspiel/goofspiel", {"players": 3, "num_cards": 4})


def _cfg(game, kwargs, *overrides):
    words = [f"game.kwargs.{k}={v}" for k, v in kwargs.items()]
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=[
            "population=psro", f"game.name={game}", *words, *overrides]))


steps = exact_helpers.steps  # the walk's and the counts' spies, trees forgotten


def test_sampled_payoffs_decide_imperfect_recall_without_walking_the_tree(steps):
    name, kwargs = GOOF3P
    cfg = _cfg(name, kwargs, "population.psro.payoffs=sampled")
    got = resolve_auto(cfg, games.make(name, **kwargs), announce=False).population
    assert (got.oracle, got.psro.payoffs) == ("rl", "sampled")
    assert steps["counts"] == [] and steps["walk"] == 0  # the probe saw it: no count, no walk


def test_a_refused_recall_still_leaves_the_whole_tree_to_game_tree(steps):
    """Outside PSRO's checks the tree of an imperfect-recall game is still built (tests and
    tools read its uniform strategies); the refusal inside them is remembered."""
    name = "openspiel/goofspiel(num_cards=4)"
    for _ in range(2):
        with ex.exact_check(), pytest.raises(ValueError, match=r"has imperfect recall \("):
            ex.game_tree(name)
    assert steps["walk"] == 0 and name in ex._FORGETFUL
    assert not ex.game_tree(name).perfect_recall


@pytest.mark.parametrize("game", ["openspiel/kuhn_poker", "openspiel/leduc_poker"])
def test_small_games_of_perfect_recall_stay_exact(game, steps):
    cfg = _cfg(game, {})
    got = resolve_auto(cfg, games.make(game), announce=False).population
    assert (got.oracle, got.psro.payoffs) == ("exact", "exact")
    tree = ex.game_tree(game)
    assert tree.perfect_recall and len(tree.terminals.chance) in (30, 5520)


def test_the_walks_first_progress_line_says_why_and_what_skips_it(steps, monkeypatch, caplog):
    cfg = _cfg("openspiel/kuhn_poker", {}, "population.psro.payoffs=sampled")
    why = walk_reason(cfg)
    assert why == ("for PSRO's exact tools (population.oracle=auto, "
                   "population.psro.nash_conv=true: they need a small game of perfect recall); "
                   "population.oracle=rl population.psro.nash_conv=false skip this walk")
    with ex.exact_check(why):
        ex.game_tree("openspiel/kuhn_poker")
    assert steps["counts"] == [f": {why}"]
    import pyspiel

    monkeypatch.setattr(gos, "COUNT_LOG_S", 0.0)  # a line every 65,536 nodes
    with caplog.at_level(logging.INFO, logger="games.openspiel"):
        gos.count_tree(pyspiel.load_game("tic_tac_toe"), 200_000, why=f": {why}")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3 and lines[0].endswith(f"(at most 200000): {why}"), lines
    assert lines[1].endswith("(at most 200000)"), lines
