"""A local Ray instance's session folder goes with the process that started it (walk 27a,
item 8): ``/tmp/ray/session_<time>_<pid>`` (logs, sockets: 200-240 KB) stayed after every
run, 99 of them on one machine after a day."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ray")

SCRIPT = textwrap.dedent("""
    from populations.runners import init_ray
    ray = init_ray(None, 1)
    import ray._private.worker as worker
    print(worker._global_node.get_session_dir_path(), flush=True)

    @ray.remote
    def one():
        return 1

    assert ray.get(one.remote()) == 1
""")


def test_the_session_folder_of_our_local_instance_is_removed_at_exit():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=300, cwd=os.getcwd())
    assert done.returncode == 0, done.stderr
    session = done.stdout.splitlines()[0]
    assert os.path.basename(session).startswith("session_"), done.stdout
    assert not os.path.exists(session), os.listdir(session)
