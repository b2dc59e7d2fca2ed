"""One table over a sweep's jobs (walk 21): at the end of ``selfplay-train -m``, and from
``python -m populations.sweep_summary <sweep dir>`` on any sweep folder; with
``<sweep dir>/summary.csv``, one row per job, and a table pooling ``seed``."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from populations.sweep_summary import JobResult, grouped, report
from tests import subprocs
from tests.populations.test_walk18_cli_more import _train
from tests.populations.test_walk19_sweeps_eval import NAN_LATE, _register_nan_late
from tests.populations.test_walk21_sweeps import FAST


def _closing_tables(out: str) -> dict[str, dict[str, str]]:
    """Each job's own closing table (its first row), by run folder name, as it printed it."""
    tables = {}
    for part in out.split("\nrun folder : ")[1:]:
        folder, lines = Path(part.splitlines()[0]).name, part.splitlines()
        k = next(i for i, x in enumerate(lines) if x.split()[:1] == ["member"])
        tables[folder] = dict(zip(lines[k].split(), lines[k + 1].split(), strict=True))
    return tables


def _csv(sweep: Path) -> list[dict[str, str]]:
    with open(sweep / "summary.csv", newline="") as f:
        return list(csv.DictReader(f))


def _sweep_lines(out: str) -> list[str]:
    return out.split("\nsweep ", 1)[1].splitlines()


def test_a_sweep_ends_with_one_table_over_its_jobs_and_a_resume_keeps_them(
        tmp_path, monkeypatch, capsys):
    # before: a sweep ended after its last job's own closing table; nothing compared the jobs
    sweep = tmp_path / "sweep"
    _train(["-m", "algo=mappo,ippo", "seed=0,1", *FAST, f"hydra.sweep.dir={sweep}"],
           monkeypatch, tmp_path)
    out = capsys.readouterr().out
    own = _closing_tables(out)
    rows = _csv(sweep)
    assert [r["folder"] for r in rows] == sorted(own) and len(rows) == 4
    for r in rows:  # the job's own closing table's figures, as it printed them
        assert r["status"] == "finished"
        for key in ("frames", "final_return", "eval_return", "seconds"):
            assert r[key] == own[r["folder"]][key], (r, own[r["folder"]])
        assert r["algo"] in ("mappo", "ippo") and r["seed"] in ("0", "1")
    lines = _sweep_lines(out)
    assert lines[0] == f"{sweep}: 4 jobs (one row each in {sweep / 'summary.csv'})"
    assert lines[1].split()[:7] == ["folder", "algo", "seed", "status", "frames",
                                    "final_return", "eval_return"]
    # pooled over seed: one row per algo, n = 2, mean ± std of the two jobs' figures
    k = next(i for i, x in enumerate(lines) if x.startswith("by algo, pooling seed"))
    assert lines[k + 1].split() == ["algo", "n", "final_return", "eval_return"]
    mappo = [float(r["eval_return"]) for r in rows if r["algo"] == "mappo"]
    cells = lines[k + 2].split()
    assert cells[:2] == ["mappo", "2"] and cells[5] == f"{sum(mappo) / 2:.3f}", lines[k + 2]
    # a longer seed list, resumed: the finished jobs are read from their folders
    _train(["-m", "algo=mappo,ippo", "seed=0,1,2", *FAST, "resume=true",
            f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    out = capsys.readouterr().out
    again = _csv(sweep)
    assert len(again) == 6 and {r["seed"] for r in again} == {"0", "1", "2"}
    assert [r for r in again if r["folder"] in {x["folder"] for x in rows}] == rows
    assert _sweep_lines(out)[0].startswith(f"{sweep}: 6 jobs")


def test_a_failed_job_of_a_keep_going_sweep_is_listed_as_failed(tmp_path, monkeypatch, capsys):
    _register_nan_late()
    sweep = tmp_path / "sweep"
    with pytest.raises(SystemExit) as stop:  # job 0 turns NaN (checkpoints kept), job 1 ends
        _train(["-m", f"game.name={NAN_LATE}", "frames=400,120", "num_envs=4",
                "mappo.rollout_steps=4", "mappo.epochs=1", "mappo.minibatches=1",
                "eval_episodes=1", "progress=false", "checkpoint_every_s=0", "keep_going=true",
                f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and "1 of 2 sweep jobs failed" in err.splitlines()[-1]
    failed, done = _csv(sweep)
    assert failed["frames"] == "400" and failed["status"] == "failed", failed
    assert "non-finite" in failed["error"] and failed["final_return"] == ""
    assert done["status"] == "finished" and done["final_return"] != ""
    lines = _sweep_lines(out)
    assert lines[2].split()[1:3] == ["400", "failed"], lines


def test_league_and_psro_jobs_show_their_key_figures(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "league"
    _train(["-m", "population=self_play", "population.generations=1",
            "population.frames_per_generation=32", *FAST, "seed=0,1",
            f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    out = capsys.readouterr().out
    tables = out.split("\nrun folder : ")[1:]
    for r in _csv(sweep):  # the newest snapshot's mu: the closing table's main v1 row
        table = next(t for t in tables if t.startswith(str(sweep / r["folder"])))
        row = next(x.split() for x in table.splitlines() if x.split()[:2] == ["main", "1"])
        assert r["mu/main"] == row[4] and r["kind"] == "league", (r, row)
    sweep = tmp_path / "psro"
    _train(["-m", "experiment=kuhn_psro", "population.iterations=1", "eval_episodes=2",
            "logger=none", "progress=false", "seed=0,1", f"hydra.sweep.dir={sweep}"],
           monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    nash = [x.split("NashConv ")[1].split(",")[0] for x in (out + err).splitlines()
            if "PSRO iteration 0 (1/1):" in x]
    rows = _csv(sweep)
    assert [r["nash_conv"] for r in rows] == [str(float(x)) for x in nash] and \
        [r["iterations"] for r in rows] == ["1", "1"]


def test_grouped_figures_are_mean_std_and_n_of_the_finished_jobs():
    def job(n: int, enc: str, ret: float | None, status: str = "finished") -> JobResult:
        return JobResult(Path(f"{n}_x"), n, {"encoder": enc, "seed": str(n)}, status,
                         "none", {} if ret is None else {"frames": 64, "eval_return": ret})

    jobs = [job(0, "mlp", 1.0), job(1, "mlp", 2.0), job(2, "mlp", 6.0), job(3, "gnn", 5.0),
            job(4, "gnn", None, "failed")]
    mlp, gnn = grouped(jobs, ["encoder"])
    assert mlp.stats["eval_return"] == (3.0, pytest.approx(2.6457513), 3)
    assert "frames" not in mlp.stats  # a size, not a result
    assert gnn.stats["eval_return"] == (5.0, None, 1) and gnn.others == 1
    lines = report(jobs)
    assert lines[-2].split() == ["mlp", "3", "3.000", "±", "2.646"]
    assert lines[-1].split()[:6] == ["gnn", "1", "(+1", "not", "finished)", "5.000"]


def _module(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocs.run([sys.executable, "-m", "populations.sweep_summary", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_the_module_summarises_a_sweep_folder_and_refuses_in_one_line(tmp_path):
    sweep = tmp_path / "sweep"
    for n, seed in enumerate((0, 1)):  # two job folders whose runs never started
        (sweep / f"{n}_seed={seed}" / ".hydra").mkdir(parents=True)
        (sweep / f"{n}_seed={seed}" / ".hydra" / "overrides.yaml").write_text(
            f"- seed={seed}\n- resume=true\n")
    res = _module([str(sweep), "--by", "seed"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert "0_seed=0  0     not started" in res.stdout, res.stdout
    assert [r["status"] for r in _csv(sweep)] == ["not started", "not started"]
    for args, words in (([str(tmp_path / "nope")], "is not a folder"),
                        ([str(sweep / "0_seed=0")], "holds no job folder"),
                        ([str(sweep), "--by", "encoder"], "--by encoder: no job sets it; the "
                                                          "jobs' override keys: seed")):
        res = _module(args, tmp_path)
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
        assert res.stderr.startswith("python -m populations.sweep_summary: ") and \
            words in res.stderr, res.stderr


def test_a_failed_job_whose_folder_was_removed_is_listed_too(tmp_path, monkeypatch, capsys):
    # keep_going: a job that failed before its first checkpoint leaves no folder to read
    from omegaconf import OmegaConf

    import populations.cli as cli
    import populations.cli_common as cli_common
    import populations.run_guard as run_guard

    kept = tmp_path / "0_seed=0"
    (kept / ".hydra").mkdir(parents=True)
    (kept / ".hydra" / "overrides.yaml").write_text("- seed=0\n")
    gone = tmp_path / "1_seed=1"
    monkeypatch.setattr(run_guard, "_FAILED_JOBS", [(1, gone)])
    monkeypatch.setattr(run_guard, "_SWEEP_JOBS", [0, 1])
    monkeypatch.setattr(run_guard, "_JOB_OVERRIDES", {0: ["seed=0"], 1: ["seed=1", "resume=true"]})
    monkeypatch.setattr(cli_common, "_TYPED", ["-m", "seed=0,1", "keep_going=true"])
    with pytest.raises(SystemExit) as stop:
        cli.ConfigCheck().on_multirun_end(OmegaConf.create({"hydra": {"sweep": {
            "dir": str(tmp_path)}}}))
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and "1 of 2 sweep jobs failed" in err
    assert "1_seed=1  1     failed" in out, out
    assert _csv(tmp_path)[1]["error"] == ("failed before its first checkpoint: its folder was "
                                          "removed")


def test_a_summary_that_cannot_be_made_does_not_hide_how_the_sweep_ended(
        tmp_path, monkeypatch, capsys, caplog):
    from omegaconf import OmegaConf

    import populations.cli as cli
    import populations.cli_common as cli_common
    import populations.run_guard as run_guard
    import populations.sweep_summary as sweep_summary

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(sweep_summary, "print_summary", broken)
    monkeypatch.setattr(run_guard, "_FAILED_JOBS", [(0, tmp_path / "0_seed=0")])
    monkeypatch.setattr(run_guard, "_SWEEP_JOBS", [0, 1])
    monkeypatch.setattr(cli_common, "_TYPED", ["-m", "seed=0,1", "keep_going=true"])
    with pytest.raises(SystemExit) as stop:
        cli.ConfigCheck().on_multirun_end(OmegaConf.create({"hydra": {"sweep": {
            "dir": str(tmp_path)}}}))
    assert stop.value.code == 2 and "1 of 2 sweep jobs failed" in capsys.readouterr().err
    assert "no summary of the sweep's jobs: boom" in caplog.text


def test_a_planted_link_is_no_job_and_summary_csv_is_not_written_through(tmp_path):
    """A link ``1_seed=1 -> elsewhere`` was taken as a job folder (a resume would train into
    its target), and summary.csv was opened through a link at its name (review)."""
    from populations.sweep_summary import JobResult, job_folders, write_csv

    sweep, elsewhere = tmp_path / "sweep", tmp_path / "elsewhere"
    (sweep / "0_seed=0").mkdir(parents=True)
    elsewhere.mkdir()
    (sweep / "1_seed=1").symlink_to(elsewhere, target_is_directory=True)
    assert [p.name for p in job_folders(sweep)] == ["0_seed=0"]
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    (sweep / "summary.csv").symlink_to(outside)
    write_csv([JobResult(sweep / "0_seed=0", 0, {"seed": "0"}, "finished")],
              sweep / "summary.csv")
    assert outside.read_text() == "keep me\n"
    assert not (sweep / "summary.csv").is_symlink()
    assert (sweep / "summary.csv").read_text().startswith("job,folder,status")
