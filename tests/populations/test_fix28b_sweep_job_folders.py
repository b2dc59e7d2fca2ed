"""A run and a sweep that overlap (review27 item 7). A sweep's job folder is locked by its job
only after Hydra has written the job's ``.hydra`` and log there, so a run started by hand in a
job folder of a running sweep (a job resumed alone to go faster) had its ``.hydra`` rewritten
by the sweep's job when the sweep reached it, then put back as the folder held when the sweep
started (or not at all: the job's own config stayed as the run's record). Now the run is
refused at once, writing nothing, and a sweep into a folder holding a running run is refused
before its first job.

The other side is a process holding the folder's lock as ``selfplay-train`` takes it
(``run_guard.hold_folder``): no training is needed to hold a folder, and no timing decides
the outcome."""

import hashlib
import os
import subprocess
import sys

import pytest

from populations.run_folder import LOCK_NAME, locked_elsewhere
from tests import subprocs

ARGS = ["game=rps", "frames=64", "num_envs=2", "eval_episodes=2", "progress=false"]
JOB_1 = "1_eval_episodes=2,frames=64,game=rps,num_envs=2,seed=1"  # `-m ... seed=0,1`'s job 1

HOLDER = """
import sys
from pathlib import Path

from populations.run_guard import hold_folder

key, what, depth = ("hydra.sweep.dir", "sweep folder", 1) if sys.argv[2] == "sweep" else (
    "hydra.run.dir", "run folder", 0)
hold_folder(Path(sys.argv[1]), key, what, depth=depth)  # as selfplay-train's callback does
print("held", flush=True)
sys.stdin.read()  # until the test closes it
"""


def _cli(args, cwd):
    return subprocs.run([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "HYDRA_FULL_ERROR": "0"})


def _hashes(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def hold(tmp_path):
    """``hold(folder, kind)``: another process holds ``folder`` as a sweep's or a run's."""
    procs = []

    def start(folder, kind):
        proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), kind],
                                cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
        procs.append(proc)
        assert proc.stdout.readline().strip() == "held"
        return proc

    yield start
    for proc in procs:
        proc.stdin.close()
        proc.wait(timeout=60)


def _one_line(res):
    said = [line for line in res.stderr.splitlines() if line.startswith("selfplay-train:")]
    assert len(said) == 1 and "Traceback" not in res.stderr, res.stderr
    return said[0]


def test_a_run_in_a_job_folder_of_a_running_sweep_is_refused_writing_nothing(tmp_path, hold):
    sweep = tmp_path / "sw"
    proc = hold(sweep, "sweep")
    job = sweep / JOB_1
    res = _cli([*ARGS, "seed=1", "resume_override=true", f"hydra.run.dir='{job}'"], tmp_path)
    assert res.returncode == 2, res.stderr
    assert _one_line(res) == (
        f"selfplay-train: run folder {job} is inside the sweep folder {sweep}, in use by "
        f"process {proc.pid} (its jobs write there); wait for the sweep to end, or choose a "
        "folder outside it with hydra.run.dir=<folder>")
    assert not job.exists()  # nothing made, nothing written
    assert sorted(p.name for p in sweep.iterdir()) == [LOCK_NAME]
    assert (sweep / LOCK_NAME).read_text() == f"{proc.pid} sweep\n"  # what says it is a sweep


def test_a_sweep_into_a_folder_holding_a_running_run_is_refused_before_any_job(tmp_path, hold):
    sweep = tmp_path / "sw"
    run = sweep / JOB_1
    run.mkdir(parents=True)
    (run / "notes.txt").write_text("a run's own file\n")
    proc = hold(run, "run")
    before = _hashes(run)
    res = _cli(["-m", *ARGS, "seed=0,1", f"hydra.sweep.dir={sweep}"], tmp_path)
    assert res.returncode == 2, res.stderr
    assert _one_line(res) == (
        f"selfplay-train: sweep folder {sweep} holds {run}, a run in use by process "
        f"{proc.pid}; wait for it to end, or choose another folder with "
        "hydra.sweep.dir=<folder>")
    assert sorted(p.name for p in sweep.iterdir()) == [JOB_1]  # no job, no lock left
    assert _hashes(run) == before and locked_elsewhere(run)
