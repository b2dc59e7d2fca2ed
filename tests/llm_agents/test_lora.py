"""Real-model settings on a tiny GPT-2 built in code: LoRA adapters train with the base
frozen and round-trip through snapshots; gradient checkpointing really recomputes and gives
the same gradients; the ``llm=hf`` preset carries real-model settings, not the tiny model's."""

import dataclasses

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
import populations.cli  # noqa: F401  (registers the schema)
from llm_agents.actions import ActionConfig
from llm_agents.backends import SamplingConfig
from llm_agents.build import LLMConfig, build_trainer
from llm_agents.prompts import REAL_MODEL_PROMPT
from llm_agents.tiny import TinyModelConfig
from llm_agents.trainer import GRPOConfig
from marl.core import PolicyLoadError, load_policy
from tests.llm_agents.conftest import COMPACT, KUHN

pytest.importorskip("peft")
from llm_agents.lora import LoRAConfig, is_lora  # noqa: E402

TINY = TinyModelConfig(n_layer=2, n_embd=32, n_head=2)


def _cfg(mode="score", **kw):
    grpo = GRPOConfig(group_size=4, groups_per_step=4, lr=1e-2, adv_norm="group_role",
                      action=ActionConfig(mode=mode, sampling=SamplingConfig(max_new_tokens=3)),
                      prompt=COMPACT, device="cpu")
    return LLMConfig(tiny=TINY, corpus_episodes=20, grpo=grpo, **kw)


def test_lora_trains_adapters_only_and_round_trips_through_snapshots(tmp_path):
    trainer = build_trainer(_cfg(lora=LoRAConfig(r=4)), [KUHN])
    model = trainer.team.models["shared"].model
    assert is_lora(model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    assert all((".lora_" in n) == p.requires_grad for n, p in model.named_parameters())
    for _ in range(2):
        trainer.step()
    changed = {n for n, p in model.named_parameters() if not torch.equal(before[n], p)}
    assert changed and all(".lora_" in n for n in changed)  # the base stayed frozen
    policy = trainer.policy()
    loaded = load_policy(policy.save(tmp_path / "lora.pt"))
    assert is_lora(loaded.team.models["shared"].model)
    vg = games.VectorGame(KUHN, 8, seed=3, with_text=True)
    vs = vg.reset()
    for _ in range(2):  # the first two decisions of 8 deals
        acts = {}
        for agent in vs.acting:
            if vs.acting[agent].any():
                np.testing.assert_array_equal(policy.action_probs(agent, vs),
                                              loaded.action_probs(agent, vs))
            acts[agent] = policy.act(agent, vs)
        vs = vg.step(acts)


def test_snapshot_lora_settings_are_checked(tmp_path):
    trainer = build_trainer(_cfg(lora=LoRAConfig(r=2)), [KUHN])
    payload = trainer.policy().payload()
    from llm_agents.policy import check_payload

    for bad, match in [({"r": 10**6}, "out of range"), ({"target_modules": ["../x"]},
                       "target_modules"), ({"bias": "all"}, "lora settings are not")]:
        broken = {**payload, "models": {"shared": {**payload["models"]["shared"]}}}
        broken["models"]["shared"]["lora"] = {**payload["models"]["shared"]["lora"], **bad}
        with pytest.raises(PolicyLoadError, match=match):
            check_payload(broken)


@pytest.mark.parametrize("mode", ["score", "generate"])
def test_gradient_checkpointing_recomputes_and_keeps_the_gradients(mode):
    plain = build_trainer(_cfg(mode), [KUHN])
    ckpt = build_trainer(_cfg(mode, gradient_checkpointing=True), [KUHN])
    turns = plain.collect().turns
    grads, calls = [], []
    for trainer in (plain, ckpt):
        model = trainer.team.models["shared"].model
        block = model.transformer.h[0].ln_1  # the first op inside the checkpointed forward
        n = [0]
        hook = block.register_forward_pre_hook(lambda *a, n=n: n.__setitem__(0, n[0] + 1))
        model.zero_grad()
        units = trainer.mode.unit_logprobs(model, turns, trainer.team.models["shared"].pad_id,
                                           torch.device("cpu"))
        forward = n[0]
        (units.logp * units.mask).sum().backward()
        hook.remove()
        calls.append(n[0] - forward)  # calls in the backward pass
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()
                                if p.grad is not None]))
        assert not model.transformer.h[0].training  # modes are restored
    assert calls == [0, 1]  # the checkpointed layer ran again in the backward pass
    torch.testing.assert_close(grads[1], grads[0], atol=1e-5, rtol=1e-4)


def _compose(overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=overrides))


def test_real_model_preset_is_not_the_tiny_models(tmp_path):
    (tmp_path / "config.json").write_text("{}")  # a model folder's path (LLMConfig checks it)
    (tmp_path / "tokenizer.json").write_text("{}")  # with its tokenizer (a file listing)
    (tmp_path / "pytorch_model.bin").write_bytes(b"")  # and its weights (a file listing)
    hf = _compose(["experiment=kuhn_llm_selfplay", "llm=hf", f"llm.model={tmp_path}"]).llm
    assert 1e-6 <= hf.grpo.lr <= 1e-5 and hf.grpo.ent_coef == 0.0
    assert hf.gradient_checkpointing and hf.dtype == "auto"
    assert hf.grpo.action.mode == "generate" and "</action>" in hf.grpo.action.sampling.stop
    assert 128 <= hf.grpo.action.sampling.max_new_tokens <= 512
    prompt = dataclasses.asdict(hf.grpo.prompt)
    assert prompt == dataclasses.asdict(REAL_MODEL_PROMPT)
    lora = _compose(["experiment=kuhn_llm_selfplay", "llm=hf", f"llm.model={tmp_path}",
                     "llm.lora.r=16"])
    assert lora.llm.lora.r == 16
    tiny = _compose(["experiment=kuhn_llm_selfplay"]).llm  # the tiny tuning stays the default
    assert tiny.model == "tiny" and tiny.grpo.lr == 6e-4 and tiny.grpo.ent_coef == 0.2


def test_dtype_auto_is_bf16_only_for_lora_on_a_bf16_gpu():
    assert LLMConfig(dtype="auto").torch_dtype("cpu") == torch.float32
    assert LLMConfig(dtype="auto", lora=LoRAConfig(r=8)).torch_dtype("cpu") == torch.float32
    if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        assert LLMConfig(dtype="auto", lora=LoRAConfig(r=8)).torch_dtype("cuda") == \
            torch.bfloat16
        assert LLMConfig(dtype="auto").torch_dtype("cuda") == torch.float32
    assert LLMConfig(dtype="bfloat16").torch_dtype("cpu") == torch.bfloat16
    with pytest.raises(ValueError, match="llm dtype 'fp8' unknown"):
        LLMConfig(dtype="fp8")
    with pytest.raises(ValueError, match="lora r=-1"):
        LoRAConfig(r=-1)


def test_vllm_serves_a_lora_model_merged(tmp_path):
    from transformers import AutoModelForCausalLM

    from llm_agents import build

    cfg = dataclasses.replace(_cfg(lora=LoRAConfig(r=4)), backend="vllm")
    pairs = build._load(cfg, [KUHN], {}, 1)
    model = pairs[0][0]
    with torch.no_grad():
        for n, p in model.named_parameters():
            if ".lora_B" in n:  # B starts at zero: make the adapters matter
                p.add_(0.5 * torch.randn_like(p))
    build._served(cfg, pairs, ["shared"], tmp_path)
    served = AutoModelForCausalLM.from_pretrained(model.name_or_path)  # what vLLM would load
    assert model.name_or_path.startswith(str(tmp_path))
    ids = torch.tensor([[1, 5, 7, 9, 2]])
    with torch.no_grad():
        torch.testing.assert_close(served(ids).logits, model(ids).logits, atol=1e-5, rtol=1e-4)
