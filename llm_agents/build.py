"""Build an LLM team and its trainer from one config (what ``configs/llm/`` presets set).

``model: tiny`` builds a word-level tokenizer from the games' own texts and a tiny
random-init causal LM in code (no download, for CPU demos and tests); any other value is a
local model directory or a hub name the user has, loaded with ``transformers``
(``AutoTokenizer`` / ``AutoModelForCausalLM``). ``team: shared`` binds every role to one
model; ``team: per_role`` gives each role of the games its own copy.

    >>> from llm_agents.build import LLMConfig, build_trainer
    >>> from llm_agents.tiny import TinyModelConfig
    >>> cfg = LLMConfig(tiny=TinyModelConfig(n_layer=1, n_embd=16), corpus_episodes=20)
    >>> trainer = build_trainer(cfg, ["openspiel/kuhn_poker"], device="cpu")
    >>> sorted(trainer.team.models)
    ['shared']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import games
from llm_agents.prompts import PromptConfig
from llm_agents.team import Team
from llm_agents.tiny import (
    TinyModelConfig,
    build_model,
    build_tokenizer,
    game_corpus,
    save_model_dir,
)
from llm_agents.trainer import GRPOConfig, MultiTurnGRPO

TEAMS = ("shared", "per_role")
BACKENDS = ("transformers", "vllm")


@dataclass(frozen=True)
class LLMConfig:
    """Which model(s) an LLM team uses and how its GRPO trainer runs."""

    model: str = "tiny"  # tiny (built in code from the game texts) | a model directory | hub name
    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)  # model=tiny: its size
    corpus_episodes: int = 200  # model=tiny: random episodes whose texts make the vocabulary
    backend: str = "transformers"  # transformers (CPU/GPU) | vllm (GPU)
    team: str = "shared"  # shared: one model for every role | per_role: one model per role
    role_prompts: dict[str, str] = field(default_factory=dict)  # role -> prompt line
    iterations: int = 100  # GRPO iterations (population=none) or per league generation
    grpo: GRPOConfig = field(default_factory=GRPOConfig)

    def __post_init__(self) -> None:
        if self.team not in TEAMS:
            raise ValueError(f"llm team {self.team!r} unknown; choose one of {list(TEAMS)}")
        if self.backend not in BACKENDS:
            raise ValueError(f"llm backend {self.backend!r} unknown; choose one of "
                             f"{list(BACKENDS)}")
        if self.iterations < 1:
            raise ValueError(f"llm iterations={self.iterations!r}; expected an integer >= 1")
        if not self.model:
            raise ValueError("llm model is empty; use 'tiny' or a model directory / hub name")


def _roles(games_: Sequence[str], game_kwargs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    roles: list[str] = []
    for g in games_:
        for a in games.make(g, **game_kwargs.get(g, {})).spec.agents:
            if a.role not in roles:
                roles.append(a.role)
    return roles


def _load(cfg: LLMConfig, games_: Sequence[str], game_kwargs: Mapping[str, Mapping[str, Any]],
          count: int) -> list[tuple[Any, Any]]:
    """``count`` (model, tokenizer) pairs; tiny models differ by their init seed."""
    if cfg.model == "tiny":
        prompt = cfg.grpo.prompt
        texts = [prompt.static_text(), PromptConfig().static_text(), *cfg.role_prompts.values()]
        for i, g in enumerate(games_):
            texts += game_corpus(g, cfg.corpus_episodes, seed=cfg.grpo.seed + i,
                                 **game_kwargs.get(g, {}))
        tok = build_tokenizer(texts)
        return [(build_model(tok, dataclasses.replace(cfg.tiny, seed=cfg.tiny.seed + k)), tok)
                for k in range(count)]
    if cfg.model == "???":  # Hydra's mark for a value the user must give (configs/llm/hf.yaml)
        raise ValueError("llm.model is not set; give llm.model=<model directory or hub name>")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(cfg.model)
        models = [AutoModelForCausalLM.from_pretrained(cfg.model) for _ in range(count)]
    except OSError as err:
        raise ValueError(f"llm model {cfg.model!r} could not be loaded ({err}); give 'tiny', a "
                         "local model directory or a hub name available here") from err
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return [(m, tok) for m in models]


def _served(cfg: LLMConfig, pairs: list[tuple[Any, Any]], names: Sequence[str],
            workdir: str | Path | None) -> None:
    """vLLM serves model directories: write tiny models to ``workdir/models/<name>``."""
    if cfg.backend != "vllm" or cfg.model != "tiny":
        return
    if workdir is None:
        raise ValueError("llm backend 'vllm' with model 'tiny' needs a folder to write the "
                         "model to (pass workdir)")
    for (model, tok), name in zip(pairs, names, strict=True):
        path = save_model_dir(Path(workdir) / "models" / name, model, tok)
        model.config._name_or_path = model.name_or_path = str(path)


def build_team(cfg: LLMConfig, games_: Sequence[str],
               game_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
               workdir: str | Path | None = None) -> Team:
    """The team ``cfg`` describes for ``games_`` (their roles, their texts for tiny models);
    ``workdir`` holds tiny models written for the vLLM backend."""
    kw = game_kwargs or {}
    backend_kw: dict[str, Any] = {"seed": cfg.grpo.seed}
    if cfg.team == "shared":
        pairs = _load(cfg, games_, kw, 1)
        _served(cfg, pairs, ["shared"], workdir)
        ((model, tok),) = pairs
        return Team.shared(model, tok, cfg.role_prompts, backend=cfg.backend, **backend_kw)
    roles = _roles(games_, kw)
    pairs = _load(cfg, games_, kw, len(roles))
    _served(cfg, pairs, roles, workdir)
    return Team.per_role(dict(zip(roles, pairs, strict=True)), cfg.role_prompts,
                         backend=cfg.backend, **backend_kw)


def build_trainer(cfg: LLMConfig, games_: Sequence[str],
                  game_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
                  seed: int | None = None, device: str | None = None,
                  workdir: str | Path | None = None) -> MultiTurnGRPO:
    """A :class:`MultiTurnGRPO` over a fresh team; ``seed``/``device`` override ``cfg.grpo``."""
    over: dict[str, Any] = {}
    if seed is not None:
        over["seed"] = seed
    if device is not None:
        over["device"] = device
    cfg = dataclasses.replace(cfg, grpo=dataclasses.replace(cfg.grpo, **over))
    team = build_team(cfg, games_, game_kwargs, workdir)
    return MultiTurnGRPO(team, list(games_), cfg.grpo, game_kwargs=game_kwargs)
