"""``selfplay-train``'s 'experiment <name> in <run>' line is printed once the run has started
(its start checks passed): a command refused before that (a folder holding another run's
record, a resume with other settings) printed it before its refusal, and a user read it as a
run that had started."""

import os
import subprocess
import sys

import pytest

ARGS = ["game=rps", "frames=64", "num_envs=2", "eval_episodes=2", "progress=false"]


def _cli(args, cwd):
    return subprocess.run([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HYDRA_FULL_ERROR": "0"})


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("runs")
    run = cwd / "r1"
    res = _cli([*ARGS, "seed=0", f"hydra.run.dir={run}"], cwd)
    assert res.returncode == 0, res.stderr
    return cwd, run, res


def test_a_run_that_starts_says_so(finished):
    _, run, res = finished
    out = res.stdout + res.stderr
    assert f"experiment default in {run}" in out, out


@pytest.mark.parametrize("extra, said", [
    (["seed=9"], "already holds a run"),  # a new run into a folder holding another run
    (["seed=3", "resume=true"], "cannot continue with other settings"),
])
def test_a_refused_command_does_not_say_its_experiment_started(finished, extra, said):
    cwd, run, _ = finished
    res = _cli([*ARGS, *extra, f"hydra.run.dir={run}"], cwd)
    assert res.returncode == 2 and said in res.stderr, res.stderr
    out = res.stdout + res.stderr
    assert "experiment default in" not in out, out
