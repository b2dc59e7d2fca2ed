"""SIGTERM to the whole process group of a ``runner=ray`` league (``timeout 30
selfplay-train ...``, ``kill -TERM -<pgid>``, a scheduler stopping the job's group) while the
driver waits on its learner actors.

Before, the local Ray instance that ``ray.init`` started was in that group: its raylet took the
SIGTERM too, stopped every worker and exited, and the driver either died at once (its object
store connection lost: exit 1) or hung 40-60 s until the lost GCS ended it, the run left
``running`` in league.db with no message (7 of 8 tries of ``experiment=main runner=ray`` at
varied moments; the 8th, in an evaluation, stopped ``interrupted`` 46 s late). Now Ray's
servers run in a session of their own: the signal reaches the driver alone, which stops as
after a plain SIGTERM (after the generation's training, checkpointed), and Ray goes down
with it.

A SIGTERM while ``ray.init`` started that instance (seconds on a loaded machine: ``timeout
30`` met it) ended the run ``failed`` (``SystemExit: 15``), as ``ray.init`` puts its own
handler first thing; the CLI's handler now stays in place."""

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from populations.command_line import resume_command

ROOT = Path(__file__).resolve().parents[2]

ARGS = ["game=kuhn", "population=fsp", "population.generations=2",
        "population.frames_per_generation=256", "num_envs=8", "mappo.rollout_steps=8",
        "mappo.epochs=1", "eval_episodes=1", "progress=false", "logger=none", "runner=ray",
        "runner.workers=1"]

# selfplay-train (train_main) sending SIGTERM to its whole process group as it starts to
# wait on the learner actors that train generation 1 (they were just given their jobs)
GROUP_SIGTERM_AT_WAIT = """
import os, signal, sys
from populations.learner_actors import LearnerPool
wait, sent = LearnerPool.wait, []
def group_sigterm_then_wait(self):
    if not sent:
        sent.append(True)
        os.killpg(os.getpgrp(), signal.SIGTERM)
    return wait(self)
LearnerPool.wait = group_sigterm_then_wait
from populations.cli import train_main
sys.argv = ["selfplay-train", *{args!r}]
train_main()
"""


# a CLI's SIGTERM handler around init_ray, and a SIGTERM once ray.init has begun (as it
# starts the local instance's servers); no server starts: the signal stops it first
SIGTERM_IN_RAY_INIT = """
import os, signal
import ray._private.node as node
from populations.run_folder import sigterm_as_interrupt
from populations.runners import init_ray
start = node.Node.__init__
def sigterm_then_start(self, *args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    return start(self, *args, **kwargs)
node.Node.__init__ = sigterm_then_start
with sigterm_as_interrupt():
    try:
        init_ray(None, 1)
    except BaseException as err:
        print(type(err).__name__, err)
    else:
        print("started")
"""


def _ray_servers_of(pid: int) -> list[str]:
    """Command lines of the live Ray servers (GCS, raylet, monitors) of the local instance
    that process ``pid`` started: their session folder ends with its pid."""
    found = re.compile(rf"session_[\d_-]+_{pid}(/|\s|$)")
    out = []
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and found.search(cmd):
            out.append(f"{d}: {cmd[:200]}")
    return out


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Ray's fate-sharing: Linux")
def test_sigterm_to_the_process_group_stops_a_ray_league_as_interrupted(tmp_path):
    """The driver runs in a process group of its own (as under ``timeout``) and sends SIGTERM
    to the whole group as it starts waiting on its learner actors: it exits 143 with the
    one-line resume message, the run is recorded ``interrupted`` with generation 1 trained
    and checkpointed (the stop comes after the generation's training), and none of the Ray
    servers it started outlives it."""
    run = tmp_path / "run"
    args = [*ARGS, f"hydra.run.dir={run}"]
    env = {k: v for k, v in os.environ.items() if k not in ("HYDRA_FULL_ERROR", "RAY_ADDRESS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.Popen([sys.executable, "-c", GROUP_SIGTERM_AT_WAIT.format(args=args)],
                            cwd=tmp_path, env=env, start_new_session=True, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=600)  # against a hang only (before: 60 s, then 1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with sqlite3.connect(run / "league.db") as db:
        status = db.execute("SELECT status, error FROM runs").fetchall()
        trained = db.execute("SELECT member, version FROM generations").fetchall()
    assert status == [("interrupted", "Terminated: SIGTERM")], (status, err[-3000:])
    assert proc.returncode == 143, err[-3000:]
    assert err.strip().splitlines()[-1] == (
        f"selfplay-train: terminated (SIGTERM); {run} resumes with: "
        f"{resume_command(run, args)}"), err[-3000:]
    assert [v for _, v in trained] == [1], trained  # generation 1 finished, 2 never began
    assert sorted(p.name for p in (run / "checkpoints").glob("ckpt_*.pt"))
    left = _ray_servers_of(proc.pid)
    deadline = time.monotonic() + 60  # the kernel ends them with the driver (PDEATHSIG)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _ray_servers_of(proc.pid)
    assert not left, left


def test_sigterm_while_ray_init_starts_the_instance_meets_the_clis_handler(tmp_path):
    """``ray.init`` replaces the SIGTERM handler before it starts anything: a SIGTERM then
    raised ``SystemExit(15)`` (recorded ``failed``), not the CLI's ``Terminated``
    (``interrupted``, exit 143, the resume line)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    res = subprocess.run([sys.executable, "-c", SIGTERM_IN_RAY_INIT], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.stdout.strip() == "Terminated SIGTERM", (res.stdout, res.stderr[-3000:])
