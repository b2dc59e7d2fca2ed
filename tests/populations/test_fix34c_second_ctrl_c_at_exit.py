"""A second Ctrl-C while a local Ray instance shuts down at exit (walk 34b, item 1): the
exit handler that stops Ray and removes its session folder was cut short by a
``KeyboardInterrupt`` inside ``ray.shutdown(wait_for_processes=True)``: Python printed
``Exception ignored in atexit callback`` with its traceback, the folder stayed, and Ray's
servers lingered about a minute. The handler now ignores SIGINT while it runs.

The second Ctrl-C is made deterministic here: the script signals itself (a real SIGINT)
the moment Ray's ``shutdown`` is entered, from the exit handler's own call."""

from __future__ import annotations

import os
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

    def ctrl_c_inside_shutdown(frame, event, arg):
        code = frame.f_code
        if event == "call" and code.co_name == "shutdown" and "ray" in code.co_filename:
            sys.setprofile(None)
            os.kill(os.getpid(), signal.SIGINT)  # the user's second Ctrl-C

    # registered after init_ray's handler, so it runs just before it (last in, first out)
    atexit.register(sys.setprofile, ctrl_c_inside_shutdown)
""")


def test_a_ctrl_c_during_rays_shutdown_at_exit_neither_prints_a_traceback_nor_leaves_ray():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=300, cwd=os.getcwd())
    assert done.returncode == 0, done.stderr
    # before: Exception ignored in atexit callback ... ray.shutdown(...) KeyboardInterrupt
    assert "KeyboardInterrupt" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    session = done.stdout.splitlines()[0]
    assert os.path.basename(session).startswith("session_"), done.stdout
    assert not os.path.exists(session), os.listdir(session)  # before: shutdown cut short
