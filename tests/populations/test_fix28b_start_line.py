"""``selfplay-train``'s 'experiment <name> in <run>' line is printed once the run has started
(its start checks passed): a command refused before that (a folder holding another run's
record, a resume with other settings) printed it before its refusal, and a user read it as a
run that had started."""

import os
import shutil
import sys

import pytest

from tests import subprocs
from tests.subprocs import Ahead

ARGS = ["game=rps", "frames=64", "num_envs=2", "eval_episodes=2", "progress=false"]


def _job(args, cwd):
    """``selfplay-train args`` in ``cwd``: :func:`subprocess.run`'s arguments."""
    return {"args": [sys.executable, "-m", "populations.cli", *args], "cwd": cwd,
            "env": {**os.environ, "HYDRA_FULL_ERROR": "0"}}


REFUSED = [
    (("seed=9",), "already holds a run"),  # a new run into a folder holding another run
    (("seed=3", "resume=true"), "cannot continue with other settings"),
]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("runs")
    run = cwd / "r1"
    res = subprocs.run(**_job([*ARGS, "seed=0", f"hydra.run.dir={run}"], cwd),
                        capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return cwd, run, res


@pytest.fixture(scope="module")
def refused(finished):
    """The refused commands below, each into its own copy of the finished run (independent):
    started ahead, two at a time; ``refused(extra)`` -> its finished command."""
    cwd, run, _ = finished
    jobs = {}
    for i, (extra, _) in enumerate(REFUSED):
        copy = cwd / f"refused{i}"
        shutil.copytree(run, copy)
        jobs[extra] = _job([*ARGS, *extra, f"hydra.run.dir={copy}"], cwd)
    ahead = Ahead(jobs)
    yield ahead.result
    ahead.close()


def test_a_run_that_starts_says_so(finished):
    _, run, res = finished
    out = res.stdout + res.stderr
    assert f"experiment default in {run}" in out, out


@pytest.mark.parametrize("extra, said", REFUSED)
def test_a_refused_command_does_not_say_its_experiment_started(refused, extra, said):
    res = refused(extra)
    assert res.returncode == 2 and said in res.stderr, res.stderr
    out = res.stdout + res.stderr
    assert "experiment default in" not in out, out
