"""Two ``selfplay-train`` commands started at once into one folder (walk27a item 1): the
refused one ("in use by process N") used to remove the running one's files (league.db,
settings.json, .hydra, cli.log; a sweep's job folder and multirun.yaml), the winner reporting
success over an empty folder. The folder's lock is now taken before Hydra writes there, and
no discard touches a folder another process holds.

Both commands are real processes (the session's ``contested_run`` and ``contested_sweep``,
tests/populations/contested_folders.py): the winner waits, holding the lock, inside its
game's factory until the second command has run to its end (a barrier file, no timing)."""

import subprocess
import sys

from populations.run_folder import holds_run, locked_elsewhere


def test_a_second_run_into_a_folder_in_use_removes_and_writes_nothing(contested_run):
    c, run = contested_run, contested_run.folder
    assert c.locked_elsewhere
    assert {".hydra/overrides.yaml", "cli.log", "NOTES.txt"} <= set(c.before)
    assert c.loser.returncode == 2, c.loser.stderr
    line = c.loser.stderr.strip().splitlines()[-1]
    assert line.startswith(f"selfplay-train: run folder {run} is in use by process "
                           f"{c.winner_pid}"), c.loser.stderr
    assert c.after == c.before  # nothing removed, nothing rewritten (.hydra, cli.log)
    assert c.winner_status == 0, c.winner_err
    assert (run / "NOTES.txt").read_text() == "notes\n"
    assert holds_run(run) and any((run / "checkpoints").glob("*.pt"))
    assert {"league.db", "settings.json", "cli.log", "metrics.csv"} <= {
        p.name for p in run.iterdir()}
    # the winner's run is whole: its resume accepts it (finished: nothing left to train);
    # the words of the command its refusal names (test_fix27b_refused_commands), run once
    again = c.cli_once([*c.args[:-1], "resume=true", c.args[-1]])
    assert again.returncode == 0, again.stderr


def test_a_second_sweep_into_a_sweep_folder_in_use_removes_and_writes_nothing(contested_sweep):
    c, sweep = contested_sweep, contested_sweep.folder
    assert "multirun.yaml" in c.before
    assert any(k.endswith("/.hydra/overrides.yaml") for k in c.before)
    assert c.loser.returncode == 2, c.loser.stderr
    line = c.loser.stderr.strip().splitlines()[-1]
    assert line.startswith(f"selfplay-train: sweep folder {sweep} is in use by process "
                           f"{c.winner_pid}"), c.loser.stderr
    assert c.after == c.before
    assert c.winner_status == 0, c.winner_err
    (job,) = [p for p in sweep.iterdir() if p.is_dir()]
    assert holds_run(job) and any((job / "checkpoints").glob("*.pt"))
    assert "not started" not in c.winner_out and "finished" in c.winner_out, c.winner_out


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

