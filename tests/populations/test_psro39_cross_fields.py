"""A refusal comparing two fields of one section names both by their command-line path
(cfg38 M1: ``vdn.buffer_size=10 < batch_size=128`` named the second field without its
section), and VDN/QMIX refuse an ε that would grow (walk38c L6: ``vdn.eps_start=0.1
vdn.eps_end=0.5`` ran, ε rising from 0.1 to 0.5, with no word)."""

import pytest
from omegaconf import OmegaConf

from marl.configs import ValueDecompConfig
from populations.command_line import CLIError
from populations.config_paths import at_path
from populations.experiment import ExperimentConfig
from populations.train_overrides import to_experiment


def _refusal(**overrides) -> str:
    cfg = OmegaConf.structured(ExperimentConfig)
    for key, value in overrides.items():
        OmegaConf.update(cfg, key, value, merge=True)
    with pytest.raises(CLIError) as err:
        to_experiment(cfg)
    return str(err.value)


def test_both_fields_of_a_comparison_carry_the_section():
    line = _refusal(**{"vdn.buffer_size": 10})
    assert line.startswith("bad config: vdn.buffer_size=10 < vdn.batch_size=128: the learner "
                           "would never update"), line
    assert "\n" not in line


def test_at_path_prefixes_only_fields_of_the_section():
    message = "ValueDecompConfig.buffer_size=10 < batch_size=128: expected buffer_size >= x"
    assert at_path(message, "qmix", ValueDecompConfig) == (
        "qmix.buffer_size=10 < qmix.batch_size=128: expected buffer_size >= x")
    other = "ValueDecompConfig.buffer_size=10 < width=3: no"  # width: not a field of it
    assert at_path(other, "qmix", ValueDecompConfig) == "qmix.buffer_size=10 < width=3: no"


@pytest.mark.parametrize("algo", ["vdn", "qmix"])
def test_a_growing_epsilon_is_refused_naming_both_values(algo):
    line = _refusal(**{f"{algo}.eps_start": 0.1, f"{algo}.eps_end": 0.5})
    assert line.startswith(f"bad config: {algo}.eps_start=0.1 < {algo}.eps_end=0.5: "), line
    assert "expected eps_start >= eps_end" in line and "\n" not in line


def test_a_constant_or_decaying_epsilon_passes():
    ValueDecompConfig(eps_start=0.3, eps_end=0.3)
    ValueDecompConfig(eps_start=1.0, eps_end=0.0)
    with pytest.raises(ValueError, match=r"^ValueDecompConfig.eps_start=0.0 < eps_end=1.0: "):
        ValueDecompConfig(eps_start=0.0, eps_end=1.0)
