"""An integer setting typed in scientific notation (``frames=1e4``: Hydra and YAML read a
float) was refused in OmegaConf's words, naming a value the user did not type (``Value
'10000.0' of type 'float' could not be converted to Integer``), and with no word of what to
write. It is refused as typed, with the integer to write (not rounded silently: README says
write the integer); other bad values keep their messages."""

from __future__ import annotations

import pytest

from populations.command_line import CLIError
from populations.config_checks import check_run_values
from populations.train_overrides import check_command_line

CASES = [
    ("frames=1e4", "bad config: frames=1e4; expected an integer >= 1 (write 10000)"),
    ("num_envs=3.2e1", "bad config: num_envs=3.2e1; expected an integer >= 1 (write 32)"),
    ("population.frames_per_generation=2e4",
     "bad config: population.frames_per_generation=2e4; expected an integer (write 20000)"),
    ("mappo.rollout_steps=1e2", "bad config: mappo.rollout_steps=1e2; expected an integer "
                                "(write 100)"),
    ("frames=2.5", "bad config: frames=2.5; expected an integer >= 1"),
    ("frames=abc", "bad config: frames='abc'; expected an integer >= 1"),  # as frames=-5
]


@pytest.mark.parametrize(("override", "message"), CASES)
def test_a_whole_float_names_the_integer_to_write(override, message):
    with pytest.raises(CLIError) as err:
        check_command_line([override])
    assert str(err.value) == message


def test_a_swept_whole_float_names_its_value_and_the_integer():
    with pytest.raises(CLIError, match=r"^bad config: frames=1e4; expected an integer >= 1 "
                                       r"\(write 10000\)$"):
        check_command_line(["-m", "frames=1e4,2e4"])


def test_the_python_api_says_it_too():
    with pytest.raises(ValueError, match=r"^frames=20000.0; expected an integer >= 1 "
                                         r"\(write 20000\)$"):
        check_run_values({"frames": 2e4})
    with pytest.raises(ValueError, match=r"\(write 1000\)$"):
        check_run_values({"seed": 1e3})
