"""The hint after Hydra's grammar error spells a value Hydra accepts (walk27a item 3): for
``hydra.run.dir=/a/0_frames=1600,num_envs=2,seed=0`` it suggested
``'hydra.run.dir="/a/0_frames=1600","num_envs=2","seed=0"'``, a sweep Hydra refuses outside
``-m`` (Ambiguous value). Outside a sweep, and for a folder always, the whole value is quoted."""

import os
import shlex
import sys
from pathlib import Path

import pytest

from tests import subprocs


def _cli(args, cwd):
    return subprocs.run([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "HYDRA_FULL_ERROR": "0"})


def _parsed(override):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    (parsed,) = OverridesParser.create().parse_overrides([override])
    return parsed


@pytest.mark.parametrize("typed, multirun", [
    ("hydra.run.dir=/a/0_frames=1600,num_envs=2,seed=0", False),
    ("hydra.run.dir=/a/0_frames=1600,num_envs=2,seed=0", True),  # a folder: one value in -m
    ("hydra.sweep.dir=/a/b=1,c", True),
    ("game.name=openspiel/goofspiel(num_cards=4),openspiel/kuhn_poker", False),
])
def test_the_quoting_hint_spells_one_value_hydra_accepts(typed, multirun):
    from populations.cli_common import quoting_hint

    hint = quoting_hint(typed, multirun=multirun)
    (fix,) = shlex.split(hint.rsplit("needs quotes: ", 1)[1].rstrip(")"))
    parsed = _parsed(fix)
    # not a sweep (outside -m Hydra refuses one as "Ambiguous value"), the value as typed
    assert not parsed.is_sweep_override() and parsed.value() == typed.partition("=")[2]


def test_selfplay_train_suggests_a_folder_hydra_then_uses(tmp_path):
    folder = tmp_path / "x" / "0_frames=1600,num_envs=2,seed=0"
    res = _cli(["seed=7", f"hydra.run.dir={folder}"], tmp_path)
    assert res.returncode == 2
    (fix,) = shlex.split(res.stderr.strip().rsplit("needs quotes: ", 1)[1].rstrip(")"))
    shown = _cli(["seed=7", fix, "--cfg", "hydra", "--package", "hydra.run"], tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"dir: {folder}" in shown.stdout, shown.stdout
    assert not Path(folder).exists()
