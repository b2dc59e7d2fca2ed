"""LLM backends behind one interface: ``transformers`` (CPU/GPU) and ``vllm`` (GPU).

    >>> from llm_agents.backends import available_backends
    >>> available_backends()
    ['transformers', 'vllm']
"""

from llm_agents.backends.base import (
    Backend,
    Generation,
    SamplingConfig,
    Scored,
    available_backends,
    make_backend,
    register_backend,
)
from llm_agents.backends.hf import TransformersBackend, load_pretrained, resolve_device
from llm_agents.backends.vllm_backend import VLLMBackend  # imports vllm only when built

__all__ = [
    "Backend",
    "Generation",
    "SamplingConfig",
    "Scored",
    "TransformersBackend",
    "VLLMBackend",
    "available_backends",
    "load_pretrained",
    "make_backend",
    "register_backend",
    "resolve_device",
]
