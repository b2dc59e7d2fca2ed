"""A preset's game is a ``game`` group option, so ``game=`` on the command line replaces it
(walk40b L4: ``experiment=psro_maddpg_oracle game=vmas_tag`` kept the preset's own
``game.name: openspiel/matrix_brps`` with vmas_tag's arguments and was refused with
``bad parameter for openspiel/matrix_brps: 'num_adversaries' unknown``)."""

import sys
from pathlib import Path

import yaml

from tests import subprocs

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_no_preset_names_its_game_outside_the_game_group():
    for preset in sorted((CONFIGS / "experiment").glob("*.yaml")):
        body = yaml.safe_load(preset.read_text())
        assert "game" not in body, f"{preset.name} sets game: {body['game']}"


def test_game_on_the_command_line_replaces_the_presets(tmp_path):
    out = subprocs.run([sys.executable, "-m", "populations.cli", "experiment=psro_maddpg_oracle",
                        "game=vmas_tag", "--cfg", "job"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    game = yaml.safe_load(out.stdout)["game"]
    assert game["name"] == "vmas/simple_tag"
    plain = subprocs.run([sys.executable, "-m", "populations.cli",
                          "experiment=psro_maddpg_oracle", "--cfg", "job"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert yaml.safe_load(plain.stdout)["game"] == {"name": "openspiel/matrix_brps",
                                                    "kwargs": {}}
