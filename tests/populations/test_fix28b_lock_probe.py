"""A run folder's lock and the probe that asks whether another process holds it (review27
item 10c). ``locked_elsewhere`` tests the lock by taking it shared for an instant; a start's
exclusive try at that instant was refused 'in use by process <the last run's PID>' while
nothing held the folder. A start now tells such a probe from a run (a shared try is granted
only when no process holds the lock exclusively) and tries again.

The probe's instant cannot be hit on purpose from outside; the test holds the probe's shared
lock itself (the same kernel lock, on its own descriptor) and lets it go where the start
pauses (``_wait_out_probe``, replaced): no timing decides the outcome."""

import fcntl
import os
import subprocess
import sys

import pytest

from populations import run_folder
from populations.run_folder import LOCK_NAME, RunFolderError, RunLock, locked_elsewhere

HOLDER = """
import sys
from populations.run_folder import RunLock

RunLock(sys.argv[1]).acquire()
print("held", flush=True)
sys.stdin.read()  # until the test closes it
"""


@pytest.fixture
def holder(tmp_path):
    """Another process holding ``tmp_path / 'run'``'s lock (RunLock) until the test ends."""
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(run)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield run, proc
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def test_a_start_while_a_probe_holds_the_lock_shared_takes_the_lock(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    probe = os.open(run / LOCK_NAME, os.O_RDONLY | os.O_CREAT)
    fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)  # what locked_elsewhere holds, briefly
    paused = []

    def probe_ends(attempt):
        paused.append(attempt)
        fcntl.flock(probe, fcntl.LOCK_UN)

    monkeypatch.setattr(run_folder, "_wait_out_probe", probe_ends, raising=False)
    try:
        lock = RunLock(run).acquire()  # was: RunFolderError 'in use by process ...'
        try:
            assert lock.held and paused == [0]
            assert (run / LOCK_NAME).read_text() == f"{os.getpid()}\n"
        finally:
            lock.release()
    finally:
        os.close(probe)


def test_a_run_holding_the_lock_refuses_a_start_at_once(holder, monkeypatch):
    run, proc = holder
    paused = []
    monkeypatch.setattr(run_folder, "_wait_out_probe", paused.append, raising=False)
    with pytest.raises(RunFolderError, match=f"is in use by process {proc.pid} "):
        RunLock(run).acquire()
    assert paused == []  # a run's exclusive lock is not waited for


def test_the_probe_sees_another_process_s_lock_and_leaves_it(holder):
    run, proc = holder
    assert locked_elsewhere(run)
    assert locked_elsewhere(run)  # the probe took nothing from the holder
    proc.stdin.close()
    proc.wait(timeout=60)
    assert not locked_elsewhere(run)  # its process ended: the kernel dropped the lock
    with RunLock(run) as lock:  # and a start takes it
        assert lock.held and not locked_elsewhere(run)  # this process's own lock


def test_the_probe_of_a_folder_without_a_lock_file_creates_none(tmp_path):
    assert not locked_elsewhere(tmp_path)
    assert not (tmp_path / LOCK_NAME).exists()
