"""The vLLM worker extension that takes pushed weights (imported by vLLM's workers).

vLLM mixes ``worker_extension_cls`` into every worker class, in every worker process, so
``LLM.collective_rpc("load_named_weights", args=(weights,))`` reaches the model whatever the
engine's layout (in-process, multi-process V1 engine core, tensor parallel). This module
imports nothing from vLLM: the extension only uses the worker's ``model_runner.model``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

EXTENSION = "llm_agents.backends.vllm_worker.WeightSyncExtension"
"""The qualified name given to ``vllm.LLM(worker_extension_cls=...)``."""


class WeightSyncExtension:
    """Methods added to each vLLM worker (``self`` is the worker)."""

    model_runner: object

    def load_named_weights(self, weights: Sequence[tuple[str, torch.Tensor]]) -> int:
        """Load ``(name, tensor)`` pairs (``transformers`` names) into this worker's model;
        returns how many tensors were given (the model's ``load_weights`` maps the names)."""
        model = self.model_runner.model  # type: ignore[attr-defined]
        model.load_weights(weights=list(weights))
        return len(weights)
