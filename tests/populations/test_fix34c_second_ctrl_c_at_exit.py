"""A second Ctrl-C while a local Ray instance shuts down at exit (walk 34b, item 1): the
exit handler that stops Ray and removes its session folder was cut short by a
``KeyboardInterrupt`` inside ``ray.shutdown(wait_for_processes=True)``: Python printed
``Exception ignored in atexit callback`` with its traceback, the folder stayed, and Ray's
servers lingered about a minute. A Ctrl-C there now says what is going on and lets the
shutdown finish; one more (rfix34c: SIGINT was ignored, so only SIGTERM or kill got out of a
hung shutdown) ends the wait, with a line and no traceback.

The Ctrl-Cs are made deterministic here: the script signals itself (a real SIGINT) the
moment the exit handler's call enters Ray's ``shutdown`` and, for the second, the moment
that shutdown enters ``kill_all_processes`` (where it waits for Ray's servers)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ray")

SCRIPT = textwrap.dedent("""
    import atexit, os, signal, sys
    from populations.runners import init_ray
    ray = init_ray(None, 1)  # registers the exit handler that shuts Ray down
    import ray._private.worker as worker
    print(worker._global_node.get_session_dir_path(), flush=True)
    at = sys.argv[1].split(",")  # the Ray functions whose call gets a Ctrl-C

    def ctrl_c_inside_shutdown(frame, event, arg):
        code = frame.f_code
        if event == "call" and at and code.co_name == at[0] and "ray" in code.co_filename:
            at.pop(0)
            if not at:
                sys.setprofile(None)
            os.kill(os.getpid(), signal.SIGINT)  # the user's second (third) Ctrl-C

    # registered after init_ray's handler, so it runs just before it (last in, first out)
    atexit.register(sys.setprofile, ctrl_c_inside_shutdown)
""")

ASKED = "stopping Ray (seconds); Ctrl-C again to stop waiting for it"
LEFT = "stopped waiting for Ray to stop; its session folder may stay: "


def run_script(at: str) -> tuple[subprocess.CompletedProcess[str], str]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, at], capture_output=True,
                          text=True, timeout=300, cwd=os.getcwd())
    session = done.stdout.splitlines()[0] if done.stdout else ""
    assert os.path.basename(session).startswith("session_"), (done.stdout, done.stderr)
    return done, session


def test_a_ctrl_c_during_rays_shutdown_at_exit_neither_prints_a_traceback_nor_leaves_ray():
    done, session = run_script("shutdown")
    assert done.returncode == 0, done.stderr
    # before: Exception ignored in atexit callback ... ray.shutdown(...) KeyboardInterrupt
    assert "KeyboardInterrupt" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    assert done.stderr.count(ASKED) == 1, done.stderr  # rfix34c: said, and waited
    assert LEFT not in done.stderr, done.stderr
    assert not os.path.exists(session), os.listdir(session)  # before: shutdown cut short


def test_one_more_ctrl_c_ends_the_wait_for_ray_with_a_line_and_no_traceback():
    done, session = run_script("shutdown,kill_all_processes")
    try:
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert "Exception ignored" not in done.stderr, done.stderr
        # before (rfix34c): SIGINT ignored, the wait went on and no line was printed
        assert done.stderr.count(ASKED) == 1, done.stderr
        assert LEFT + session in done.stderr.splitlines(), done.stderr
    finally:
        shutil.rmtree(session, ignore_errors=True)
