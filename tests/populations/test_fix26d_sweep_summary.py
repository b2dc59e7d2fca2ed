"""``python -m populations.sweep_summary`` on a ``keep_going`` sweep whose failed jobs left no
folder (fix26d): the sweep's own table listed them; the module printed fewer jobs and
rewrote ``summary.csv`` without them, and refused a sweep whose every job failed as "no job
folder ... not one of its jobs"."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from populations import sweep_summary


def _csv(sweep: Path) -> list[dict[str, str]]:
    with open(sweep / "summary.csv", newline="") as f:
        return list(csv.DictReader(f))


def _end_sweep(sweep: Path, monkeypatch, jobs: dict[int, list[str]], kept: dict[int, str],
               failed: dict[int, str]) -> None:
    """What the end of ``selfplay-train -m ... keep_going=true`` does: the jobs in ``kept``
    have folders, those in ``failed`` failed before their first checkpoint (no folder)."""
    from omegaconf import OmegaConf

    import populations.cli as cli
    import populations.cli_common as cli_common
    import populations.run_guard as run_guard

    sweep.mkdir(parents=True, exist_ok=True)
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    for n, name in kept.items():
        (sweep / name / ".hydra").mkdir(parents=True)
        (sweep / name / ".hydra" / "overrides.yaml").write_text(
            "".join(f"- {x}\n" for x in jobs[n]))
    monkeypatch.setattr(run_guard, "_FAILED_JOBS", [(n, sweep / f) for n, f in failed.items()])
    monkeypatch.setattr(run_guard, "_SWEEP_JOBS", sorted(jobs))
    monkeypatch.setattr(run_guard, "_JOB_OVERRIDES", jobs)
    monkeypatch.setattr(cli_common, "_TYPED", ["-m", "keep_going=true"])
    with pytest.raises(SystemExit):
        cli.ConfigCheck().on_multirun_end(OmegaConf.create({"hydra": {"sweep": {
            "dir": str(sweep)}}}))


def test_the_module_keeps_the_failed_jobs_whose_folder_was_removed(tmp_path, monkeypatch,
                                                                    capsys):
    sweep = tmp_path / "sw"
    game = "game.name=openspiel/kuhn_poker"
    _end_sweep(sweep, monkeypatch,
               {0: ["algo=mappo", game, "keep_going=true"],
                1: ["algo=maddpg", game, "keep_going=true"]},
               {0: "0_algo=mappo"}, {1: "1_algo=maddpg"})
    live_out = capsys.readouterr().out
    live = _csv(sweep)
    assert [r["status"] for r in live] == ["not started", "failed"]
    # before: "sweep ...: 1 jobs" and summary.csv rewritten with job 0 only
    sweep_summary.main([str(sweep)])
    out = capsys.readouterr().out
    assert _csv(sweep) == live
    assert out == live_out[live_out.index("\nsweep "):], out
    assert "1_algo=maddpg  maddpg  failed" in out
    # the failed job's other overrides are the sweep's: no game.name column appears
    assert "game.name" not in out and list(live[0]) == list(_csv(sweep)[0])


def test_a_sweep_whose_every_job_failed_is_a_sweep(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "sw"
    _end_sweep(sweep, monkeypatch, {0: ["algo=maddpg", "seed=0"], 1: ["algo=maddpg", "seed=1"]},
               {}, {0: "0_algo=maddpg,seed=0", 1: "1_algo=maddpg,seed=1"})
    capsys.readouterr()
    live = _csv(sweep)
    # before: refused, "holds no job folder ...; give a sweep's folder, not one of its jobs"
    sweep_summary.main([str(sweep)])
    out = capsys.readouterr().out
    assert f"sweep {sweep}: 2 jobs" in out and out.count(" failed") == 2, out
    assert _csv(sweep) == live and [r["seed"] for r in live] == ["0", "1"]
    sweep_summary.main([str(sweep), "--by", "seed"])  # the removed jobs' keys are known
    assert f"sweep {sweep}: 2 jobs" in capsys.readouterr().out


def test_a_sweep_folder_without_jobs_or_summary_is_said_so(tmp_path, capsys):
    sweep = tmp_path / "sw"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    with pytest.raises(SystemExit) as stop:
        sweep_summary.main([str(sweep)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert "is a sweep's folder without jobs" in err and "not one of its jobs" not in err


def test_a_job_that_has_its_folder_again_is_read_from_it(tmp_path, monkeypatch, capsys):
    # the csv's failed row is stale once a folder of that name exists (a rerun)
    sweep = tmp_path / "sw"
    _end_sweep(sweep, monkeypatch, {0: ["seed=0"], 1: ["seed=1"]}, {0: "0_seed=0"},
               {1: "1_seed=1"})
    (sweep / "1_seed=1" / ".hydra").mkdir(parents=True)
    (sweep / "1_seed=1" / ".hydra" / "overrides.yaml").write_text("- seed=1\n")
    capsys.readouterr()
    sweep_summary.main([str(sweep)])
    assert [r["status"] for r in _csv(sweep)] == ["not started", "not started"]
