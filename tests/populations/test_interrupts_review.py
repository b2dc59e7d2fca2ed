"""Resuming an interrupted sweep and the Ctrl-C line (review 2 of the CLI's user path)."""

from tests.populations.test_cli import _cli

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

    from populations import cli

    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.setattr(cli.sys, "argv", argv or ["selfplay-train", "game=kuhn"])
    with pytest.raises(SystemExit) as stop, cli.run_folder_guard("selfplay-train", run, created,
                                                                 sweep_dir):
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
    monkeypatch.chdir(tmp_path)  # folders left empty are removed up to the working folder
    empty = tmp_path / "runs" / "empty"  # stopped before the run started: nothing is kept
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

    from populations import experiment

    seen = []

    def failing_train(learner, *args, **kwargs):
        seen.append(learner)
        raise RuntimeError("boom")

    monkeypatch.setattr(experiment, "train", failing_train)
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


def test_sigterm_ends_a_run_as_ctrl_c_does(tmp_path):
    """SIGTERM (``kill``, ``timeout``, SLURM, Kubernetes) killed selfplay-train outright: the
    run stayed ``running`` in league.db and nothing said how to go on. Now it takes Ctrl-C's
    path: recorded ``interrupted``, one line naming the resume, exit 143 (128 + 15)."""
    import signal
    import sqlite3
    import subprocess
    import time

    from populations.cli import run_dir_override
    from tests.populations.test_cli import _cli_job

    run = tmp_path / "run"
    job = _cli_job(["game=kuhn", "frames=100000000", "num_envs=4", "checkpoint_every_s=0",
                    "progress=false", "logger=none", f"hydra.run.dir={run}"], tmp_path)
    del job["capture_output"], job["timeout"]
    proc = subprocess.Popen(**job, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while not any((run / "checkpoints").glob("ckpt_*.pt")) and proc.poll() is None:
            time.sleep(0.05)  # training has started: the first checkpoint is written
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == (
        f"selfplay-train: terminated (SIGTERM); {run} resumes with resume=true "
        f"{run_dir_override(run)}")
    with sqlite3.connect(run / "league.db") as db:
        assert db.execute("SELECT status, error FROM runs").fetchall() == [
            ("interrupted", "Terminated: SIGTERM")]


def test_sigterm_in_the_other_clis_and_only_there(tmp_path, capsys, monkeypatch):
    """selfplay-eval and ``python -m populations.league`` stop on SIGTERM as on Ctrl-C (exit
    143); importing selfplay (a library) installs no handler, the CLIs put the previous one
    back, and ray.init (which puts its own ``sys.exit`` in place) does not undo theirs."""
    import os
    import signal
    from pathlib import Path

    import pytest

    from populations import cli, league, run_folder

    before = signal.getsignal(signal.SIGTERM)
    assert before is not run_folder._raise_terminated  # imported: nothing installed
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with pytest.raises(SystemExit) as stop, run_folder.sigterm_as_interrupt(), \
            cli.reported("selfplay-eval"):
        os.kill(os.getpid(), signal.SIGTERM)
    assert stop.value.code == 143
    assert capsys.readouterr().err == "selfplay-eval: terminated (SIGTERM)\n"
    assert signal.getsignal(signal.SIGTERM) is before
    with pytest.raises(SystemExit) as stop, run_folder.sigterm_as_interrupt(), \
            cli.reported("selfplay-eval"):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except KeyboardInterrupt:  # as ray.get re-raises it (a plain KeyboardInterrupt)
            raise KeyboardInterrupt from None
    assert stop.value.code == 143
    with pytest.raises(SystemExit) as stop, cli.reported("selfplay-eval"):
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

    monkeypatch.setattr(league, "League", Killed)
    with pytest.raises(SystemExit) as stop:
        league.main(["--run-dir", str(tmp_path / "lg"), "--game", "openspiel/kuhn_poker"])
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
