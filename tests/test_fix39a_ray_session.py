"""A local Ray instance leaves no session folder and says nothing of its own about tokens
(walk39b M2, L1): Ctrl-C while ``ray.init`` starts it left ``<ray tmp>/session_<time>_<pid>``
(the folder was only removed once ``ray.init`` returned), and every Ray run printed Ray's
``Token authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt
out...`` (the authentication stays on: only the notice is not shown)."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import os, sys
from pathlib import Path
from populations.runners import init_ray

root = Path(os.environ["RAY_TMPDIR"]) / "ray"
if sys.argv[1] == "interrupt":  # Ctrl-C once its head processes run (a real SIGINT there
    # raced: Ray's forks and logging locks swallow it at times)
    import ray._private.node as node

    started = node.Node.start_head_processes

    def interrupted(self):
        started(self)
        raise KeyboardInterrupt

    node.Node.start_head_processes = interrupted
    try:
        init_ray(None, 1)
        print("started")
    except KeyboardInterrupt:
        print("interrupted")
else:
    ray = init_ray(None, 1)
    print("started", os.environ.get("RAY_AUTH_MODE"))
"""


def _run(mode, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["RAY_TMPDIR"] = tmp
    done = subprocess.run([sys.executable, "-c", CHILD, mode], env=env, capture_output=True,
                          text=True, timeout=300)
    sessions = [p.name for p in (Path(tmp) / "ray").glob("session_*")]
    return done, sessions


def test_a_local_ray_leaves_no_session_and_no_token_notice():
    tmp = tempfile.mkdtemp(prefix="fx39a", dir="/tmp")  # short: Ray's socket paths
    done, sessions = _run("started", tmp)
    assert done.stdout.split() == ["started", "token"], done.stderr  # authentication on
    assert "Token authentication is enabled" not in done.stderr, done.stderr
    assert sessions == [], sessions
    done, sessions = _run("interrupt", tmp)
    assert done.stdout.split() == ["interrupted"], done.stderr
    assert sessions == [], (sessions, done.stdout, done.stderr[-2000:])
