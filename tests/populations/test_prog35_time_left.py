"""A league's "about N left" (populations.league_progress): an asynchronous league's
(``sync=False``) time left counts member generations, so its timing is a member generation's
share of the wall time, the learner actors training at once: a resumed one's recorded
fallback took a version's span (all its members, at once) per member generation, about N
times too high with N members; and a generation in which an off-policy member (VDN/QMIX,
MADDPG) reaches ``learning_starts`` part-way made fewer updates than the rest and is not
timed, live or from a resume's recorded rows."""

from __future__ import annotations

import copy
import dataclasses
import logging
import sqlite3

import pytest

import games
from marl.mappo import MAPPO
from marl.value_decomp import ValueDecomp, ValueDecompConfig
from populations import league_progress
from populations.league import League
from populations.league_progress import recorded_estimate, recorded_training
from populations.learner_actors import LearnerJob, LearnerResult, _LearnerActor
from populations.members import LearnerMember, MAPPOMember
from tests.populations.test_league import _kuhn

FRAMES = 64  # a generation's frames (8 copies)


class _InProcessPool:
    """LearnerPool's calls of the asynchronous loop, each job trained at ``wait`` by the
    learner actor's own code (``_LearnerActor.train``) on a copy of the member, in this
    process (as test_rfix34a_async_restart's): one actor, one member generation at a time."""

    def __init__(self, members, store):
        self.actor = _LearnerActor(1)
        self.actor.env = None
        self.actor.members = {m.name: copy.deepcopy(m) for m in members}
        self.actor.where = lambda: "in process"
        self.actor._policy = lambda job, sid: store.load(sid)
        self.actors = [self.actor]
        self.jobs: list[LearnerJob] = []

    def snapshot(self, sid, path, sha256):
        return sha256, [path]

    @property
    def busy(self) -> int:
        return len(self.jobs)

    def submit(self, job: LearnerJob) -> None:
        self.jobs.append(job)

    def wait(self) -> LearnerResult:
        return self.actor.train([None], self.jobs.pop(0))

    def close(self) -> None:
        pass


def _async_league(run_dir, generations=2):
    cfg = _kuhn(generations=generations, frames_per_generation=FRAMES, num_envs=8,
                eval_episodes=1)
    spec = games.make(cfg.game).spec
    members = [MAPPOMember(name, MAPPO(spec, cfg.mappo, seed=seed))
               for seed, name in enumerate(("a", "b"))]
    league = League(cfg, run_dir, members=members)
    league.cfg = dataclasses.replace(cfg, runner="ray", sync=False)
    league.learners = _InProcessPool(league.members, league.store)
    return league


def _seconds(row):
    return row["finished_at"] - row["started_at"]


def test_an_async_leagues_recorded_estimate_is_per_member_generation(tmp_path):
    league = _async_league(tmp_path / "run")
    try:
        league.run()
        rows = league.db.generations(league.run_id)
        members = league.members
    finally:
        league.learners = None
        league.close()
    assert len(rows) == 4  # 2 members x 2 generations, one at a time (one actor)
    trained = sum(_seconds(r) for r in rows)
    # per member generation: its share of the wall time with 1 or 2 actors at once
    assert recorded_estimate(rows, members, parallel=1) == (trained, 4)
    assert recorded_estimate(rows, members, parallel=2) == (trained / 2, 4)
    # the versions' spans per version: 2 member generations each (one actor), so a member
    # generation's time left from it was twice its own (N times, N members)
    spans, versions = recorded_training(rows)
    assert versions == 2 and spans / versions > 1.9 * trained / 4
    # the loop's estimate is the same recorded one
    assert (league._gen_seconds, league._gens) == (trained, 4)


def test_a_resumed_async_league_estimates_from_the_rows_of_both_processes(tmp_path, caplog):
    league = _async_league(tmp_path / "run", generations=1)
    try:
        league.run()
    finally:
        league.learners = None
        league.close()
    caplog.set_level(logging.INFO, "populations.league")
    cfg = _kuhn(generations=3, frames_per_generation=FRAMES, num_envs=8, eval_episodes=1)
    spec = games.make(cfg.game).spec
    members = [MAPPOMember(name, MAPPO(spec, cfg.mappo, seed=seed))
               for seed, name in enumerate(("a", "b"))]
    league = League(cfg, tmp_path / "run", resume=True, members=members)
    try:  # asynchronous as the first process ran it (the checkpoint's phase "async")
        league.cfg = dataclasses.replace(cfg, runner="ray", sync=False)
        league.learners = _InProcessPool(league.members, league.store)
        league.run()
        rows = league.db.generations(league.run_id)
    finally:
        league.learners = None
        league.close()
    assert len(rows) == 6 and league._gens == 6
    assert league._gen_seconds == sum(_seconds(r) for r in rows)
    lines = [r.getMessage() for r in caplog.records if " done (#" in r.getMessage()]
    assert len(lines) == 4 and all("about" in line for line in lines[:3]), lines


def _vdn_league(run_dir, generations, learning_starts):
    """A MAPPO member and a VDN member on Kuhn poker, VDN's replay warm after
    ``learning_starts`` frames."""
    cfg = _kuhn(generations=generations, frames_per_generation=FRAMES, num_envs=8,
                eval_episodes=1)
    spec = games.make(cfg.game).spec
    vdn = ValueDecomp(spec, ValueDecompConfig(mixer="vdn", learning_starts=learning_starts,
                                              batch_size=8), seed=1)
    members = [MAPPOMember("mappo", MAPPO(spec, cfg.mappo, seed=0)),
               LearnerMember("vdn", vdn)]
    return League(cfg, run_dir, members=members)


def _run_recording(league):
    """Run ``league``; the VDN member's updates, the rows and a resume's recorded estimate
    after each generation's training."""
    updates, estimates, rows = [], [], []
    train = league._train_members

    def counted():
        train()
        updates.append(league.members[1].learner.updates)
        rows.append(league.db.generations(league.run_id))
        estimates.append(recorded_estimate(rows[-1], league.members))

    league._train_members = counted
    try:
        league.run()
    finally:
        league.close()
    return updates, estimates, rows


def _done_lines(caplog):
    return [r.getMessage() for r in caplog.records if " done, " in r.getMessage()]


def test_a_generation_that_reaches_learning_starts_part_way_is_not_timed(tmp_path, caplog):
    caplog.set_level(logging.INFO, "populations.league")
    # warm at frame 96: generation 1 fills the replay, 2 updates from its 4th step (of 8
    # copies) on, 3 and 4 at every step
    league = _vdn_league(tmp_path / "run", 4, learning_starts=FRAMES + 32)
    updates, estimates, rows = _run_recording(league)
    assert updates == [0, 5, 13, 21], updates
    assert league._gens == 2  # generations 3 and 4
    assert [("about" in line) for line in _done_lines(caplog)] == [False, False, True, False]
    warm = league_progress.warm_rows(rows[1], league.members)
    assert [(r["member"], r["version"]) for r in warm] == [("mappo", 1), ("mappo", 2)]
    # a resume after generation 2: nothing to go on; after 3: version 3 alone
    assert estimates[0] == estimates[1] == (0.0, 0)
    v3 = [r for r in rows[2] if r["version"] == 3]
    assert estimates[2] == (recorded_training(v3)[0], 1)


def test_a_replay_warm_as_a_generation_begins_times_it(tmp_path, caplog):
    caplog.set_level(logging.INFO, "populations.league")
    # warm at frame 72: generation 1 fills the replay, 2 updates from its first step on
    league = _vdn_league(tmp_path / "run", 3, learning_starts=FRAMES + 8)
    updates, estimates, rows = _run_recording(league)
    assert updates == [0, 8, 16], updates
    assert league._gens == 2  # generations 2 and 3
    assert [("about" in line) for line in _done_lines(caplog)] == [False, True, False]
    v2 = [r for r in rows[1] if r["version"] == 2]
    assert estimates[0] == (0.0, 0) and estimates[1] == (recorded_training(v2)[0], 1)


def test_async_members_on_learner_actors_time_their_share_of_the_wall_time(tmp_path,
                                                                          ray_local):
    """On Ray's learner actors (one per member, training at once) a member generation's
    share is its recorded seconds over the 2 actors."""
    from tests.populations.test_league_ray import _cfg, _run

    league = _run(_cfg(runner="ray", sync=False, generations=2, frames_per_generation=64),
                  tmp_path / "run")
    with sqlite3.connect(tmp_path / "run" / "league.db") as db:  # the league's is closed
        rows = db.execute("SELECT started_at, finished_at FROM generations").fetchall()
    assert len(rows) == league._gens == 4
    assert league._gen_seconds == pytest.approx(sum(b - a for a, b in rows) / 2)
