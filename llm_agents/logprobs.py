"""Token log-probabilities of prompt + continuation batches: shared by the transformers
backend (scoring, no gradient) and the trainer (policy and reference forward passes).

* :func:`token_logprobs` runs right-padded ``prompt + continuation`` sequences (a causal
  model needs no position ids then, and pads never affect real tokens). ``target`` marks
  the continuation tokens whose log-probabilities are wanted: prompt and observation tokens
  are never targets, which is how the loss masks them.
* :func:`continuation_logprobs` (and :func:`continuation_token_stats`, which adds
  entropies) scores several continuations of each prompt with the prompt run **once**: a
  left-padded prompt pass fills a key/value cache, the cache is repeated per continuation,
  and only the continuation tokens run again (legal-action scoring, where a long
  observation precedes short action texts; the trainer's pass over generated turns, where
  only generated tokens need vocabulary-wide logits). A hybrid model's cache (LFM2's conv
  state) cannot repeat rows: its prompts run once per continuation instead (learned at
  the model's first such call). Without gradients (rollouts,
  evaluation), a model in eval mode runs each distinct prompt, and each distinct (prompt,
  continuation) pair, once: a GRPO group's episodes start from the same deal, and small
  games repeat their information states. With gradients every row runs: shared rows would
  sum the gradient in another order, and the learning tests' runs (Kuhn: 200 Adam steps)
  then take other paths (seed 1 of the Kuhn benchmark missed its bound, review ST-4).

Shape legend: ``N`` sequences, ``T`` padded length, ``V`` vocabulary, ``M`` target tokens,
``n`` prompts, ``C`` continuations in all, ``Lc`` longest continuation.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn


@dataclass
class SeqBatch:
    """Right-padded ``prefix + continuation`` sequences.

    Attributes:
        input_ids: ``[N, T]`` int64.
        attention_mask: ``[N, T]`` int64, 1 on real tokens.
        target: ``[N, T]`` bool, True exactly on continuation tokens.
    """

    input_ids: Tensor
    attention_mask: Tensor
    target: Tensor

    @property
    def num_tokens(self) -> int:
        return int(self.attention_mask.sum())


def pad_sequences(prefixes: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]],
                  pad_id: int, device: torch.device | str = "cpu") -> SeqBatch:
    """Concatenate each prefix with its continuation and right-pad to one length."""
    if len(prefixes) != len(continuations):
        raise ValueError(f"{len(prefixes)} prefixes but {len(continuations)} continuations")
    lengths = [len(p) + len(c) for p, c in zip(prefixes, continuations, strict=True)]
    T = max(lengths, default=1)
    N = len(lengths)
    ids = torch.full((N, T), pad_id, dtype=torch.long)
    attn = torch.zeros((N, T), dtype=torch.long)
    target = torch.zeros((N, T), dtype=torch.bool)
    for i, (p, c) in enumerate(zip(prefixes, continuations, strict=True)):
        if not p:
            raise ValueError("every sequence needs at least one prefix token")
        ids[i, : lengths[i]] = torch.tensor([*p, *c], dtype=torch.long)
        attn[i, : lengths[i]] = 1
        target[i, len(p) : lengths[i]] = True
    return SeqBatch(ids.to(device), attn.to(device), target.to(device))


@dataclass
class TokenLogprobs:
    """``logp`` ``[N, T]``: log-probability of each target token given the tokens before it
    (0 elsewhere); ``entropy`` ``[N, T]``: entropy of the next-token distribution there."""

    logp: Tensor
    entropy: Tensor


def token_logprobs(model: nn.Module, batch: SeqBatch, temperature: float = 1.0,
                   with_entropy: bool = False) -> TokenLogprobs:
    """Log-probabilities of the target tokens under ``model`` (logits / ``temperature``).

    Only target positions go through the (vocabulary-wide) log-softmax, so memory grows with
    the number of generated tokens, not with the prompt length.
    """
    out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask)
    rows, cols = batch.target.nonzero(as_tuple=True)  # cols >= 1: prefixes are non-empty
    logits = out.logits[rows, cols - 1].float() / temperature  # [M, V]
    lse = torch.logsumexp(logits, -1)
    lp = logits.gather(-1, batch.input_ids[rows, cols].unsqueeze(-1)).squeeze(-1) - lse
    logp = torch.zeros(batch.target.shape, dtype=lp.dtype, device=lp.device)
    logp = logp.index_put((rows, cols), lp)
    entropy = torch.zeros_like(logp)
    if with_entropy:
        probs = torch.softmax(logits, -1)
        ent = lse - (probs * logits).sum(-1)
        entropy = entropy.index_put((rows, cols), ent)
    return TokenLogprobs(logp, entropy)


def sequence_scores(logp: Tensor, target: Tensor, length_normalize: bool = False) -> Tensor:
    """``[N]`` sum (or mean) of the target-token log-probabilities of each row."""
    total = (logp * target).sum(-1)
    if length_normalize:
        total = total / target.sum(-1).clamp_min(1)
    return total


def forward_kwargs(model: nn.Module) -> dict[str, str | None]:
    """Argument names this model's ``forward`` uses for the cache and for keeping logits."""
    params = inspect.signature(model.forward).parameters
    cache = "cache" if "cache" in params else "past_key_values"
    keep = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None)
    return {"cache": cache, "keep": keep}


def _cache_of(out: Any) -> Any:
    return out["cache"] if "cache" in out else out.get("past_key_values")


def rows_selectable(cache: Any) -> bool:
    """Whether every layer of ``cache`` can keep (or repeat) some of its rows: key/value
    layers can; the conv and linear-attention states of hybrid models (LFM2, Qwen3-Next)
    cannot (``Cache.batch_select_indices`` exists for them too, and fails or selects only
    the keys and values). A cache without layers (transformers before ~4.54: DynamicCache
    kept key and value lists; hybrid caches had no row selection) can if it says so."""
    layers = getattr(cache, "layers", None)
    if layers is None:
        return hasattr(cache, "batch_select_indices")
    try:
        from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer
    except ImportError:
        return False
    return bool(layers) and all(type(layer) in (DynamicLayer, DynamicSlidingWindowLayer)
                                for layer in layers)


_SELECTS_ROWS: weakref.WeakKeyDictionary[nn.Module, bool] = weakref.WeakKeyDictionary()


def selects_rows(model: nn.Module, cache: Any = None) -> bool | None:
    """Whether ``model``'s cache can select rows (:func:`rows_selectable`), learned from the
    first ``cache`` given and remembered per model (scoring and generation alike); None
    while unknown. A hybrid model then runs each row's prompt instead of copying a cache."""
    if cache is not None and model not in _SELECTS_ROWS:
        _SELECTS_ROWS[model] = rows_selectable(cache)
    return _SELECTS_ROWS.get(model)


def _padded(rows: Sequence[Sequence[int]], width: int, pad_id: int, left: bool
            ) -> tuple[Tensor, Tensor]:
    """``[len(rows), width]`` token ids padded with ``pad_id`` on the left or the right, and
    the mask of real tokens: one tensor built from all rows (a row at a time cost more than
    the tiny models' forward passes when scoring legal actions)."""
    lengths = torch.tensor([len(r) for r in rows], dtype=torch.long)
    col = torch.arange(width)
    real = col >= width - lengths[:, None] if left else col < lengths[:, None]
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    ids[real] = torch.tensor([t for r in rows for t in r], dtype=torch.long)  # row-major
    return ids, real


def continuation_logprobs(model: nn.Module, prefixes: Sequence[Sequence[int]],
                          continuations: Sequence[Sequence[Sequence[int]]], pad_id: int,
                          device: torch.device | str = "cpu", temperature: float = 1.0
                          ) -> tuple[Tensor, Tensor]:
    """Token log-probabilities of every continuation of every prefix, prefixes run once.

    Returns ``logp`` ``[C, Lc]`` and ``mask`` ``[C, Lc]`` (True on real continuation tokens),
    rows in the order of ``continuations`` flattened. Equal (up to rounding) to
    :func:`token_logprobs` on the concatenated sequences.
    """
    logp, mask, _ = continuation_token_stats(model, prefixes, continuations, pad_id, device,
                                             temperature)
    return logp, mask


def continuation_token_stats(model: nn.Module, prefixes: Sequence[Sequence[int]],
                             continuations: Sequence[Sequence[Sequence[int]]], pad_id: int,
                             device: torch.device | str = "cpu", temperature: float = 1.0,
                             with_entropy: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`continuation_logprobs` plus the entropy ``[C, Lc]`` of the next-token
    distribution at each continuation token (zeros unless ``with_entropy``).

    Logits exist only for continuation tokens (the prompt pass keeps one position), so
    memory grows with ``C * Lc * V``, not with the prompt length: the trainer's forward pass
    of generated turns uses it with one continuation per prompt.
    """
    if any(len(c) == 0 for cands in continuations for c in cands):
        raise ValueError("every continuation needs at least one token")
    if not model.training and not torch.is_grad_enabled():  # a repeated prompt runs once
        prefixes, pair_prefix, flat, where = _distinct(prefixes, continuations)
    else:  # dropout draws noise per row; with gradients the rows' sum keeps its order
        pair_prefix = [i for i, cands in enumerate(continuations) for _ in cands]
        flat, where = [c for cands in continuations for c in cands], None
    names = forward_kwargs(model)
    Lc = max(len(c) for c in flat)
    # the continuation pass needs the prompt's cache once per continuation
    select = Lc > 1 and pair_prefix != list(range(len(prefixes)))
    if select and selects_rows(model) is False:  # a hybrid model: no row selection
        prefixes, pair_prefix = [prefixes[i] for i in pair_prefix], list(range(len(flat)))
        select = False
    P = max(len(p) for p in prefixes)
    ids, real = _padded(prefixes, P, pad_id, left=True)  # every prompt ends at column P - 1
    ids, attn = ids.to(device), real.long().to(device)
    pos0 = (attn.cumsum(-1) - 1).clamp_min(0)
    keep = {names["keep"]: 1} if names["keep"] else {}
    out = model(input_ids=ids, attention_mask=attn, position_ids=pos0, use_cache=True, **keep)
    first = out.logits[:, -1].float() / temperature  # [n, V]: distribution of token 0
    rows = torch.tensor(pair_prefix, dtype=torch.long, device=device)
    cont, mask = _padded(flat, Lc, pad_id, left=False)
    cont, mask = cont.to(device), mask.to(device)
    logits = first[rows].unsqueeze(1)  # [C, 1, V]
    if Lc > 1:
        cache = _cache_of(out)
        if select:
            if selects_rows(model, cache):
                cache.batch_select_indices(rows)
            else:  # the prompts again, one row per continuation (this model's first time)
                cache = _cache_of(model(input_ids=ids[rows], attention_mask=attn[rows],
                                        position_ids=pos0[rows], use_cache=True, **keep))
        lengths = attn.sum(-1)[rows]
        pos = lengths[:, None] + torch.arange(Lc - 1, device=device)
        more = model(input_ids=cont[:, :-1], attention_mask=torch.cat(
            [attn[rows], mask[:, :-1].long()], 1), position_ids=pos, use_cache=True,
            **{names["cache"]: cache})
        logits = torch.cat([logits, more.logits.float() / temperature], 1)  # [C, Lc, V]
    lse = torch.logsumexp(logits, -1)
    logp = logits.gather(-1, cont.unsqueeze(-1)).squeeze(-1) - lse
    entropy = torch.zeros_like(logp)
    if with_entropy:
        entropy = (lse - (torch.softmax(logits, -1) * logits).sum(-1)).masked_fill(~mask, 0.0)
    logp = logp.masked_fill(~mask, 0.0)
    if where is not None:  # back to one row per continuation asked for (gradients add up)
        at = torch.tensor(where, dtype=torch.long, device=device)
        logp, mask, entropy = logp[at], mask[at], entropy[at]
    return logp, mask, entropy


def _distinct(prefixes: Sequence[Sequence[int]],
              continuations: Sequence[Sequence[Sequence[int]]]
              ) -> tuple[list[list[int]], list[int], list[list[int]], list[int] | None]:
    """The distinct prefixes; per distinct (prefix, continuation) pair its prefix's index
    and its tokens; and per continuation asked for (flattened) its pair's index, or None
    when nothing repeats. A GRPO group's episodes share a deal, so their first prompts are
    equal, and small games have few information states (Kuhn poker: 12 prompts in ~560
    turns of a batch)."""
    first: dict[tuple[int, ...], int] = {}
    pairs: dict[tuple[int, tuple[int, ...]], int] = {}
    where = []
    for p, cands in zip(prefixes, continuations, strict=True):
        u = first.setdefault(tuple(p), len(first))
        where += [pairs.setdefault((u, tuple(c)), len(pairs)) for c in cands]
    return ([list(p) for p in first], [u for u, _ in pairs], [list(c) for _, c in pairs],
            None if len(pairs) == len(where) else where)
