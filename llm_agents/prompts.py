"""Prompts from a game's text observation, the agent's role and the legal action texts.

A prompt has a *system* part (who the agent is: ``{role}``, ``{agent}``, ``{game}`` and the
team's ``{role_prompt}``) and a *user* part (``{observation}``, ``{legal}`` -- the legal
action texts joined by ``legal_separator`` -- and the action mode's ``{instruction}``).
When the tokenizer has a chat template (and ``chat_template=True``) the two parts become
``system`` and ``user`` messages rendered with ``add_generation_prompt=True``; otherwise
they are joined with newlines.

    >>> from llm_agents.prompts import PromptBuilder, PromptConfig
    >>> b = PromptBuilder(PromptConfig(system="{role}:", user="{observation} [{legal}]"))
    >>> b.build(None, game="kuhn", agent="player_0", role="player_0", role_prompt="",
    ...         observation="1p", legal=["Pass", "Bet"], instruction="")
    'player_0:\\n1p [Pass | Bet]\\n'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llm_agents.records import Request

FIELDS = ("role", "agent", "game", "role_prompt", "observation", "legal", "instruction")
"""The ``str.format`` fields prompt templates may use."""


@dataclass(frozen=True)
class PromptConfig:
    """Prompt templates (``str.format`` fields named in the module docstring)."""

    system: str = "You are {role} ({agent}) playing {game}. {role_prompt}"
    user: str = "{observation}\nLegal actions: {legal}\n{instruction}"
    generate_instruction: str = "Reply with one legal action as <action>ACTION</action>."
    score_instruction: str = "Your action:"
    legal_separator: str = " | "
    chat_template: bool = True  # use the tokenizer's chat template when it has one
    candidate_prefix: str = " "  # put before action texts scored after a plain-text prompt

    def __post_init__(self) -> None:
        fields = dict.fromkeys(FIELDS, "")
        for name in ("system", "user"):
            try:
                getattr(self, name).format(**fields)
            except (KeyError, IndexError, ValueError) as err:
                raise ValueError(f"PromptConfig.{name} has a bad field {err}; accepted fields: "
                                 f"{', '.join(FIELDS)}") from None

    def static_text(self) -> str:
        """Every fixed word of the templates (vocabulary for tiny tokenizers)."""
        fields = dict.fromkeys(FIELDS, " ")
        return "\n".join([self.system.format(**fields), self.user.format(**fields),
                          self.generate_instruction, self.score_instruction,
                          self.legal_separator])


class PromptBuilder:
    """Renders prompts and candidate continuations for one :class:`PromptConfig`."""

    def __init__(self, cfg: PromptConfig | None = None) -> None:
        self.cfg = cfg or PromptConfig()

    def uses_chat(self, tokenizer: Any) -> bool:
        return self.cfg.chat_template and bool(getattr(tokenizer, "chat_template", None))

    def build(self, tokenizer: Any, *, game: str, agent: str, role: str, role_prompt: str,
              observation: str, legal: Sequence[str], instruction: str) -> str:
        """The prompt text of one decision."""
        fields = dict(game=game, agent=agent, role=role, role_prompt=role_prompt,
                      observation=observation, legal=self.cfg.legal_separator.join(legal),
                      instruction=instruction)
        system = self.cfg.system.format(**fields).strip()
        user = self.cfg.user.format(**fields).strip()
        if self.uses_chat(tokenizer):
            messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
            return tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                 tokenize=False)
        return f"{system}\n{user}\n" if system else f"{user}\n"

    def candidate(self, tokenizer: Any, action_text: str) -> str:
        """The continuation scored for one legal action."""
        return action_text if self.uses_chat(tokenizer) else self.cfg.candidate_prefix + action_text

    def request(self, tokenizer: Any, *, game: str, agent: str, role: str, role_prompt: str,
                observation: str, legal: Sequence[str], instruction: str,
                parse: Callable[[str], int | None]) -> Request:
        """A :class:`Request` for one decision: prompt, legal texts, scored candidates."""
        prompt = self.build(tokenizer, game=game, agent=agent, role=role, role_prompt=role_prompt,
                            observation=observation, legal=legal, instruction=instruction)
        return Request(prompt, list(legal), [self.candidate(tokenizer, a) for a in legal], parse)
