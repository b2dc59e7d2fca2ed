"""Repeated prompts cost once: a GRPO group's episodes start from the same deal and small
games repeat their information states (Kuhn poker: 12 distinct prompts in ~560 turns).
Without gradients a model in eval mode runs each distinct prompt and (prompt,
continuation) pair once, with the same log-probabilities and entropies as one row per
continuation; with gradients every row runs (the gradient's sum keeps its order); a
backend tokenizes each distinct prompt text once."""

import numpy as np
import pytest
import torch

from llm_agents import logprobs
from llm_agents.backends import SamplingConfig, TransformersBackend, base
from llm_agents.logprobs import (
    continuation_token_stats,
    pad_sequences,
    selects_rows,
    token_logprobs,
)
from llm_agents.tiny import SIMPLE_CHAT_TEMPLATE, build_tokenizer
from tests.llm_agents.counting import CountingTokenizer, IdsOnly

PROMPTS = [[5, 6, 7], [8, 9], [5, 6, 7], [10, 11, 12, 13], [8, 9], [5, 6, 7]]
CANDS = [[[3], [4, 5]], [[6]], [[3], [4, 5]], [[7, 8]], [[9]], [[4, 5], [6]]]


def _rows_seen(model):
    seen = []
    model.register_forward_pre_hook(lambda m, a, kw: seen.append(kw["input_ids"].shape[0]),
                                    with_kwargs=True)
    return seen


def test_repeated_prompts_and_pairs_run_once_without_gradients(kuhn_tok, make_model):
    pad = kuhn_tok.pad_token_id
    model = make_model(kuhn_tok)  # eval mode, no dropout

    def stats(grad):
        with torch.set_grad_enabled(grad):
            logp, mask, ent = continuation_token_stats(model, PROMPTS, CANDS, pad,
                                                       with_entropy=True)
        return logp.detach(), mask, ent.detach()

    seen = _rows_seen(model)
    ref = stats(grad=True)
    assert seen == [6, 9]  # with gradients: one row per prompt, then one per continuation
    seen.clear()
    got = stats(grad=False)
    assert seen == [3, 6]  # 3 distinct prompts; 6 distinct (prompt, continuation) pairs
    assert got[1].tolist() == ref[1].tolist() and got[1].shape == (9, 2)
    torch.testing.assert_close(got[0], ref[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got[2], ref[2], atol=1e-5, rtol=1e-5)
    seen.clear()
    model.train()  # no dropout in the tiny model; in train mode every row runs
    stats(grad=False)
    assert seen == [6, 9]


TEXTS = ["bet pass", "pass", "bet pass", "call the bet", "fold", "pass"]


def _alone(tok, texts, add):
    return [list(tok(t, add_special_tokens=add)["input_ids"]) for t in texts]


def test_prompt_ids_are_tokenized_once_per_text_and_match_the_tokenizer(monkeypatch):
    tok = build_tokenizer(TEXTS, chat_template=SIMPLE_CHAT_TEMPLATE)
    counting = CountingTokenizer(tok)
    b = IdsOnly(counting)
    want = _alone(tok, TEXTS, add=False)  # a chat template puts the special tokens
    assert b.encode_prompts(TEXTS) == want
    assert b.encode_prompts(TEXTS[::-1]) == want[::-1]
    assert sorted(counting.calls) == sorted(set(TEXTS))  # each text once, in all
    b.encode_prompts(["pass"])[0].append(999)  # a caller's list is its own
    assert b.encode_prompts(["pass"]) == [want[1]]

    counting.chat_template = None  # no template: special tokens again, not the memo's ids
    assert b.encode_prompts(TEXTS) == _alone(tok, TEXTS, add=True)

    monkeypatch.setattr(base, "PROMPT_MEMO", 3)  # full: a known prompt beside new ones
    b = IdsOnly(tok)
    b.encode_prompts(["pass", "fold", "bet pass"])
    assert b.encode_prompts(["pass", "call the bet"]) == _alone(tok, ["pass", "call the bet"],
                                                                 add=True)
    assert len(b._prompt_ids[2]) <= 3


def test_generation_runs_a_repeated_prompt_once(kuhn_tok, make_model):
    backend = TransformersBackend(make_model(kuhn_tok), kuhn_tok, seed=0)
    prompts = ["Pass Bet", "Bet", "Pass Bet", "Pass Bet", "Bet Pass Bet"]
    sampling = SamplingConfig(max_new_tokens=3, greedy=True, stop_at_eos=False, stop=())
    seen = _rows_seen(backend.model)
    gens = backend.generate(prompts, sampling)
    assert seen[0] == 3  # the prompt pass: 3 distinct prompts; then one row each
    assert seen[1:] == [5, 5]
    for p, g in zip(prompts, gens, strict=True):
        (alone,) = backend.generate([p], sampling)
        assert g.token_ids == alone.token_ids and g.prompt_ids == alone.prompt_ids
        assert np.allclose(g.logprobs, alone.logprobs, atol=1e-5)


@pytest.fixture(scope="module")
def hybrid():
    """A tiny random LFM2 (layers: conv, full attention) and its tokenizer, built in code."""
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "Lfm2Config"):
        pytest.skip("this transformers has no LFM2")
    tok = build_tokenizer(["bet pass call fold"])
    cfg = transformers.Lfm2Config(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, layer_types=["conv", "full_attention"],
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
        bos_token_id=tok.eos_token_id)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    return model, tok


def test_a_hybrid_models_cache_is_not_row_selected(hybrid):
    """LFM2's conv layers keep a state that ``batch_select_indices`` cannot select (review
    ST-1): a repeated prompt, and rows that stop early, generate as one prompt at a time; a
    stopped row's tokens end at its stop, though its row keeps running in the batch."""
    model, tok = hybrid
    backend = TransformersBackend(model, tok, seed=0)
    prompts = ["bet pass", "bet pass", "call"]
    for stop in ((), ("call",)):  # ("call",): the third row stops at once, the others run on
        sampling = SamplingConfig(max_new_tokens=3, greedy=True, stop_at_eos=False, stop=stop)
        gens = backend.generate(prompts, sampling)
        for p, g in zip(prompts, gens, strict=True):
            (alone,) = backend.generate([p], sampling)
            assert g.token_ids == alone.token_ids and g.finish_reason == alone.finish_reason
        if stop:
            assert [g.finish_reason for g in gens] == ["length", "length", "stop"]
            assert gens[2].text == "call"
    assert selects_rows(model) is False


def test_a_hybrid_model_scores_continuations_as_whole_sequences(hybrid):
    """Scoring and the trainer's pass repeat each prompt's cache per continuation; a hybrid
    cache cannot repeat rows, so its prompts run once per continuation (learned at the
    model's first such call): equal to each prompt + continuation run alone, uncached."""
    model, tok = hybrid
    pad = tok.pad_token_id
    prompts = [[3, 4, 5], [6, 3], [3, 4, 5], [4, 5, 6, 7], [6, 3], [3, 4, 5]]  # PROMPTS' pattern
    cands = [[[3], [4, 5]], [[6]], [[3], [4, 5]], [[7, 8]], [[8]], [[4, 5], [6]]]
    want = []
    for p, cs in zip(prompts, cands, strict=True):
        for c in cs:
            batch = pad_sequences([p], [c], pad)
            want.append(token_logprobs(model, batch).logp[batch.target].detach())
    logprobs._SELECTS_ROWS.pop(model, None)  # not yet learned (the fixture is shared)
    seen = _rows_seen(model)
    first = []
    for grad in (False, False, True):
        seen.clear()
        with torch.set_grad_enabled(grad):
            logp, mask, _ = continuation_token_stats(model, prompts, cands, pad)
        got = [row[m] for row, m in zip(logp.detach(), mask, strict=True)]
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
        if not grad:  # 3 distinct prompts (first call only), then 6 distinct pairs
            first.append(list(seen))
    assert first == [[3, 6, 6], [6, 6]]
    assert seen == [9, 9]  # with gradients, one row per continuation
    with torch.no_grad():  # one continuation per prompt: the cache is used as it is
        seen.clear()
        continuation_token_stats(model, prompts[:2], [[[3, 4]], [[5, 6]]], pad)
    assert seen == [2, 2]


def test_a_cache_without_layers_selects_rows_if_it_says_so():
    """transformers before the layered caches (~4.54): DynamicCache selected rows with key
    and value lists, hybrid caches had no ``batch_select_indices`` (review ST-3)."""
    from llm_agents.backends.hf import rows_selectable

    class OldDynamic:
        def batch_select_indices(self, rows):
            pass

    assert rows_selectable(OldDynamic()) and not rows_selectable(object())
    assert not rows_selectable(None)
