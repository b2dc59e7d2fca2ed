"""What an LLM-agent researcher's walk (walk28a) found in ``llm_agents``.

* ``llm.grpo.lr=1e99`` (1e39: past float32) passed the start check and died inside Adam with a
  torch traceback; 1e20 trained garbage. The lr is bounded to (0, 1], one line.
* ``invalid_penalty`` / ``kl_coef`` / ``ent_coef`` of 1e99 passed and stopped the run at the
  first update with "non-finite loss ... check the game's rewards": bounded at the start, and
  the non-finite-loss line names the settings that scale the loss.
* ``sampling.temperature`` 1e-30 or 1e99 trained nothing (grad norm 0, entropy 0), without a
  word: bounded to [0.01, 100].
* ``llm.model="~/..."`` passed the start check (it expands ``~``) and the loader gave the path
  unexpanded to Hugging Face: "Repo id must be in the form ...".
* ``group_size=1`` with a group-relative adv_norm trained on raw returns without a word.
* ``on_invalid=end``: episodes ended by invalid output had no success flag, so a batch of
  them dropped ``success_rate`` (0, not unknown).
* LoRA runs printed peft's raw ``fan_in_fan_out`` warning every time.
"""

from __future__ import annotations

import logging
import re
import warnings

import pytest
import torch

from llm_agents.actions import ActionConfig
from llm_agents.records import EpisodeRecord
from llm_agents.rollout import EpisodeJob, RolloutEngine, batch_metrics
from llm_agents.settings import GRPOConfig, LLMConfig, SamplingConfig
from llm_agents.team import Team
from llm_agents.tiny import TinyModelConfig, build_model, save_model_dir
from marl.guards import NonFiniteError
from populations.command_line import CLIError
from populations.train_overrides import check_command_line
from tests.llm_agents.conftest import COMPACT, KUHN, RELAY
from tests.marl.test_guards import nan_kuhn  # noqa: F401 - registers guards/nan_kuhn (a NaN reward)

KUHN_LLM = "experiment=kuhn_llm_selfplay"


def _refused(*overrides: str) -> str:
    with pytest.raises(CLIError) as err:
        check_command_line([KUHN_LLM, *overrides])
    return str(err.value)


# ------------------------------------------------------------------------ start bounds
@pytest.mark.parametrize("value", ["1e99", "1e39", "1e20", "2"])
def test_an_lr_past_1_is_refused_at_the_start(value):
    shown = repr(float(value))
    assert _refused(f"llm.grpo.lr={value}") == (
        f"bad config: llm.grpo.lr={shown}; expected a number in (0, 1] (AdamW moves each "
        "weight by about lr per step)")


@pytest.mark.parametrize("key, value, want", [
    ("action.invalid_penalty", "1e99",
     "expected a number in [-1000000, 1000000] (a reward beside the game's)"),
    ("action.invalid_penalty", "-1e308",
     "expected a number in [-1000000, 1000000] (a reward beside the game's)"),
    ("kl_coef", "1e99",
     "expected a number in [0, 1000] (the policy-gradient term is of order 1)"),
    ("ent_coef", "1e99",
     "expected a number in [0, 1000] (the policy-gradient term is of order 1)"),
    ("action.sampling.temperature", "1e-30",
     "expected a number in [0.01, 100] (below, sampling is argmax, above, uniform: nothing "
     "trains; for argmax decoding set greedy=True"),
    ("action.sampling.temperature", "1e99", "expected a number in [0.01, 100]"),
])
def test_loss_scales_and_temperatures_out_of_range_are_refused_at_the_start(key, value, want):
    shown = repr(float(value))
    line = _refused(f"llm.grpo.{key}={value}")
    assert line.startswith(f"bad config: llm.grpo.{key}={shown}; {want}"), line


def test_the_old_lines_and_sensible_values_stand():
    assert _refused("llm.grpo.lr=0").endswith("llm.grpo.lr=0.0; expected a finite number > 0")
    assert _refused("llm.grpo.action.sampling.temperature=0").startswith(
        "bad config: llm.grpo.action.sampling.temperature=0.0; expected a finite number > 0")
    for temperature in (0.01, 0.3, 1.0, 2.0, 100.0):
        SamplingConfig(temperature=temperature)
    GRPOConfig(lr=1.0, kl_coef=1000.0, ent_coef=0.2,
               action=ActionConfig(invalid_penalty=-1e6, score_temperature=0.5))
    check_command_line([KUHN_LLM, "llm.grpo.lr=1e-5", "llm.grpo.kl_coef=0.1",
                        "llm.grpo.action.invalid_penalty=-3"])


# ------------------------------------------------------------- the non-finite loss line


def test_a_non_finite_loss_names_the_settings_that_scale_it(kuhn_tok):
    from llm_agents.trainer import MultiTurnGRPO

    cfg = GRPOConfig(group_size=2, groups_per_step=2, lr=1e-2, kl_coef=0.5, ent_coef=0.25,
                     action=ActionConfig(mode="score", invalid_penalty=-2.0), prompt=COMPACT,
                     device="cpu")
    trainer = MultiTurnGRPO(Team.shared(build_model(kuhn_tok), kuhn_tok), "guards/nan_kuhn", cfg)
    with pytest.raises(NonFiniteError) as err:
        trainer.step()
    assert str(err.value).endswith(
        "check the game's rewards and their scale, the learning rate and max_grad_norm (here "
        "llm.grpo.lr=0.01, max_grad_norm=1, action.invalid_penalty=-2, kl_coef=0.5, "
        "ent_coef=0.25)"), err.value


# ------------------------------------------------------------------- '~' model folders
def test_a_model_folder_written_with_a_tilde_loads(tmp_path, monkeypatch, kuhn_tok):
    from llm_agents.backends.hf import load_pretrained
    from llm_agents.build import build_team

    monkeypatch.setenv("HOME", str(tmp_path))
    save_model_dir(tmp_path / "models" / "mine", build_model(
        kuhn_tok, TinyModelConfig(n_layer=1, n_embd=16, n_head=2)), kuhn_tok)
    cfg = LLMConfig(model="~/models/mine", grpo=GRPOConfig(action=ActionConfig(mode="score")))
    team = build_team(cfg, [KUHN])  # before: "Repo id must be in the form 'repo_name' ..."
    model = team.models["shared"].model
    assert model.config.n_embd == 16 and model.config.n_layer == 1
    model, tok = load_pretrained("~/models/mine", device="cpu")
    assert model.config.n_embd == 16 and tok.get_vocab() == kuhn_tok.get_vocab()


# ------------------------------------------------------------------- a group of one
@pytest.mark.parametrize("adv_norm, group_size, warned", [
    ("group_role", 1, True), ("joint_group", 1, True), ("group_role", 2, False),
    ("role", 1, False)])
def test_a_group_of_one_with_a_group_relative_norm_is_warned_once(adv_norm, group_size, warned,
                                                                  caplog):
    from llm_agents.build import build_team

    cfg = LLMConfig(corpus_episodes=5, tiny=TinyModelConfig(n_layer=1, n_embd=16, n_head=2),
                    grpo=GRPOConfig(group_size=group_size, adv_norm=adv_norm,
                                    action=ActionConfig(mode="score")))
    with caplog.at_level(logging.WARNING, logger="llm_agents.build"):
        build_team(cfg, [KUHN])
    lines = [r.getMessage() for r in caplog.records if "group_size=1" in r.getMessage()]
    assert lines == ([f"llm.grpo.group_size=1 with adv_norm={adv_norm}: each group holds one "
                      "episode, so its advantages are the raw returns (a group of one has mean "
                      "0, std 1), not group-relative; set llm.grpo.group_size=2 or more for "
                      "GRPO, or llm.grpo.adv_norm=role (or global) for a baseline over the "
                      "whole batch"] if warned else [])


# -------------------------------------------------------------- success with on_invalid=end
def test_episodes_ended_by_invalid_output_count_as_failures(multi_tok):
    """One new token cannot write a relay action (two words): every episode ends at its first
    turn, unplayed. Before: no episode had a success flag and success_rate was absent."""
    action = ActionConfig(mode="generate", on_invalid="end",
                          sampling=SamplingConfig(max_new_tokens=1))
    engine = RolloutEngine(Team.shared(build_model(multi_tok), multi_tok), action, COMPACT)
    batch = engine.run([EpisodeJob("tool/relay", seed=s, game_kwargs=RELAY) for s in range(4)])
    assert all("invalid_end" in e.info for e in batch.episodes)
    assert batch.metrics["charts/success_rate"] == 0.0
    assert batch.metrics["charts/legal_rate"] == 0.0


def test_a_user_games_success_counts_its_forfeits_as_failures():
    """A game of the user's reports success in its info (not a tool task): an episode it ended
    by invalid output counts 0 where the batch shows the game reports success; a game that
    never reports success keeps no success_rate."""
    said = EpisodeRecord("my/game", 0, 0, {"a": 1.0}, 3, info={"is_success": True})
    forfeit = EpisodeRecord("my/game", 1, 0, {"a": -1.0}, 1, info={"invalid_end": "a"})
    other = EpisodeRecord("other", 1, 0, {"a": -1.0}, 1, info={"invalid_end": "a"})
    assert batch_metrics([], [said, forfeit, other], 1.0, 0)["charts/success_rate"] == 0.5
    assert "charts/success_rate" not in batch_metrics([], [other], 1.0, 0)


# ----------------------------------------------------------------------------- LoRA noise
def test_lora_prints_no_peft_warning(kuhn_tok):
    pytest.importorskip("peft")
    from llm_agents.lora import LoRAConfig, apply_lora

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        model = apply_lora(build_model(kuhn_tok), LoRAConfig(r=2))
    assert not [str(w.message) for w in seen if re.search("fan_in_fan_out|peft", str(w.message))]
    assert any(".lora_" in n for n, p in model.named_parameters() if p.requires_grad)
    assert all(not p.requires_grad for n, p in model.named_parameters() if ".lora_" not in n)
    assert isinstance(next(model.parameters()), torch.Tensor)
