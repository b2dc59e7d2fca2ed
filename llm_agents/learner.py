"""``llm_grpo`` in marl's learner registry: an LLM team trained by multi-turn GRPO.

``marl`` never imports ``llm_agents``; this module registers the LLM learner (and, through
``llm_agents.policy``, the ``llm`` policy kind) into ``marl.registry`` when it is imported.
``populations`` imports it, so ``selfplay-train algo=llm_grpo``, leagues and
``load_policy`` of ``llm`` snapshots find it like any other learner.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from games import GameSpec
from llm_agents.build import LLMConfig, build_trainer
from llm_agents.policy import LLMPolicy  # noqa: F401 - registers the "llm" policy kind
from llm_agents.ray_rollouts import RolloutWorkersConfig  # noqa: F401 - part of this API
from llm_agents.trainer import MultiTurnGRPO
from marl.core import Capabilities
from marl.registry import register_learner

LLM_CAPABILITIES = Capabilities(
    discrete=True, continuous=False, on_policy=True, turn_based=True, centralized_critic=False,
    simultaneous=True, team=True, own_rollouts=True, needs_text=True,
)


def build_llm_trainer(spec: GameSpec, cfg: LLMConfig, agents: tuple[str, ...] | None = None,
                      device: str = "cpu", seed: int = 0, game: str | None = None,
                      game_kwargs: Mapping[str, Any] | None = None,
                      workdir: str | Path | None = None, rollouts: Any = None,
                      ray_init: Any = None) -> MultiTurnGRPO:
    """A GRPO trainer over a fresh team for ``game`` (default: ``spec.name``); the team
    plays every seat (``agents`` is not used: an LLM team trains on whole episodes);
    ``rollouts``/``ray_init``: rollout workers (:mod:`llm_agents.ray_rollouts`)."""
    name = game or spec.name
    return build_trainer(cfg, [name], {name: dict(game_kwargs or {})}, seed=seed,
                         device=device, workdir=workdir, rollouts=rollouts, ray_init=ray_init)


register_learner("llm_grpo", config=LLMConfig, policy="llm", capabilities=LLM_CAPABILITIES,
                 section="llm", factory=build_llm_trainer)(MultiTurnGRPO)
