"""A league's "about N left" estimate (populations.league_progress) is taken from
generations that trained as the rest will: one in which an off-policy member (VDN/QMIX,
MADDPG) only filled its replay up to ``learning_starts`` made no update, is faster than those
after it, and is not extrapolated from; and a generation trained partly before a kill and
partly after the resume counts its members' training, not the downtime between."""

from __future__ import annotations

import logging

import games
from marl.mappo import MAPPO
from marl.value_decomp import ValueDecomp, ValueDecompConfig
from populations.league import League
from populations.league_progress import recorded_estimate, recorded_training
from populations.members import LearnerMember, MAPPOMember
from tests.populations.test_league import _kuhn

FRAMES = 64  # a generation's frames: VDN's replay is warm (learning_starts) after two


def _league(run_dir, generations, resume=False):
    """A MAPPO member and a VDN member on Kuhn poker, the VDN one's first generation only
    filling its replay."""
    cfg = _kuhn(generations=generations, frames_per_generation=FRAMES, num_envs=8,
                eval_episodes=1)
    spec = games.make(cfg.game).spec
    vdn = ValueDecomp(spec, ValueDecompConfig(mixer="vdn", learning_starts=FRAMES + 8,
                                              batch_size=8), seed=1)
    members = [MAPPOMember("mappo", MAPPO(spec, cfg.mappo, seed=0)),
               LearnerMember("vdn", vdn)]
    return League(cfg, run_dir, resume=resume, members=members)


def _done_lines(caplog):
    return [r.getMessage() for r in caplog.records if " done, " in r.getMessage()]


def test_the_downtime_of_a_kill_within_a_generation_is_not_training():
    rows = [  # in process: member a, a kill, the resume (another pid) trains member b
        {"version": 1, "started_at": 0.0, "finished_at": 10.0, "worker": "pid 7"},
        {"version": 1, "started_at": 1000.0, "finished_at": 1012.0, "worker": "pid 9"},
        # one process: its members one after another, the pause between them its own
        {"version": 2, "started_at": 1020.0, "finished_at": 1030.0, "worker": "pid 9"},
        {"version": 2, "started_at": 1030.5, "finished_at": 1034.0, "worker": "pid 9"},
        # learner actors (other workers) at once: the version's span
        {"version": 3, "started_at": 1040.0, "finished_at": 1045.0, "worker": "n1 pid 3"},
        {"version": 3, "started_at": 1041.0, "finished_at": 1050.0, "worker": "n1 pid 4"},
    ]
    assert recorded_training(rows[:2]) == (10.0 + 12.0, 1)
    assert recorded_training(rows) == (22.0 + 14.0 + 10.0, 3)
    assert recorded_training(rows, since=2) == (14.0 + 10.0, 2)


def test_a_generation_in_which_a_member_only_filled_its_replay_is_not_timed(tmp_path, caplog):
    """One run for the live estimate and a resume's (recorded_estimate, on the rows and
    members as recorded after each generation's training: what a resume would read)."""
    caplog.set_level(logging.INFO, "populations.league")
    league = _league(tmp_path / "run", 3)
    try:
        updates, estimates, rows = [], [], []
        train = league._train_members

        def counted():
            train()
            updates.append(league.members[1].learner.updates)
            rows.append(league.db.generations(league.run_id))
            estimates.append(recorded_estimate(rows[-1], league.members))

        league._train_members = counted
        league.run()
    finally:
        league.close()
    assert updates[0] == 0 < updates[1] < updates[2], updates  # generation 1: no update
    assert league._gens == 2  # generations 2 and 3
    # after generation 1 nothing to go on yet (no own timing; the recorded fallback gives
    # nothing: VDN made no update); after generation 2 its own time
    assert [("about" in line) for line in _done_lines(caplog)] == [False, True, False]
    # a resume after generation 1: no estimate; after generation 2: its training alone
    assert estimates[0] == (0.0, 0) and recorded_training(rows[0])[1] == 1
    seconds, done = recorded_training(rows[1], since=2)
    assert done == 1 and seconds > 0 and estimates[1] == (seconds, 1)
    assert recorded_training(rows[1])[1] == 2


def test_an_exploiters_restart_is_not_a_generation_without_updates(tmp_path, caplog):
    """A main exploiter restarted after its generation (league_eval.reset_winners: its
    initial state, 0 updates) updated in it: the generation is timed, and a resume's
    recorded estimate takes the recorded versions (the restart is not a replay filling)."""
    caplog.set_level(logging.INFO, "populations.league")
    cfg = _kuhn(generations=2, frames_per_generation=FRAMES, num_envs=8, eval_episodes=1)
    spec = games.make(cfg.game).spec
    members = [MAPPOMember("main", MAPPO(spec, cfg.mappo, seed=0)),
               LearnerMember("exploiter", MAPPO(spec, cfg.mappo, seed=1), opponents=("main",),
                             latest_only=True, reset_win_rate=0.0)]  # restarts every time
    league = League(cfg, tmp_path / "run", members=members)
    try:
        updates, train = [], league._train_members

        def counted():
            train()
            updates.append(league.members[1].learner.updates)

        league._train_members = counted
        league.run()
        assert updates[0] > 0 and league.members[1].learner.updates == 0  # restarted
        assert "restarting it" in caplog.text
        assert league._gens == 2
        assert [("about" in line) for line in _done_lines(caplog)] == [True, False]
        rows = league.db.generations(league.run_id)
        assert recorded_estimate(rows, league.members) == recorded_training(rows)
        assert recorded_training(rows)[1] == 2
    finally:
        league.close()
