"""The one interface every LLM backend implements, and the registry that builds them by name.

A backend owns a tokenizer and an inference engine and answers two batched questions:

* :meth:`Backend.generate` -- sample a continuation of each prompt: its text, its token
  ids and the log-probability of every sampled token under the sampling distribution
  (logits divided by the temperature);
* :meth:`Backend.score` -- the log-probability of each candidate continuation of each
  prompt (the sum, or mean, of its token log-probabilities).

Both work on token ids underneath (:meth:`generate_ids`, :meth:`score_ids`) so that the
trainer sees exactly the tokens the engine saw.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import torch

from llm_agents.settings import SamplingConfig  # noqa: F401 - its old home
from marl.configs import did_you_mean


@dataclass
class Generation:
    """One sampled continuation.

    Attributes:
        text: decoded completion (special tokens dropped).
        token_ids: completion token ids, the EOS / stop tokens included.
        logprobs: ``[len(token_ids)]`` log-probability of each sampled token.
        prompt_ids: the prompt's token ids.
        finish_reason: ``"stop"`` (EOS or stop string) or ``"length"``.
    """

    text: str
    token_ids: list[int]
    logprobs: list[float]
    prompt_ids: list[int]
    finish_reason: str = "length"


@dataclass
class Scored:
    """Log-probabilities of the candidate continuations of one prompt.

    Attributes:
        logprobs: ``[C]`` summed (or mean) token log-probability of each candidate.
        prompt_ids: the prompt's token ids.
        candidate_ids: token ids of each candidate, as scored after the prompt.
    """

    logprobs: np.ndarray
    prompt_ids: list[int]
    candidate_ids: list[list[int]] = field(default_factory=list)


CANDIDATE_MEMO = 4096  # candidate texts whose token ids a backend keeps
PROMPT_MEMO = 4096  # prompt texts whose token ids a backend keeps


class Backend(abc.ABC):
    """Batched generation and scoring with one model."""

    tokenizer: Any

    # ----------------------------------------------------------------- to implement
    @abc.abstractmethod
    def generate_ids(self, prompt_ids: Sequence[Sequence[int]],
                     sampling: SamplingConfig) -> list[Generation]:
        """Sample one continuation of each tokenized prompt."""

    @abc.abstractmethod
    def score_ids(self, prompt_ids: Sequence[Sequence[int]],
                  candidate_ids: Sequence[Sequence[Sequence[int]]],
                  length_normalize: bool = False) -> list[np.ndarray]:
        """``[C_i]`` log-probabilities of candidates ``candidate_ids[i]`` after prompt ``i``."""

    # ------------------------------------------------------------------- optional
    def load_weights(self, state_dict: Mapping[str, torch.Tensor]) -> None:  # noqa: B027
        """Push a trainer's updated weights into the engine (no-op for shared modules)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the engine."""

    # ------------------------------------------------------------------- provided
    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    def encode_prompts(self, prompts: Sequence[str]) -> list[list[int]]:
        """Token ids of prompts; special tokens (BOS) only where no chat template put them.

        Like candidates' (:meth:`encode_candidates`), ids are kept per text (up to
        ``PROMPT_MEMO`` texts): a GRPO group's episodes start from the same prompts and small
        games repeat theirs (Kuhn poker: 12 distinct prompts in ~560 turns, whose one-by-one
        tokenizing was ~15 % of a training step on the tiny models). The others are tokenized
        in one batched call."""
        tok, add = self.tokenizer, not self.has_chat_template
        memo = getattr(self, "_prompt_ids", None)
        if memo is None or memo[0] is not tok or memo[1] != add:  # new tokenizer or template
            memo = self._prompt_ids = (tok, add, {})
        known = memo[2]
        new = list(dict.fromkeys(p for p in prompts if p not in known))
        if new:
            if len(known) + len(new) > PROMPT_MEMO:  # full: keep this call's prompts only
                known.clear()
                new = list(dict.fromkeys(prompts))
            ids = tok(new, add_special_tokens=add)["input_ids"]
            known.update(zip(new, map(tuple, ids), strict=True))
        return [list(known[p]) for p in prompts]  # callers get their own lists

    def encode_candidates(self, candidates: Sequence[str]) -> list[list[int]]:
        """Token ids of continuations (no special tokens); an empty text gets EOS.

        Ids are kept per text for the current tokenizer (up to ``CANDIDATE_MEMO`` texts):
        the legal-action strings scored every turn repeat, and tokenizing them again was
        about 10 % of an LLM training step on the tiny models."""
        tok = self.tokenizer
        memo = getattr(self, "_candidate_ids", None)
        if memo is None or memo[0] is not tok:  # a new tokenizer starts a new memo
            memo = self._candidate_ids = (tok, {})
        known = memo[1]
        out = []
        for c in candidates:
            ids = known.get(c)
            if ids is None:
                ids = (tuple(tok(c, add_special_tokens=False)["input_ids"])
                       or (int(tok.eos_token_id),))
                if len(known) >= CANDIDATE_MEMO:
                    known.clear()
                known[c] = ids
            out.append(list(ids))  # callers get their own lists
        return out

    def generate(self, prompts: Sequence[str], sampling: SamplingConfig | None = None
                 ) -> list[Generation]:
        """Sample one continuation of each prompt (text in, text and token ids out)."""
        return self.generate_ids(self.encode_prompts(prompts), sampling or SamplingConfig())

    def score(self, prompts: Sequence[str], candidates: Sequence[Sequence[str]],
              length_normalize: bool = False) -> list[Scored]:
        """Log-probabilities of each candidate continuation of each prompt."""
        if len(prompts) != len(candidates):
            raise ValueError(f"score: {len(prompts)} prompts but {len(candidates)} candidate lists")
        pids = self.encode_prompts(prompts)
        cids = [self.encode_candidates(c) for c in candidates]
        lps = self.score_ids(pids, cids, length_normalize)
        return [Scored(lp, p, c) for lp, p, c in zip(lps, pids, cids, strict=True)]


_BACKENDS: dict[str, Callable[..., Backend]] = {}
B = TypeVar("B", bound=Callable[..., Backend])


def register_backend(name: str) -> Callable[[B], B]:
    """Register a backend class (or factory) under ``name``."""

    def deco(factory: B) -> B:
        _BACKENDS[name] = factory
        return factory

    return deco


def available_backends() -> list[str]:
    """Registered backend names, sorted."""
    return sorted(_BACKENDS)


def make_backend(name: str, *args: Any, **kwargs: Any) -> Backend:
    """Build the backend registered as ``name``; unknown names list the valid ones."""
    if name not in _BACKENDS:
        raise ValueError(f"backend {name!r} unknown; choose one of {available_backends()}"
                         f"{did_you_mean(name, available_backends())}")
    return _BACKENDS[name](*args, **kwargs)
