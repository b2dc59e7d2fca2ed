"""An asynchronous league's (``sync=False``) progress lines (populations.league): its stop and
resume lines name each member's generation (they said "generation 0", the league's
generation being set only as all members finish; its time left, per member and overlapping
the evaluation, is test_perf35_async_timing's); and a process's first batch of evaluation
pairs on Ray match workers, which waits for the workers' start (14-34 s for one pair,
against under a second a pair later), is not in the time a pair."""

from __future__ import annotations

import dataclasses
import logging
import os
import signal

import pytest

import games
from marl.mappo import MAPPO
from populations import run_folder
from populations.league import League
from populations.members import MAPPOMember
from tests.populations.test_league import _kuhn
from tests.populations.test_prog35_time_left import FRAMES, _InProcessPool


class _StopAfterFirst(_InProcessPool):
    """The in-process learner pool; SIGTERM as the first member generation comes back."""

    def wait(self):
        result = super().wait()
        if not getattr(self, "sent", False):
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)
        return result


def _cfg(generations):
    return _kuhn(generations=generations, frames_per_generation=FRAMES, num_envs=8,
                 eval_episodes=1)


def _league(run_dir, generations, pool=_InProcessPool, resume=False):
    cfg = _cfg(generations)
    spec = games.make(cfg.game).spec
    members = [MAPPOMember(name, MAPPO(spec, cfg.mappo, seed=seed))
               for seed, name in enumerate(("a", "b"))]
    league = League(cfg, run_dir, members=members, resume=resume)
    league.cfg = dataclasses.replace(cfg, runner="ray", sync=False)  # ray_workers=2
    league.learners = pool(league.members, league.store)
    return league


def _close(league):
    league.learners = None
    league.close()


def test_an_async_stop_and_its_resume_name_each_members_generation(tmp_path, caplog):
    caplog.set_level(logging.INFO, "populations.league")
    league = _league(tmp_path / "run", 2, _StopAfterFirst)
    try:
        with run_folder.sigterm_as_interrupt(), pytest.raises(run_folder.Terminated):
            league.run()
    finally:
        _close(league)
    # a's generation 1 trained (its evaluation left), b's 1 in flight: its 0 is the last
    assert "stopped at generations a: 1 trained, b: 0 done (async) with a checkpoint" in \
        caplog.text
    assert "stopped at generation 0" not in caplog.text
    caplog.clear()
    cfg = _cfg(2)
    spec = games.make(cfg.game).spec
    members = [MAPPOMember(name, MAPPO(spec, cfg.mappo, seed=seed))
               for seed, name in enumerate(("a", "b"))]
    league = League(cfg, tmp_path / "run", members=members, resume=True)
    try:
        resumed = [r.getMessage() for r in caplog.records
                   if r.getMessage().startswith("resumed from ")]
        assert len(resumed) == 1 and resumed[0].endswith(
            " (async; generations a: 1 trained, b: 0 done)"), resumed
        assert league.progress == {"a": (1, "trained"), "b": (0, "done")}
        league.cfg = dataclasses.replace(cfg, runner="ray", sync=False)
        league.learners = _InProcessPool(league.members, league.store)
        league.run()  # goes on from there: a's evaluation, then the generations left
        assert league.progress == {"a": (2, "done"), "b": (2, "done")}
    finally:
        _close(league)


def test_the_first_batch_on_ray_match_workers_is_not_timed(tmp_path, caplog):
    """``runner=ray`` (its match workers here the in-process runner: the batches and their
    timing are the league's): generation 0's one pair is the process's first batch, which
    waits for the workers' start, and is left out; the 5 pairs after it are timed."""
    caplog.set_level(logging.INFO, "populations.league")
    league = _league(tmp_path / "run", 1)
    try:
        league.run()
    finally:
        _close(league)
    played = [r.getMessage() for r in caplog.records if "evaluated" in r.getMessage()]
    assert [line.split(": evaluated ")[1].split(" snapshot")[0] for line in played] == \
        ["1", "2", "3"], played  # a@v0-b@v0; a@v1 and b@v1 against those published
    assert league._eval_pairs == 5
    assert 0 < league._eval_seconds < league._eval_spent
