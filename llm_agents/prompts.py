"""Prompts from a game's text observation, the agent's role and the legal action texts.

A prompt has a *system* part (who the agent is: ``{role}``, ``{agent}``, ``{game}``, the
team's ``{role_prompt}`` and the game's ``{rules}``) and a *user* part (``{observation}`` --
the game's raw text view --, ``{state}`` -- a readable view of it with the history so far,
where the game has one (:data:`GAME_TEXTS`) --, ``{turn}`` -- whose turn it is --,
``{legal}`` -- the legal action texts joined by ``legal_separator`` -- and the action
mode's ``{instruction}``). :data:`REAL_MODEL_PROMPT` uses them all (``configs/llm/hf.yaml``);
the tiny presets keep to role, observation and legal actions.
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

import functools
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llm_agents.records import Request

FIELDS = ("role", "agent", "game", "role_prompt", "observation", "legal", "instruction",
          "rules", "state", "turn")
"""The ``str.format`` fields prompt templates may use."""


def template_problem(template: str) -> str | None:
    """What is wrong with a prompt template (None: nothing), as the rest of a sentence naming
    it: ``has a bad slot {role:<8}; ...``. A template's slots are plain ``{name}`` with
    ``name`` in :data:`FIELDS` -- no format spec, conversion, index or attribute: a spec
    (``{observation:>999999999}``) in a loaded snapshot would make every prompt gigabytes,
    and the settings a run starts with follow the same rule, so every run's snapshots load
    (:func:`llm_agents.policy.check_payload` builds :class:`PromptConfig`). The one rule for
    both."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as err:  # a lone brace
        return f"is not a valid template ({err}); write a literal brace as {{{{ or }}}}"
    for _, name, spec, conversion in parts:
        if name is not None and (name not in FIELDS or spec or conversion):
            slot = "{" + name + (f"!{conversion}" if conversion else "") + (
                f":{spec}" if spec else "") + "}"
            return (f"has a bad slot {slot}; a slot is a plain {{name}} (no format spec, "
                    f"conversion, index or attribute) with name one of {', '.join(FIELDS)}")
    return None


@dataclass(frozen=True)
class GameText:
    """What a prompt says about one game: its ``rules`` and a readable ``view`` of the raw
    text observation, ``(observation, agent) -> text`` (None: the observation as it is)."""

    rules: str
    view: Callable[[str, str], str] | None = None


_KUHN_CARDS = {"0": "Jack", "1": "Queen", "2": "King"}
_KUHN_MOVES = {"p": "passed", "b": "bet"}


def _kuhn_view(obs: str, agent: str) -> str:
    """``"1pb"`` -> your card and each betting move so far (player 0 moves first)."""
    if not obs or obs[0] not in _KUHN_CARDS or any(c not in _KUHN_MOVES for c in obs[1:]):
        return obs
    moves = [f"player_{i % 2} {_KUHN_MOVES[c]}" for i, c in enumerate(obs[1:])]
    history = ", then ".join(moves) if moves else "no moves yet"
    return f"Your card: {_KUHN_CARDS[obs[0]]}.\nBetting so far: {history}."


def _leduc_view(obs: str, agent: str) -> str:
    """OpenSpiel's ``[Key: value]`` string -> readable lines (cards by rank, moves by name)."""
    fields = dict(re.findall(r"\[(\w+): ?([^\]]*)\]", obs))
    if "Private" not in fields:
        return obs
    rank = dict(enumerate(("Jack", "Jack", "Queen", "Queen", "King", "King")))
    move = {"0": "fold", "1": "call", "2": "raise"}

    def card(v: str) -> str:
        return rank.get(int(v), v) if v.strip().isdigit() else v

    found = re.search(r"\[Round (\d)\]", obs)
    lines = [f"Your private card: {card(fields['Private'])}."]
    if fields.get("Public", "").strip():
        lines.append(f"Public card: {card(fields['Public'])}.")
    lines.append(f"Betting round: {found.group(1) if found else '?'}. Pot: "
                 f"{fields.get('Pot', '?')}. Chips left (player_0, player_1): "
                 f"{fields.get('Money', '?')}.")
    for r in ("Round1", "Round2"):
        moves = [move.get(m, m) for m in fields.get(r, "").split()]
        lines.append(f"Moves in round {r[-1]}: {', '.join(moves) or 'none'}.")
    return "\n".join(lines)


def _ttt_view(obs: str, agent: str) -> str:
    mark = "x" if agent.endswith("0") else "o"
    return (f"You play {mark}. Board (rows 0-2 from the top, columns 0-2 from the left; "
            f". is empty):\n{obs}")


GAME_TEXTS: dict[str, GameText] = {
    "openspiel/kuhn_poker": GameText(
        "Kuhn poker, two players, a deck of three cards: Jack < Queen < King. Each player "
        "antes 1 chip and gets one private card. player_0 acts first. Pass: check when no bet "
        "is open, fold when facing a bet. Bet: put in 1 more chip (or call a bet). A pass "
        "after a bet folds and the bettor wins the pot; two passes, or a bet and a call, go "
        "to a showdown where the higher card wins the pot. Win as many chips as you can.",
        _kuhn_view),
    "openspiel/leduc_poker": GameText(
        "Leduc poker, two players, six cards (two each of Jack < Queen < King). Each player "
        "antes 1 chip and gets one private card; a public card is shown after the first "
        "betting round. Each round allows at most two raises (2 chips in round 1, 4 in round "
        "2). Fold gives up the pot, Call matches the open bet (or checks), Raise bets more. "
        "At the showdown a pair with the public card wins, else the higher card.",
        _leduc_view),
    "openspiel/tic_tac_toe": GameText(
        "Tic-tac-toe on a 3x3 board: player_0 plays x and moves first, player_1 plays o. "
        "Players take turns marking an empty cell; three of your marks in a row, column or "
        "diagonal wins (+1, the loser gets -1); a full board without a line is a draw. "
        "x(r,c) marks row r, column c.",
        _ttt_view),
    "openspiel/matrix_rps": GameText(
        "Rock-paper-scissors: both players choose at the same time. Rock beats Scissors, "
        "Scissors beats Paper, Paper beats Rock; the winner gets +1, the loser -1, a tie 0."),
}
"""Rules and readable views by game name; :func:`register_game_text` adds more."""


def register_game_text(name: str, rules: str, view: Callable[[str, str], str] | None = None
                       ) -> None:
    """Rules (and a readable view of the text observation) prompts give for game ``name``."""
    GAME_TEXTS[name] = GameText(rules, view)


@functools.lru_cache(maxsize=256)  # every decision's prompt asks; a run has a few names
def prompt_game_name(name: str) -> str:
    """A game's name as prompts (and tiny vocabularies) say it: without the ``(key=value,...)``
    suffix that PettingZoo, VMAS and registered games' spec names carry for their kwargs (since
    4 Dec, so that a recorded name makes the same game again); OpenSpiel names keep their game
    string's parameters, as prompts always said them. So prompts, rules lookup and a tiny
    model's vocabulary read as they did before the suffix, and older LLM runs resume. Only a
    suffix such a name writes is dropped: a user's 'Connect Four (7x6)' stays as it is."""
    if name.startswith("openspiel/") or "(" not in name:
        return name
    from games.registry import GameError, kwargs_name, split_name

    try:
        base, kwargs = split_name(name)
    except GameError:
        return name
    return base if kwargs and kwargs_name(base, kwargs) == name else name


def game_text(game: str) -> GameText:
    """The registered :class:`GameText` of ``game``; games without one get general rules
    (their text observations -- tool tasks, matrix games -- describe the task themselves)."""
    return GAME_TEXTS.get(game) or GameText(
        f"{game}: on each of your turns you choose exactly one of the legal actions listed; "
        "your observation below says what you know and what you are rewarded for.")


@dataclass(frozen=True)
class PromptConfig:
    """Prompt templates: ``system`` and ``user`` hold plain ``{field}`` slots, fields named in
    the module docstring (:func:`template_problem`)."""

    system: str = "You are {role} ({agent}) playing {game}. {role_prompt}"
    user: str = "{observation}\nLegal actions: {legal}\n{instruction}"
    generate_instruction: str = "Reply with one legal action as <action>ACTION</action>."
    score_instruction: str = "Your action:"
    legal_separator: str = " | "
    chat_template: bool = True  # use the tokenizer's chat template when it has one
    candidate_prefix: str = " "  # put before action texts scored after a plain-text prompt
    response_prefix: str = ""  # the reply's first words, written for the model (e.g. <action>)

    def __post_init__(self) -> None:
        for name in ("system", "user"):
            template = getattr(self, name)
            if not isinstance(template, str):
                raise ValueError(f"prompt {name}={template!r:.60} is not text")
            if problem := template_problem(template):
                raise ValueError(f"prompt {name} {problem}")

    def static_text(self) -> str:
        """Every fixed word of the templates (vocabulary for tiny tokenizers)."""
        fields = dict.fromkeys(FIELDS, " ")
        return "\n".join([self.system.format(**fields), self.user.format(**fields),
                          self.generate_instruction, self.score_instruction,
                          self.legal_separator])


REAL_MODEL_PROMPT = PromptConfig(
    system="You are {agent}, playing as {role} in the game {game}. {role_prompt}\n\n"
           "Rules: {rules}",
    user="{state}\n\n{turn}\nLegal actions: {legal}\n\n{instruction}",
    generate_instruction="Think step by step in a few sentences, then end your reply with your "
                         "move as <action>ACTION</action>, where ACTION is exactly one of the "
                         "legal actions.",
    score_instruction="Your action:",
)
"""Prompts for pretrained (instruct) models: rules, role, whose turn, the history and the
legal actions, and room to reason before ``<action>`` (``configs/llm/hf.yaml`` sets it)."""


class PromptBuilder:
    """Renders prompts and candidate continuations for one :class:`PromptConfig`."""

    def __init__(self, cfg: PromptConfig | None = None) -> None:
        self.cfg = cfg or PromptConfig()

    def uses_chat(self, tokenizer: Any) -> bool:
        return self.cfg.chat_template and bool(getattr(tokenizer, "chat_template", None))

    def build(self, tokenizer: Any, *, game: str, agent: str, role: str, role_prompt: str,
              observation: str, legal: Sequence[str], instruction: str) -> str:
        """The prompt text of one decision (made when ``agent`` must act)."""
        shown = prompt_game_name(game)
        text = GAME_TEXTS.get(game) or game_text(shown)  # rules under the full name first
        game = shown
        fields = dict(game=game, agent=agent, role=role, role_prompt=role_prompt,
                      observation=observation, legal=self.cfg.legal_separator.join(legal),
                      instruction=instruction, rules=text.rules,
                      state=text.view(observation, agent) if text.view else observation,
                      turn=f"It is your turn to act, {agent} ({role}).")
        system = self.cfg.system.format(**fields).strip()
        user = self.cfg.user.format(**fields).strip()
        prefix = self.cfg.response_prefix
        if self.uses_chat(tokenizer):
            messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
            return _chat(tokenizer, messages) + prefix
        return (f"{system}\n{user}\n" if system else f"{user}\n") + prefix

    def candidate(self, tokenizer: Any, action_text: str) -> str:
        """The continuation scored for one legal action."""
        return action_text if self.uses_chat(tokenizer) else self.cfg.candidate_prefix + action_text

    def request(self, tokenizer: Any, *, game: str, agent: str, role: str, role_prompt: str,
                observation: str, legal: Sequence[str], instruction: str,
                parse: Callable[[str], int | None]) -> Request:
        """A :class:`Request` for one decision: prompt, legal texts, scored candidates."""
        prompt = self.build(tokenizer, game=game, agent=agent, role=role, role_prompt=role_prompt,
                            observation=observation, legal=legal, instruction=instruction)
        if self.cfg.response_prefix:
            parse = _prefixed(parse, self.cfg.response_prefix)
        return Request(prompt, list(legal), [self.candidate(tokenizer, a) for a in legal], parse)


def _chat(tokenizer: Any, messages: list[dict[str, str]]) -> str:
    """``messages`` rendered with the tokenizer's chat template, bounded in time and size
    (:func:`llm_agents.chat_render.render_chat`: the text ``apply_chat_template`` gives); a
    template that fails (its own ``raise_exception``, a jinja2 ``SecurityError``, a bound) is
    one line naming the tokenizer -- it went up as a traceback (sec38 LOW)."""
    from jinja2 import TemplateError

    from llm_agents.chat_render import TRUST_CHAT_TEMPLATES, RenderLimitError, render_chat

    try:
        return render_chat(tokenizer, messages)
    except TemplateError as err:
        said = (str(err).strip().splitlines() or [""])[0][:200]
        name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
        trust = f", or {TRUST_CHAT_TEMPLATES}=1 to render it without bounds (a template you " \
                "trust)" if isinstance(err, RenderLimitError) else ""
        raise ValueError(f"the chat template of tokenizer {name!r} fails on a system + user "
                         f"prompt ({type(err).__name__}: {said}); fix it (the model folder's "
                         "tokenizer_config.json chat_template or chat_template.jinja) or set "
                         "llm.grpo.prompt.chat_template=false to join the prompt's parts with "
                         f"newlines{trust}") from None


def _prefixed(parse: Callable[[str], int | None], prefix: str) -> Callable[[str], int | None]:
    """Parse ``prefix + text``: the model's reply begins with the written prefix. A prefix that
    opens ``<action>`` is closed when the model ended (EOS) without ``</action>``, so
    ``<action>`` + ``Pass`` reads as ``<action>Pass</action>`` -- and ``Pass, Bet`` still fails."""

    def parse_reply(text: str) -> int | None:
        full = prefix + text
        if full.lower().count("<action>") > full.lower().count("</action>"):
            full += "</action>"
        return parse(full)

    return parse_reply
