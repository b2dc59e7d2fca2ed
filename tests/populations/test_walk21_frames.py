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


# ------------------------------------------------------------------ the learners' seeds
# Walk 21 too: `vdn.seed=5` gave the run of `vdn.seed=0` (a run seeds each learner from its
# tree's learner/<name> stream of seed=), and a seed=1 VDN job recorded `vdn.seed: 0`.
@pytest.mark.parametrize("section", ["vdn", "qmix", "maddpg"])
def test_a_learner_sections_seed_other_than_the_runs_is_refused_in_one_line(
        section, tmp_path, monkeypatch, capsys):
    from tests.populations.test_walk19_experiment import _refused

    line = _refused([f"algo={section}", "game=climbing", f"{section}.seed=5", "frames=1200",
                     "eval_episodes=4"], monkeypatch, tmp_path, capsys)
    assert line == (f"bad config: {section}.seed=5 is not read by an experiment: the run's "
                    "seed= seeds the learner too (give seed=5 instead)"), line


def test_a_learner_sections_seed_equal_to_the_runs_or_default_is_accepted():
    from marl.maddpg import MADDPGConfig
    from populations.experiment import RESUME_MAY_CHANGE, ExperimentConfig
    from populations.run_folder import settings_diff

    ExperimentConfig(seed=3, vdn=ValueDecompConfig(mixer="vdn", seed=3),
                     qmix=ValueDecompConfig(mixer="qmix", seed=0), maddpg=MADDPGConfig(seed=3))
    with pytest.raises(ValueError, match=r"^maddpg\.seed=4 is not read"):
        ExperimentConfig(seed=3, maddpg=MADDPGConfig(seed=4))
    # a run recorded before (every section's seed 0) resumes
    saved = {"seed": 1, "vdn": {"seed": 0, "lr": 1.0}, "qmix": {"seed": 0},
             "maddpg": {"seed": 0}}
    now = {"seed": 1, "vdn": {"seed": 1, "lr": 1.0}, "qmix": {"seed": 1},
           "maddpg": {"seed": 1}}
    assert settings_diff(saved, now, RESUME_MAY_CHANGE) == []


def test_a_run_records_the_seed_its_learners_are_seeded_from(tmp_path):
    import json

    from populations.db import LeagueDB

    run_experiment(_exp(*SMALL, "algo=vdn", "seed=1"), tmp_path)
    db = LeagueDB(tmp_path / "league.db", readonly=True)
    try:
        (run,) = [r for r in [db.run_id("default")] if r is not None]
        recorded = db.run_config(run)
    finally:
        db.close()
    settings = json.loads((tmp_path / "settings.json").read_text())
    for config in (recorded, settings):  # the dashboard's and the resume's
        assert config["seed"] == 1
        assert config["vdn"]["seed"] == config["qmix"]["seed"] == config["maddpg"]["seed"] == 1
        assert config["llm"]["grpo"]["seed"] == config["population"]["psro"]["seed"] == 1
