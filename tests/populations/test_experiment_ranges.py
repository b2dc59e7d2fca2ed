"""``frames`` below 1 is refused like ``num_envs`` (the walk of a new user's path ran
``selfplay-train frames=-5``: 0 frames trained, a snapshot published, exit 0)."""

import pytest

from populations.experiment import ExperimentConfig


@pytest.mark.parametrize("value", [-5, 0])
def test_frames_below_one_is_refused_in_one_line(value):
    with pytest.raises(ValueError, match=rf"^frames={value}; expected an integer >= 1$"):
        ExperimentConfig(frames=value)
