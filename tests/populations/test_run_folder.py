"""Run folders: one process at a time (a real second process is refused, naming the PID),
resumes that check their settings and their folder, and runs that record how they ended."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
import populations.psro_run
from populations.experiment import run_experiment
from populations.league import League, LeagueConfig
from populations.run_folder import RunFolderError, RunLock, settings_diff
from tests import subprocs
from tests.populations.test_db_store import garble

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
HOLD = ("import sys; from populations.run_folder import RunLock; RunLock(sys.argv[1]).acquire();"
        " print('locked', flush=True); sys.stdin.read()")


def _kuhn(**kw):
    base = dict(game="openspiel/kuhn_poker", game_kwargs={}, generations=1,
                frames_per_generation=256, num_envs=8, eval_episodes=2)
    return LeagueConfig(**{**base, **kw})


def _holder(run_dir):
    """A second process holding ``run_dir``'s lock until its stdin closes."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], env=ENV,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_process_is_refused_naming_the_pid(tmp_path):
    run = tmp_path / "run"
    League(_kuhn(), run).close()
    proc = _holder(run)
    try:
        with pytest.raises(RunFolderError, match=f"in use by process {proc.pid}\\b") as err:
            League(_kuhn(), run, resume=True)
        assert "\n" not in str(err.value)
        # the refused CLI from the test zygote: its refusal is the property, not its imports
        cli = subprocs.run([sys.executable, "-m", "populations.league", "--run-dir", str(run),
                            "--resume", "--generations", "1", "--frames-per-generation", "256"],
                           env=ENV, capture_output=True, text=True, timeout=300)
        assert cli.returncode == 2
        assert cli.stderr.strip().count("\n") == 0 and f"process {proc.pid}" in cli.stderr
        assert "Traceback" not in cli.stderr
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    RunLock(run).acquire().release()  # free again once the holder has ended


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    proc = _holder(tmp_path)
    with pytest.raises(RunFolderError, match=str(proc.pid)):
        RunLock(tmp_path).acquire()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    lock = RunLock(tmp_path).acquire()  # the kernel dropped the dead process's lock
    assert (tmp_path / ".lock").read_text().strip() == str(os.getpid())
    lock.release()


def test_the_lock_is_reentrant_within_a_process(tmp_path):
    outer = RunLock(tmp_path).acquire()
    inner = RunLock(tmp_path).acquire()  # run_experiment holds it; the league takes it again
    inner.release()
    (tmp_path.parent / f"{tmp_path.name}-link").symlink_to(tmp_path)
    RunLock(tmp_path.parent / f"{tmp_path.name}-link").acquire().release()  # same folder
    proc = subprocs.run([sys.executable, "-c", HOLD, str(tmp_path)], env=ENV,
                         capture_output=True, text=True, input="", timeout=120)
    assert f"in use by process {os.getpid()}" in proc.stderr  # still held by the outer one
    outer.release()


# ------------------------------------------------------------------ resume checks its settings
BASE = ["experiment=kuhn_psro", "eval_episodes=2", "progress=false", "logger=csv"]


def _exp(*overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=[*BASE, *overrides]))


def test_resume_with_other_settings_fails_in_one_line(tmp_path):
    run_experiment(_exp("population.iterations=1"), tmp_path)
    with pytest.raises(RunFolderError, match=r"other settings \(seed=0 \(run\) vs 1 \(now\)\)"
                       ) as err:
        run_experiment(_exp("population.iterations=2", "resume=true", "seed=1"), tmp_path)
    assert "\n" not in str(err.value) and "resume_override" in str(err.value)
    # longer runs, another logger or runner are not other settings
    run_experiment(_exp("population.iterations=2", "resume=true", "logger=none"), tmp_path)
    summary = run_experiment(_exp("population.iterations=3", "resume=true", "seed=1",
                                  "resume_override=true"), tmp_path)
    # the new settings replaced the run's (PSRO's seed recorded as seed=, walk 21)
    saved = json.loads((tmp_path / "settings.json").read_text())
    assert saved["seed"] == saved["population"]["psro"]["seed"] == 1
    db = sqlite3.connect(summary.database)
    assert db.execute("SELECT COUNT(*) FROM psro_iterations").fetchone()[0] == 3
    db.close()


def test_league_resume_with_other_settings_fails_in_one_line(tmp_path):
    League(_kuhn(), tmp_path).close()
    with pytest.raises(RunFolderError, match="frames_per_generation=256 .run. vs 512 .now."):
        League(_kuhn(frames_per_generation=512), tmp_path, resume=True)
    League(_kuhn(generations=2), tmp_path, resume=True).close()  # going on longer is fine
    League(_kuhn(frames_per_generation=512), tmp_path, resume=True, resume_override=True).close()
    League(_kuhn(frames_per_generation=512), tmp_path, resume=True).close()  # now the run's


def test_resume_of_an_empty_or_mistyped_folder_fails_in_one_line(tmp_path):
    with pytest.raises(RunFolderError, match="does not exist"):
        run_experiment(_exp("population.iterations=1", "resume=true"), tmp_path / "typo")
    assert not (tmp_path / "typo").exists()  # nothing created
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunFolderError, match="holds no run"):
        run_experiment(_exp("population.iterations=1", "resume=true"), tmp_path / "empty")
    with pytest.raises(RunFolderError, match="holds no league"):
        League(_kuhn(), tmp_path / "empty", resume=True)
    with pytest.raises(RunFolderError, match="does not exist"):
        League(_kuhn(), tmp_path / "typo", resume=True)
    assert not (tmp_path / "typo").exists()
    run_experiment(_exp("population.iterations=1", "resume=true", "resume_override=true"),
                   tmp_path / "empty")  # asked for explicitly: a new run
    assert (tmp_path / "empty" / "league.db").is_file()


def test_a_fresh_run_refuses_a_folder_holding_a_run(tmp_path):
    run_experiment(_exp("population.iterations=1"), tmp_path)
    with pytest.raises(RunFolderError, match="already holds a run"):
        run_experiment(_exp("population.iterations=1"), tmp_path)


def test_settings_diff_ignores_keys_only_one_version_has():
    saved = {"a": 1, "b": {"c": 2, "d": 3}, "old": 1}
    now = {"a": 1, "b": {"c": 2, "d": 4}, "new": 5}
    assert settings_diff(saved, now) == ["b.d=3 (run) vs 4 (now)"]
    assert settings_diff(saved, now, may_change=("b.",)) == []


def test_missing_league_db_next_to_checkpoints_is_a_one_line_error(tmp_path):
    league = League(_kuhn(), tmp_path)
    league.run()
    league.close()
    (tmp_path / "league.db").unlink()
    with pytest.raises(RunFolderError, match="has checkpoints .* but no league.db") as err:
        League(_kuhn(), tmp_path, resume=True)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------ run status
def _runs(db_path):
    db = sqlite3.connect(db_path)
    try:
        return db.execute("SELECT name, status, error FROM runs").fetchall()
    finally:
        db.close()


class _Boom(Exception):
    pass


def test_a_crashed_league_records_failed_with_its_error(tmp_path, monkeypatch):
    league = League(_kuhn(generations=2), tmp_path)
    monkeypatch.setattr(League, "_publish_and_evaluate",
                        lambda self: (_ for _ in ()).throw(_Boom("disk on fire")))
    with pytest.raises(_Boom):
        league.run()
    league.close()
    assert _runs(tmp_path / "league.db") == [("league", "failed", "_Boom: disk on fire")]
    monkeypatch.undo()
    league = League(_kuhn(generations=2), tmp_path, resume=True)
    assert _runs(tmp_path / "league.db")[0][1:] == ("running", None)
    league.run()
    league.close()
    assert _runs(tmp_path / "league.db")[0][1:] == ("finished", None)


def test_a_refused_resume_of_a_finished_run_leaves_it_finished(tmp_path):
    """A resume refused at its snapshots leaves the run's row as the run left it (5f84190;
    it was marked failed, so the dashboard showed a finished run as failed)."""
    league = League(_kuhn(), tmp_path)
    league.run()
    league.close()
    before = _runs(tmp_path / "league.db")
    garble(tmp_path / "snapshots" / "main" / "v0001.pt")  # damaged after the run finished
    with pytest.raises(ValueError, match="v0001.pt is damaged"):
        League(_kuhn(), tmp_path, resume=True)
    assert _runs(tmp_path / "league.db") == before
    assert before[0][1:] == ("finished", None)


def test_a_crashed_experiment_records_failed(tmp_path, monkeypatch):
    def crash(*args, **kwargs):
        raise _Boom("worker lost")

    monkeypatch.setattr(populations.psro_run, "_record_matches", crash)
    with pytest.raises(_Boom):
        run_experiment(_exp("population.iterations=1"), tmp_path)
    assert _runs(tmp_path / "league.db") == [("kuhn_psro", "failed", "_Boom: worker lost")]


def test_ctrl_c_records_interrupted_not_failed_and_resumes(tmp_path, monkeypatch):
    """A run stopped by Ctrl-C was recorded ``failed`` (red in the dashboard, as a crash)."""
    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(populations.psro_run, "_record_matches", ctrl_c)  # PSRO (open_run too)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(_exp("population.iterations=1"), tmp_path / "psro")
    assert _runs(tmp_path / "psro" / "league.db") == [
        ("kuhn_psro", "interrupted", "KeyboardInterrupt")]
    monkeypatch.setattr(League, "_publish_and_evaluate", ctrl_c)  # a league
    league = League(_kuhn(), tmp_path / "league")
    with pytest.raises(KeyboardInterrupt):
        league.run()
    league.close()
    assert _runs(tmp_path / "league" / "league.db") == [
        ("league", "interrupted", "KeyboardInterrupt")]
    monkeypatch.undo()
    run_experiment(_exp("population.iterations=1", "resume=true"), tmp_path / "psro")
    assert _runs(tmp_path / "psro" / "league.db") == [("kuhn_psro", "finished", None)]
