"""Walk 21: a single run's ``eval_return`` had no uncertainty (32 episodes by default, while
the spread between seeds, ~1.5 on climbing, is the size of the differences a comparison
studies). The closing table now has ``eval_ci95`` beside it: the half-width of the 95 %
confidence interval of the mean (Student's t over the same evaluation episodes), logged as
``charts/eval_return_ci95``. The evaluation's episodes are read in the order they were played
(the keys sorted as text put ``eval/e100000`` before ``eval/e10001``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from populations.db import LeagueDB, MatchRow
from populations.experiment import run_experiment
from populations.loggers import offline_records
from tests.populations.test_single_resume import _exp
from tests.populations.test_walk20_single_eval import _metric

# Kuhn poker against random seats: the episodes' returns differ
SMALL = ["algo=mappo", "game=kuhn", "frames=64", "num_envs=4", "mappo.rollout_steps=4",
         "eval_episodes=12", "progress=false", "checkpoint_every_s=0", "logger=csv"]


def _episodes(run: Path) -> list[float]:
    """The learner seats' mean return per evaluation episode, from league.db."""
    db = sqlite3.connect(run / "league.db")
    try:
        rows = db.execute("SELECT seats, returns FROM matches WHERE key LIKE 'eval/e%'")
        return [float(np.mean([json.loads(r)[a] for a in json.loads(s)])) for s, r in rows]
    finally:
        db.close()


def _half_width(x: list[float]) -> float:
    """The 95 % half-width by the textbook formula, independently of the code under test."""
    return float(stats.t.interval(0.95, len(x) - 1, loc=0.0, scale=stats.sem(x))[1])


def test_the_table_has_the_eval_returns_95_ci_and_logs_it(tmp_path):
    table = run_experiment(_exp(*SMALL), tmp_path).table
    x = _episodes(tmp_path)
    assert len(x) == 12 and np.std(x) > 0  # the episodes' returns differ
    assert list(table[0]) == ["member", "version", "frames", "seconds", "final_return",
                              "eval_return", "eval_ci95"]
    assert table[0]["eval_ci95"] == round(_half_width(x), 3)
    (got,) = _metric(tmp_path, "charts/eval_return_ci95")
    assert got[0] == table[0]["frames"] and got[1] == pytest.approx(_half_width(x))
    # a finished run's resume shows the same row (read back from the matches)
    again = run_experiment(_exp(*SMALL, "resume=true"), tmp_path).table
    assert again == table


def test_one_evaluation_episode_has_no_interval(tmp_path):
    table = run_experiment(_exp(*SMALL[:-3], "eval_episodes=1", *SMALL[-2:]), tmp_path).table
    assert table[0]["eval_return"] is not None and table[0]["eval_ci95"] is None
    assert _metric(tmp_path, "charts/eval_return_ci95") == []


def _far_rows(tmp_path: Path) -> tuple[LeagueDB, int]:
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("x", experiment="x", game="g")
    db.add_matches(run, [MatchRow(f"eval/e{k:05d}", "g", {"player_0": 7},
                                  {"player_0": float(k)})
                         for k in (10_001, 99_999, 100_000)])
    return db, run


def test_the_first_episodes_are_the_first_played_past_99999(tmp_path):
    from populations.experiment import mean_eval_return

    db, run = _far_rows(tmp_path)
    assert mean_eval_return(db, run, 7, 2) == (10_001 + 99_999) / 2  # was (100_000 + 10_001) / 2
    db.close()


def test_the_interval_is_over_the_same_episodes(tmp_path):
    from populations.experiment import recorded_evaluation

    db, run = _far_rows(tmp_path)
    evaluated = recorded_evaluation(db, run, 7)
    assert evaluated.episodes == 3 and evaluated.ci95 == pytest.approx(
        _half_width([10_001.0, 99_999.0, 100_000.0]))
    db.close()


# ------------------------------------------------------------ wandb runs of one sweep
# Walk 21 too: a sweep's wandb runs had no group (each named after its job folder only), so
# the seeds of one setting could not be pooled in wandb's UI.
def _wandb_run_records(job: Path) -> list:
    """The run records of the offline wandb files of ``job`` (read with
    :func:`populations.loggers.offline_records`)."""
    import wandb

    # the wandb service writes a finished run's records after finish() returns (~0.5 s
    # later here, often): a read then found only the file's header; teardown ends the
    # service once it has written them
    wandb.teardown()

    return [rec.run for path in sorted((job / "wandb").glob("offline-run-*/run-*.wandb"))
            for rec in offline_records(path) if rec.WhichOneof("record_type") == "run"]


@pytest.fixture
def offline_wandb(monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")


TINY_WANDB = ["game=kuhn", "frames=16", "mappo.rollout_steps=4", "eval_episodes=2",
              "progress=false", "logger=wandb", "logger.mode=offline"]


def test_a_sweeps_wandb_runs_are_grouped_by_sweep_and_by_setting_without_seed(
        tmp_path, monkeypatch, offline_wandb):
    from tests.populations.test_walk18_cli_more import _train

    sweep = tmp_path / "my-sweep"
    _train(["-m", "seed=0,1", *TINY_WANDB, f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    jobs = sorted(p for p in sweep.iterdir() if (p / "wandb").is_dir())
    assert len(jobs) == 2
    runs = [_wandb_run_records(job)[0] for job in jobs]
    assert [r.run_group for r in runs] == ["my-sweep", "my-sweep"]
    # one job type for both seeds; logger=, progress= name no job (nor its folder)
    assert [r.job_type for r in runs] == [
        "eval_episodes=2,frames=16,game=kuhn,mappo.rollout_steps=4"] * 2
    assert [r.display_name for r in runs] == [job.name for job in jobs]


def test_a_single_runs_wandb_run_has_no_group(tmp_path, monkeypatch, offline_wandb):
    from tests.populations.test_walk18_cli_more import _train

    run = tmp_path / "run"
    _train([*TINY_WANDB, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    (record, *_) = _wandb_run_records(run)
    assert record.run_group == "" and record.job_type == "" and record.display_name == "run"


def test_a_long_job_type_is_cut_to_what_wandb_keeps_and_stays_distinct(monkeypatch):
    from types import SimpleNamespace

    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from populations import loggers

    def job(lr: str) -> dict[str, str]:
        hc = SimpleNamespace(
            mode=RunMode.MULTIRUN, sweep=SimpleNamespace(dir="/x/2026-12-05_02-30-00"),
            job=SimpleNamespace(config=SimpleNamespace(override_dirname=SimpleNamespace(
                exclude_keys=["logger", "device"]))),
            overrides=SimpleNamespace(task=[
                "seed=3", "algo=mappo", "logger=wandb", "logger.project=p", "device=cpu",
                "game=mpe_spread", f"mappo.lr={lr}", "mappo.net.encoder=gnn",
                "+mappo.net.gnn_layers=3"]))
        monkeypatch.setattr(HydraConfig, "initialized", staticmethod(lambda: True))
        monkeypatch.setattr(HydraConfig, "get", staticmethod(lambda: hc))
        return loggers.sweep_grouping()

    a, b = job("0.0003"), job("0.0001")
    assert a["group"] == "2026-12-05_02-30-00"
    assert len(a["job_type"]) == len(b["job_type"]) == loggers.WANDB_JOB_TYPE_MAX
    assert a["job_type"].startswith("+mappo.net.gnn_layers=3,algo=mappo,game=mpe_spread,")
    assert a["job_type"] != b["job_type"]
    assert "seed" not in a["job_type"] and "logger" not in a["job_type"]


def _eval_rows(run: Path) -> list[str]:
    db = sqlite3.connect(run / "league.db")
    try:
        return [r for (r,) in db.execute(
            "SELECT returns FROM matches WHERE key LIKE 'eval/e%' ORDER BY id")]
    finally:
        db.close()


def test_two_seeds_evaluations_sample_from_their_own_streams(tmp_path):
    """Every evaluated policy sampled from one stream (PPOPolicy's reseed(0)): the MAPPO
    jobs seed=0 and seed=1 of the walk's climbing sweep played the same 50 evaluation
    episodes, return for return, so their eval_ci95 was the same too (1.505)."""
    tiny = ["game=climbing", "frames=16", "num_envs=4", "mappo.rollout_steps=4",
            "eval_episodes=24", "progress=false", "checkpoint_every_s=0", "logger=none"]
    for seed in (0, 1):
        run_experiment(_exp(*tiny, f"seed={seed}"), tmp_path / str(seed))
    assert _eval_rows(tmp_path / "0") != _eval_rows(tmp_path / "1")
    run_experiment(_exp(*tiny, "seed=1"), tmp_path / "again")
    assert _eval_rows(tmp_path / "again") == _eval_rows(tmp_path / "1")  # its own, reproduced


def test_a_swept_key_left_out_of_folder_names_still_names_the_wandb_job(monkeypatch):
    """``-m experiment=a,b``: experiment is left out of a job's folder name unless swept
    (73e2bb3), but wandb put both experiments under job_type 'default', as one setting's
    seeds (review)."""
    from types import SimpleNamespace

    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from populations import loggers, sweeps

    def job(experiment: str) -> str:
        hc = SimpleNamespace(
            mode=RunMode.MULTIRUN, sweep=SimpleNamespace(dir="/x/stamp"),
            job=SimpleNamespace(config=SimpleNamespace(override_dirname=SimpleNamespace(
                exclude_keys=["experiment", "logger"]))),
            overrides=SimpleNamespace(task=[f"experiment={experiment}", "seed=0",
                                            "logger=wandb"]))
        monkeypatch.setattr(HydraConfig, "initialized", staticmethod(lambda: True))
        monkeypatch.setattr(HydraConfig, "get", staticmethod(lambda: hc))
        return loggers.sweep_grouping()["job_type"]

    monkeypatch.setattr(sweeps, "_SWEPT", {"experiment", "seed"})
    assert [job("kuhn_psro"), job("main")] == ["experiment=kuhn_psro", "experiment=main"]
    monkeypatch.setattr(sweeps, "_SWEPT", {"seed"})  # experiment not swept: left out as before
    assert job("kuhn_psro") == "default"
