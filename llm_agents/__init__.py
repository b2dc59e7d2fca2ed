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

from llm_agents.actions import ActionConfig, available_modes, make_mode, match_action
from llm_agents.backends import (
    Backend,
    SamplingConfig,
    TransformersBackend,
    VLLMBackend,
    available_backends,
    make_backend,
)
from llm_agents.opponents import OpponentPool
from llm_agents.policy import LLMPolicy
from llm_agents.prompts import PromptBuilder, PromptConfig
from llm_agents.rollout import EpisodeJob, RolloutBatch, RolloutEngine
from llm_agents.team import RoleBinding, Team, TeamModel
from llm_agents.trainer import GRPOConfig, MultiTurnGRPO

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
