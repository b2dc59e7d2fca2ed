"""Resuming an interrupted sweep or run, and the Ctrl-C / SIGTERM line (review 2 of the CLI's user
path)."""

import csv
import dataclasses
import logging
import os
import sqlite3
import subprocess
import sys

from omegaconf import OmegaConf

from populations.command_line import resume_command
from populations.experiment import run_experiment
from tests.populations.test_cli import _cli, _compose

SWEEP = ["-m", "seed=0", "game=kuhn", "frames=64", "num_envs=4", "eval_episodes=2",
         "progress=false", "logger=none", "hydra.sweep.dir=sw"]


def _jobs(sweep):
    return sorted(p.name for p in sweep.iterdir() if p.is_dir())


def test_a_resumed_sweep_finds_its_jobs_when_a_may_change_setting_changes(tmp_path):
    """``checkpoint_every_s``, ``device``, ``population.generations``... may change on a
    resume, but they were part of the job folder name: the resumed sweep made a new folder
    and trained the job from frame 0 there, leaving its checkpoints unused."""
    assert _cli([*SWEEP, "checkpoint_every_s=2", "runner.workers=2"], tmp_path).returncode == 0
    before = _jobs(tmp_path / "sw")
    assert len(before) == 1 and "checkpoint_every_s" not in before[0], before
    res = _cli([*SWEEP, "checkpoint_every_s=3", "runner.workers=2", "resume=true"], tmp_path,
               check=False)
    assert res.returncode == 0, res.stderr
    assert "already finished" in res.stderr + res.stdout
    assert _jobs(tmp_path / "sw") == before
    # a key under runner.* stays in the name: the job's old folder is named, not started over
    res = _cli([*SWEEP, "runner.workers=3", "resume=true"], tmp_path, check=False)
    assert res.returncode == 2, res.stderr
    err = res.stderr.strip().splitlines()[-1]
    assert before[0] in err and "resume=true" in err
    assert _jobs(tmp_path / "sw") == before  # the new job folder is not left behind
    # another seed in job 0's place is another job (its settings differ): it starts
    other = [a for a in SWEEP if a != "seed=0"]
    res = _cli([*other, "seed=1", "runner.workers=2", "resume=true"], tmp_path, check=False)
    assert res.returncode == 0, res.stderr
    assert len(_jobs(tmp_path / "sw")) == 2


def _ctrl_c(run, capsys, monkeypatch, created=True, sweep_dir=None, argv=None):
    import pytest

    from populations import cli_common, run_guard

    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.setattr(cli_common.sys, "argv", argv or ["selfplay-train", "game=kuhn"])
    # the command line as typed: an earlier in-process selfplay-train's stays in cli_common._TYPED
    # (one command per process outside tests), which a sweep's resume line reads first
    monkeypatch.setattr(cli_common, "_TYPED", [])
    with pytest.raises(SystemExit) as stop, run_guard.run_folder_guard(
            "selfplay-train", run, created, sweep_dir):
        raise KeyboardInterrupt
    assert stop.value.code == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    return err.strip()


def test_ctrl_c_names_the_resume_of_a_run_without_checkpoints(tmp_path, capsys, monkeypatch):
    """PSRO keeps no checkpoints/ (it resumes from league.db), and a single run or league
    before its first checkpoint resumes with resume=true; the line said "holds no
    checkpoint yet (start again)", and the same command again is refused (the folder
    already holds a run)."""
    for held in ("league.db", "settings.json"):
        run = tmp_path / held / "my run"
        run.mkdir(parents=True)
        (run / held).write_text("x")
        err = _ctrl_c(run, capsys, monkeypatch)
        assert err.endswith(f"""resume=true 'hydra.run.dir="{run}"'"""), err
        assert run.is_dir()
    monkeypatch.chdir(tmp_path)  # the folders the command made are removed (runs/ too)
    empty = tmp_path / "runs" / "empty"  # stopped before the run started: nothing is kept
    from populations import run_guard

    monkeypatch.setattr(run_guard, "_BEFORE", {})
    assert run_guard.note_run_folder(empty)  # made by the command, as Hydra's callback records
    (empty / ".hydra").mkdir(parents=True)
    err = _ctrl_c(empty, capsys, monkeypatch)
    assert "start again" in err and "resume" not in err
    assert not (tmp_path / "runs").exists()


def test_ctrl_c_in_a_sweep_names_the_sweeps_resume(tmp_path, capsys, monkeypatch):
    """The line named one job's single-run resume: pasted, it resumed that job alone and
    the sweep's other jobs never ran."""
    import shlex

    sweep = tmp_path / "my sweep"
    job = sweep / "0_seed=0"
    job.mkdir(parents=True)
    (job / "settings.json").write_text("{}")
    argv = ["selfplay-train", "-m", "seed=0,1", "game=kuhn", f"hydra.sweep.dir={sweep}",
            "resume=false"]
    err = _ctrl_c(job, capsys, monkeypatch, sweep_dir=sweep, argv=argv)
    assert "hydra.run.dir" not in err
    command = err.split("resumes with: ", 1)[1]
    words = shlex.split(command)
    assert words[:4] == ["selfplay-train", "-m", "seed=0,1", "game=kuhn"]
    assert words[4:] == ["resume=true", f'hydra.sweep.dir="{sweep}"']


def test_a_failed_single_run_gives_the_learner_its_own_observe_back(tmp_path, monkeypatch):
    """The single run watches ``learner.observe`` to checkpoint the returns so far; an error
    (or Ctrl-C) in training left the wrapper on the learner (a reference cycle holding its
    tensors until the cyclic GC, in a notebook that catches the error)."""
    import pytest

    from populations import experiment, single_run

    seen = []

    def failing_train(learner, *args, **kwargs):
        seen.append(learner)
        raise RuntimeError("boom")

    monkeypatch.setattr(single_run, "train", failing_train)
    cfg = experiment.ExperimentConfig(game=experiment.GameConfig(name="openspiel/kuhn_poker"),
                                      frames=64, num_envs=4, progress=False)
    with pytest.raises(RuntimeError, match="boom"):
        experiment.run_experiment(cfg, tmp_path / "run")
    (learner,) = seen
    assert "observe" not in vars(learner)


def test_ctrl_c_while_the_league_cli_imports_torch_is_one_line(tmp_path):
    """``python -m populations.league`` stopped in its first seconds (``import torch`` at
    the module's top, before main() and its handler) printed a KeyboardInterrupt traceback."""
    import subprocess
    import sys

    code = """
import os, runpy, signal, sys
class Interrupt:  # Ctrl-C arrives while torch loads
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            os.kill(os.getpid(), signal.SIGINT)
sys.meta_path.insert(0, Interrupt())
sys.argv = ["league", "--run-dir", "lg", "--game", "openspiel/kuhn_poker"]
runpy.run_module("populations.league", run_name="__main__")
"""
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 130, res.stderr
    assert res.stderr == "python -m populations.league: interrupted\n"
    assert not (tmp_path / "lg").exists()


RUN = ["game=kuhn", "frames=200", "num_envs=4", "mappo.rollout_steps=4", "mappo.epochs=1",
       "mappo.minibatches=1", "eval_episodes=1", "progress=false", "logger=csv",
       "checkpoint_every_s=1000"]  # no periodic checkpoint: only the signal's

# selfplay-train itself (train_main), sending itself SIGTERM while the Nth update's metrics
# are being recorded: the signal arrives in the middle of the training loop's bookkeeping
STOP_AT_UPDATE = """
import os, signal, sys
from populations.db import LeagueDB
record, steps = LeagueDB.log_metrics, []
def log_metrics(self, run_id, step, metrics, *args, **kwargs):
    record(self, run_id, step, metrics, *args, **kwargs)
    steps.append(step)
    if len(steps) == {n}:
        os.kill(os.getpid(), signal.SIGTERM)
LeagueDB.log_metrics = log_metrics
from populations.cli import train_main
sys.argv = ["selfplay-train", *{args!r}]
train_main()
"""


def _metric_rows(path):
    with open(path, newline="") as fh:
        return [(int(r[0]), r[1]) for r in list(csv.reader(fh))[1:]]


def test_sigterm_stops_at_the_next_update_with_a_checkpoint_and_the_resume_loses_nothing(
        tmp_path, caplog):
    """One real ``selfplay-train`` process, SIGTERM at its 3rd update: exit 143, one line
    naming the resume, the run recorded ``interrupted``, and a checkpoint at that update's
    frame (none was due for 1000 s: before, there was none and the resume trained from frame
    0). The resume (in this process) starts from it and ends with metrics.csv holding each
    (step, key) once and the same steps and keys as an uninterrupted run."""
    run = tmp_path / "run"
    args = [*RUN, f"hydra.run.dir={run}"]
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    res = subprocess.run([sys.executable, "-c", STOP_AT_UPDATE.format(n=3, args=args)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 143, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[-1] == (f"selfplay-train: terminated (SIGTERM); {run} resumes with: "
                         f"{resume_command(run, args)}")
    assert any("SIGTERM: stopping with a checkpoint at the next update" in line
               for line in lines)
    with sqlite3.connect(run / "league.db") as db:
        assert db.execute("SELECT status, error FROM runs").fetchall() == [
            ("interrupted", "Terminated: SIGTERM")]
    steps = sorted({s for s, _ in _metric_rows(run / "metrics.csv")})
    assert len(steps) == 3
    ckpts = [int(p.stem.removeprefix("ckpt_")) for p in (run / "checkpoints").glob("ckpt_*.pt")]
    assert ckpts == [steps[-1]]

    exp = OmegaConf.to_object(_compose(RUN))
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        run_experiment(dataclasses.replace(exp, resume=True), run)
    assert f"at step {steps[-1]} of its training" in caplog.text
    resumed = _metric_rows(run / "metrics.csv")
    assert len(resumed) == len(set(resumed))  # each (step, key) once
    run_experiment(exp, tmp_path / "whole")
    assert set(resumed) == set(_metric_rows(tmp_path / "whole" / "metrics.csv"))


def test_sigterm_in_the_other_clis_and_only_there(tmp_path, capsys, monkeypatch):
    """selfplay-eval and ``python -m populations.league`` stop on SIGTERM as on Ctrl-C (exit
    143); importing selfplay (a library) installs no handler, the CLIs put the previous one
    back, and ray.init (which puts its own ``sys.exit`` in place) does not undo theirs."""
    import os
    import signal
    from pathlib import Path

    import pytest

    from populations import cli_common, league_cli, run_folder

    before = signal.getsignal(signal.SIGTERM)
    assert before is not run_folder._raise_terminated  # imported: nothing installed
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with pytest.raises(SystemExit) as stop, run_folder.sigterm_as_interrupt(), \
            cli_common.reported("selfplay-eval"):
        os.kill(os.getpid(), signal.SIGTERM)
    assert stop.value.code == 143
    assert capsys.readouterr().err == "selfplay-eval: terminated (SIGTERM)\n"
    assert signal.getsignal(signal.SIGTERM) is before
    with pytest.raises(SystemExit) as stop, run_folder.sigterm_as_interrupt(), \
            cli_common.reported("selfplay-eval"):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except KeyboardInterrupt:  # as ray.get re-raises it (a plain KeyboardInterrupt)
            raise KeyboardInterrupt from None
    assert stop.value.code == 143
    with pytest.raises(SystemExit) as stop, cli_common.reported("selfplay-eval"):
        raise KeyboardInterrupt  # Ctrl-C after that: 130 again
    assert stop.value.code == 130
    assert capsys.readouterr().err.endswith("selfplay-eval: interrupted\n")

    class Killed:
        def __init__(self, cfg, run_dir, **kwargs):
            Path(run_dir).mkdir()
            (Path(run_dir) / "league.db").touch()  # the run has started: it resumes

        def run(self):
            os.kill(os.getpid(), signal.SIGTERM)

        def close(self):
            pass

    monkeypatch.setattr(league_cli, "League", Killed)
    with pytest.raises(SystemExit) as stop:
        league_cli.main(["--run-dir", str(tmp_path / "lg"), "--game", "openspiel/kuhn_poker"])
    assert stop.value.code == 143
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"python -m populations.league: terminated (SIGTERM); go on with: python -m "
        f"populations.league --run-dir {tmp_path / 'lg'} --game openspiel/kuhn_poker --resume")
    assert signal.getsignal(signal.SIGTERM) is before

    with run_folder.sigterm_as_interrupt():
        with run_folder.kept_sigterm():  # as ray.init does
            signal.signal(signal.SIGTERM, lambda *_: None)
        assert signal.getsignal(signal.SIGTERM) is run_folder._raise_terminated
    with run_folder.kept_sigterm():  # a library user's process: ray.init's own stays
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    signal.signal(signal.SIGTERM, before)
