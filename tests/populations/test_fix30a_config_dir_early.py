"""``selfplay-train`` with a config folder of the user's own (``--config-dir``,
``hydra.searchpath``, ``--config-name``): its early checks were all skipped, as other config
files may provide group options, presets and imports. Bad values were found only after the
schema and torch loaded (~3 s CPU more here), and ``hydra.run.dir=`` (an unset ``$RUN``) was
not refused at all: the run was written into the working folder. The overrides whose meaning
no config file changes (the run's folder, ``imports=``, the schema's top-level values) are now
checked before torch loads, as without a config folder; ``game.name`` and the group options
still wait for the composed config.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

MAIN = """
import sys
from populations.cli import train_main
sys.argv = ["selfplay-train", *{args!r}]
try:
    train_main()
finally:
    print("torch loaded:", "torch" in sys.modules, file=sys.stderr)
"""


def _refused(tmp_path: Path, args: list[str]) -> str:
    conf = tmp_path / "conf"
    (conf / "experiment").mkdir(parents=True)
    (conf / "experiment" / "mine.yaml").write_text("# @package _global_\nseed: 5\n")
    work = tmp_path / "work"
    work.mkdir()
    res = subprocess.run([sys.executable, "-c", MAIN.format(args=args)], cwd=work,
                         capture_output=True, text=True, timeout=300,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})
    assert res.returncode == 2, res.stderr
    assert list(work.iterdir()) == []  # nothing written in the working folder
    lines = res.stderr.strip().splitlines()
    assert lines[-1] == "torch loaded: False", res.stderr
    return lines[-2]


CONFIGS = [["--config-dir", "../conf"], ["hydra.searchpath=[file://../conf]"],
           ["hydra.searchpath=[file://../conf]", "experiment=mine"]]


@pytest.mark.parametrize("configs", CONFIGS)
def test_an_empty_run_folder_is_refused_with_a_config_folder(tmp_path, configs):
    # a tiny run: before, it trained in the working folder
    tiny = ["game.name=openspiel/kuhn_poker", "frames=16", "num_envs=2", "eval_episodes=1",
            "progress=false"]
    assert _refused(tmp_path, [*configs, *tiny, "hydra.run.dir="]) == (
        "selfplay-train: hydra.run.dir is empty (an unset shell variable?), which writes the "
        "run into this folder; give the run's folder")


@pytest.mark.parametrize("configs", CONFIGS)
@pytest.mark.parametrize("value, said", [
    ("num_envs=0", "bad config: num_envs=0; expected an integer >= 1"),
    ("imports=mygames", "imports=mygames must be a list: imports=[mygames]")])
def test_bad_values_are_refused_before_torch_with_a_config_folder(tmp_path, configs, value,
                                                                  said):
    assert _refused(tmp_path, [*configs, value, "hydra.run.dir=run"]) == \
        f"selfplay-train: {said}"


def test_a_game_or_group_option_waits_for_the_composed_config():
    """A config folder's ``imports`` may register the game, and its files provide options."""
    from populations.cli import _check_config_free

    _check_config_free(["--config-dir", "conf", "game.name=nosuch", "algo=mine"])
