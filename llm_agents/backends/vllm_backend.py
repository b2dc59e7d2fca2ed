"""The ``vllm`` backend (GPU only): fast batched sampling with ``vllm.LLM``.

* :meth:`VLLMBackend.generate_ids` sends token-id prompts with ``SamplingParams(logprobs=0)``,
  which returns the log-probability of every sampled token (computed from the logits after
  temperature scaling, like the transformers backend).
* :meth:`VLLMBackend.score_ids` asks for ``prompt_logprobs`` of ``prompt + candidate`` and
  sums the candidate positions.
* :meth:`VLLMBackend.load_weights` pushes the trainer's updated weights into the engine's
  model (in-process engine, tensor parallel size 1) and clears the prefix cache.

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

from llm_agents.backends.base import Backend, Generation, SamplingConfig, register_backend

log = logging.getLogger(__name__)


def _engine_model(llm: Any) -> Any | None:
    """The ``nn.Module`` inside an in-process vLLM engine (V1 and V0 layouts), or None."""
    for path in (("llm_engine", "model_executor", "driver_worker", "worker", "model_runner",
                  "model"),
                 ("llm_engine", "model_executor", "driver_worker", "model_runner", "model")):
        obj = llm
        try:
            for name in path:
                obj = getattr(obj, name)
        except AttributeError:
            continue
        return obj
    return None


def _load_on_worker(worker: Any, weights: list[tuple[str, torch.Tensor]]) -> None:
    worker.model_runner.model.load_weights(weights)


@register_backend("vllm")
class VLLMBackend(Backend):
    """Generation and scoring with a ``vllm.LLM`` engine.

    Args:
        model: local model directory (or a hub name the user has), or a ``transformers``
            model loaded from one (its ``name_or_path`` is served).
        tokenizer: unused (the engine loads the directory's tokenizer); accepted so every
            backend is built as ``make_backend(name, model, tokenizer, **kwargs)``.
        seed: engine seed.
        gpu_memory_utilization: fraction of GPU memory vLLM may take (leave room for the
            trainer's copy of the model when colocated).
        **llm_kwargs: passed to ``vllm.LLM`` (``dtype``, ``max_model_len``...).
    """

    def __init__(self, model: Any, tokenizer: Any = None, seed: int = 0,
                 gpu_memory_utilization: float = 0.3, **llm_kwargs: Any) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("the vllm backend needs a CUDA GPU; use backend 'transformers'")
        path = model if isinstance(model, str | os.PathLike) else getattr(model, "name_or_path", "")
        if not path:
            raise ValueError("vllm serves a model directory: save the model with "
                             "save_pretrained() and pass its path")
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # weights can be pushed
        import vllm

        self._vllm = vllm
        self.llm = vllm.LLM(model=str(path), seed=seed,
                            gpu_memory_utilization=gpu_memory_utilization,
                            enable_prefix_caching=True, **llm_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.seed = seed
        self._calls = 0

    def _params(self, sampling: SamplingConfig) -> Any:
        self._calls += 1
        return self._vllm.SamplingParams(
            n=1, max_tokens=sampling.max_new_tokens,
            temperature=0.0 if sampling.greedy else sampling.temperature,
            top_p=sampling.top_p, stop=list(sampling.stop), include_stop_str_in_output=True,
            ignore_eos=not sampling.stop_at_eos, logprobs=0,
            seed=self.seed + self._calls,
        )

    def generate_ids(self, prompt_ids: Sequence[Sequence[int]],
                     sampling: SamplingConfig) -> list[Generation]:
        prompts = [{"prompt_token_ids": list(p)} for p in prompt_ids]
        outs = self.llm.generate(prompts, self._params(sampling), use_tqdm=False)
        gens = []
        for p, out in zip(prompt_ids, outs, strict=True):
            o = out.outputs[0]
            ids = list(o.token_ids)
            lps = [float(d[t].logprob) for t, d in zip(ids, o.logprobs or [], strict=False)]
            gens.append(Generation(text=o.text, token_ids=ids, logprobs=lps, prompt_ids=list(p),
                                   finish_reason="stop" if o.finish_reason == "stop" else "length"))
        return gens

    def score_ids(self, prompt_ids: Sequence[Sequence[int]],
                  candidate_ids: Sequence[Sequence[Sequence[int]]],
                  length_normalize: bool = False) -> list[np.ndarray]:
        params = self._vllm.SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=1.0)
        seqs = [(len(p), [*p, *c]) for p, cands in zip(prompt_ids, candidate_ids, strict=True)
                for c in cands]
        outs = self.llm.generate([{"prompt_token_ids": s} for _, s in seqs], params,
                                 use_tqdm=False)
        scores = []
        for (start, seq), out in zip(seqs, outs, strict=True):
            lps = [float(out.prompt_logprobs[i][seq[i]].logprob) for i in range(start, len(seq))]
            scores.append(np.mean(lps) if length_normalize else np.sum(lps))
        res, k = [], 0
        for cands in candidate_ids:
            res.append(np.asarray(scores[k : k + len(cands)], np.float64))
            k += len(cands)
        return res

    def load_weights(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        """Copy ``state_dict`` (a ``transformers`` model's names) into the engine's model."""
        weights = list(state_dict.items())
        model = _engine_model(self.llm)
        if model is not None:
            model.load_weights(weights)
        elif hasattr(self.llm, "collective_rpc"):  # newer engines: run on every worker
            self.llm.collective_rpc(_load_on_worker, args=(weights,))
        else:
            raise RuntimeError("cannot reach the vLLM engine's model to load weights; run it "
                               "in-process (VLLM_ENABLE_V1_MULTIPROCESSING=0, tensor parallel 1)")
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()
        log.debug("pushed %d tensors into the vllm engine", len(state_dict))

    def close(self) -> None:
        del self.llm
        torch.cuda.empty_cache()
