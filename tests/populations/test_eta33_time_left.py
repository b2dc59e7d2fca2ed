"""A league's "about N left" estimate counts what grows (walk 33b's l_mixed_push: after
generation 1 of a four-member league it said "about 43s left" and generation 2 took 127 s,
its evaluation 38 snapshot pairs where generation 1 played 22): the generations left are
their mean training time each, plus the pairs they will evaluate at the mean time a pair so
far (populations.league_progress)."""

from __future__ import annotations

import logging
import re

import pytest

import games
from marl.mappo import MAPPO
from populations.league import League
from populations.league_progress import (
    async_pairs_left,
    recorded_training,
    sync_pairs,
    sync_pairs_left,
    time_left,
)
from populations.members import MAPPOMember
from tests.populations.test_league import _kuhn


def _league(run_dir, generations, resume=False, **settings):
    """Three MAPPO members on Kuhn poker (about 1 s a generation), not yet run."""
    cfg = _kuhn(generations=generations, frames_per_generation=64, eval_episodes=1,
                **settings)
    spec = games.make(cfg.game).spec
    members = [MAPPOMember(name, MAPPO(spec, cfg.mappo, seed=seed))
               for seed, name in enumerate(("a", "b", "c"))]
    return League(cfg, run_dir, resume=resume, members=members)


def _seconds(text: str) -> float:
    """The seconds a ``; about ... left`` says."""
    n, unit = re.fullmatch(r"; about ([\d.]+) ?(s|min|h) left", text).groups()
    return float(n) * {"s": 1, "min": 60, "h": 3600}[unit]


def test_the_estimate_is_the_training_mean_plus_the_pairs_left_at_the_mean_pair():
    # 2 generations trained in 20 s besides evaluation: 10 s each, 2 left: 20 s; 12 pairs
    # evaluated in 6 s: 0.5 s a pair, 100 pairs left: 50 s
    assert time_left(20, 2, 4, eval_seconds=6, pairs=12, pairs_left=100) == \
        "; about 70s left"
    assert time_left(20, 2, 4, eval_seconds=600, pairs=12, pairs_left=100) == \
        "; about 84 min left"  # 20 + 50 * 100 = 5020 s
    # without the evaluation's timings: the mean generation times those left, as before
    assert time_left(20, 2, 4) == "; about 20s left"
    assert time_left(20, 2, 4, 6, 12, 100) != time_left(20, 2, 4)
    assert time_left(20, 4, 4, 6, 12, 0) == time_left(20, 0, 4, 6, 12, 100) == ""


def test_the_pair_schedule_is_the_walkers_league():
    # four members: generation 0 plays the new snapshots against each other (6 pairs),
    # generation g each new one against the 4 g earlier ones too
    assert [sync_pairs(4, 0, g) for g in range(3)] == [6, 22, 38]
    assert sync_pairs_left(4, 0, 1, 2) == 38
    assert sync_pairs_left(4, 0, 0, 3) == 22 + 38 + 54
    # eval_window=5: at most the last 5 earlier snapshots
    assert [sync_pairs(4, 5, g) for g in range(4)] == [6, 4 * 4 + 6, 4 * 5 + 6, 4 * 5 + 6]
    assert sync_pairs(1, 0, 3) == 3  # a league of one: its earlier snapshots only
    # asynchronous, two members each done with generation 1 of 2: a member's snapshot 2
    # meets its own 2 earlier ones and the other's 2 or 3 (it finishes first or after)
    assert async_pairs_left([1, 1], 0, 2) == 2 * 4.5
    assert async_pairs_left([1, 1], 3, 2) == 2 * 3


def test_the_walkers_run_after_generation_1_is_estimated_with_its_bigger_evaluation():
    # l_mixed_push's log: generation 1 trained 10 + 4 + 3 + 4 s; generation 0 evaluated 6
    # pairs in 5 s, generation 1 22 in 17 s; the old line said the run's 43 s so far again
    new = time_left(21, 1, 2, eval_seconds=5 + 17, pairs=6 + 22,
                    pairs_left=sync_pairs_left(4, 0, 1, 2))
    assert new == "; about 51s left"  # 21 + 22 / 28 * 38 = 50.9
    assert _seconds(new) > _seconds(time_left(43, 1, 2)) == 43


@pytest.mark.parametrize("window", [0, 6, 4])
def test_a_growing_evaluation_is_estimated_above_the_mean_generation(window):
    # training T a generation, t a pair: after generation 1 the rest takes exactly the
    # estimate; the mean generation so far (generation 0 not even counted) says less while
    # the evaluation grows, the same once it does not (eval_window=4: 22 pairs from
    # generation 1 on)
    members, total, T, t = 4, 10, 30.0, 0.5
    played = sync_pairs(members, window, 0) + sync_pairs(members, window, 1)
    rest = sum(T + t * sync_pairs(members, window, g) for g in range(2, total + 1))
    new = time_left(T, 1, total, eval_seconds=t * played, pairs=played,
                    pairs_left=sync_pairs_left(members, window, 1, total))
    old = time_left(T + t * sync_pairs(members, window, 1), 1, total)
    assert new == time_left(rest, 1, 2)  # the same seconds, said alike
    if window == 4:
        assert new == old == "; about 6 min left"  # (30 + 0.5 * 22) * 9 = 369 s
    else:
        assert _seconds(new) > _seconds(old)


@pytest.mark.parametrize("window", [0, 4])
def test_a_league_times_the_pairs_it_plays_as_the_schedule_counts_them(tmp_path, caplog,
                                                                      window):
    caplog.set_level(logging.INFO, "populations.league")
    league = _league(tmp_path / "run", 3, eval_window=window)
    try:
        league.run()
    finally:
        league.close()
    lines = [r.getMessage() for r in caplog.records]
    played = [int(m.group(1)) for line in lines
              if (m := re.match(r"generation \d+: evaluated (\d+) snapshot pair", line))]
    assert played == [sync_pairs(3, window, g) for g in range(4)]
    assert league._eval_pairs == sum(played)
    assert league._gens == 3 and league._gen_seconds > 0 and league._eval_seconds > 0
    done = [line for line in lines if " done, " in line]
    assert [("about" in line) for line in done] == [True, True, False], done


def test_a_resume_estimates_from_the_recorded_training_then_from_its_own_timings(tmp_path,
                                                                                caplog):
    league = _league(tmp_path / "run", 1)
    try:
        league.run()
    finally:
        league.close()
    caplog.set_level(logging.INFO, "populations.league")
    league = _league(tmp_path / "run", 3, resume=True)
    try:
        # nothing timed by this process yet: generation 1's recorded training, 2 left
        seconds, done = recorded_training(league.db.generations(league.run_id))
        assert done == 1 and seconds > 0
        assert league._left() == time_left(seconds, 1, 3)
        league.run()
    finally:
        league.close()
    done = [r.getMessage() for r in caplog.records if " done, " in r.getMessage()]
    assert [("about" in line) for line in done] == [True, False], done
    assert league._gens == 2 and league._eval_pairs == sync_pairs(3, 0, 2) + \
        sync_pairs(3, 0, 3)


def test_the_recorded_training_spans_each_generations_members():
    rows = [  # members one after another (in process), then at once (learner actors)
        {"version": 1, "started_at": 0.0, "finished_at": 10.0},
        {"version": 1, "started_at": 10.5, "finished_at": 14.0},
        {"version": 2, "started_at": 20.0, "finished_at": 25.0},
        {"version": 2, "started_at": 21.0, "finished_at": 30.0},
        {"version": 3, "started_at": None, "finished_at": 40.0},  # no start recorded
    ]
    assert recorded_training(rows) == (14.0 + 10.0, 2)
    assert recorded_training([]) == (0.0, 0)
