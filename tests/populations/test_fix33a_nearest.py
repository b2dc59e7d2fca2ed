"""An unknown key spelt as an abbreviation's long form gets a ``nearest:`` suggestion:
``vdn.epsilon=-1`` listed every vdn key (difflib finds eps_start too far from epsilon),
while ``maddpg.tua`` suggested tau."""

from __future__ import annotations

import pytest

from populations.command_line import CLIError
from populations.config_checks import nearest_keys
from populations.train_overrides import check_command_line


def test_a_long_form_of_an_abbreviated_key_gets_its_keys():
    keys = ["gamma", "eps_start", "eps_end", "eps_decay_frames", "learning_starts", "lr"]
    assert nearest_keys("epsilon", keys, "vdn") == \
        "nearest: vdn.eps_start, vdn.eps_end, vdn.eps_decay_frames"
    assert nearest_keys("learning", keys, "vdn") == "nearest: vdn.learning_starts"
    assert nearest_keys("zzz", keys, "vdn").startswith("keys of vdn: gamma, eps_start")
    assert nearest_keys("ep", keys, "vdn").startswith("keys of vdn:")  # too short to tell


def test_the_command_line_suggests_them():
    with pytest.raises(CLIError) as err:
        check_command_line(["algo=vdn", "vdn.epsilon=-1"])
    assert str(err.value).endswith("nearest: vdn.eps_start, vdn.eps_end, vdn.eps_decay_frames")
