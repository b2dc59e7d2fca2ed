"""selfplay-train (Hydra): every shipped experiment composes and runs at a tiny budget,
sweeps make one folder per job, config mistakes fail at startup, wandb writes offline."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
from populations.experiment import ExperimentConfig, run_experiment

EXPERIMENTS = sorted(p.stem for p in (Path(__file__).parents[2] / "configs" / "experiment").glob(
    "*.yaml"))
# the smallest budget each population kind finishes in
TINY = ["frames=400", "num_envs=4", "eval_episodes=2", "population.generations=1",
        "population.frames_per_generation=400", "population.iterations=2", "progress=false",
        "logger=none", "llm.iterations=1", "llm.grpo.group_size=2", "llm.grpo.groups_per_step=2",
        "llm.corpus_episodes=20"]


def _compose(overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return compose(config_name="config", overrides=overrides)


def test_shipped_experiments_are_listed():
    assert {"kuhn_psro", "spread_mappo_gnn", "tag_pfsp_league", "main", "kuhn_llm_selfplay",
            "tool_team_llm", "mixed_league"} <= set(EXPERIMENTS)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_composes_and_runs_end_to_end(name, tmp_path):
    cfg = _compose([f"experiment={name}", *TINY])
    exp = OmegaConf.to_object(cfg)
    assert isinstance(exp, ExperimentConfig) and exp.experiment == name
    summary = run_experiment(exp, tmp_path / name)
    db = sqlite3.connect(summary.database)
    count = lambda table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: E731
    assert count("members") >= 1
    assert count("snapshots") >= 1
    assert count("matches") >= 1
    assert count("metrics") >= 1
    assert summary.table


def _cli(args, cwd, env=None, check=True):
    return subprocess.run([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600, check=check,
                          env={**os.environ, **(env or {})})


def test_cli_cfg_job_prints_the_composed_config(tmp_path):
    out = _cli(["experiment=kuhn_psro", "--cfg", "job"], tmp_path).stdout
    assert "name: openspiel/kuhn_poker" in out and "kind: psro" in out


def test_multirun_makes_one_folder_per_job(tmp_path):
    out = _cli(["-m", "experiment=kuhn_psro", "seed=0,1", "population.iterations=1",
                "eval_episodes=2", "logger=none"], tmp_path)
    assert out.returncode == 0, out.stderr
    dbs = sorted((tmp_path / "multirun").rglob("league.db"))
    assert len(dbs) == 2 and dbs[0].parent != dbs[1].parent


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("mappo.lrr=0.1", "Key 'lrr' not in 'MAPPOConfig'"),
        ("mappo.lr=fast", "Value 'fast' of type 'str' could not be converted to Float"),
        ("algo=alphazero", "Could not find 'algo/alphazero'"),
        ("mappo.adv_norm=agentwise", "adv_norm='agentwise' unknown; choose one of"),
        ("population.matchmaking.rule=elo", "matchmaking rule 'elo' unknown; choose one of"),
        ("llm.team=solo", "llm team 'solo' unknown; choose one of ['shared', 'per_role']"),
        ("llm.grpo.adv_mode=agentwise", "unknown advantage scheme 'agentwise'"),
        ("population.members=[mappo,vdn]", "league member 'vdn' unknown; choose from"),
    ],
)
def test_config_mistakes_fail_at_startup(override, message, tmp_path):
    res = _cli([override, "frames=1"], tmp_path, check=False)
    assert res.returncode != 0
    assert message in res.stderr + res.stdout
    assert not list(tmp_path.rglob("league.db"))  # nothing ran


def test_unknown_group_option_lists_the_choices(tmp_path):
    res = _cli(["game=chess"], tmp_path, check=False)
    assert "Available options in 'game'" in res.stderr and "kuhn" in res.stderr


def test_wandb_logger_writes_offline_run_files(tmp_path):
    res = _cli(["experiment=kuhn_psro", "population.iterations=1", "eval_episodes=2",
                "logger=wandb"], tmp_path, env={"WANDB_MODE": "offline"})
    assert "wandb" in res.stdout
    runs = list(tmp_path.rglob("offline-run-*"))
    assert runs, res.stdout + res.stderr
    assert list(runs[0].glob("*.wandb"))
