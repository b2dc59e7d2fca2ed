"""selfplay-train's PSRO start lines: the 'PSRO on <game>: oracle=...' line (what ``auto``
decided, ``populations.psro_run.resolve_auto``) was logged as the settings were resolved,
before any check of the folder: a refused command printed it before its refusal, as if the
run had started, and a started one printed it before its 'experiment <name> in <run>' line.
It is said once the run starts, after that line; a refused command prints its refusal."""

import os
import shutil
import sys

import pytest

from tests import subprocs

ARGS = ["experiment=kuhn_psro", "population.iterations=2", "eval_episodes=2", "progress=false"]


def _cli(args, cwd):
    return subprocs.run([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "HYDRA_FULL_ERROR": "0"})


def _lines(text, *starts):
    """The messages of ``text``'s log lines (after Hydra's ``[time][logger][level] - ``) and
    its other lines, those that start with one of ``starts``."""
    out = []
    for line in text.splitlines():
        message = line.split("] - ", 1)[1] if line.startswith("[") and "] - " in line else line
        if message.startswith(starts):
            out.append(message)
    return out


@pytest.fixture(scope="module")
def psro_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("psro")
    res = _cli([*ARGS, f"hydra.run.dir={cwd / 'run'}"], cwd)
    assert res.returncode == 0, res.stderr
    return cwd, cwd / "run", res.stderr + res.stdout


def test_a_started_psro_run_says_where_it_runs_then_what_auto_decided(psro_run):
    cwd, run, output = psro_run
    assert _lines(output, "experiment ", "PSRO on ") == [
        f"experiment kuhn_psro in {run}",
        "PSRO on openspiel/kuhn_poker: oracle=exact, payoffs=exact, "
        "meta_solver=least_exploitable"]


def test_a_refused_psro_resume_prints_its_refusal_alone(psro_run):
    cwd, finished, _ = psro_run
    run = cwd / "damaged"
    shutil.copytree(finished, run)
    (snap,) = (run / "snapshots" / "psro-player_0-1").glob("*.pt")
    snap.write_bytes(b"not a snapshot")  # damaged after the run: run_psro's own check
    res = _cli([*ARGS, "population.iterations=3", "resume=true", f"hydra.run.dir={run}"], cwd)
    assert res.returncode == 2, res.stderr
    output = res.stderr + res.stdout
    assert _lines(output, "experiment ", "PSRO") == []
    (refusal,) = _lines(output, "selfplay-train: ")
    assert "is damaged or was replaced" in refusal


def test_a_refused_call_of_the_python_api_leaves_no_start_line_to_a_later_one(tmp_path, caplog):
    """run_experiment, refused (a resume of a folder that does not exist), then started in
    that folder in the same process: the refused call's line is not said for the later one."""
    import logging

    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from populations.experiment import run_experiment
    from populations.run_folder import RunFolderError

    def cfg(*extra):
        with initialize_config_module(config_module="configs", version_base=None):
            return OmegaConf.to_object(compose(config_name="config", overrides=[
                *ARGS, "population.iterations=1", "logger=none", *extra]))

    caplog.set_level(logging.INFO)
    with pytest.raises(RunFolderError, match="does not exist"):
        run_experiment(cfg("resume=true"), tmp_path / "run")
    assert not [r for r in caplog.records if r.getMessage().startswith("PSRO on")]
    run_experiment(cfg(), tmp_path / "run")
    assert len([r for r in caplog.records if r.getMessage().startswith("PSRO on")]) == 1
