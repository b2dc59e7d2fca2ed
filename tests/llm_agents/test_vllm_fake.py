"""The vLLM backend at the vLLM API boundary, on CPU: a fake ``vllm`` module whose ``LLM``
records every call (sampling params and their seeds, prompts, ``collective_rpc``) and answers
with vLLM-shaped outputs computed by a tiny transformers model loaded from the served
directory -- its own copy of the weights, as a real engine in another process has.

The fake behaves like vLLM where the backend's correctness depends on it: one seed per
``SamplingParams`` drives that request's sampling (equal seeds, equal samples); sampled-token
log-probabilities are raw unless ``logprobs_mode="processed_logprobs"``; ``collective_rpc``
takes a method *name* (a multi-process engine cannot pickle a function by default), copies
its arguments through pickle and calls the method on a worker that has the
``worker_extension_cls`` mixed in; there is no in-process ``driver_worker`` to reach into.
"""

import importlib
import pickle
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from llm_agents.backends import SamplingConfig, TransformersBackend, VLLMBackend, make_backend
from llm_agents.logprobs import pad_sequences, token_logprobs
from llm_agents.tiny import TinyModelConfig, build_model, save_model_dir

PROMPTS = ["player_0\n1 : Pass Bet\n", "player_1\n2pb : Pass Bet\n", "player_1\n0b\n"]


class FakeSamplingParams:
    DEFAULTS = dict(n=1, max_tokens=16, temperature=1.0, top_p=1.0, stop=(),
                    include_stop_str_in_output=False, ignore_eos=False, logprobs=None,
                    prompt_logprobs=None, seed=None)

    def __init__(self, **kw):
        unknown = set(kw) - set(self.DEFAULTS)
        assert not unknown, f"SamplingParams has no {unknown}"
        for k, v in {**self.DEFAULTS, **kw}.items():
            setattr(self, k, v)


class FakeVllmModel:
    """``model_runner.model``: vLLM models take ``load_weights(weights=[(name, tensor)])``."""

    def __init__(self, hf):
        self.hf = hf

    def load_weights(self, weights):
        params = self.hf.state_dict()
        for name, tensor in weights:
            assert name in params, f"unexpected weight {name}"
            assert tensor.device.type == "cpu"
            params[name].copy_(tensor)


class FakeLLM:
    def __init__(self, model, seed=0, gpu_memory_utilization=0.9, worker_extension_cls=None,
                 logprobs_mode="raw_logprobs", enable_prefix_caching=False, **kw):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.kwargs = dict(kw, logprobs_mode=logprobs_mode, seed=seed,
                           enable_prefix_caching=enable_prefix_caching)
        self.hf = AutoModelForCausalLM.from_pretrained(model).eval()
        self.tok = AutoTokenizer.from_pretrained(model)
        self.global_gen = torch.Generator().manual_seed(seed)
        bases = (FakeWorkerBase,)
        if worker_extension_cls:  # vLLM mixes the extension into its worker class
            mod, _, cls = worker_extension_cls.rpartition(".")
            bases = (getattr(importlib.import_module(mod), cls), *bases)
        self.worker = type("Worker", bases, {})(FakeVllmModel(self.hf))
        self.generate_calls, self.rpc_calls, self.prefix_resets = [], [], 0

    def get_tokenizer(self):
        return self.tok

    def reset_prefix_cache(self):
        self.prefix_resets += 1

    def collective_rpc(self, method, timeout=None, args=(), kwargs=None):
        if not isinstance(method, str):
            raise TypeError("multi-process engine: pass a method name of worker_extension_cls")
        args, kwargs = pickle.loads(pickle.dumps((args, kwargs or {})))  # a process boundary
        self.rpc_calls.append((method, args))
        return [getattr(self.worker, method)(*args, **kwargs)]

    @torch.no_grad()
    def generate(self, prompts, sampling_params, use_tqdm=True):
        params = sampling_params if isinstance(sampling_params, list) else \
            [sampling_params] * len(prompts)
        assert len(params) == len(prompts)
        self.generate_calls.append((prompts, params))
        return [self._one(p["prompt_token_ids"], sp) for p, sp in zip(prompts, params, strict=True)]

    def _one(self, ids, sp):
        assert sp.top_p == 1.0
        gen = torch.Generator().manual_seed(sp.seed) if sp.seed is not None else self.global_gen
        prompt_lps = None
        if sp.prompt_logprobs is not None:
            lp = torch.log_softmax(self.hf(torch.tensor([ids])).logits[0].float(), -1)
            prompt_lps = [None] + [{t: SimpleNamespace(logprob=float(lp[i - 1, t]))}
                                   for i, t in enumerate(ids) if i > 0]
        out, lps, finish = [], [], "length"
        for _ in range(sp.max_tokens):
            logits = self.hf(torch.tensor([ids + out])).logits[0, -1].float()
            if sp.temperature == 0:
                t = int(logits.argmax())
                proc = torch.log_softmax(logits, -1)
            else:
                proc = torch.log_softmax(logits / sp.temperature, -1)
                t = int(torch.multinomial(proc.exp(), 1, generator=gen))
            raw = torch.log_softmax(logits, -1)
            lp = proc if self.kwargs["logprobs_mode"] == "processed_logprobs" else raw
            out.append(t)
            lps.append({t: SimpleNamespace(logprob=float(lp[t]))})
            text = self.tok.decode(out, skip_special_tokens=True)
            if (t == self.tok.eos_token_id and not sp.ignore_eos) or any(
                    s in text for s in sp.stop):
                finish = "stop"
                break
        o = SimpleNamespace(token_ids=out, text=self.tok.decode(out, skip_special_tokens=True),
                            logprobs=lps if sp.logprobs is not None else None,
                            finish_reason=finish)
        return SimpleNamespace(outputs=[o], prompt_logprobs=prompt_lps)


class FakeWorkerBase:
    def __init__(self, model):
        self.model_runner = SimpleNamespace(model=model)


FAKE_VLLM = SimpleNamespace(LLM=FakeLLM, SamplingParams=FakeSamplingParams)


@pytest.fixture
def served(tmp_path, kuhn_tok):
    """A tiny model saved as a directory, its name_or_path pointing there."""
    model = build_model(kuhn_tok, TinyModelConfig(n_embd=32, n_head=2, seed=3))
    path = save_model_dir(tmp_path / "tiny", model, kuhn_tok)
    model.config._name_or_path = str(path)
    return model, path


def _backend(model, tok, **kw):
    return make_backend("vllm", model, tok, vllm_module=FAKE_VLLM, **kw)


def test_group_episodes_get_distinct_seeds_and_differ(served, kuhn_tok):
    model, _ = served
    backend = _backend(model, kuhn_tok, seed=5)
    group = [PROMPTS[0]] * 8  # the K episodes of a group start from one prompt
    sampling = SamplingConfig(max_new_tokens=6, stop=())
    gens = backend.generate(group, sampling)
    (_, params), = backend.llm.generate_calls
    seeds = [p.seed for p in params]
    assert None not in seeds and len(set(seeds)) == len(group)
    assert len({tuple(g.token_ids) for g in gens}) > 1, "K identical samples"
    backend.generate(group, sampling)  # the next call draws new seeds
    assert not set(seeds) & {p.seed for p in backend.llm.generate_calls[1][1]}
    again = _backend(model, kuhn_tok, seed=5).generate(group, sampling)  # reproducible
    assert [g.token_ids for g in again] == [g.token_ids for g in gens]
    greedy = SamplingConfig(max_new_tokens=3, greedy=True)
    backend.generate(group, greedy)
    assert {p.seed for p in backend.llm.generate_calls[-1][1]} == {None}


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_logprobs_are_of_the_temperature_scaled_distribution(served, kuhn_tok, temperature):
    model, _ = served
    backend = _backend(model, kuhn_tok)
    assert backend.llm.kwargs["logprobs_mode"] == "processed_logprobs"
    gens = backend.generate(PROMPTS, SamplingConfig(max_new_tokens=5, temperature=temperature,
                                                    stop=()))
    batch = pad_sequences([g.prompt_ids for g in gens], [g.token_ids for g in gens],
                          int(kuhn_tok.eos_token_id))
    with torch.no_grad():  # what the trainer's ratio recomputes
        ref = token_logprobs(model.eval(), batch, temperature=temperature).logp[batch.target]
    got = torch.tensor([lp for g in gens for lp in g.logprobs])
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=0)


def test_weights_are_pushed_through_collective_rpc(served, kuhn_tok):
    model, _ = served
    backend = _backend(model, kuhn_tok, score_with="engine", push_bytes=4096)
    hf = TransformersBackend(model, kuhn_tok)
    cands = [[" Pass", " Bet"]] * len(PROMPTS)
    before = np.concatenate([s.logprobs for s in backend.score(PROMPTS, cands)])
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    backend.load_weights(model.state_dict())
    assert len(backend.llm.rpc_calls) > 1  # buckets of about push_bytes
    assert {m for m, _ in backend.llm.rpc_calls} == {"load_named_weights"}
    pushed = {n for _, (bucket,) in backend.llm.rpc_calls for n, _ in bucket}
    assert pushed == set(model.state_dict())
    assert backend.llm.prefix_resets == 1
    for name, t in model.state_dict().items():
        torch.testing.assert_close(backend.llm.hf.state_dict()[name], t)
    after = np.concatenate([s.logprobs for s in backend.score(PROMPTS, cands)])
    expected = np.concatenate([s.logprobs for s in hf.score(PROMPTS, cands)])
    assert not np.allclose(before, after, atol=1e-3)
    np.testing.assert_allclose(after, expected, atol=1e-4)


def test_scoring_runs_each_prompt_once_or_in_one_engine_call(served, kuhn_tok):
    model, path = served
    cands = [[" Pass", " Bet", " Pass"], [" Bet"], []]
    expected = TransformersBackend(model, kuhn_tok).score(PROMPTS, cands)
    one_pass = _backend(model, kuhn_tok)  # built from the transformers model
    got = one_pass.score(PROMPTS, cands)
    assert one_pass.llm.generate_calls == []  # prompt once, candidates on its KV cache
    engine = _backend(str(path), None)  # built from a path: the engine scores
    got_engine = engine.score(PROMPTS, cands)
    (prompts, params), = engine.llm.generate_calls  # one call for every candidate
    assert len(prompts) == 3 and params[0].prompt_logprobs == 0  # duplicates sent once
    for a, b, c in zip(expected, got, got_engine, strict=True):
        np.testing.assert_allclose(b.logprobs, a.logprobs, atol=1e-5)
        np.testing.assert_allclose(c.logprobs, a.logprobs, atol=1e-4)


def test_lora_model_is_pushed_merged(served, kuhn_tok):
    pytest.importorskip("peft")
    from llm_agents.lora import LoRAConfig, apply_lora

    model, _ = served
    lora = apply_lora(model, LoRAConfig(r=4))
    backend = _backend(lora, kuhn_tok, score_with="engine")
    with torch.no_grad():
        for n, p in lora.named_parameters():
            if ".lora_B" in n:  # B starts at zero: the adapters change nothing until trained
                p.add_(0.5 * torch.randn_like(p))
    backend.load_weights(lora.state_dict())
    pushed = {n for _, (bucket,) in backend.llm.rpc_calls for n, _ in bucket}
    assert not any("lora" in n or "base_layer" in n for n in pushed)
    cands = [[" Pass", " Bet"]] * len(PROMPTS)
    got = np.concatenate([s.logprobs for s in backend.score(PROMPTS, cands)])
    ref = np.concatenate([s.logprobs for s in TransformersBackend(lora, kuhn_tok).score(
        PROMPTS, cands)])
    np.testing.assert_allclose(got, ref, atol=1e-4)
    with pytest.raises(ValueError, match="transformers model to merge into"):
        VLLMBackend(str(served[1]), kuhn_tok, vllm_module=FAKE_VLLM).load_weights(
            lora.state_dict())


def test_bad_settings_fail_in_one_line(served, kuhn_tok):
    model, path = served
    with pytest.raises(ValueError, match=r"score_with='kv' unknown; choose one of \['auto', "
                       r"'transformers', 'engine'\]"):
        _backend(model, kuhn_tok, score_with="kv")
    with pytest.raises(ValueError, match="needs the transformers model"):
        _backend(str(path), kuhn_tok, score_with="transformers")


def test_grpo_with_the_vllm_backend_gets_distinct_group_samples_and_pushes_weights(served,
                                                                                  kuhn_tok):
    from llm_agents import ActionConfig, GRPOConfig, MultiTurnGRPO, Team
    from tests.llm_agents.conftest import COMPACT, KUHN

    model, _ = served
    team = Team.shared(model, kuhn_tok, backend=_backend(model, kuhn_tok))
    cfg = GRPOConfig(group_size=4, groups_per_step=3, lr=1e-2, device="cpu", prompt=COMPACT,
                     action=ActionConfig(mode="generate",
                                         sampling=SamplingConfig(max_new_tokens=3, stop=())))
    trainer = MultiTurnGRPO(team, KUHN, cfg)
    metrics = trainer.step()
    assert metrics["losses/grad_norm/player_0"] > 0
    batch = trainer.collect()  # pushes the updated weights first
    engine = team.models["shared"].backend.llm
    for name, t in model.state_dict().items():
        torch.testing.assert_close(engine.hf.state_dict()[name], t)
    first = {}  # each episode's first completion, by group
    for t in batch.turns:
        if t.index == 0:
            first.setdefault(t.group, []).append(tuple(t.decision.completion_ids))
    assert all(len(set(c)) > 1 for c in first.values()), "a group of identical samples"


def test_a_backend_built_directly_starts_vllm_on_loopback(served, kuhn_tok, monkeypatch):
    """``VLLMBackend(...)`` without a team (``make_backend``) binds vLLM's servers to
    127.0.0.1 too, and keeps a ``VLLM_HOST_IP`` the user set (an engine across machines)."""
    import os
    seen = []

    class EnvLLM(FakeLLM):
        def __init__(self, *args, **kwargs):
            seen.append(os.environ.get("VLLM_HOST_IP"))
            super().__init__(*args, **kwargs)

    fake = SimpleNamespace(LLM=EnvLLM, SamplingParams=FakeSamplingParams)
    monkeypatch.delenv("VLLM_HOST_IP", raising=False)
    make_backend("vllm", served[0], kuhn_tok, vllm_module=fake)
    monkeypatch.setenv("VLLM_HOST_IP", "10.1.2.3")
    make_backend("vllm", served[0], kuhn_tok, vllm_module=fake)
    assert seen == ["127.0.0.1", "10.1.2.3"]
