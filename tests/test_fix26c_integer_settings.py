"""Every integer setting of the configs a user builds in Python refuses 2.5, 2.0 and True in
one line naming it (fix26c). ``check_number(..., integer=True)`` checked the range only, and a
bool is a ``numbers.Real`` (True == 1): ``MAPPOConfig(epochs=2.5)`` was taken and failed later
(or ran as 1), as were the counts other configs checked by hand (``value < 1``). The fields
come from the dataclasses' own ``int`` annotations, so a new integer setting is covered.
"""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest

from llm_agents.ray_rollouts import RolloutWorkersConfig
from llm_agents.settings import (
    ActionConfig,
    GRPOConfig,
    LLMConfig,
    LoRAConfig,
    SamplingConfig,
    TinyModelConfig,
)
from marl.configs import MADDPGConfig, MAPPOConfig, NetConfig, ValueDecompConfig, check_number
from populations.approx_exploit import ApproxConfig
from populations.experiment import ExperimentConfig
from populations.experiment_config import ExploitEvery, PopulationConfig, RunnerConfig
from populations.psro_config import PSROConfig

CONFIGS = (NetConfig, MAPPOConfig, ValueDecompConfig, MADDPGConfig, SamplingConfig,
           ActionConfig, GRPOConfig, TinyModelConfig, LoRAConfig, LLMConfig,
           RolloutWorkersConfig, PopulationConfig, RunnerConfig, ExploitEvery, PSROConfig,
           ApproxConfig, ExperimentConfig)
NOT_COUNTS = {
    "seed",  # a run hands its learners their seeds (ExperimentConfig.seed is checked)
    "LoRAConfig.alpha",  # a scale (alpha / r): any number > 0
}

GIVEN = {ExploitEvery: {"every": 1}}  # its budget is checked when it is used


def _integer_fields() -> list[tuple[type, str]]:
    out = []
    for cls in CONFIGS:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.name in NOT_COUNTS or f"{cls.__name__}.{f.name}" in NOT_COUNTS:
                continue
            if hints[f.name] in (int, int | str, int | None):
                out.append((cls, f.name))
    return out


FIELDS = _integer_fields()


def test_the_fields_are_found():
    # the derivation reads annotations: a typo there would test nothing
    assert len(FIELDS) >= 40, FIELDS
    assert (MAPPOConfig, "epochs") in FIELDS and (PopulationConfig, "generations") in FIELDS


@pytest.mark.parametrize("bad", [2.5, 2.0, True], ids=["2.5", "2.0", "True"])
@pytest.mark.parametrize(("cls", "name"), FIELDS,
                         ids=[f"{c.__name__}.{n}" for c, n in FIELDS])
def test_an_integer_setting_refuses_a_non_integer(cls, name, bad):
    # before: MAPPOConfig(epochs=2.5), LLMConfig(iterations=True), RunnerConfig(workers=2.5),
    # PopulationConfig(generations=True) ... were all taken
    with pytest.raises(ValueError) as err:
        cls(**{**GIVEN.get(cls, {}), name: bad})
    text = str(err.value)  # ApproxConfig's: "frames must be an integer >= 1, got 2.5"
    assert "\n" not in text and name in text and repr(bad) in text, text


@pytest.mark.parametrize(("cls", "name"), FIELDS,
                         ids=[f"{c.__name__}.{n}" for c, n in FIELDS])
def test_an_integer_setting_takes_its_default_again(cls, name):
    # the check refuses what is not an integer, not the integers a run uses
    default = getattr(cls(), name)
    assert getattr(cls(**{**GIVEN.get(cls, {}), name: default}), name) == default


def test_the_message_is_as_before():
    with pytest.raises(ValueError, match=r"^epochs=2\.5; expected an integer in \[1, 10000\]"):
        MAPPOConfig(epochs=2.5)
    with pytest.raises(ValueError, match=r"^workers=True; expected an integer >= 1$"):
        RunnerConfig(workers=True)
    with pytest.raises(ValueError, match=r"^hidden=\[64, 2\.5\]; expected one or more widths"):
        NetConfig(hidden=(64, 2.5))
    with pytest.raises(ValueError, match=r"^frames=2\.5; expected an integer >= 1$"):
        ExperimentConfig(frames=2.5)


def test_check_number():
    check_number("n", 3, at_least=1, integer=True)
    check_number("n", np.int64(3), at_least=1, integer=True)  # numpy's integers are integers
    check_number("x", 2.5, at_least=1)  # a number where a number goes
    for bad in (2.5, 2.0, True, np.float64(3.0), "3"):
        with pytest.raises(ValueError) as err:
            check_number("n", bad, at_least=1, integer=True)
        assert str(err.value) == f"n={bad!r}; expected an integer >= 1"
    with pytest.raises(ValueError, match=r"^x=True; expected a finite number > 0$"):
        check_number("x", True, above=0.0)  # True is not a learning rate either
