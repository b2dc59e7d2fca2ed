"""``keep_going=true`` in a sweep (``-m``): a job that fails while running (a NaN in one job
of an ``lr`` sweep is routine) says so in its line and the sweep runs its next jobs; the
sweep ends with one line listing the failed jobs and its resume command, exit 2."""

from __future__ import annotations

import pytest

from tests.populations.test_walk18_cli_more import _pasted, _train
from tests.populations.test_walk19_sweeps_eval import NAN_LATE, _register_nan_late

# job 0 (400 frames, 100 steps a game copy) turns NaN at its copies' 40th step, job 1 (120
# frames: 30 steps) finishes
SWEEP = ["-m", f"game.name={NAN_LATE}", "frames=400,120", "num_envs=4",
         "mappo.rollout_steps=4", "mappo.epochs=1", "mappo.minibatches=1", "eval_episodes=1",
         "progress=false", "checkpoint_every_s=0", "keep_going=true"]


def test_keep_going_runs_the_jobs_after_a_failed_one_and_lists_it(
        tmp_path, monkeypatch, capsys):
    # before: keep_going was no setting, and a sweep stopped at its first failing job
    # (selfplay-train -m mappo.lr=1e9,0.001 ...: job 1 never ran)
    _register_nan_late()
    sweep = tmp_path / "sweep"
    with pytest.raises(SystemExit) as stop:
        _train([*SWEEP, f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    assert stop.value.code == 2, err
    (job0,), (job1,) = sweep.glob("0_*"), sweep.glob("1_*")
    assert "keep_going" not in job0.name and "frames=400" in job0.name
    assert f"run folder : {job1}" in out  # job 1 ran to its end and printed its summary
    assert (job1 / "checkpoints").is_dir()
    lines = [line for line in err.splitlines() if line.startswith("selfplay-train: ")]
    assert len(lines) == 2, err
    assert "at frame 160" in lines[0] and "(sweep job 0; keep_going: the sweep goes on" in \
        lines[0] and f"{job0} keeps its checkpoints" in lines[0], lines[0]
    last = lines[1]
    assert f"1 of 2 sweep jobs failed: job 0 ({job0})" in last, last
    assert "selfplay-train -m " in last and f"hydra.sweep.dir={sweep}" in last, last
    command = "selfplay-train -m " + last.split("selfplay-train -m ", 1)[1]
    assert "resume=true" in command and "keep_going=true" in command, command
    # the printed command resumes: job 0 goes on from its checkpoint (and turns NaN again:
    # the cause is not fixed), job 1 has nothing to do
    with pytest.raises(SystemExit) as again:
        _train(_pasted(command), monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    assert again.value.code == 2, err
    assert "nothing to do" in out + err and "at frame 304" in err, out + err
    assert f"1 of 2 sweep jobs failed: job 0 ({job0})" in err.splitlines()[-1], err


def test_without_keep_going_a_sweep_still_stops_at_its_failed_job(
        tmp_path, monkeypatch, capsys):
    _register_nan_late()
    sweep = tmp_path / "sweep"
    with pytest.raises(SystemExit) as stop:
        _train([*SWEEP[:-1], f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2 and "(sweep job 0; the jobs after it did not run" in err, err
    assert not list(sweep.glob("1_*"))
    # keep_going may change on resume (not in the job folders' names, nor 'other settings'):
    # job 0 goes on from its checkpoint (NaN again), job 1 runs, then the list
    capsys.readouterr()
    with pytest.raises(SystemExit) as again:
        _train([*SWEEP, "resume=true", f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    (job0,), (job1,) = sweep.glob("0_*"), sweep.glob("1_*")
    assert again.value.code == 2 and "at frame 304" in err, err
    assert f"run folder : {job1}" in out
    assert f"1 of 2 sweep jobs failed: job 0 ({job0})" in err.splitlines()[-1], err


def test_keep_going_in_a_single_run_is_ignored_with_a_warning(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    _train(["game=kuhn", "frames=64", "num_envs=4", "mappo.rollout_steps=4", "eval_episodes=1",
            "progress=false", "keep_going=true", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    assert "keep_going=true is for sweeps (-m)" in out + err
    assert " keep_going=" not in out.split("checkpoints: ", 1)[1].splitlines()[0]  # its resume
    assert (run / "settings.json").is_file()


def test_the_last_line_says_a_failed_job_without_checkpoints_was_removed(
        tmp_path, monkeypatch):
    # a job that failed before its first checkpoint leaves no folder (a failed start leaves
    # nothing half-made): the line named a folder that was not there
    import populations.cli_common as cli_common
    import populations.run_guard as run_guard

    kept, gone = tmp_path / "0_lr=1", tmp_path / "2_lr=3"
    kept.mkdir()
    monkeypatch.setattr(run_guard, "_FAILED_JOBS", [(0, kept), (2, gone)])
    monkeypatch.setattr(run_guard, "_SWEEP_JOBS", [0, 1, 2])
    monkeypatch.setattr(cli_common, "_TYPED", ["-m", "lr=1,2,3", "keep_going=true"])
    line = run_guard.failed_jobs_line(tmp_path)
    assert line.startswith(f"2 of 3 sweep jobs failed: job 0 ({kept}), job 2 ({gone}, removed: "
                           "no checkpoint) (each said why above); the others finished. "), line
    assert line.endswith(f"selfplay-train -m lr=1,2,3 keep_going=true resume=true "
                         f"hydra.sweep.dir={tmp_path}"), line
