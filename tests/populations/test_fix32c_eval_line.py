"""A league's evaluation line uses "pair" in one sense, the snapshot pair: it said
``generation 1: evaluated 1 pairs (8 episodes recorded)`` with ``eval_episodes=4``, where
``eval_episodes`` counts the episodes of each side of a role-swapped pair, so the 8 read as
a second kind of pair (walk32 L9)."""

from __future__ import annotations

import logging

from populations.league import League
from tests.populations.test_league import _kuhn


def test_the_evaluation_line_counts_snapshot_pairs_and_episodes_a_side(tmp_path, caplog):
    league = League(_kuhn(generations=2, frames_per_generation=8, eval_episodes=3),
                    tmp_path / "run")
    try:
        with caplog.at_level(logging.INFO, "populations.league"):
            league.run()
    finally:
        league.close()
    said = [r.getMessage().rsplit(" in ", 1)[0] for r in caplog.records
            if "evaluated" in r.getMessage()]
    assert said == [
        "generation 1: evaluated 1 snapshot pair, 6 episodes recorded (eval_episodes=3 a side)",
        "generation 2: evaluated 2 snapshot pairs, 12 episodes recorded (eval_episodes=3 a "
        "side)"]
