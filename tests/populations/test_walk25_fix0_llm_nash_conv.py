"""LLM teams in generate mode with ``llm.grpo.action.policy_samples=0`` have no action
probabilities to score, so a league's exact NashConv (``population.nash_conv=true``) cannot
run: refused by the config check, in the action mode's own line, before the run folder and
any model. Before: the first snapshot's NashConv refused it, after the models were built
and generation 0 trained (~20 s to a minute in, with the run's log lines before it)."""

from __future__ import annotations

import dataclasses

import pytest

from llm_agents.settings import ActionConfig, GRPOConfig, LLMConfig
from tests.populations.test_exact_info_state_guarded import _one_line_exit

LINE = ("selfplay-train: action probabilities in generate mode are not exact and "
        "llm.grpo.action.policy_samples=0 asks for no estimate; set "
        "llm.grpo.action.policy_samples > 0 (generations per information state) for a sampled "
        "estimate, llm.grpo.action.mode=score for exact ones, or population.nash_conv=false "
        "to skip NashConv")


def test_refused_at_the_config_check(tmp_path, monkeypatch, capfd):
    """End to end: exit 2, the one line, no run folder."""
    line = _one_line_exit(["experiment=kuhn_llm_selfplay", "llm.grpo.action.mode=generate",
                           "llm.grpo.action.policy_samples=0", "logger=none", "progress=false",
                           f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, tmp_path, capfd)
    assert line == LINE
    assert not (tmp_path / "run").exists()


def _experiment(overrides):
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=overrides))


@pytest.mark.parametrize("base", [["experiment=kuhn_llm_selfplay"],
                                  ["experiment=mixed_league"]])
def test_check_experiment_refuses_it_before_any_model(base):
    """The config check (``check_experiment``: no model, no folder), for the LLM league and
    for an LLM member beside MAPPO."""
    from populations.experiment import check_experiment

    exp = _experiment([*base, "llm.grpo.action.mode=generate",
                       "llm.grpo.action.policy_samples=0"])
    with pytest.raises(ValueError, match="policy_samples=0 asks for no estimate"):
        check_experiment(exp)
    check_experiment(_experiment([*base, "llm.grpo.action.mode=generate",
                                  "llm.grpo.action.policy_samples=2"]))


def _llm(mode: str, samples: int) -> LLMConfig:
    return dataclasses.replace(LLMConfig(), grpo=dataclasses.replace(
        GRPOConfig(), action=ActionConfig(mode=mode, policy_samples=samples)))


@pytest.mark.parametrize("mode, samples", [("generate", 4), ("score", 0), ("score", 4)])
def test_what_can_be_scored_passes(mode, samples):
    _llm(mode, samples).check_nash_conv()


def test_generate_without_samples_is_refused():
    with pytest.raises(ValueError, match="policy_samples=0 asks for no estimate"):
        _llm("generate", 0).check_nash_conv()
