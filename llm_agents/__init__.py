"""LLM agent teams: backends, prompts, action parsing, batched rollouts and multi-turn GRPO.

* :mod:`llm_agents.backends` -- one interface (``generate``, ``score``) over ``transformers``
  (CPU/GPU) and ``vllm`` (GPU); :mod:`llm_agents.tiny` builds tiny models in code.
* :class:`Team` -- roles bound to models and role prompts (one shared model or one per role).
* :class:`RolloutEngine` -- many games in flight, one batched backend call per step.
* :class:`MultiTurnGRPO` -- group-relative PPO over LLM turns with the agent-wise and
  role-conditioned normalizations of ``marl.advantages``.
* :class:`LLMPolicy` -- a team as a ``marl.core.Policy`` (kind ``llm``): snapshots, ratings,
  matches against classic MARL members.
"""

import importlib
import importlib.util
from typing import Any

POLICY_MODULES = {"llm": "llm_agents.policy"}
"""Policy kind -> the module that registers it: ``marl.core.load_policy`` imports it when it
meets an ``llm`` snapshot (it reads this literal from the installed package without importing
it, so keep it a plain dict literal)."""

_HOMES = {  # name -> module: loaded on first use, so `import llm_agents.settings` (the
    # experiment's llm section, checked before torch loads) does not import torch
    "ActionConfig": "llm_agents.settings",
    "available_modes": "llm_agents.actions",
    "make_mode": "llm_agents.actions",
    "match_action": "llm_agents.actions",
    "Backend": "llm_agents.backends",
    "SamplingConfig": "llm_agents.settings",
    "TransformersBackend": "llm_agents.backends",
    "VLLMBackend": "llm_agents.backends",
    "available_backends": "llm_agents.backends",
    "make_backend": "llm_agents.backends",
    "OpponentPool": "llm_agents.opponents",
    "LLMPolicy": "llm_agents.policy",
    "PromptBuilder": "llm_agents.prompts",
    "PromptConfig": "llm_agents.prompts",
    "EpisodeJob": "llm_agents.rollout",
    "RolloutBatch": "llm_agents.rollout",
    "RolloutEngine": "llm_agents.rollout",
    "RoleBinding": "llm_agents.team",
    "Team": "llm_agents.team",
    "TeamModel": "llm_agents.team",
    "GRPOConfig": "llm_agents.settings",
    "MultiTurnGRPO": "llm_agents.trainer",
}


def __getattr__(name: str) -> Any:
    """``llm_agents.Team`` and the other names of ``__all__``, imported when first used; a
    submodule (``llm_agents.trainer``) too, as when the package imported them all."""
    home = _HOMES.get(name)
    if home is None:
        if name.isidentifier() and not name.startswith("_") and importlib.util.find_spec(
                f"{__name__}.{name}"):
            return importlib.import_module(f"{__name__}.{name}")  # sets the attribute
        raise AttributeError(f"module 'llm_agents' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "ActionConfig",
    "Backend",
    "EpisodeJob",
    "GRPOConfig",
    "LLMPolicy",
    "MultiTurnGRPO",
    "OpponentPool",
    "PromptBuilder",
    "PromptConfig",
    "RoleBinding",
    "RolloutBatch",
    "RolloutEngine",
    "SamplingConfig",
    "Team",
    "TeamModel",
    "TransformersBackend",
    "VLLMBackend",
    "available_backends",
    "available_modes",
    "make_backend",
    "make_mode",
    "match_action",
]
