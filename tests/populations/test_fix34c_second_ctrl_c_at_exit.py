"""A second Ctrl-C while a local Ray instance shuts down at exit (walk 34b, item 1): the
exit handler that stops Ray and removes its session folder was cut short by a
``KeyboardInterrupt`` inside ``ray.shutdown(wait_for_processes=True)``: Python printed
``Exception ignored in atexit callback`` with its traceback, the folder stayed, and Ray's
servers lingered about a minute. A Ctrl-C there now says what is going on and lets the
shutdown finish; one more (rfix34c: SIGINT was ignored, so only SIGTERM or kill got out of a
hung shutdown) ends the wait, with a line and no traceback.

The Ctrl-Cs are made deterministic here: the script signals itself (a real SIGINT) the
moment the exit handler's call enters Ray's ``shutdown`` and the moment that shutdown enters
``kill_all_processes`` (where it waits for Ray's servers). One Ray session carries both
(starting Ray is most of the cost): that the shutdown reached ``kill_all_processes`` after
the first Ctrl-C shows the first let it go on. That a shutdown left alone removes the
session folder is ``test_fix27c_ray_session_folder``'s."""

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
            print("ctrl-c in", code.co_name, flush=True)
            os.kill(os.getpid(), signal.SIGINT)  # the user's second (third) Ctrl-C

    # registered after init_ray's handler, so it runs just before it (last in, first out)
    atexit.register(sys.setprofile, ctrl_c_inside_shutdown)
""")

ASKED = "stopping Ray (seconds); Ctrl-C again to stop waiting for it"
LEFT = "stopped waiting for Ray to stop; its session folder may stay: "


def test_a_ctrl_c_during_rays_shutdown_at_exit_is_answered_and_one_more_ends_the_wait():
    done = subprocess.run([sys.executable, "-c", SCRIPT, "shutdown,kill_all_processes"],
                          capture_output=True, text=True, timeout=300, cwd=os.getcwd())
    session, *sent = done.stdout.splitlines() or [""]
    assert os.path.basename(session).startswith("session_"), (done.stdout, done.stderr)
    try:
        assert done.returncode == 0, done.stderr
        # before (3d8efcd): Exception ignored in atexit callback ... ray.shutdown(...)
        # KeyboardInterrupt, at the first Ctrl-C
        assert "KeyboardInterrupt" not in done.stderr, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert "Exception ignored" not in done.stderr, done.stderr
        # the first was answered and the shutdown went on to wait for Ray's servers
        assert sent == ["ctrl-c in shutdown", "ctrl-c in kill_all_processes"], done.stdout
        assert done.stderr.count(ASKED) == 1, done.stderr  # rfix34c: said, and waited
        # before (rfix34c): SIGINT ignored, the wait went on and no line was printed
        assert LEFT + session in done.stderr.splitlines(), done.stderr
    finally:
        shutil.rmtree(session, ignore_errors=True)
