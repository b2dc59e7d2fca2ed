"""The ``vllm`` backend (GPU only): fast batched sampling with ``vllm.LLM``.

* :meth:`VLLMBackend.generate_ids` sends token-id prompts with one ``SamplingParams`` per
  request, each with its **own seed** (drawn from the backend's seeded generator): the K
  episodes of a GRPO group start from identical prompts, and one shared seed would make
  vLLM return K identical samples (every group-relative advantage 0).
* Sampled-token log-probabilities are those of the sampling distribution, logits divided
  by the temperature -- what the trainer's ratio recomputes
  (:func:`llm_agents.logprobs.token_logprobs`) and what the transformers backend records.
  vLLM returns raw (temperature-free) log-probabilities by default, so the engine is built
  with ``logprobs_mode="processed_logprobs"`` (vLLM >= 0.10.2). With ``top_p < 1`` vLLM's
  processed log-probabilities are renormalized over the nucleus while the trainer's are
  not; the trainer recomputes old log-probabilities itself by default
  (``recompute_old_logprobs``).
* :meth:`VLLMBackend.score_ids` scores candidates in **one pass per prompt**: with the
  ``transformers`` model the backend was built from, through
  :func:`llm_agents.logprobs.continuation_logprobs` (prompt run once, candidates on a
  repeated key/value cache -- the weights the engine serves after every push); built from a
  path only, with one ``generate`` call for all candidates with ``prompt_logprobs`` (vLLM
  skips prefix caching for requests that ask for prompt log-probabilities, so each
  candidate re-runs its prompt there).
* :meth:`VLLMBackend.load_weights` pushes weights through vLLM's supported route: the
  worker extension :class:`~llm_agents.backends.vllm_worker.WeightSyncExtension` and
  ``LLM.collective_rpc("load_named_weights", ...)``, in buckets of about ``push_bytes``;
  it works with the default multi-process engine. A LoRA model (``peft``) is pushed merged.
  The prefix cache is reset afterwards.

The trainer keeps a ``transformers`` copy of the model for gradients; the vLLM engine
serves rollouts. Install with ``pip install 'selfplay[vllm]'``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from llm_agents.backends.base import Backend, Generation, SamplingConfig, register_backend
from llm_agents.backends.vllm_worker import EXTENSION
from llm_agents.settings import backend_unavailable, prepare_vllm_env
from marl.configs import did_you_mean

log = logging.getLogger(__name__)

SCORE_WITH = ("auto", "transformers", "engine")


def _weight_buckets(weights: Mapping[str, torch.Tensor],
                    max_bytes: int) -> list[list[tuple[str, torch.Tensor]]]:
    """``(name, CPU tensor)`` lists of about ``max_bytes`` each (one tensor at least)."""
    out: list[list[tuple[str, torch.Tensor]]] = [[]]
    size = 0
    for name, t in weights.items():
        t = t.detach().to("cpu").contiguous()
        n = t.numel() * t.element_size()
        if out[-1] and size + n > max_bytes:
            out.append([])
            size = 0
        out[-1].append((name, t))
        size += n
    return [b for b in out if b]


@register_backend("vllm")
class VLLMBackend(Backend):
    """Generation and scoring with a ``vllm.LLM`` engine.

    Args:
        model: local model directory (or a hub name the user has), or a ``transformers``
            model loaded from one (its ``name_or_path`` is served; it also scores, see
            ``score_with``, and is merged before a push when it carries LoRA adapters).
        tokenizer: the model's tokenizer (default: the engine's).
        seed: engine seed and seed of the per-request sampling seeds.
        gpu_memory_utilization: fraction of GPU memory vLLM may take (leave room for the
            trainer's copy of the model when colocated).
        score_with: ``auto`` (the transformers model when given, else the engine),
            ``transformers`` or ``engine``.
        push_bytes: weights pushed per ``collective_rpc`` call, about.
        vllm_module: the module providing ``LLM`` and ``SamplingParams`` (default: ``vllm``;
            tests pass a recording fake).
        **llm_kwargs: passed to ``vllm.LLM`` (``dtype``, ``max_model_len``...).
    """

    def __init__(self, model: Any, tokenizer: Any = None, seed: int = 0,
                 gpu_memory_utilization: float = 0.3, score_with: str = "auto",
                 push_bytes: int = 2**28, vllm_module: Any = None, **llm_kwargs: Any) -> None:
        if score_with not in SCORE_WITH:
            raise ValueError(f"score_with={score_with!r} unknown; choose one of "
                             f"{list(SCORE_WITH)}{did_you_mean(score_with, SCORE_WITH)}")
        prepare_vllm_env()  # before vllm is imported: its servers on loopback unless
        # VLLM_HOST_IP says otherwise (a team's backend and one built directly alike)
        if vllm_module is None:
            why = backend_unavailable("vllm")
            if why:  # a setting the user chose, not a bug: one line, no traceback
                raise ValueError(f"the vllm backend cannot run here: {why}; use backend "
                                 "'transformers'")
            import vllm as vllm_module
        path = model if isinstance(model, str | os.PathLike) else (
            getattr(model, "name_or_path", "")
            or getattr(getattr(model, "config", None), "name_or_path", ""))
        if not path:
            raise ValueError("vllm serves a model directory: save the model with "
                             "save_pretrained() and pass its path")
        self._vllm = vllm_module
        llm_kwargs.setdefault("logprobs_mode", "processed_logprobs")  # logits / temperature
        llm_kwargs.setdefault("enable_prefix_caching", True)
        self.llm = vllm_module.LLM(model=str(path), seed=seed,
                                   gpu_memory_utilization=gpu_memory_utilization,
                                   worker_extension_cls=EXTENSION, **llm_kwargs)
        self.tokenizer = tokenizer if tokenizer is not None else self.llm.get_tokenizer()
        # not named ``model``: TeamModel.sync skips backends that share the trainer's module
        self.hf_model = model if isinstance(model, nn.Module) else None
        if score_with == "transformers" and self.hf_model is None:
            raise ValueError("score_with='transformers' needs the transformers model, not a path")
        self._scorer = None
        if score_with != "engine" and self.hf_model is not None:
            from llm_agents.backends.hf import TransformersBackend

            self._scorer = TransformersBackend(self.hf_model, self.tokenizer, seed=seed)
        self.seed = seed
        self.push_bytes = push_bytes
        self._seeds = np.random.default_rng(seed)
        self._warned_top_p = False

    def reseed(self, seed: int) -> None:
        self._seeds = np.random.default_rng(seed)

    def to(self, device: str | torch.device) -> VLLMBackend:
        """Move the scoring model (the engine stays where vLLM put it)."""
        if self._scorer is not None:
            self._scorer.to(device)
        return self

    # ---------------------------------------------------------------- generation
    def _params(self, sampling: SamplingConfig, n: int) -> list[Any]:
        """One ``SamplingParams`` per request, each with a distinct seed (None when greedy)."""
        if sampling.top_p < 1 and not self._warned_top_p:
            self._warned_top_p = True
            log.warning("vllm with top_p=%s: recorded log-probabilities are renormalized over "
                        "the nucleus; the trainer recomputes its own", sampling.top_p)
        base = int(self._seeds.integers(2**31 - n))
        return [self._vllm.SamplingParams(
            n=1, max_tokens=sampling.max_new_tokens,
            temperature=0.0 if sampling.greedy else sampling.temperature,
            top_p=sampling.top_p, stop=list(sampling.stop), include_stop_str_in_output=True,
            ignore_eos=not sampling.stop_at_eos, logprobs=0,
            seed=None if sampling.greedy else base + i,
        ) for i in range(n)]

    def generate_ids(self, prompt_ids: Sequence[Sequence[int]],
                     sampling: SamplingConfig) -> list[Generation]:
        prompts = [{"prompt_token_ids": list(p)} for p in prompt_ids]
        outs = self.llm.generate(prompts, self._params(sampling, len(prompts)), use_tqdm=False)
        gens = []
        for p, out in zip(prompt_ids, outs, strict=True):
            o = out.outputs[0]
            ids = list(o.token_ids)
            lps = [float(d[t].logprob) for t, d in zip(ids, o.logprobs or [], strict=False)]
            if len(lps) != len(ids):
                raise RuntimeError(f"vllm returned {len(lps)} log-probabilities for {len(ids)} "
                                   "tokens")
            gens.append(Generation(text=o.text, token_ids=ids, logprobs=lps, prompt_ids=list(p),
                                   finish_reason="stop" if o.finish_reason == "stop" else "length"))
        return gens

    # ------------------------------------------------------------------- scoring
    def score_ids(self, prompt_ids: Sequence[Sequence[int]],
                  candidate_ids: Sequence[Sequence[Sequence[int]]],
                  length_normalize: bool = False) -> list[np.ndarray]:
        if self._scorer is not None:  # one pass per prompt, candidates on its KV cache
            return self._scorer.score_ids(prompt_ids, candidate_ids, length_normalize)
        return self._engine_scores(prompt_ids, candidate_ids, length_normalize)

    def _engine_scores(self, prompt_ids: Sequence[Sequence[int]],
                       candidate_ids: Sequence[Sequence[Sequence[int]]],
                       length_normalize: bool) -> list[np.ndarray]:
        """One ``generate`` call for every distinct ``prompt + candidate`` sequence."""
        seqs: dict[tuple[int, ...], int] = {}  # sequence -> prompt length
        for p, cands in zip(prompt_ids, candidate_ids, strict=True):
            for c in cands:
                seqs.setdefault((*p, *c), len(p))
        if not seqs:
            return [np.zeros(0) for _ in candidate_ids]
        params = self._vllm.SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=1.0)
        outs = self.llm.generate([{"prompt_token_ids": list(s)} for s in seqs], params,
                                 use_tqdm=False)
        score = {}
        for (seq, start), out in zip(seqs.items(), outs, strict=True):
            lps = [float(out.prompt_logprobs[i][seq[i]].logprob) for i in range(start, len(seq))]
            score[seq] = float(np.mean(lps) if length_normalize else np.sum(lps))
        return [np.asarray([score[(*p, *c)] for c in cands], np.float64)
                for p, cands in zip(prompt_ids, candidate_ids, strict=True)]

    # ------------------------------------------------------------------- weights
    def load_weights(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        """Push ``state_dict`` (``transformers`` names) to every worker via ``collective_rpc``.

        A state dict with LoRA tensors is replaced by the backend's model merged
        (:func:`llm_agents.lora.merged_state_dict`): vLLM serves the plain architecture.
        """
        if any(".lora_" in k for k in state_dict):
            from llm_agents.lora import merged_state_dict

            if self.hf_model is None:
                raise ValueError("LoRA weights need the transformers model to merge into; build "
                                 "the vllm backend from the model, not a path")
            state_dict = merged_state_dict(self.hf_model)
        buckets = _weight_buckets(state_dict, self.push_bytes)
        for bucket in buckets:
            self.llm.collective_rpc("load_named_weights", args=(bucket,))
        self.llm.reset_prefix_cache()  # cached blocks hold the old weights' keys/values
        log.debug("pushed %d tensors into the vllm engine in %d calls", len(state_dict),
                  len(buckets))

    def close(self) -> None:
        del self.llm
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
