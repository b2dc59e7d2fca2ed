"""Action modes: how an LLM turns a prompt into one of the legal actions, and how the trainer
re-computes the log-probability of that choice.

* ``generate`` -- free generation, then parsing: ``<action>...</action>`` (last tag wins) or
  the exact text of a legal action, case and whitespace ignored. Output that names no legal
  action is *invalid*: the turn gets ``invalid_penalty``, a ``fallback`` action is played
  (or, with ``on_invalid="end"``, the episode ends there, as in SPIRAL), and the rollout
  counts it -- it never crashes. Trained units: the generated tokens.
* ``score`` -- legal-action scoring: ``pi(a) = softmax(score(prompt, a) / score_temperature)``
  over the legal action texts, sampled (argmax when greedy). Trained unit: the choice, with
  the exact log-probability of the softmax over candidates.

Modes and fallbacks are registered by name (:func:`register_mode`, :data:`FALLBACKS`).
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from games import Game, InvalidAction
from games.core import action_matches, choice_index
from llm_agents.backends.base import Backend, SamplingConfig
from llm_agents.logprobs import (
    continuation_logprobs,
    continuation_token_stats,
    pad_sequences,
    sequence_scores,
    token_logprobs,
)
from llm_agents.prompts import PromptConfig
from llm_agents.records import Decision, Request, Turn
from llm_agents.settings import (  # noqa: F401 - their old home
    FALLBACKS,
    MAX_POLICY_SAMPLES,
    ON_INVALID,
    ActionConfig,
)

log = logging.getLogger(__name__)
FallbackFn = Callable[[np.random.Generator, int], int]
FALLBACK_PROBS: dict[str, Callable[[int], np.ndarray]] = {
    "random": lambda n: np.full(n, 1.0 / n),
    "first": lambda n: np.eye(n)[0],
}
"""The distribution of each fallback over ``n`` legal actions (others are sampled)."""


def match_action(text: str, legal: Sequence[str]) -> int | None:
    """Index of the legal action ``text`` names, or None (none, or several).

    The last ``<action>`` tag wins, else the whole text; whitespace is ignored, and case
    where that names one action (:func:`games.core.action_matches`, as
    :meth:`Game.parse_action` does): ``Bxc3`` is the bishop's capture beside the pawn's
    ``bxc3``, and ``BXC3`` names neither.

    Raises:
        InvalidAction: ``text`` is not a str (None from a backend, bytes), worded as
            :meth:`Game.parse_action` says it.
    """
    if not isinstance(text, str):  # else a bare TypeError from the tag reader
        raise InvalidAction(f"cannot parse {repr(text)[:80]} as an action (not a str); "
                            f"legal: {list(legal)}")
    found = action_matches(text, legal)  # Game.parse_action's matcher: they cannot drift apart
    return found[0] if len(found) == 1 else None


def game_parser(game: Game, agent: str, legal_ids: Sequence[int],
                legal: Sequence[str]) -> Callable[[str], int | None]:
    """A :class:`Request` parser: the game's own ``parse_action`` first, then
    :func:`match_action`."""

    def parse(text: str) -> int | None:
        try:
            action = game.parse_action(agent, text)
        except InvalidAction:
            return match_action(text, legal)
        return list(legal_ids).index(action) if action in legal_ids else None

    return parse


@dataclass
class UnitLogprobs:
    """Log-probabilities of the trained units of a batch of turns.

    ``logp``, ``entropy`` ``[n, L]`` float and ``mask`` ``[n, L]`` bool (True exactly on trained
    units: generated tokens, or the single choice of a scored turn).
    """

    logp: Tensor
    mask: Tensor
    entropy: Tensor


class ActionMode(abc.ABC):
    """Chooses actions for a batch of requests with one backend; re-scores them for training."""

    def __init__(self, cfg: ActionConfig) -> None:
        self.cfg = cfg

    @abc.abstractmethod
    def instruction(self, prompt: PromptConfig) -> str:
        """The instruction put into the prompt."""

    @abc.abstractmethod
    def decide(self, backend: Backend, requests: Sequence[Request], rng: np.random.Generator,
               greedy: bool = False) -> list[Decision]:
        """One decision per request, in one batched backend call."""

    @abc.abstractmethod
    def unit_logprobs(self, model: nn.Module, turns: Sequence[Turn], pad_id: int,
                      device: torch.device, with_entropy: bool = False) -> UnitLogprobs:
        """Log-probabilities of the turns' trained units under ``model`` (with gradients)."""

    def probabilities(self, backend: Backend, requests: Sequence[Request]) -> list[np.ndarray]:
        """``[C]`` probability of each legal action of each request: the scoring softmax."""
        return [d.probs for d in _score_decide(self.cfg, backend, requests, None, True)]


_MODES: dict[str, type[ActionMode]] = {}


def register_mode(name: str) -> Callable[[type[ActionMode]], type[ActionMode]]:
    """Register an :class:`ActionMode` subclass under ``name``."""

    def deco(cls: type[ActionMode]) -> type[ActionMode]:
        _MODES[name] = cls
        return cls

    return deco


def available_modes() -> list[str]:
    """The registered action modes' names, sorted (``ActionConfig(mode=...)`` takes one):
    ``generate`` and ``score`` built in, and those of :func:`register_mode`."""
    return sorted(_MODES)


def make_mode(cfg: ActionConfig) -> ActionMode:
    """The action mode ``cfg.mode``; unknown names list the valid ones."""
    if cfg.mode not in _MODES:
        raise ValueError(f"action mode {cfg.mode!r} unknown; choose one of {available_modes()}")
    return _MODES[cfg.mode](cfg)


def _checkpointed_layers(model: nn.Module) -> list[nn.Module]:
    """Layers with gradient checkpointing on, when this forward pass builds a graph."""
    if not torch.is_grad_enabled():
        return []
    from transformers.modeling_layers import GradientCheckpointingLayer

    return [m for m in model.modules()
            if isinstance(m, GradientCheckpointingLayer) and m.gradient_checkpointing]


@contextmanager
def _checkpointing(layers: Sequence[nn.Module]) -> Iterator[None]:
    """transformers checkpoints a layer only in training mode: switch on exactly those layers
    (not their submodules, so no dropout runs and the ratio stays exact), then restore."""
    modes = [m.training for m in layers]
    for m in layers:
        m.training = True
    try:
        yield
    finally:
        for m, mode in zip(layers, modes, strict=True):
            m.training = mode


def behaviour_logprobs(turns: Sequence[Turn], mask: Tensor) -> Tensor:
    """``[n, L]`` recorded behaviour log-probabilities laid out like ``mask`` (row-major)."""
    flat = [lp for t in turns for lp in t.decision.logprobs]
    out = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    out[mask] = torch.tensor(flat, dtype=torch.float32, device=mask.device)
    return out


@register_mode("generate")
class GenerateMode(ActionMode):
    """Free generation with parsing; see the module docstring."""

    def instruction(self, prompt: PromptConfig) -> str:
        return prompt.generate_instruction

    def decide(self, backend: Backend, requests: Sequence[Request], rng: np.random.Generator,
               greedy: bool = False) -> list[Decision]:
        sampling = self.cfg.sampling
        if greedy and not sampling.greedy:
            sampling = SamplingConfig(**{**sampling.__dict__, "greedy": True})
        gens = backend.generate([r.prompt for r in requests], sampling)
        out = []
        for req, gen in zip(requests, gens, strict=True):
            index = req.parse(gen.text)
            valid = index is not None
            if index is None:
                index = FALLBACKS[self.cfg.fallback](rng, len(req.legal))
            out.append(Decision(index, valid, gen.text, gen.prompt_ids, gen.token_ids,
                                gen.logprobs))
        return out

    def unit_logprobs(self, model: nn.Module, turns: Sequence[Turn], pad_id: int,
                      device: torch.device, with_entropy: bool = False) -> UnitLogprobs:
        prompts = [t.decision.prompt_ids for t in turns]
        completions = [t.decision.completion_ids for t in turns]
        temperature = self.cfg.sampling.temperature
        layers = _checkpointed_layers(model)
        if all(completions) and not layers:  # generated tokens' logits only, prompts run once
            logp, mask, entropy = continuation_token_stats(
                model, prompts, [[c] for c in completions], pad_id, device, temperature,
                with_entropy)
            return UnitLogprobs(logp, mask, entropy)
        batch = pad_sequences(prompts, completions, pad_id, device)  # no KV cache: checkpointing
        with _checkpointing(layers):
            tl = token_logprobs(model, batch, temperature, with_entropy)
        return UnitLogprobs(tl.logp, batch.target, tl.entropy)

    def probabilities(self, backend: Backend, requests: Sequence[Request]) -> list[np.ndarray]:
        """``[C]`` **estimated** behaviour probabilities of each request's legal actions.

        ``policy_samples`` generations per request (one batched call), parsed like
        :meth:`decide`; an invalid output counts as the fallback's distribution over the
        legal actions. Raises ``ValueError`` when ``policy_samples`` is 0: free generation
        has no exact action probabilities.
        """
        n = self.cfg.policy_samples
        if n == 0:
            raise ValueError("action probabilities in generate mode are not exact and "
                             "llm.grpo.action.policy_samples=0 asks for no estimate; set "
                             "llm.grpo.action.policy_samples > 0 (generations per information "
                             "state) for a sampled estimate, llm.grpo.action.mode=score for "
                             "exact ones, or population.nash_conv=false to skip NashConv")
        if not getattr(self, "_said_estimate", False):
            self._said_estimate = True
            log.info("generate mode: action probabilities (NashConv) are a sampled estimate, "
                     "%d generations per information state", n)
        gens = backend.generate([r.prompt for r in requests for _ in range(n)], self.cfg.sampling)
        rng = np.random.default_rng(0)
        out = []
        for i, req in enumerate(requests):
            probs = np.zeros(len(req.legal))
            for gen in gens[i * n : (i + 1) * n]:
                index = req.parse(gen.text)
                if index is not None:
                    probs[index] += 1.0
                elif self.cfg.fallback in FALLBACK_PROBS:
                    probs += FALLBACK_PROBS[self.cfg.fallback](len(req.legal))
                else:
                    probs[FALLBACKS[self.cfg.fallback](rng, len(req.legal))] += 1.0
            out.append(probs / n)
        return out


def _score_decide(cfg: ActionConfig, backend: Backend, requests: Sequence[Request],
                  rng: np.random.Generator | None, greedy: bool) -> list[Decision]:
    scored = backend.score([r.prompt for r in requests], [r.candidates for r in requests],
                           cfg.length_normalize)
    out = []
    for req, sc in zip(requests, scored, strict=True):
        z = sc.logprobs / cfg.score_temperature
        logp = z - np.logaddexp.reduce(z)
        probs = np.exp(logp)
        if greedy or rng is None:
            index = int(np.argmax(logp))
        else:
            index = choice_index(rng, probs / probs.sum())
        out.append(Decision(index, True, req.legal[index], sc.prompt_ids,
                            sc.candidate_ids[index], [float(logp[index])], sc.candidate_ids,
                            probs))
    return out


@register_mode("score")
class ScoreMode(ActionMode):
    """Legal-action scoring; see the module docstring."""

    def instruction(self, prompt: PromptConfig) -> str:
        return prompt.score_instruction

    def decide(self, backend: Backend, requests: Sequence[Request], rng: np.random.Generator,
               greedy: bool = False) -> list[Decision]:
        return _score_decide(self.cfg, backend, requests, rng, greedy)

    def unit_logprobs(self, model: nn.Module, turns: Sequence[Turn], pad_id: int,
                      device: torch.device, with_entropy: bool = False) -> UnitLogprobs:
        counts = [len(t.decision.candidate_ids or []) for t in turns]
        prompts = [t.decision.prompt_ids for t in turns]
        cands = [t.decision.candidate_ids or [] for t in turns]
        layers = _checkpointed_layers(model)
        if layers:  # checkpointing drops the KV cache: one full sequence per candidate
            batch = pad_sequences([p for p, cs in zip(prompts, cands, strict=True) for _ in cs],
                                  [c for cs in cands for c in cs], pad_id, device)
            with _checkpointing(layers):
                logp_tok, mask = token_logprobs(model, batch).logp, batch.target
        else:
            logp_tok, mask = continuation_logprobs(model, prompts, cands, pad_id, device)
        seq = sequence_scores(logp_tok, mask, self.cfg.length_normalize)  # [sum C]
        n, C = len(turns), max(counts)
        row = torch.repeat_interleave(torch.arange(n, device=device),
                                      torch.tensor(counts, device=device))
        col = torch.cat([torch.arange(c, device=device) for c in counts])
        z = torch.full((n, C), -torch.inf, device=device, dtype=seq.dtype)
        z = z.index_put((row, col), seq / self.cfg.score_temperature)
        logp_all = torch.log_softmax(z, -1)  # [n, C]
        choice = torch.tensor([t.decision.index for t in turns], device=device)
        logp = logp_all.gather(1, choice[:, None])  # [n, 1]
        p = logp_all.exp()
        entropy = -(p * logp_all.masked_fill(~torch.isfinite(logp_all), 0.0)).sum(-1, True)
        return UnitLogprobs(logp, torch.ones_like(logp, dtype=torch.bool), entropy)
