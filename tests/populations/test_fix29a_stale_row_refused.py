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

from populations.checkpoint import checkpoint_files

COMMON = ["eval_episodes=2", "progress=false", "logger=none"]
PSRO = ["experiment=kuhn_psro", "population.iterations=200", *COMMON]
SINGLE = ["game=kuhn", "algo=mappo", "population=none", "frames=100000000", "num_envs=4",
          "mappo.rollout_steps=8", "checkpoint_every_s=0", *COMMON]


def _cli(args, cwd):
    return subprocess.run([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HYDRA_FULL_ERROR": "0"})


def _killed(args, cwd, ready):
    """``selfplay-train args`` killed with SIGKILL once ``ready()`` holds."""
    with open(cwd / "killed.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                                stdout=log, stderr=log,
                                env={**os.environ, "HYDRA_FULL_ERROR": "0"})
        try:
            while proc.poll() is None and not ready():
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, (cwd / "killed.log").read_text()[-2000:]


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


def test_a_refused_psro_resume_leaves_a_dead_runs_row_as_it_was(tmp_path):
    run = tmp_path / "psro"
    snaps = run / "snapshots" / "psro-player_0-1"
    later = run / "snapshots" / "psro-player_0-2"  # iteration 1's: iteration 0 is recorded
    _killed([*PSRO, f"hydra.run.dir={run}"], tmp_path,
            lambda: later.is_dir() and any(later.glob("*.pt")))

    def damage():  # a recorded iteration's: the resume restores it before it starts
        (snap,) = snaps.glob("*.pt")
        snap.write_bytes(b"not a snapshot")

    _refused_resume_changes_nothing(tmp_path, run, PSRO, damage, "is damaged or was replaced")


def test_a_refused_single_resume_leaves_a_dead_runs_row_as_it_was(tmp_path):
    run = tmp_path / "single"
    _killed([*SINGLE, f"hydra.run.dir={run}"], tmp_path,
            lambda: len(checkpoint_files(run / "checkpoints")) >= 1)

    def damage():
        for path in checkpoint_files(run / "checkpoints"):
            path.write_bytes(b"not a checkpoint")

    _refused_resume_changes_nothing(tmp_path, run, SINGLE, damage, "checkpoint")
