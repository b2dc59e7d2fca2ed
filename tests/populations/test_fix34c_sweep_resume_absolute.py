"""A sweep's resume command names its folder absolute, as a single run's does (walk 34b,
item 3): ``hydra.sweep.dir=sw/int2`` as typed, pasted from another folder, started a new
sweep there instead of resuming this one. Relative ``--config-dir`` folders go absolute too
(``populations.command_line.absolute_config_dirs``, as a single run's resume command)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from populations.sweeps import sweep_resume_command


@pytest.fixture(autouse=True)
def no_hydra_run(monkeypatch):
    """No Hydra run in this process: an earlier test's in-process ``selfplay-train`` leaves
    Hydra's config set, and its ``runtime.cwd`` would be the working folder read here."""
    from hydra.core.hydra_config import HydraConfig

    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)


def test_a_sweep_resume_command_names_the_sweep_folder_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["--config-dir", "cfg", "-m", "seed=0,1", "hydra.sweep.dir=sw/int2"]
    words = shlex.split(sweep_resume_command(Path("sw/int2"), argv))
    assert words[-1] == f"hydra.sweep.dir={tmp_path / 'sw' / 'int2'}", words  # before: sw/int2
    assert words[:5] == ["selfplay-train", "-m", "--config-dir", str(tmp_path / "cfg"),
                         "seed=0,1"], words
    assert words[5] == "resume=true"


def test_an_absolute_sweep_folder_is_kept_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "elsewhere" / "sw"
    words = shlex.split(sweep_resume_command(sweep, ["-m", "seed=0,1"]))
    assert words == ["selfplay-train", "-m", "seed=0,1", "resume=true",
                     f"hydra.sweep.dir={sweep}"]
