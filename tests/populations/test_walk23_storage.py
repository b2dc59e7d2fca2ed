"""Walk 23 (an unlucky machine): a league run whose disk fills up, or whose ``league.db``
another connection keeps locked, ends in one line naming the file, with the command that
resumes it (exit 2), never in a traceback whose last error (recording the run's status in
the same full or locked database) hid the first; a write that failed leaves no ``.tmp``
file; and a finished run leaves ``league.db`` without ``-wal``/``-shm`` files.

The failures are real ones made small: ``os.fsync`` refusing with ENOSPC, a file whose
``write`` refuses with ENOSPC under ``torch.save``, SQLite's ``max_page_count`` (SQLITE_FULL,
"database or disk is full"), and a second SQLite connection holding ``BEGIN IMMEDIATE``."""

from __future__ import annotations

import errno
import os
import shlex
import sqlite3
from pathlib import Path

import pytest

from marl import fileio
from populations import db as dbmod
from populations.league import League
from tests.populations.test_walk18_cli_more import _train

LEAGUE = ["game=kuhn", "population=self_play", "population.generations=2",
          "population.frames_per_generation=32", "num_envs=4", "eval_episodes=1",
          "mappo.rollout_steps=4", "mappo.epochs=1", "mappo.minibatches=1", "progress=false"]


def _failed(argv: list[str], tmp_path: Path, monkeypatch, capsys) -> str:
    """Run ``selfplay-train`` expecting a one-line failure: that line."""
    with pytest.raises(SystemExit) as stop:
        _train(argv, monkeypatch, tmp_path)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "another exception occurred" not in err, err
    assert stop.value.code == 2, err
    return err.strip().splitlines()[-1]


def _status(run: Path) -> tuple[str, str | None]:
    conn = sqlite3.connect(run / "league.db")
    try:
        return conn.execute("SELECT status, error FROM runs").fetchone()
    finally:
        conn.close()


def _resumes(line: str, run: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """The line's resume command, run: the league finishes, and leaves league.db alone."""
    command = line.split("it resumes from the last one with: ", 1)[1]
    words = shlex.split(command)
    assert words[0] == "selfplay-train" and "resume=true" in words, words
    monkeypatch.undo()
    _train(words[1:], monkeypatch, tmp_path)
    capsys.readouterr()
    assert _status(run)[0] == "finished"
    assert sorted(p.name for p in run.iterdir() if p.name.startswith("league.db")) == \
        ["league.db"]


def test_disk_full_writing_a_checkpoint_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    ckpts = run / "checkpoints"
    fsync = os.fsync

    def full(fd: int) -> None:  # the disk fills up while the second checkpoint is written
        if any(ckpts.glob("ckpt_*.pt")) and any(ckpts.glob("ckpt_*.pt.tmp")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    line = _failed([*LEAGUE, f"hydra.run.dir={run}"], tmp_path, monkeypatch, capsys)
    assert line.startswith(f"selfplay-train: no space left on device writing {ckpts}/ckpt_"), line
    assert f"{run} keeps its checkpoints: once the cause is fixed, it resumes" in line, line
    assert not [p.name for p in ckpts.iterdir() if p.name.endswith(".tmp")]
    status, error = _status(run)
    assert status == "failed" and "no space left on device writing" in error, error
    _resumes(line, run, tmp_path, monkeypatch, capsys)


def test_disk_full_under_torch_save_is_one_line_naming_the_snapshot(tmp_path, monkeypatch,
                                                                    capsys):
    """``torch.save`` into a full disk raises its zip writer's "unexpected pos" RuntimeError
    over the ENOSPC of the write before."""
    run = tmp_path / "run"

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __getattr__(self, name):
            return getattr(self.fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    def opened(path, mode="r", **kwargs):
        fh = open(path, mode, **kwargs)  # noqa: SIM115 - returned open, as open does
        name = os.fspath(path)
        return Full(fh) if "/snapshots/" in name and name.endswith("v0001.pt.tmp") else fh

    monkeypatch.setattr(fileio, "open", opened, raising=False)
    line = _failed([*LEAGUE, f"hydra.run.dir={run}"], tmp_path, monkeypatch, capsys)
    assert line.startswith(f"selfplay-train: no space left on device writing {run}/snapshots/"), \
        line
    assert "it resumes from the last one with: " in line, line
    assert not list(run.rglob("*.tmp"))
    _resumes(line, run, tmp_path, monkeypatch, capsys)


def test_a_full_league_db_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """SQLite's own "database or disk is full" (SQLITE_FULL), once the first checkpoint is
    written: the database may grow by no page more."""
    run = tmp_path / "run"
    save = League._save

    def saved(self):
        save(self)
        pages = self.db.conn.execute("PRAGMA page_count").fetchone()[0]
        self.db.conn.execute(f"PRAGMA max_page_count = {pages}")

    monkeypatch.setattr(League, "_save", saved)
    line = _failed([*LEAGUE, f"hydra.run.dir={run}"], tmp_path, monkeypatch, capsys)
    assert line.startswith("selfplay-train: no space left on device writing league database "
                           f"{run / 'league.db'}"), line
    assert "it resumes from the last one with: " in line, line
    _resumes(line, run, tmp_path, monkeypatch, capsys)


def test_a_lock_held_on_league_db_is_waited_for_then_one_line(tmp_path, monkeypatch, capsys):
    """Another connection holds league.db's write lock (``BEGIN IMMEDIATE`` in a sqlite3
    shell) past the run's lock timeout: the run's write, and then recording its status,
    fail; the line names the file and the lock, not the status update's error."""
    run = tmp_path / "run"
    monkeypatch.setattr(dbmod, "LOCK_TIMEOUT", 0.3, raising=False)
    line = _league_locked_after_first_save(run, tmp_path, monkeypatch, capsys)
    assert line.startswith(f"selfplay-train: league database {run / 'league.db'} is locked: "
                           "another connection held its write lock for "), line
    assert "it resumes from the last one with: " in line, line
    _resumes(line, run, tmp_path, monkeypatch, capsys)


def test_a_lock_held_briefly_is_waited_for(tmp_path, monkeypatch, caplog):
    """A write that meets a lock waits (warning once) and goes on when it is released."""
    import threading

    monkeypatch.setattr(dbmod, "LOCK_WARN", 0.0, raising=False)
    monkeypatch.setattr(dbmod, "LOCK_TIMEOUT", 60.0, raising=False)
    db = dbmod.LeagueDB(tmp_path / "league.db", timeout=0.05)  # one try: 0.05 s
    run_id = db.create_run("r")
    other = sqlite3.connect(tmp_path / "league.db", isolation_level=None,
                            check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    release.start()
    db.log_metrics(run_id, 1, {"x": 1.0})
    release.join()
    other.close()
    assert db.metric(run_id, "x") == [(1, 1.0)]
    assert "is locked by another connection" in caplog.text
    db.close()


def test_a_reader_closed_last_leaves_no_wal_file(tmp_path):
    """A read-only connection (the CLI's closing table, the dashboard's live view) opened on a
    closed database made its -wal/-shm files and left them when it closed."""
    db = dbmod.LeagueDB(tmp_path / "league.db")
    db.create_run("r")
    db.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["league.db"]
    reader = dbmod.LeagueDB(tmp_path / "league.db", readonly=True)
    assert reader.run_id("r") == 1
    reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["league.db"]


def test_a_failed_write_removes_its_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "x.bin"
    target.write_bytes(b"old")

    def fails(fh):
        fh.write(b"partial")
        raise RuntimeError("a writer's bug")

    with pytest.raises(RuntimeError, match="a writer's bug"):
        fileio.atomic_write(target, fails)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.bin"]
    assert target.read_bytes() == b"old"


def test_disk_full_writing_the_metrics_csv_is_one_line_naming_it(tmp_path, monkeypatch,
                                                                 capsys):
    """The csv logger's flush finds the disk full, and so does its close after: the line
    named neither the file nor kept the first error (``[Errno 28]`` of the close)."""
    run = tmp_path / "run"
    save = League._save

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def flush(self):  # the rows buffered before stay unwritten
            self.write(b"")

        def close(self):
            self.write(b"")

    def saved(self):
        save(self)
        fh = self.logger._fh
        if not isinstance(fh, Full):
            self.logger._fh = Full(fh)
            self.logger._w = __import__("csv").writer(self.logger._fh)
            fh.close()

    monkeypatch.setattr(League, "_save", saved)
    line = _failed([*LEAGUE, f"hydra.run.dir={run}"], tmp_path, monkeypatch, capsys)
    assert line.startswith("selfplay-train: no space left on device writing metrics "
                           f"{run / 'metrics.csv'}"), line
    assert "it resumes from the last one with: " in line, line


def _lock_budgets(monkeypatch) -> list[float]:
    """The seconds each write that failed on a lock was allowed to wait (the larger of its
    ``lock_timeout`` and its connection's busy timeout), in order."""
    budgets: list[float] = []
    write_error = dbmod.LeagueDB._write_error

    def spied(self, err, code, waited):
        if code in (dbmod._BUSY, dbmod._LOCKED):
            busy = self.conn.execute("PRAGMA busy_timeout").fetchone()[0] / 1000
            budgets.append(max(self.lock_timeout, busy))
        return write_error(self, err, code, waited)

    monkeypatch.setattr(dbmod.LeagueDB, "_write_error", spied)
    return budgets


def test_a_locked_league_db_is_waited_for_once(tmp_path, monkeypatch, capsys):
    """The run's write waits LOCK_TIMEOUT for the lock; recording the failure (League's
    status, then the run folder's) waited as long again each: 3 x LOCK_TIMEOUT in all."""
    run = tmp_path / "run"
    monkeypatch.setattr(dbmod, "LOCK_TIMEOUT", 0.3, raising=False)
    budgets = _lock_budgets(monkeypatch)
    line = _league_locked_after_first_save(run, tmp_path, monkeypatch, capsys)
    assert " is locked: " in line, line
    assert budgets[0] == 0.3 and budgets[1:] == [0.0] * (len(budgets) - 1), budgets


def test_a_failing_runs_status_waits_briefly_for_a_lock(tmp_path, monkeypatch):
    """Recording the status of a run stopped by another error (Ctrl-C, a full disk) while
    league.db is locked waits QUIET_LOCK_TIMEOUT, not LOCK_TIMEOUT; the database's own
    budget is back afterwards."""
    monkeypatch.setattr(dbmod, "QUIET_LOCK_TIMEOUT", 0.05, raising=False)
    budgets = _lock_budgets(monkeypatch)
    db = dbmod.LeagueDB(tmp_path / "league.db")
    run_id = db.create_run("r")
    other = sqlite3.connect(tmp_path / "league.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        assert not db.set_run_status_quietly(run_id, "interrupted", "KeyboardInterrupt")
    finally:
        other.rollback()
        other.close()
    assert budgets == [0.05]
    assert db.lock_timeout == dbmod.LOCK_TIMEOUT
    assert db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000
    db.close()


class _Busy(dbmod.LeagueDB):
    """A database whose ``busy`` write meets SQLITE_BUSY_SNAPSHOT (a busy result SQLite
    returns without calling its busy handler) ``self.busy_left`` times."""
    busy_left = 0
    tries = 0

    @dbmod._writes
    def busy(self) -> str:
        self.tries += 1
        if self.tries > 1000:
            raise AssertionError("the write was tried 1000 times without waiting")
        if self.busy_left:
            self.busy_left -= 1
            err = sqlite3.OperationalError("database is locked")
            err.sqlite_errorcode = 517  # SQLITE_BUSY_SNAPSHOT
            raise err
        return "written"


def test_a_busy_write_waits_between_tries(tmp_path, monkeypatch):
    """A busy result SQLite returns at once was tried again at once, spinning a core for
    lock_timeout; each try now waits a little (a clock the sleeps advance)."""
    clock = [0.0]

    def sleep(s):
        clock[0] += s

    monkeypatch.setattr(dbmod.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(dbmod.time, "sleep", sleep)
    db = _Busy(tmp_path / "league.db", lock_timeout=1.0)
    db.busy_left = 10**6
    with pytest.raises(dbmod.LeagueDBError, match=r"is locked: .* for 1 s"):
        db.busy()
    assert 5 <= db.tries <= 20, db.tries
    db.close()


def test_writes_from_two_threads_are_each_retried(tmp_path):
    """A write meeting a busy result while another thread is inside a write on the same
    LeagueDB is retried too (the flag saying a write is under way was one per database)."""
    import threading

    inside, leave = threading.Event(), threading.Event()

    class Held(_Busy):
        @dbmod._writes
        def hold(self) -> None:
            inside.set()
            leave.wait(30)

    db = Held(tmp_path / "league.db", lock_timeout=60.0)
    holder = threading.Thread(target=db.hold)
    holder.start()
    try:
        assert inside.wait(30)
        db.busy_left = 1
        assert db.busy() == "written"
    finally:
        leave.set()
        holder.join()
    assert db.tries == 2
    db.close()


def test_the_run_folder_waits_for_a_lock_only_when_err_was_not_it(tmp_path):
    """The run folder records a failure with no wait when the error was this file's lock
    (also raised from it), with QUIET_LOCK_TIMEOUT otherwise (Ctrl-C, another file's lock)."""
    path = tmp_path / "league.db"
    locked = dbmod.LeagueDBLockedError("locked", path)
    try:
        try:
            raise locked
        except dbmod.LeagueDBError as err:
            raise SystemExit(2) from err
    except SystemExit as err:
        raised_from = err
    assert dbmod.lock_budget_after(locked, path) == 0.0
    assert dbmod.lock_budget_after(raised_from, path) == 0.0
    assert dbmod.lock_budget_after(KeyboardInterrupt(), path) == dbmod.QUIET_LOCK_TIMEOUT
    assert dbmod.lock_budget_after(locked, tmp_path / "other.db") == dbmod.QUIET_LOCK_TIMEOUT


def _league_locked_after_first_save(run, tmp_path, monkeypatch, capsys) -> str:
    """The one line of a league whose league.db another connection holds in a write
    transaction from its first checkpoint on (released after the run)."""
    holder: list[sqlite3.Connection] = []
    save = League._save

    def saved(self):
        save(self)
        if not holder:
            conn = sqlite3.connect(run / "league.db", isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            holder.append(conn)

    monkeypatch.setattr(League, "_save", saved)
    try:
        return _failed([*LEAGUE, f"hydra.run.dir={run}"], tmp_path, monkeypatch, capsys)
    finally:
        for conn in holder:
            conn.rollback()
            conn.close()
