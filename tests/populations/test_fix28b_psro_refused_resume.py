"""A PSRO resume refused by ``run_psro``'s own checks (a snapshot of a recorded iteration
damaged or replaced on disk) leaves the run as it was: its ``.hydra`` files and Hydra's job
log byte-identical (the refused command's settings and its 'experiment ... in' lines used to
stay: PSRO was marked started before ``run_psro`` checked anything), its database row's
status unchanged, and the refusal one line."""

import hashlib
import os
import shutil
import sys

import pytest

from tests import subprocs

ARGS = ["experiment=kuhn_psro", "population.iterations=2", "eval_episodes=2", "progress=false"]


def _cli(args, cwd):
    return subprocs.run([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "HYDRA_FULL_ERROR": "0"})


def _hashes(folder):
    """Every file's hash but the lock's (each command that takes it writes its PID) and the
    database's (compared by what it records)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".lock" and not p.name.startswith("league.db")}


def _status(run):
    from populations.db import LeagueDB

    db = LeagueDB(run / "league.db", readonly=True)
    try:
        return [tuple(row) for row in db.conn.execute("SELECT status FROM runs")]
    finally:
        db.close()


@pytest.fixture(scope="module")
def psro_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("psro")
    res = _cli([*ARGS, f"hydra.run.dir={cwd / 'run'}"], cwd)
    assert res.returncode == 0, res.stderr
    return cwd, cwd / "run"


def test_a_psro_resume_refused_for_a_damaged_snapshot_leaves_the_run_as_it_was(psro_run):
    cwd, finished = psro_run
    run = cwd / "damaged"
    shutil.copytree(finished, run)
    (snap,) = (run / "snapshots" / "psro-player_0-1").glob("*.pt")
    snap.write_bytes(b"not a snapshot")  # damaged after the run (a disk, a copy)
    before, status = _hashes(run), _status(run)
    assert {".hydra/overrides.yaml", ".hydra/config.yaml", "cli.log"} <= set(before)
    assert status == [("finished",)]

    res = _cli([*ARGS, "population.iterations=3", "resume=true", f"hydra.run.dir={run}"], cwd)
    assert res.returncode == 2, res.stderr
    said = [line for line in res.stderr.splitlines() if line.startswith("selfplay-train:")]
    assert len(said) == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"snapshot file {snap} is damaged or was replaced" in said[0], said
    assert "experiment kuhn_psro in" not in res.stdout + res.stderr  # it never started
    assert _hashes(run) == before
    assert "population.iterations=3" not in (run / ".hydra" / "overrides.yaml").read_text()
    assert _status(run) == status  # not 'failed' by a command that never ran it
