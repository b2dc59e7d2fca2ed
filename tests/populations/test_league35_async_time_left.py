"""An asynchronous league's (``sync=False``) progress lines (populations.league): its stop and
resume lines name each member's generation (they said "generation 0", the league's
generation being set only as all members finish); its time left overlaps the evaluation with
the other members' training (it was added as if played alone, about ``parallel`` times too
much); and a process's first batch of evaluation pairs on Ray match workers, which waits for
the workers' start (14-34 s for one pair, against under a second a pair later), is not in
the time a pair."""

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
from populations.league_progress import _time_left, async_pairs_left
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


def test_the_async_time_left_overlaps_evaluation_with_the_other_members_training():
    # 4 member generations timed: 10 s of wall time each (training over the actors); 4
    # pairs in 4 s; 6 member generations and 20 pairs left
    serial = _time_left(40, 4, 10, eval_seconds=4, pairs=4, pairs_left=20)
    assert serial == "; about 80s left"  # 60 s of training + 20 s of evaluation
    # 2 members on 2 actors: each member's 3 generations (2 x 10 s each) and 10 pairs
    # (10 s) one after another: 70 s
    assert _time_left(40, 4, 10, 4, 4, 20, overlap=(2, 2)) == "; about 70s left"
    # 2 members on 1 actor: the actor trains 60 s while the driver evaluates one member
    assert _time_left(40, 4, 10, 4, 4, 20, overlap=(1, 2)) == "; about 60s left"
    # evaluation longer than the training: the driver evaluates one member at a time
    assert _time_left(40, 4, 10, 400, 4, 20, overlap=(2, 2)) == "; about 33 min left"


def test_an_async_leagues_left_overlaps_its_evaluation(tmp_path):
    league = _league(tmp_path / "run", 4)
    try:
        league.progress = {"a": (2, "done"), "b": (1, "done")}  # 5 member generations left
        league._gen_seconds, league._gens = 20.0, 2  # per member generation: 10 s
        league._eval_seconds, league._eval_pairs = 3.0, 6.0  # a pair: 0.5 s
        league.learners.actors = [league.learners.actor] * 2  # 2 members at once
        pairs = async_pairs_left([2, 1], 0, 4)
        chains = (5 * 10 * 2 + 0.5 * pairs) / 2  # each member's training and evaluation
        assert league._left() == _time_left(chains, 1, 2)
        assert league._left() != _time_left(20.0, 2, 7, 3.0, 6.0, pairs)  # as if serial
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
