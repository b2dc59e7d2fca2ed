"""Backends: generation log-probabilities agree with scoring, padding changes nothing,
prefix-shared scoring equals full sequences, model directories round-trip, vLLM on GPU."""

import numpy as np
import pytest
import torch

from llm_agents.actions import ActionConfig
from llm_agents.backends import SamplingConfig, TransformersBackend, make_backend
from llm_agents.logprobs import (
    continuation_logprobs,
    pad_sequences,
    sequence_scores,
    token_logprobs,
)
from llm_agents.prompts import PromptBuilder, PromptConfig
from llm_agents.tiny import (
    SIMPLE_CHAT_TEMPLATE,
    TinyModelConfig,
    build_model,
    build_tokenizer,
    save_model_dir,
)
from llm_agents.trainer import GRPOConfig

PROMPTS = ["player_0\n1 : Pass Bet\n", "player_1\n2pb : Pass Bet\n", "player_1\n0b\n"]


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_generated_logprobs_equal_scoring_the_same_tokens(kuhn_tok, arch):
    backend = TransformersBackend(build_model(kuhn_tok, TinyModelConfig(arch=arch)), kuhn_tok)
    for temp in (1.0, 2.0):
        gens = backend.generate(PROMPTS, SamplingConfig(max_new_tokens=5, temperature=temp,
                                                        stop=()))
        assert [len(g.token_ids) for g in gens] == [len(g.logprobs) for g in gens]
        batch = pad_sequences([g.prompt_ids for g in gens], [g.token_ids for g in gens],
                              backend.pad_id)
        with torch.no_grad():
            ref = token_logprobs(backend.model, batch, temperature=temp).logp[batch.target]
        got = torch.tensor([lp for g in gens for lp in g.logprobs])
        torch.testing.assert_close(got, ref, atol=1e-4, rtol=0)


def test_left_padding_changes_nothing(kuhn_tok, make_model):
    backend = TransformersBackend(make_model(kuhn_tok), kuhn_tok)
    greedy = SamplingConfig(max_new_tokens=4, greedy=True, stop=())
    together = backend.generate(PROMPTS, greedy)
    for prompt, g in zip(PROMPTS, together, strict=True):
        (alone,) = backend.generate([prompt], greedy)
        assert alone.token_ids == g.token_ids
        np.testing.assert_allclose(alone.logprobs, g.logprobs, atol=1e-5)


def test_stop_strings_end_generation_and_are_kept(kuhn_tok, make_model):
    backend = TransformersBackend(make_model(kuhn_tok), kuhn_tok)
    greedy = SamplingConfig(max_new_tokens=6, greedy=True, stop=(), stop_at_eos=False)
    (free,) = backend.generate(PROMPTS[:1], greedy)
    assert free.finish_reason == "length" and len(free.token_ids) == 6
    word = kuhn_tok.convert_ids_to_tokens(free.token_ids[1])
    (stopped,) = backend.generate(PROMPTS[:1], SamplingConfig(max_new_tokens=6, greedy=True,
                                                             stop=(word,), stop_at_eos=False))
    first = [kuhn_tok.convert_ids_to_tokens(t) for t in free.token_ids].index(word)
    assert stopped.token_ids == free.token_ids[: first + 1] and stopped.finish_reason == "stop"


def test_sampling_is_seeded(kuhn_tok, make_model):
    model = make_model(kuhn_tok)
    runs = [TransformersBackend(model, kuhn_tok, seed=3).generate(PROMPTS * 4) for _ in range(2)]
    assert [g.token_ids for g in runs[0]] == [g.token_ids for g in runs[1]]


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_prefix_shared_scoring_equals_full_sequences(kuhn_tok, arch):
    model = build_model(kuhn_tok, TinyModelConfig(arch=arch))
    prefixes = [[3, 4, 5], [6], [7, 8, 9, 10, 3]]
    conts = [[[4], [5, 6]], [[7, 8, 9]], [[3], [4], [5, 6, 7, 8]]]
    logp, mask = continuation_logprobs(model, prefixes, conts, 0)
    batch = pad_sequences([p for p, c in zip(prefixes, conts, strict=True) for _ in c],
                          [x for c in conts for x in c], 0)
    ref = sequence_scores(token_logprobs(model, batch).logp, batch.target)
    torch.testing.assert_close(sequence_scores(logp, mask), ref, atol=1e-5, rtol=0)
    assert mask.sum().item() == batch.target.sum().item()


def test_backend_score_is_the_log_probability_of_each_candidate(kuhn_tok, make_model):
    backend = TransformersBackend(make_model(kuhn_tok), kuhn_tok, max_batch_tokens=16)
    scored = backend.score(PROMPTS, [[" Pass", " Bet"], [" Bet"], [" Pass", " Bet", " Pass Bet"]])
    assert [s.logprobs.shape for s in scored] == [(2,), (1,), (3,)]
    s = scored[2]
    assert s.logprobs[2] < s.logprobs[0]  # a longer continuation multiplies probabilities
    both = backend.score_ids([s.prompt_ids], [[s.candidate_ids[2]]])[0][0]
    first = backend.score_ids([s.prompt_ids], [[s.candidate_ids[0]]])[0][0]
    assert both < first and np.isclose(both, s.logprobs[2])


def test_model_directory_round_trip(tmp_path, kuhn_tok):
    for arch in ("gpt2", "llama"):
        model = build_model(kuhn_tok, TinyModelConfig(arch=arch, seed=1))
        path = save_model_dir(tmp_path / arch, model, kuhn_tok)
        loaded = TransformersBackend.from_pretrained(str(path), device="cpu")
        cands = [[" Pass", " Bet"]] * len(PROMPTS)
        a = TransformersBackend(model, kuhn_tok).score(PROMPTS, cands)
        b = loaded.score(PROMPTS, cands)
        for x, y in zip(a, b, strict=True):
            np.testing.assert_allclose(x.logprobs, y.logprobs, atol=1e-5)


def test_chat_template_prompts(kuhn_tok):
    tok = build_tokenizer(["Pass Bet 1 2pb player_0 legal"], chat_template=SIMPLE_CHAT_TEMPLATE)
    builder = PromptBuilder(PromptConfig(system="{role}", user="{observation} : {legal}"))
    kw = dict(game="kuhn", agent="player_0", role="player_0", role_prompt="", observation="2pb",
              legal=["Pass", "Bet"], instruction="")
    prompt = builder.build(tok, **kw)
    assert prompt == "system : player_0\nuser : 2pb : Pass | Bet\nassistant :"
    assert builder.candidate(tok, "Bet") == "Bet"
    assert builder.build(kuhn_tok, **kw) == "player_0\n2pb : Pass | Bet\n"
    assert builder.candidate(kuhn_tok, "Bet") == " Bet"
    backend = TransformersBackend(build_model(tok), tok)
    assert backend.encode_prompts([prompt])[0][0] == tok.convert_tokens_to_ids("system")


def test_unknown_names_fail_with_the_valid_ones():
    with pytest.raises(ValueError, match=r"backend 'onnx' unknown; choose one of \['transformers', "
                       r"'vllm'\]"):
        make_backend("onnx")
    with pytest.raises(ValueError, match=r"mode='beam' unknown; choose one of \['generate', "
                       r"'score'\]"):
        ActionConfig(mode="beam")
    with pytest.raises(ValueError, match=r"fallback='retry' unknown; choose one of \['first', "
                       r"'random'\]"):
        ActionConfig(fallback="retry")
    with pytest.raises(ValueError, match=r"adv_norm='dr_mas' unknown; choose one of \['agent', "):
        GRPOConfig(adv_norm="dr_mas")
    with pytest.raises(ValueError, match=r"kl_estimator='k4' unknown; choose one of \['k1', "):
        GRPOConfig(kl_estimator="k4")
    with pytest.raises(ValueError, match=r"loss_agg='sum' unknown; choose one of \["):
        GRPOConfig(loss_agg="sum")
    with pytest.raises(ValueError, match=r"arch='rnn' unknown; choose one of \['gpt2', "):
        TinyModelConfig(arch="rnn")  # refused where it is set, before a model is built


def test_vllm_backend_matches_transformers_and_takes_new_weights(tmp_path, kuhn_tok):
    """The real engine (multi-process by default): per-request seeds, temperature-scaled
    logprobs, weights through the worker extension (the CPU tests use a fake engine)."""
    pytest.importorskip("vllm")
    if not torch.cuda.is_available():
        pytest.skip("the vllm backend needs a CUDA GPU")
    from llm_agents.backends import VLLMBackend

    model = build_model(kuhn_tok, TinyModelConfig(n_embd=128, n_head=2, seed=2))
    path = save_model_dir(tmp_path / "tiny", model, kuhn_tok)
    engine = VLLMBackend(str(path), dtype="float32", enforce_eager=True, max_model_len=256,
                         gpu_memory_utilization=0.2)
    hf = TransformersBackend(model.cuda(), kuhn_tok)
    gens = engine.generate(PROMPTS, SamplingConfig(max_new_tokens=4, stop=()))
    for g in gens:
        ref = hf.score_ids([g.prompt_ids], [[g.token_ids]])[0][0]
        assert abs(sum(g.logprobs) - ref) < 0.05
    group = engine.generate([PROMPTS[0]] * 8, SamplingConfig(max_new_tokens=6, temperature=2.0,
                                                             stop=()))
    assert len({tuple(g.token_ids) for g in group}) > 1  # a seed per request
    batch = pad_sequences([g.prompt_ids for g in group], [g.token_ids for g in group],
                          hf.pad_id, "cuda")
    with torch.no_grad():  # logprobs of logits / temperature, what the trainer recomputes
        ref = token_logprobs(model, batch, temperature=2.0).logp[batch.target].cpu()
    torch.testing.assert_close(torch.tensor([lp for g in group for lp in g.logprobs]), ref,
                               atol=0.05, rtol=0)
    cands = [[" Pass", " Bet"]] * len(PROMPTS)
    before = [s.logprobs for s in engine.score(PROMPTS, cands)]
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn_like(p))
    engine.load_weights(model.state_dict())
    after = [s.logprobs for s in engine.score(PROMPTS, cands)]
    expected = [s.logprobs for s in hf.score(PROMPTS, cands)]
    assert not np.allclose(np.concatenate(before), np.concatenate(after), atol=1e-3)
    np.testing.assert_allclose(np.concatenate(after), np.concatenate(expected), atol=0.05)
    engine.close()
