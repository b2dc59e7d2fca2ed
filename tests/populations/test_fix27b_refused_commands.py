"""A refused ``selfplay-train`` leaves the run it was refused for as it was (walk27a item 2:
it rewrote the run's ``.hydra/overrides.yaml`` with its own settings and added lines to its
``cli.log``), its refusal names the command to paste (9a), a run folder that cannot be made
says so (9b), and ``cli.log`` keeps the closing summary and Ctrl-C's resume command (9e)."""

import logging
import os
import shlex
import subprocess
import sys

import pytest

from tests.populations.contested_folders import hashes
from tests.subprocs import run_together

ARGS = ["game=rps", "frames=64", "num_envs=2", "eval_episodes=2", "progress=false"]


def _job(args, cwd):
    """``selfplay-train args`` in ``cwd``: :func:`subprocess.run`'s arguments."""
    return {"args": [sys.executable, "-m", "populations.cli", *args], "cwd": cwd,
            "env": {**os.environ, "HYDRA_FULL_ERROR": "0"}}


def _hashes(folder):
    """Every file's hash but the lock's (each command that takes the lock writes its PID)."""
    return hashes(folder, lock=False)


@pytest.fixture(scope="module")
def finished(contested_run):
    """A finished run (``seed=0``; the session's, test_fix27b_folder_in_use checks how it
    was made) and ``refuse(*extra)``: its own command with ``extra`` instead of its seed,
    run once per module, with the run's hashes before and after it (the rerun's refusal
    serves two tests)."""
    c = contested_run
    assert c.winner_status == 0, c.winner_err
    run, (*args, where) = c.folder, c.args
    assert args[-1] == "seed=0" and where == f"hydra.run.dir={run}"
    done = {}

    def refuse(*extra):
        if extra not in done:
            before = _hashes(run)
            done[extra] = before, c.cli([*args[:-1], *extra, where]), _hashes(run)
        return done[extra]

    return c, run, refuse


@pytest.mark.parametrize("extra, said", [
    (("seed=9", "algo=ippo"), "already holds a run"),  # a rerun without resume=true
    (("seed=3", "resume=true"), "cannot continue with other settings"),
])
def test_a_refused_command_leaves_the_runs_hydra_files_and_log_as_they_were(finished, extra,
                                                                           said):
    _, run, refuse = finished
    before, res, after = refuse(*extra)
    assert {".hydra/overrides.yaml", ".hydra/config.yaml", "cli.log"} <= set(before)
    assert res.returncode == 2 and said in res.stderr, res.stderr
    assert after == before
    assert "seed=0" in (run / ".hydra" / "overrides.yaml").read_text()


def test_the_refusal_of_a_rerun_names_the_command_that_resumes_the_run(finished):
    c, run, refuse = finished
    _, res, _ = refuse("seed=9", "algo=ippo")
    line = res.stderr.strip().splitlines()[-1]
    assert "already holds a run" in line and "; it resumes with: selfplay-train " in line, line
    command = shlex.split(line.split("; it resumes with: ")[1])
    # the run's own overrides (seed=0 from its .hydra), not the refused command's
    assert command[0] == "selfplay-train" and "seed=0" in command
    assert "seed=9" not in command and "algo=ippo" not in command, command
    assert command[-2:] == ["resume=true", f"hydra.run.dir={run}"]
    pasted = c.cli_once(command[1:])  # once: test_fix27b_folder_in_use resumes it so too
    assert pasted.returncode == 0, pasted.stderr


def test_cli_log_holds_the_closing_summary(finished):
    _, run, _ = finished
    log = (run / "cli.log").read_text()
    assert "run finished:" in log and f"run folder : {run}" in log
    assert f"dashboard  : selfplay-dashboard {run}" in log


@pytest.mark.parametrize("signal_name, status, said", [
    ("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated (SIGTERM)")])
def test_ctrl_c_writes_its_resume_command_to_cli_log(tmp_path, monkeypatch, signal_name,
                                                     status, said):
    from populations.run_folder import Terminated
    from populations.run_guard import run_folder_guard

    run = tmp_path / "run"
    run.mkdir()
    (run / "settings.json").write_text("{}")  # a run to resume
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    handler = logging.FileHandler(run / "cli.log")
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with pytest.raises(SystemExit) as stop, \
                run_folder_guard("selfplay-train", run, created=False, overrides=["seed=4"]):
            raise KeyboardInterrupt if signal_name == "SIGINT" else Terminated("SIGTERM")
    finally:
        root.removeHandler(handler)
        handler.close()
    assert stop.value.code == status
    log = (run / "cli.log").read_text()
    assert f"{said}; {run} resumes with: selfplay-train seed=4 resume=true " \
           f"hydra.run.dir={run}" in log, log


def test_a_run_folder_that_cannot_be_made_says_so_and_what_to_do(tmp_path):
    from populations.run_guard import folder_error

    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OSError) as err:
        (blocker / "run").mkdir(parents=True)
    line = folder_error(blocker / "run", err.value, "hydra.run.dir")
    assert line == (f"cannot create the run folder {blocker / 'run'}: Not a directory; choose "
                    "a folder you can write with hydra.run.dir=<folder>")


def test_a_run_folder_on_a_read_only_file_system_says_so(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a read-only file system here: {mounted.stderr!r}")
    try:  # two independent commands: run together
        res, sweep = run_together(_job([*ARGS, f"hydra.run.dir={ro / 'run'}"], tmp_path),
                                  _job(["-m", *ARGS, "seed=0,1", f"hydra.sweep.dir={ro / 'sw'}"],
                                       tmp_path))
    finally:
        subprocess.run(["umount", str(ro)], check=False)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1] == (
        f"selfplay-train: cannot create the run folder {ro / 'run'}: Read-only file system; "
        "choose a folder you can write with hydra.run.dir=<folder>")
    assert sweep.returncode == 2
    assert sweep.stderr.strip().splitlines()[-1] == (
        f"selfplay-train: cannot create the sweep folder {ro / 'sw'}: Read-only file system; "
        "choose a folder you can write with hydra.sweep.dir=<folder>")


def test_a_refused_sweep_leaves_the_sweep_folder_as_it_was(contested_sweep):
    c, sweep = contested_sweep, contested_sweep.folder  # a finished sweep (seed=0)
    assert c.winner_status == 0, c.winner_err
    before = _hashes(sweep)
    assert "multirun.yaml" in before and any(k.endswith("/cli.log") for k in before)
    # the same sweep again (checkpoint_every_s stays out of the job folders' names), without
    # resume=true: refused; Hydra had rewritten multirun.yaml with it
    res = c.cli([*c.args, "checkpoint_every_s=100"])
    assert res.returncode == 2 and "already holds a run" in res.stderr, res.stderr
    assert _hashes(sweep) == before
