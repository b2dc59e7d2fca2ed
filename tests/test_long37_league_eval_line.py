"""A league's evaluation line counts the pairs it played: a stop in the middle of a
generation's evaluation said ``evaluated 3 snapshot pairs`` for the one it played, and the
resume said it again for the two left (walk 37c, L4). ``runs.updated_at`` moves every
generation, a heartbeat of a running league (L6: only status changes moved it)."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3

import pytest

from populations import run_folder
from populations.league import League
from tests.populations.test_league import _kuhn


def _lines(caplog, g: int) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.getMessage().startswith(f"generation {g}: evaluated")]


def test_a_stop_mid_evaluation_and_its_resume_count_the_pairs_they_played(
        tmp_path, caplog, monkeypatch):
    """Generation 3 of one member plays 3 pairs (v3 against v0, v1, v2): a SIGTERM after the
    first stops the evaluation there (a CLI's deferred stop); the resume plays the other 2."""
    caplog.set_level(logging.INFO, "populations.league")
    cfg = _kuhn(generations=3)
    league = League(cfg, tmp_path)
    play = league.runner.play

    def stop_after(jobs):  # the real matches, then the signal a user's Ctrl-C would send
        results = play(jobs)
        if league.generation == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return results

    monkeypatch.setattr(league.runner, "play", stop_after)
    try:
        with run_folder.sigterm_as_interrupt(), pytest.raises(run_folder.Terminated), \
                run_folder.deferred_stop(obey_at_end=False):
            league.run()
    finally:
        league.close()
    assert _lines(caplog, 2) == [
        "generation 2: evaluated 2 snapshot pairs, 8 episodes recorded (eval_episodes=2 a "
        "side) in 0s"]  # a whole evaluation: as before
    [stopped] = _lines(caplog, 3)
    assert stopped.startswith("generation 3: evaluated 1 of 3 snapshot pairs, 4 episodes "
                              "recorded (eval_episodes=2 a side) in "), stopped
    caplog.clear()
    resumed = League(cfg, tmp_path, resume=True)
    try:
        resumed.run()
    finally:
        resumed.close()
    [rest] = _lines(caplog, 3)
    assert rest.startswith("generation 3: evaluated 2 of 3 snapshot pairs (1 recorded before "
                           "the stop), 8 episodes recorded (eval_episodes=2 a side) in "), rest


def test_a_running_leagues_updated_at_moves_every_generation(tmp_path):
    """Before: set when the run was created and when its status changed, so a league
    training for hours showed its start as its last sign of life."""
    seen: list[float] = []
    league = League(_kuhn(generations=3), tmp_path)
    publish = league.store.publish

    def watch(*args, **kwargs):  # the database as the dashboard reads it, mid-run
        with sqlite3.connect(tmp_path / "league.db") as conn:
            seen.append(conn.execute("SELECT updated_at FROM runs WHERE id = ?",
                                     (league.run_id,)).fetchone()[0])
        return publish(*args, **kwargs)

    league.store.publish = watch  # type: ignore[method-assign]
    try:
        league.run()
    finally:
        league.close()
    # generation 0's publish, then generations 1-3's: each later one sees a newer heartbeat
    assert len(seen) == 4 and seen[1] < seen[2] < seen[3], seen
