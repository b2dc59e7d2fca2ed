"""``llm.grpo.lr_decay_iterations`` had no upper bound (``10**20`` was taken, where
``llm.iterations`` is bounded at 10**6): it is bounded as ``llm.iterations``, refused in one
line naming the value and the range, on the command line before the run folder and in
Python."""

from __future__ import annotations

import pytest

from llm_agents.settings import MAX_ITERATIONS, GRPOConfig
from populations.command_line import CLIError
from populations.train_overrides import check_command_line

RANGE = "expected an integer in [0, 1000000] (10**6 GRPO iterations, as llm.iterations)"


@pytest.mark.parametrize(("value", "typed"), [
    (str(10**20), str(10**20)), ("1e20", "1e20"), (str(MAX_ITERATIONS + 1), "1000001")])
def test_the_command_line_names_the_value_and_the_range(value, typed):
    with pytest.raises(CLIError) as err:
        check_command_line(["experiment=kuhn_llm_selfplay",
                            f"llm.grpo.lr_decay_iterations={value}"])
    assert str(err.value) == f"bad config: llm.grpo.lr_decay_iterations={typed}; {RANGE}"


def test_python_callers_get_the_same_bound():
    with pytest.raises(ValueError) as err:
        GRPOConfig(lr_decay_iterations=MAX_ITERATIONS + 1)
    assert str(err.value) == f"lr_decay_iterations=1000001; {RANGE}"


def test_zero_negative_and_the_bound_itself():
    GRPOConfig(lr_decay_iterations=0)  # a constant lr
    GRPOConfig(lr_decay_iterations=MAX_ITERATIONS)
    with pytest.raises(ValueError, match=r"lr_decay_iterations=-1; expected an integer >= 0$"):
        GRPOConfig(lr_decay_iterations=-1)
