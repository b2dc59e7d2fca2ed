"""An asynchronous league (``sync=False``) times a member generation in which an exploiter
restarted (league_eval.reset_winners in League._finish_async: its initial state, 0 updates)
as one that updated: before, each restart set the estimate's timing back to nothing.
Without Ray: the learner actor's own training code (``_LearnerActor.train``) runs in this
process behind a pool of the LearnerPool's calls the asynchronous loop makes."""

from __future__ import annotations

import copy
import dataclasses
import logging

import games
from marl.mappo import MAPPO
from populations.league import League
from populations.learner_actors import LearnerJob, LearnerResult, _LearnerActor
from populations.members import LearnerMember, MAPPOMember
from tests.populations.test_league import _kuhn


class _InProcessPool:
    """LearnerPool's submit/busy/wait/snapshot/close, training each job at ``wait`` with
    ``_LearnerActor.train`` on a copy of the member (as an actor holds its own)."""

    def __init__(self, members, store):
        self.actor = _LearnerActor(1)
        self.actor.env = None
        self.actor.members = {m.name: copy.deepcopy(m) for m in members}
        self.actor.where = lambda: "in process"
        self.actor._policy = lambda job, sid: store.load(sid)
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


def test_an_async_exploiters_restart_keeps_the_timing(tmp_path, caplog):
    caplog.set_level(logging.INFO, "populations.league")
    cfg = _kuhn(generations=2, frames_per_generation=64, num_envs=8, eval_episodes=1)
    spec = games.make(cfg.game).spec
    members = [MAPPOMember("main", MAPPO(spec, cfg.mappo, seed=0)),
               LearnerMember("exploiter", MAPPO(spec, cfg.mappo, seed=1), opponents=("main",),
                             latest_only=True, reset_win_rate=0.0)]  # restarts every time
    league = League(cfg, tmp_path / "run", members=members)
    try:
        league.cfg = dataclasses.replace(cfg, runner="ray", sync=False)
        league.learners = _InProcessPool(league.members, league.store)
        league.run()
        assert "restarting it" in caplog.text
        assert league.members[1].learner.updates == 0  # restarted after its last generation
        assert league._gens == 4  # every member generation updated: none set it back to 0
        lines = [r.getMessage() for r in caplog.records if " done (#" in r.getMessage()]
        assert len(lines) == 4 and all("about" in line for line in lines[:3]), lines
    finally:
        league.learners = None
        league.close()
