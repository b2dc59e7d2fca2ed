"""PSRO runs resume: a run stopped after some iterations (cleanly, or inside an iteration
after its best responses were published) and resumed ends with exactly the members,
iterations, NashConv values and matches of an uninterrupted run."""

import sqlite3

from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
from populations.experiment import run_experiment

BASE = ["experiment=kuhn_psro", "eval_episodes=2", "progress=false", "logger=none"]


def _run(run_dir, iterations, resume=False):
    overrides = [*BASE, f"population.iterations={iterations}", f"resume={str(resume).lower()}"]
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=overrides))
    return run_experiment(exp, run_dir)


def _state(db_path):
    db = sqlite3.connect(db_path)
    try:
        return {
            "snapshots": sorted(db.execute(
                "SELECT m.name, s.version FROM snapshots s JOIN members m ON s.member_id = m.id"
            ).fetchall()),
            "iterations": [(i, round(n, 12)) for i, n in db.execute(
                "SELECT iteration, nash_conv FROM psro_iterations ORDER BY iteration")],
            "matches": sorted(db.execute("SELECT key, returns FROM matches").fetchall()),
        }
    finally:
        db.close()


def test_resumed_psro_equals_an_uninterrupted_run(tmp_path):
    whole = _state(_run(tmp_path / "whole", 6).database)
    _run(tmp_path / "split", 3)
    split = _state(_run(tmp_path / "split", 6, resume=True).database)
    assert split == whole
    assert len(whole["iterations"]) == 6 and len(whole["snapshots"]) == 2 * 7
    assert whole["iterations"][-1][1] == 0.0  # Kuhn solved (least-exploitable + exploiter)


def test_psro_resumes_from_inside_an_unfinished_iteration(tmp_path):
    whole = _state(_run(tmp_path / "whole", 4).database)
    summary = _run(tmp_path / "cut", 3)
    db = sqlite3.connect(summary.database)  # as if killed after iteration 2 published its
    with db:  # best responses but before it was recorded and played its matches
        db.execute("DELETE FROM psro_iterations WHERE iteration = 2")
        db.execute("DELETE FROM matches WHERE key LIKE 'psro/it0002/%'")
    db.close()
    assert _state(_run(tmp_path / "cut", 4, resume=True).database) == whole
