"""Walk 21's bad inputs that selfplay-train ran with, refused in one line before any run
folder: sizes far beyond any machine (a 220 GB replay buffer, a 10**14-wide layer,
10**20 epochs), a seed the run's consumers cannot take (torch, SQLite, numpy, PSRO), NaN and
inf in the LLM's settings, an unknown tiny architecture, and integers other than 0/1 given
for true/false settings (OmegaConf read ``progress=2`` as true)."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
from llm_agents.settings import LLMConfig
from populations.command_line import CLIError
from populations.config_checks import check_run_values, group_preset, writable
from populations.experiment import ExperimentConfig
from populations.train_overrides import check_command_line

CONFIGS = Path(__file__).parents[2] / "configs"
HUGE = "100000000000000000000"  # 10**20


def refused(*args: str) -> str:
    with pytest.raises(CLIError) as err:
        check_command_line(list(args))
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize("override, words", [
    ("vdn.buffer_size=5000000000", "vdn.buffer_size=5000000000; expected an integer in "
     "[1, 1000000000] (the replay buffer is allocated up front)"),
    (f"vdn.buffer_size={HUGE}", f"vdn.buffer_size={HUGE}; expected an integer in "
     "[1, 1000000000]"),
    ("maddpg.buffer_size=5000000000", "maddpg.buffer_size=5000000000; expected an integer in "
     "[1, 1000000000]"),
    ("qmix.batch_size=5000000000", "qmix.batch_size=5000000000; expected an integer in "),
    ("mappo.net.hidden=[100000000000000]", "mappo.net.hidden=[100000000000000]; expected one "
     "or more widths from 1 to 65536"),
    ("vdn.hidden=[64,100000000]", "vdn.hidden=[64, 100000000]; expected one or more widths "
     "from 1 to 65536"),
    ("maddpg.hidden=[100000000]", "maddpg.hidden=[100000000]; expected one or more widths"),
    (f"mappo.minibatches={HUGE}", f"mappo.minibatches={HUGE}; expected an integer in "
     "[1, 1000000]"),
    (f"mappo.rollout_steps={HUGE}", f"mappo.rollout_steps={HUGE}; expected an integer in "
     "[1, 1000000] (the rollout buffer is allocated up front)"),
    (f"mappo.epochs={HUGE}", f"mappo.epochs={HUGE}; expected an integer in [1, 10000]"),
    (f"mappo.chunk_len={HUGE}", f"mappo.chunk_len={HUGE}; expected an integer in "),
    (f"qmix.mixing_embed_dim={HUGE}", f"qmix.mixing_embed_dim={HUGE}; expected an integer in "
     "[1, 65536] (a layer's width)"),
    (f"qmix.hypernet_hidden={HUGE}", f"qmix.hypernet_hidden={HUGE}; expected an integer in "
     "[1, 65536]"),
    (f"mappo.net.gnn_hidden={HUGE}", f"mappo.net.gnn_hidden={HUGE}; expected an integer in "
     "[1, 65536]"),
    (f"mappo.net.rnn_hidden={HUGE}", f"mappo.net.rnn_hidden={HUGE}; expected an integer in "
     "[1, 65536]"),
    (f"mappo.net.gnn_heads={HUGE}", f"mappo.net.gnn_heads={HUGE}; expected an integer in "
     "[1, 1024]"),
    (f"mappo.net.gnn_layers={HUGE}", f"mappo.net.gnn_layers={HUGE}; expected an integer in "
     "[1, 1024]"),
    (f"llm.tiny.n_embd={HUGE}", f"llm.tiny.n_embd={HUGE}; expected an integer in [1, 65536]"),
    (f"llm.grpo.epochs={HUGE}", f"llm.grpo.epochs={HUGE}; expected an integer in [1, 10000]"),
])
def test_sizes_beyond_any_machine_are_refused_before_the_run(override, words):
    assert refused("game=kuhn", override).startswith(f"bad config: {words}")


@pytest.mark.parametrize("override", [
    "vdn.buffer_size=1000000000", "mappo.net.hidden=[65536]", "mappo.epochs=10000",
    "mappo.minibatches=1000000", "qmix.mixing_embed_dim=65536", "mappo.net.gnn_heads=1024"])
def test_the_largest_sizes_allowed_pass(override):
    check_command_line(["game=kuhn", override])


@pytest.mark.parametrize("seed", [str(2**63), str(2**63 - 1), str(2**62), "-1", "-5"])
def test_a_seed_outside_what_every_consumer_takes_is_refused(seed):
    # 2**63: torch.manual_seed's overflow after a league's first checkpoint; 2**63 - 1: the
    # league's generation seeds overflowed SQLite; -1: PSRO's numpy generator refused it
    assert refused("game=kuhn", f"seed={seed}") == (
        f"bad config: seed={seed}; expected an integer from 0 to {2**62 - 1} (2**62 - 1, "
        "as selfplay-eval's --seed)")


@pytest.mark.parametrize("seed", [0, 7, 2**62 - 1])
def test_seeds_in_range_pass(seed):
    check_command_line(["game=kuhn", f"seed={seed}"])
    check_run_values({"seed": seed})


def test_the_python_api_refuses_the_seed_too():
    with pytest.raises(ValueError, match=r"seed=9223372036854775808; expected an integer"):
        ExperimentConfig(seed=2**63)


@pytest.mark.parametrize("override", [
    "llm.grpo.action.invalid_penalty=nan", "llm.grpo.action.invalid_penalty=inf",
    "llm.grpo.action.invalid_penalty=-inf", "llm.grpo.advantage.role_ema_init=nan",
    "llm.grpo.advantage.role_ema_init=inf", "llm.grpo.advantage.eps=inf",
    "llm.grpo.action.sampling.temperature=inf", "llm.grpo.action.sampling.temperature=nan",
    "llm.grpo.action.score_temperature=inf", "llm.grpo.action.score_temperature=nan"])
def test_llm_settings_refuse_nan_and_inf(override):
    key, value = override.split("=")
    message = refused("game=kuhn", "algo=llm_grpo", override)
    assert message.startswith(f"bad config: {key}={value}; expected a finite number"), message


def test_llm_max_grad_norm_inf_still_means_no_clipping():
    check_command_line(["game=kuhn", "algo=llm_grpo", "llm.grpo.max_grad_norm=inf"])


@pytest.mark.parametrize("algo", ["llm_grpo", "mappo"])
def test_an_unknown_tiny_architecture_is_refused_with_its_key(algo):
    assert refused("game=kuhn", f"algo={algo}", "llm.tiny.arch=nope") == (
        "bad config: llm.tiny.arch='nope' unknown; choose one of ['gpt2', 'llama']")


def test_a_registered_tiny_architecture_is_taken(monkeypatch):
    from llm_agents import tiny
    from llm_agents.settings import TinyModelConfig

    monkeypatch.setitem(tiny.ARCHITECTURES, "mine", tiny.ARCHITECTURES["gpt2"])
    assert TinyModelConfig(arch="mine").arch == "mine"
    with pytest.raises(ValueError, match=r"arch='nope' unknown; choose one of \['gpt2', "):
        TinyModelConfig(arch="nope")


@pytest.mark.parametrize("override", [
    "progress=2", "resume_override=2", "keep_going=-1", "resume=7", "progress='2'",
    "mappo.value_norm=2", "mappo.net.recurrent=3", "vdn.double_q=2", "maddpg.share_parameters=2",
    "llm.grpo.recompute_old_logprobs=2", "population.nash_conv=2", "mappo.value_norm='5'"])
def test_true_false_settings_refuse_other_integers(override):
    key, value = override.split("=")
    shown = repr(value.strip("'")) if value.startswith("'") else value
    assert refused("game=kuhn", override) == (
        f"bad config: {key}={shown}; expected true or false")


@pytest.mark.parametrize("value", ["true", "false", "True", "False", "1", "0", "'1'", "yes"])
def test_true_false_settings_take_what_they_took(value):
    check_command_line(["game=kuhn", f"progress={value}", f"mappo.value_norm={value}"])


EXPERIMENTS = sorted(p.stem for p in (CONFIGS / "experiment").glob("*.yaml"))


def _compose(overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return compose(config_name="config", overrides=overrides)


@pytest.mark.parametrize("overrides", [[f"experiment={e}"] for e in EXPERIMENTS] + [
    [f"algo={a.stem}", f"encoder={e.stem}"] for a in sorted((CONFIGS / "algo").glob("*.yaml"))
    if a.stem != "llm_grpo" for e in sorted((CONFIGS / "encoder").glob("*.yaml"))] + [
    ["algo=llm_grpo", "llm=tiny"], ["algo=llm_grpo", "llm=tiny_kuhn", "game=kuhn"]])
def test_every_shipped_preset_stays_inside_the_bounds(overrides):
    assert isinstance(OmegaConf.to_object(_compose(overrides)), ExperimentConfig)


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONFIGS / "llm").glob("*.yaml")))
def test_every_llm_preset_stays_inside_the_bounds(name):
    preset = group_preset(CONFIGS, "llm", name).llm
    if not preset.get("model", "tiny"):  # llm=hf / vllm: the user names the model
        preset.model = "some/model"
    node = writable(OmegaConf.structured(LLMConfig))  # frozen dataclasses: read-only nodes
    node.merge_with(preset)
    assert isinstance(OmegaConf.to_object(node), LLMConfig)
