"""An asynchronous league's (``sync=False``) time left (populations.league_training,
league_progress): the loop reads the ``generations`` table once and keeps running sums per
member (``AsyncTiming``; it read and sorted the whole table after every member generation, a
cost growing with the square of the league's length), with the same estimate as the full
scan (``recorded_estimate``); and the time left is each member's own mean generation times
its generations left, the longest member's chain or all of them over the learner actors
(it was the mean over all members' generations over the actors: a fast member finished, the
slow one trains alone, and it said about 13 s left with 20 s left)."""

from __future__ import annotations

import dataclasses

import pytest

from populations.league_progress import (
    AsyncTiming,
    async_time_left,
    recorded_estimate,
    time_left,
)
from tests.populations.test_prog35_time_left import (
    FRAMES,
    _async_league,
    _InProcessPool,
    _vdn_league,
)


def _close(league):
    league.learners = None
    league.close()


def _counting(league):
    """Count the calls of ``league.db.generations`` (the real method, wrapped)."""
    calls = []
    real = league.db.generations

    def generations(run_id):
        calls.append(run_id)
        return real(run_id)

    league.db.generations = generations
    return calls


def _same(timing, rows, members, parallel):
    seconds, n = timing.estimate()
    want_seconds, want_n = recorded_estimate(rows, members, parallel)
    assert n == want_n
    assert seconds == pytest.approx(want_seconds, rel=1e-12, abs=1e-12)


def test_the_async_loop_reads_the_generations_table_once(tmp_path):
    league = _async_league(tmp_path / "run", generations=3)
    calls = _counting(league)
    try:
        league.run()
        assert len(calls) == 1, calls  # as the loop starts; was 6, one per member generation
        rows = league.db.generations(league.run_id)
        members = league.members
    finally:
        _close(league)
    assert len(rows) == 6
    # the loop's running sums: the full scan's estimate
    assert (league._gen_seconds, league._gens) == pytest.approx(
        recorded_estimate(rows, members, 1), rel=1e-12)
    for parallel in (1, 2):
        for i in range(len(rows) + 1):  # read at once, or one row at a time
            _same(AsyncTiming(rows[:i], members, parallel), rows[:i], members, parallel)
            added = AsyncTiming([], members, parallel)
            for r in rows[:i]:
                added.add(r["member"], r["version"], r["frames"], r["started_at"],
                          r["finished_at"])
            _same(added, rows[:i], members, parallel)


def test_the_running_sums_leave_out_the_generations_before_a_replay_is_warm(tmp_path):
    # VDN warm at frame 96: its generation 1 fills the replay, 2 reaches it part-way
    league = _vdn_league(tmp_path / "run", 3, learning_starts=FRAMES + 32)
    cfg = league.cfg
    league.cfg = dataclasses.replace(cfg, runner="ray", sync=False)
    league.learners = _InProcessPool(league.members, league.store)
    try:
        league.run()
        rows = league.db.generations(league.run_id)
        members = league.members
    finally:
        _close(league)
    assert recorded_estimate(rows, members, 1)[1] == 4  # mappo's 3, vdn's 3rd
    for i in range(len(rows) + 1):
        _same(AsyncTiming(rows[:i], members, 2), rows[:i], members, 2)
    # a generation recorded again (a resume retrains it): its new times, counted once
    again = AsyncTiming(rows, members, 1)
    r = rows[0]
    again.add(r["member"], r["version"], r["frames"], r["started_at"],
              r["finished_at"] + 5.0)
    moved = [dict(x) for x in rows]
    moved[0]["finished_at"] += 5.0
    _same(again, moved, members, 1)


def test_each_member_times_its_own_generations_left():
    # 2 members on 2 actors, 3 generations left each: a 10 s, b 20 s a generation; 4 pairs
    # in 4 s, 20 left. b's chain, 60 s of training, is the longest: training 60 s; each
    # member's training and half the evaluation (90 + 20) / 2 = 55 s
    assert async_time_left([(10, 3), (20, 3)], 2, 4, 4, 20) == "; about 60s left"
    # on 1 actor: 90 s of training one at a time
    assert async_time_left([(10, 3), (20, 3)], 1, 4, 4, 20) == "; about 2 min left"
    # equal members: each one's 60 s of training and half of the 20 s of evaluation, 70 s
    assert async_time_left([(20, 3), (20, 3)], 2, 4, 4, 20) == "; about 70s left"
    # a finished: b trains alone, 2 x 20 s (the mean of all over 2 actors said 15 s)
    assert async_time_left([(10, 0), (20, 2)], 2) == "; about 40s left"
    assert async_time_left([(10, 0), (20, 0)], 2) == ""


def test_the_loops_time_left_is_per_member(tmp_path):
    league = _async_league(tmp_path / "run", generations=4)
    try:
        league.learners.actors = [league.learners.actor] * 2  # 2 members at once
        timing = AsyncTiming([], league.members, league._parallel())
        for v in (1, 2, 3, 4):
            timing.add("a", v, FRAMES, 100.0 * v, 100.0 * v + 10)  # 10 s each
        for v in (1, 2):
            timing.add("b", v, FRAMES, 1000.0 * v, 1000.0 * v + 20)  # 20 s each
        league.progress = {"a": (4, "done"), "b": (2, "done")}
        assert timing.means() == {"a": 10.0, "b": 20.0}
        assert timing.estimate() == (80.0 / 2, 6)  # recorded_estimate's
        assert league._async_left(timing) == "; about 40s left"  # b's 2 x 20 s alone
        # the mean of all over the actors (80 / 2 / 6 a generation, 2 left) would say 13 s
        assert time_left(*timing.estimate(), 8) == "; about 13s left"
        # a member with no generation recorded yet takes the mean of them all
        fresh = AsyncTiming([], league.members, 2)
        fresh.add("a", 1, FRAMES, 0.0, 12.0)
        assert fresh.means() == {"a": 12.0, "b": 12.0}
        assert AsyncTiming([], league.members, 2).means() is None
    finally:
        _close(league)
