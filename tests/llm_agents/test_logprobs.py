"""The trainer's forward pass over generated turns keeps vocabulary-wide logits for the
generated tokens only (prompts run once through a cache); it must give the same
log-probabilities, entropies and gradients as the plain full-sequence pass."""

import pytest
import torch

from llm_agents.logprobs import continuation_token_stats, pad_sequences, token_logprobs


def _batch(tok, seed=0, n=6):
    g = torch.Generator().manual_seed(seed)
    vocab = len(tok)
    prompts = [torch.randint(3, vocab, (int(k),), generator=g).tolist()
               for k in torch.randint(2, 30, (n,), generator=g)]
    comps = [torch.randint(3, vocab, (int(k),), generator=g).tolist()
             for k in torch.randint(1, 9, (n,), generator=g)]
    return prompts, comps


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_cached_continuation_pass_matches_the_full_pass(kuhn_tok, make_model, temperature):
    model = make_model(kuhn_tok).train()
    prompts, comps = _batch(kuhn_tok)
    pad = kuhn_tok.pad_token_id

    full = pad_sequences(prompts, comps, pad)
    ref = token_logprobs(model, full, temperature, with_entropy=True)
    ref_lp, ref_ent = ref.logp[full.target], ref.entropy[full.target]
    ref_grad = torch.autograd.grad(ref_lp.sum() + ref_ent.sum(), list(model.parameters()))

    logp, mask, ent = continuation_token_stats(model, prompts, [[c] for c in comps], pad,
                                               temperature=temperature, with_entropy=True)
    assert mask.sum(1).tolist() == [len(c) for c in comps]
    torch.testing.assert_close(logp[mask], ref_lp, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ent[mask], ref_ent, atol=1e-5, rtol=1e-5)
    grad = torch.autograd.grad(logp[mask].sum() + ent[mask].sum(), list(model.parameters()))
    for a, b in zip(grad, ref_grad, strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
    assert (logp[~mask] == 0).all() and (ent[~mask] == 0).all()


def test_empty_continuation_is_refused(kuhn_tok, make_model):
    with pytest.raises(ValueError, match="at least one token"):
        continuation_token_stats(make_model(kuhn_tok), [[5, 6]], [[[]]], kuhn_tok.pad_token_id)
