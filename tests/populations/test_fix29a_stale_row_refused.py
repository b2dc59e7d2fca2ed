"""A run whose process died (``kill -9``: nothing recorded its end) leaves its database row
``running``. A resume refused by the run's own checks (a damaged snapshot or checkpoint)
recorded that row ``failed`` with the refusal's message, which is about the refused command,
not the dead run (``populations.run_folder.open_run`` failed every ``running`` row on any
error). A refused command changes nothing of the run: its rows, their statuses and
messages, its files; the next resume that starts records what happens to it."""

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from populations.checkpoint import checkpoint_files
from tests import subprocs

COMMON = ["eval_episodes=2", "progress=false", "logger=none"]
PSRO = ["experiment=kuhn_psro", "population.iterations=200", *COMMON]
SINGLE = ["game=kuhn", "algo=mappo", "population=none", "frames=100000000", "num_envs=4",
          "mappo.rollout_steps=8", "checkpoint_every_s=0", *COMMON]


def _cli(args, cwd):
    return subprocs.run([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "HYDRA_FULL_ERROR": "0"})


def _killed_together(jobs):
    """``selfplay-train args`` in ``cwd`` for each ``(args, cwd, ready)`` of ``jobs``, all
    started at once (independent runs, each in its own folder), each killed with SIGKILL
    once its ``ready()`` holds."""
    procs = {}
    for key, (args, cwd, _) in jobs.items():
        with open(cwd / "killed.log", "w") as log:
            procs[key] = subprocess.Popen([sys.executable, "-m", "populations.cli", *args],
                                          cwd=cwd, stdout=log, stderr=log,
                                          env={**os.environ, "HYDRA_FULL_ERROR": "0"})
    try:
        waiting = dict(procs)
        while waiting:
            for key, proc in list(waiting.items()):
                if proc.poll() is not None or jobs[key][2]():
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    del waiting[key]
            time.sleep(0.05)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for key, proc in procs.items():
        assert proc.returncode == -signal.SIGKILL, \
            (jobs[key][1] / "killed.log").read_text()[-2000:]


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """The two dead runs the tests below resume, killed together: ``killed(kind)`` ->
    ``(cwd, run)``. PSRO's once iteration 1's snapshot is written (iteration 0 is recorded),
    the single run's once it has a checkpoint."""
    cwd = {kind: tmp_path_factory.mktemp(kind) for kind in ("psro", "single")}
    run = {kind: cwd[kind] / kind for kind in cwd}
    later = run["psro"] / "snapshots" / "psro-player_0-2"
    _killed_together({
        "psro": ([*PSRO, f"hydra.run.dir={run['psro']}"], cwd["psro"],
                 lambda: later.is_dir() and any(later.glob("*.pt"))),
        "single": ([*SINGLE, f"hydra.run.dir={run['single']}"], cwd["single"],
                   lambda: len(checkpoint_files(run["single"] / "checkpoints")) >= 1)})
    return lambda kind: (cwd[kind], run[kind])


def _rows(run):
    db = sqlite3.connect(run / "league.db")
    try:
        return db.execute("SELECT id, name, status, error, updated_at FROM runs").fetchall()
    finally:
        db.close()


def _hashes(folder):
    """Every file's hash but the lock's (each command that takes it writes its PID) and the
    database's (compared by its rows)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".lock" and not p.name.startswith("league.db")}


def _refused_resume_changes_nothing(cwd, run, args, damage, refusal):
    rows = _rows(run)
    assert [r[2:4] for r in rows] == [("running", None)]  # the premise: a stale row
    damage()
    before = _hashes(run)
    res = _cli([*args, "resume=true", f"hydra.run.dir={run}"], cwd)
    assert res.returncode == 2, res.stderr
    assert refusal in res.stderr.strip().splitlines()[-1]
    assert _rows(run) == rows  # before: ('failed', 'StoreError: ... is damaged ...')
    assert _hashes(run) == before


def test_a_refused_psro_resume_leaves_a_dead_runs_row_as_it_was(killed):
    cwd, run = killed("psro")
    snaps = run / "snapshots" / "psro-player_0-1"

    def damage():  # a recorded iteration's: the resume restores it before it starts
        (snap,) = snaps.glob("*.pt")
        snap.write_bytes(b"not a snapshot")

    _refused_resume_changes_nothing(cwd, run, PSRO, damage, "is damaged or was replaced")


def test_a_refused_single_resume_leaves_a_dead_runs_row_as_it_was(killed):
    cwd, run = killed("single")

    def damage():
        for path in checkpoint_files(run / "checkpoints"):
            path.write_bytes(b"not a checkpoint")

    _refused_resume_changes_nothing(cwd, run, SINGLE, damage, "checkpoint")
