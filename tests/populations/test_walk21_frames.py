"""Walk 21: MAPPO/IPPO trained nothing on the last partial rollout. ``frames=3000`` with
rollouts of 800 frames (32 copies × 25 steps) played 3,008 frames, reported 3,008 in the
table and the snapshot's ``learner_step``, and trained on 2,400 (3 updates); the table's
``final_return`` was nowhere in ``metrics.csv`` (its last ``charts/episode_return`` was at
step 2,400). Now an on-policy learner's budget is rounded up to whole rollouts (every frame
counted is trained on, as VDN/QMIX/MADDPG train on every frame and rollout workers already
played whole rounds), the log says so, and ``charts/final_return`` is a metric at the run's
last step beside ``charts/eval_return``."""

from __future__ import annotations

import csv
import logging
import sqlite3
from pathlib import Path

import pytest

import games
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import train
from marl.value_decomp import ValueDecomp, ValueDecompConfig
from populations.experiment import run_experiment
from tests.populations.test_single_resume import _exp

# rollouts of 4 copies × 4 steps = 16 frames: 100 frames is 6 rollouts and 4 frames
SMALL = ["game=climbing", "frames=100", "num_envs=4", "mappo.rollout_steps=4",
         "eval_episodes=4", "progress=false", "checkpoint_every_s=0", "logger=csv"]


def _metric(run: Path, key: str) -> list[tuple[int, float]]:
    db = sqlite3.connect(run / "league.db")
    try:
        return db.execute("SELECT step, value FROM metrics WHERE key = ? ORDER BY step",
                          (key,)).fetchall()
    finally:
        db.close()


def _csv(run: Path, key: str) -> list[tuple[int, float]]:
    with open(run / "metrics.csv", newline="") as fh:
        return [(int(r["step"]), float(r["value"])) for r in csv.DictReader(fh)
                if r["key"] == key]


def test_train_rounds_an_on_policy_budget_up_to_whole_rollouts(caplog):
    vg = games.VectorGame("matrix/climbing", 4, seed=0, with_state=True)
    learner = MAPPO(vg.spec, MAPPOConfig(rollout_steps=4))
    with caplog.at_level(logging.INFO, logger="marl.train"):
        res = train(learner, vg, 100, progress=False)
    assert res.frames == res.trained_frames == 112 and res.updates == 7  # 7 rollouts of 16
    assert learner.steps == 112 and learner.policy().meta.step == 112
    assert any("trained 112 frames" in m and "frames=100 rounded up to whole rollouts" in m
               for m in caplog.messages), caplog.messages


def test_a_budget_of_whole_rollouts_and_replay_learners_are_as_before():
    vg = games.VectorGame("matrix/climbing", 4, seed=0, with_state=True)
    res = train(MAPPO(vg.spec, MAPPOConfig(rollout_steps=4)), vg, 96, progress=False)
    assert res.frames == res.trained_frames == 96 and res.updates == 6
    vg = games.VectorGame("matrix/climbing", 4, seed=0, with_state=True)
    vdn = ValueDecomp(vg.spec, ValueDecompConfig(mixer="vdn", learning_starts=16, batch_size=16,
                                                train_every=2))
    res = train(vdn, vg, 100, progress=False)  # a replay: no rollout to finish
    assert res.frames == 100 and res.trained_frames == 96 and res.updates > 0


@pytest.mark.parametrize(("done", "trained", "whole", "spent"), [
    (96, 96, True, False), (100, 96, True, False), (112, 112, True, True),
    (100, 96, False, True), (99, 0, False, False)])
def test_budget_spent(done, trained, whole, spent):
    """The rule a league member's generation can share (populations.members)."""
    from marl.train import budget_spent  # new with the rule

    assert budget_spent(done, 100, trained, whole) is spent


@pytest.mark.parametrize("algo", ["mappo", "ippo"])
def test_a_single_run_reports_the_frames_it_trained_on(tmp_path, algo):
    table = run_experiment(_exp(*SMALL, f"algo={algo}"), tmp_path).table
    assert table[0]["frames"] == 112  # was 100, trained on 96
    # the last update is at the run's last frame: its episode return is the table's
    (*_, (step, _)) = _metric(tmp_path, "charts/episode_return")
    assert step == 112
    db = sqlite3.connect(tmp_path / "league.db")
    try:
        (step,) = db.execute("SELECT learner_step FROM snapshots").fetchone()
    finally:
        db.close()
    assert step == 112


@pytest.mark.parametrize("algo", ["mappo", "vdn"])
def test_final_return_is_a_metric_at_the_runs_last_step(tmp_path, algo):
    extra = ["vdn.learning_starts=16"] if algo == "vdn" else []
    table = run_experiment(_exp(*SMALL, f"algo={algo}", *extra), tmp_path).table
    frames, final = table[0]["frames"], table[0]["final_return"]
    assert final is not None
    (got,) = _metric(tmp_path, "charts/final_return")
    assert got[0] == frames and round(got[1], 3) == final
    assert _csv(tmp_path, "charts/final_return") == [got]
    (evaluated,) = _metric(tmp_path, "charts/eval_return")
    assert evaluated[0] == frames  # beside it
