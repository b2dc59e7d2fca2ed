"""A league resumed after a stop that came once its generation's evaluation pairs were
recorded (SIGTERM after the generation-1 evaluation, before its "done" checkpoint) logged
``generation 1: evaluated 1 pairs (0 episodes recorded) in 0s``, as if it had played them
and recorded nothing. It says that the pairs were evaluated before the stop."""

from __future__ import annotations

import logging

import pytest

from populations.league import League
from tests.populations.test_league import _Crash, _crash_before_done, _kuhn


def test_a_resume_with_its_pairs_recorded_says_nothing_is_left_to_play(tmp_path, monkeypatch,
                                                                       caplog):
    cfg = _kuhn(generations=1)
    _crash_before_done(monkeypatch, 1)  # generation 1's matches recorded, not "done"
    league = League(cfg, tmp_path)
    with pytest.raises(_Crash):
        league.run()
    league.close()
    monkeypatch.undo()
    resumed = League(cfg, tmp_path, resume=True)
    assert (resumed.generation, resumed.phase) == (1, "trained")
    with caplog.at_level(logging.INFO, logger="populations.league"):
        resumed.run()
    resumed.close()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("generation 1:")]
    assert lines == ["generation 1: its 1 pair was evaluated before the stop; nothing left to "
                     "play"]
