"""Two ``selfplay-train`` commands started at once into one folder (walk27a item 1): the
refused one ("in use by process N") used to remove the running one's files (league.db,
settings.json, .hydra, cli.log; a sweep's job folder and multirun.yaml), the winner reporting
success over an empty folder. The folder's lock is now taken before Hydra writes there, and
no discard touches a folder another process holds.

Both commands are real processes. The winner waits, holding the lock, inside its game's
factory until the test has run the second command to its end (a barrier file, no timing)."""

import hashlib
import os
import subprocess
import sys

from populations.run_folder import holds_run, locked_elsewhere

WAITING_GAME = '''
import os
import time
from pathlib import Path

import games


@games.register("waiting_rps")
def waiting_rps(**kwargs):
    from populations.run_folder import _held

    if _held:  # the run's own game (its folder locked), not the config check's
        Path(os.environ["FIX27B_STARTED"]).touch()
        go = Path(os.environ["FIX27B_GO"])
        for _ in range(6000):  # a guard against a hang only: the test makes the file
            if go.exists():
                break
            time.sleep(0.1)
    return games.make("openspiel/matrix_rps", **kwargs)
'''

ARGS = ["imports=[waitgame]", "game.name=waiting_rps", "frames=64", "num_envs=2",
        "eval_episodes=2", "progress=false"]


def _env(tmp_path):
    return {**os.environ, "FIX27B_STARTED": str(tmp_path / "started"),
            "FIX27B_GO": str(tmp_path / "go"), "HYDRA_FULL_ERROR": "0"}


def _start(args, tmp_path):
    return subprocess.Popen([sys.executable, "-m", "populations.cli", *args], cwd=tmp_path,
                            env=_env(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_started(winner, tmp_path):
    """Until the winner holds its folder and waits in its game (or ended: a failure)."""
    import time

    while not (tmp_path / "started").exists():
        assert winner.poll() is None, winner.communicate()
        time.sleep(0.1)


def _hashes(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_second_run_into_a_folder_in_use_removes_and_writes_nothing(tmp_path):
    (tmp_path / "waitgame.py").write_text(WAITING_GAME)
    run = tmp_path / "r13"
    run.mkdir()
    (run / "NOTES.txt").write_text("notes\n")
    args = [*ARGS, f"hydra.run.dir={run}"]
    winner = _start(args, tmp_path)
    try:
        _wait_started(winner, tmp_path)
        assert locked_elsewhere(run)
        before = _hashes(run)
        assert {".hydra/overrides.yaml", "cli.log", "NOTES.txt"} <= set(before)
        loser = subprocess.run([sys.executable, "-m", "populations.cli", *args], cwd=tmp_path,
                               env=_env(tmp_path), capture_output=True, text=True, timeout=600)
        assert loser.returncode == 2, loser.stderr
        line = loser.stderr.strip().splitlines()[-1]
        assert line.startswith(f"selfplay-train: run folder {run} is in use by process "
                               f"{winner.pid}"), loser.stderr
        assert _hashes(run) == before  # nothing removed, nothing rewritten (.hydra, cli.log)
    finally:
        (tmp_path / "go").touch()
        out, err = winner.communicate(timeout=600)
    assert winner.returncode == 0, err
    assert (run / "NOTES.txt").read_text() == "notes\n"
    assert holds_run(run) and any((run / "checkpoints").glob("*.pt"))
    assert {"league.db", "settings.json", "cli.log", "metrics.csv"} <= {
        p.name for p in run.iterdir()}
    # the winner's run is whole: its resume accepts it (finished: nothing left to train)
    again = subprocess.run([sys.executable, "-m", "populations.cli", *args, "resume=true"],
                           cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr


def test_a_second_sweep_into_a_sweep_folder_in_use_removes_and_writes_nothing(tmp_path):
    (tmp_path / "waitgame.py").write_text(WAITING_GAME)
    sweep = tmp_path / "sw"
    args = ["-m", *ARGS, "seed=0", f"hydra.sweep.dir={sweep}"]
    winner = _start(args, tmp_path)
    try:
        _wait_started(winner, tmp_path)
        before = _hashes(sweep)
        assert "multirun.yaml" in before
        assert any(k.endswith("/.hydra/overrides.yaml") for k in before)
        loser = subprocess.run([sys.executable, "-m", "populations.cli", *args], cwd=tmp_path,
                               env=_env(tmp_path), capture_output=True, text=True, timeout=600)
        assert loser.returncode == 2, loser.stderr
        line = loser.stderr.strip().splitlines()[-1]
        assert line.startswith(f"selfplay-train: sweep folder {sweep} is in use by process "
                               f"{winner.pid}"), loser.stderr
        assert _hashes(sweep) == before
    finally:
        (tmp_path / "go").touch()
        out, err = winner.communicate(timeout=600)
    assert winner.returncode == 0, err
    (job,) = [p for p in sweep.iterdir() if p.is_dir()]
    assert holds_run(job) and any((job / "checkpoints").glob("*.pt"))
    assert "not started" not in out and "finished" in out, out


def test_a_discard_skips_a_folder_another_process_holds(tmp_path):
    """The guard's discards (a refused command's clean-up) leave a folder in use alone: a
    sweep's job refused 'in use' by a single run started in its folder."""
    from populations import run_guard

    run = tmp_path / "job"
    run.mkdir()
    (run / "league.db").write_text("")  # no PSRO table: nothing worth keeping
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from populations.run_folder import RunLock; "
         f"RunLock({str(run)!r}).acquire(); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    saved = list(run_guard._START_CWD)
    run_guard._START_CWD[:] = [tmp_path]
    try:
        assert holder.stdout.readline().strip() == "held"
        assert run_guard.discard_run_dir(run) is False
        run_guard._discard_written(run, frozenset())
        assert {p.name for p in run.iterdir()} == {"league.db", ".lock"}
        holder.communicate("")
        assert not locked_elsewhere(run)
        assert run_guard.discard_run_dir(run) is True and not run.exists()
    finally:
        if holder.poll() is None:
            holder.kill()
        run_guard._START_CWD[:] = saved

