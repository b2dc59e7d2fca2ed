"""Refused resumes leave a run as it was, and damaged run files are refused in one line naming
the file and what to do (walk36b's SIGKILL and corruption walk).

* a ``resume_override=true`` resume refused at its checkpoint (another learner's) rewrote the
  run's ``settings.json`` and ``runs.config``: the run's own resume command was then refused;
* a ``settings.json`` holding JSON that is not an object (``[1, 2]``, ``5``) raised
  AttributeError with a traceback; an unreadable one did not say what to do;
* a read-only ``league.db`` gave a ``sqlite3.OperationalError`` traceback.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess

import pytest

from tests.populations.test_db_store import garble
from tests.populations.user_modules import train_here

SINGLE = ["game=kuhn", "frames=32", "num_envs=4", "mappo.rollout_steps=4",
          "eval_episodes=2", "progress=false", "checkpoint_every_s=0",
          "logger=none"]


def _refused(argv, run, monkeypatch, tmp_path, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        train_here([*argv, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert "Traceback" not in "\n".join(err), err
    return err[-1]


def _sql(run, sql, *args):
    with sqlite3.connect(run / "league.db") as db:
        return db.execute(sql, args).fetchall()


def _interrupted_run(tmp_path, monkeypatch):
    """A finished single mappo run marked interrupted (as a kill before its end leaves it)."""
    run = tmp_path / "run"
    train_here([*SINGLE, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    _sql(run, "UPDATE runs SET status = 'interrupted'")
    return run


def test_a_refused_override_resume_keeps_the_runs_settings(tmp_path, monkeypatch, capsys):
    run = _interrupted_run(tmp_path, monkeypatch)
    settings = (run / "settings.json").read_text()
    config = _sql(run, "SELECT config FROM runs")
    line = _refused([*SINGLE, "algo=ippo", "resume=true", "resume_override=true"], run,
                    monkeypatch, tmp_path, capsys)
    assert "does not fit this ippo learner" in line, line
    assert (run / "settings.json").read_text() == settings  # it said algo: ippo
    assert _sql(run, "SELECT config FROM runs") == config
    # the run's own resume is not refused as other settings
    train_here([*SINGLE, "resume=true", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert _sql(run, "SELECT status FROM runs") == [("finished",)]


def test_an_accepted_override_resume_records_the_settings_in_force(tmp_path, monkeypatch):
    run = _interrupted_run(tmp_path, monkeypatch)
    train_here([*SINGLE, "resume=true", "resume_override=true", "mappo.lr=0.5",
                f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert json.loads((run / "settings.json").read_text())["mappo"]["lr"] == 0.5
    (config,), = _sql(run, "SELECT config FROM runs")
    assert json.loads(config)["mappo"]["lr"] == 0.5


@pytest.mark.parametrize("text", ["[1, 2]", '"x"', "5", "null"])
def test_settings_that_are_not_an_object_are_refused_in_one_line(tmp_path, monkeypatch, capsys,
                                                                 text):
    run = _interrupted_run(tmp_path, monkeypatch)
    (run / "settings.json").write_text(text)
    line = _refused([*SINGLE, "resume=true"], run, monkeypatch, tmp_path, capsys)
    assert line.startswith(f"selfplay-train: cannot read {run / 'settings.json'}: it holds "), line
    assert "not the run's settings (a JSON object); delete it to resume: the resume is then " \
        "checked against the settings the run's league.db records" in line, line
    # as it says: deleted, the run resumes against what league.db records
    (run / "settings.json").unlink()
    train_here([*SINGLE, "resume=true", f"hydra.run.dir={run}"], monkeypatch, tmp_path)


def test_unreadable_settings_say_what_to_do(tmp_path, monkeypatch, capsys):
    run = _interrupted_run(tmp_path, monkeypatch)
    (run / "settings.json").write_text('{"seed": ')
    line = _refused([*SINGLE, "resume=true"], run, monkeypatch, tmp_path, capsys)
    assert line.startswith(f"selfplay-train: cannot read {run / 'settings.json'}: "), line
    assert line.endswith("; delete it to resume: the resume is then checked against the "
                         "settings the run's league.db records"), line


def read_only(path) -> bool:
    """Make ``path`` read-only for this process: chmod for a plain user, ``chattr +i`` for
    root (whom permissions do not stop); False where neither holds (the test skips)."""
    if os.geteuid() != 0:
        os.chmod(path, 0o444)
        return not os.access(path, os.W_OK)
    try:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    except OSError:
        return False
    return done.returncode == 0


def writable(path) -> None:
    """Undo :func:`read_only` (tmp_path's cleanup removes the file)."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
    os.chmod(path, 0o644)


def _eval(args, capsys):
    from populations.eval_cli import eval_main

    try:
        eval_main([*args, "--episodes", "1"])
        code = 0
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _policies(tmp_path):
    import games
    from marl import registry

    spec = games.make("openspiel/kuhn_poker").spec
    return [str(registry.get("mappo").build(spec, seed=i).policy().save(tmp_path / f"p{i}.pt"))
            for i in range(2)]


def test_a_resume_of_a_read_only_database_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    run = _interrupted_run(tmp_path, monkeypatch)
    db = run / "league.db"
    if not read_only(db):
        pytest.skip("cannot make a file read-only here")
    try:
        line = _refused([*SINGLE, "resume=true"], run, monkeypatch, tmp_path, capsys)
    finally:
        writable(db)
    assert line.startswith(f"selfplay-train: cannot write league database {db}: it is "
                           "read-only (attempt to write a readonly database); make the file, "
                           "its -wal and -shm files and its folder writable"), line
    assert "it resumes from the last one with: selfplay-train " in line and "resume=true" in line


def test_eval_into_a_read_only_database_is_refused_in_one_line(tmp_path, capsys):
    from populations.db import LeagueDB

    db = tmp_path / "ro" / "league.db"
    LeagueDB(db).close()
    if not read_only(db):
        pytest.skip("cannot make a file read-only here")
    try:
        code, _, err = _eval(["--db", str(db), *_policies(tmp_path)], capsys)
    finally:
        writable(db)
    assert code == 2 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith(
        f"selfplay-eval: cannot write league database {db}: it is read-only"), err


@pytest.mark.parametrize(("tail", "where"), [
    (b"abc,losses/pg_loss,1.0\r\n", "line 3 (its step 'abc' is not an integer)"),
    (b"\x85\xf7\x00garbage\r\n", "line 3 ('utf-8' codec can't decode byte 0x85 in position "),
])
def test_a_damaged_metrics_file_names_itself_and_what_to_do(tmp_path, tail, where):
    from populations.loggers import CSVLogger, LoggerConfig

    path = tmp_path / "metrics.csv"
    path.write_bytes(b"step,key,value\r\n16,losses/pg_loss,0.5\r\n" + tail)
    with pytest.raises(ValueError) as err:
        CSVLogger(tmp_path, LoggerConfig(), {})
    line = str(err.value)
    assert line.startswith(f"metrics file {path} is damaged at {where}"), line
    assert line.endswith("; delete it to resume: a resume writes it again from the metrics "
                         "league.db records"), line


def test_a_resume_with_a_damaged_metrics_file_is_one_line_and_resumes_once_deleted(
        tmp_path, monkeypatch, capsys):
    run = _interrupted_run(tmp_path, monkeypatch)
    args = [a for a in SINGLE if a != "logger=none"]
    csv_file = run / "metrics.csv"
    csv_file.write_text("step,key,value\r\nabc,losses/pg_loss,1.0\r\n")
    line = _refused([*args, "resume=true"], run, monkeypatch, tmp_path, capsys)
    assert line.startswith(f"selfplay-train: metrics file {csv_file} is damaged at line 2 "
                           "(its step 'abc' is not an integer); delete it to resume"), line
    csv_file.unlink()
    train_here([*args, "resume=true", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    rows = csv_file.read_text().splitlines()
    assert rows[0] == "step,key,value" and len(rows) > 1  # written again from league.db


def test_a_policy_file_is_checked_against_its_sidecars_hash(tmp_path):
    """selfplay-eval played a run folder's snapshot whose bytes were overwritten, silently (a
    resume refuses it); ``load_policy_file`` checks it against its ``.json`` sidecar."""
    import games
    from marl import registry
    from populations.db import LeagueDB
    from populations.store import PolicyStore, StoreError, load_policy_file

    policy = registry.get("mappo").build(games.make("openspiel/kuhn_poker").spec).policy()
    db = LeagueDB(tmp_path / "league.db")
    try:
        snap = PolicyStore(tmp_path / "snapshots", db, db.create_run("r")).publish("main", policy)
    finally:
        db.close()
    path = tmp_path / "snapshots" / "main" / "v0000.pt"
    assert snap.path == str(path)
    assert load_policy_file(path).meta == policy.meta  # untouched: it loads
    garble(path)  # other weights: the file still loads
    with pytest.raises(StoreError) as err:
        load_policy_file(path)
    assert str(err.value).startswith(f"snapshot file {path} is damaged or was replaced: its "
                                     "SHA-256 "), err.value
    assert str(err.value).endswith("... its v0000.json recorded when it was published; "
                                   "restore it from a copy, or pass another file")
    # a file without a sidecar (Policy.save's own) is checked by its zip's CRCs (fix40f L3:
    # before, it loaded with the garbled weights)
    (tmp_path / "snapshots" / "main" / "v0000.json").unlink()
    with pytest.raises(ValueError, match=r"^cannot read policy .*: damaged \(bad CRC in "):
        load_policy_file(path)


def test_a_league_resume_refused_at_a_damaged_snapshot_says_what_to_do(tmp_path):
    from populations.league import League
    from populations.store import StoreError
    from tests.populations.test_league import _kuhn

    league = League(_kuhn(generations=1), tmp_path)
    league.run()
    league.close()
    snap = tmp_path / "snapshots" / "main" / "v0000.pt"
    garble(snap)
    with pytest.raises(StoreError) as err:
        League(_kuhn(generations=2), tmp_path, resume=True)
    line = str(err.value)
    assert line.startswith(f"snapshot file {snap} is damaged or was replaced: ") and \
        "\n" not in line, line
    assert line.endswith("; the league plays it again: restore the run folder's snapshots from "
                         "a copy, or start a new run in another folder"), line


def test_a_checkpoint_without_its_hash_says_both_causes(tmp_path, caplog):
    import logging

    from populations.checkpoint import read_checkpoint, save_checkpoint

    save_checkpoint(tmp_path, 1, {"step": 1})
    (tmp_path / "ckpt_000001.pt.sha256").unlink()  # a kill between the two writes
    with caplog.at_level(logging.WARNING, logger="populations.checkpoint"):
        assert read_checkpoint(tmp_path / "ckpt_000001.pt") == {"step": 1}
    assert f"checkpoint {tmp_path / 'ckpt_000001.pt'} has no .sha256 file (from an older " \
        "selfplay, or the process was killed between writing the checkpoint and its hash): " \
        "loading it unverified" in caplog.messages, caplog.messages


@pytest.mark.parametrize("text", ["garbage\n", "", "\n", "zz" * 32 + "  ckpt_000001.pt\n"])
def test_a_garbage_hash_file_is_unreadable_not_a_differing_hash(tmp_path, text):
    from marl.core import CheckpointError
    from populations.checkpoint import read_checkpoint, save_checkpoint

    save_checkpoint(tmp_path, 1, {"step": 1})
    (tmp_path / "ckpt_000001.pt.sha256").write_text(text)
    with pytest.raises(CheckpointError) as err:
        read_checkpoint(tmp_path / "ckpt_000001.pt")
    assert str(err.value) == (f"checkpoint {tmp_path / 'ckpt_000001.pt'} cannot be checked: "
                              "ckpt_000001.pt.sha256 is unreadable (it holds no SHA-256, 64 "
                              "hex digits)")


def test_a_lock_that_is_a_directory_says_remove_it(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    (run / ".lock").mkdir(parents=True)
    line = _refused(SINGLE, run, monkeypatch, tmp_path, capsys)
    assert line == (f"selfplay-train: the lock {run / '.lock'} of run folder {run} is a "
                    "directory, not the file selfplay locks: remove it"), line


def test_a_new_folder_named_with_a_control_character_is_refused(tmp_path, monkeypatch, capsys):
    run = tmp_path / "odd \x1b[31m#1"
    with pytest.raises(SystemExit) as stop:  # quoted for Hydra's override grammar
        train_here([*SINGLE, f'hydra.run.dir="{run}"'], monkeypatch, tmp_path)
    assert stop.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "\x1b" not in line and not run.exists(), line
    assert line == (f"selfplay-train: run folder name {tmp_path}/odd \\x1b[31m#1 holds the "
                    "control character '\\x1b', which the commands printed for the folder (its "
                    "resume command) would hold raw: choose a name without control characters "
                    "with hydra.run.dir=<folder>"), line
