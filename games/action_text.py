"""How a text names an action: the one matcher of :meth:`games.Game.parse_action`,
``check_game`` and ``llm_agents``' ``match_action`` (they accepted different texts when one
collapsed spaces and the other removed them).

A text names a legal action when its last ``<action>...</action>`` (else all of it) equals the
action's text with whitespace removed and case kept (:func:`action_said`, :func:`spaceless`);
when none does, once case is ignored too (:func:`action_key`). Spacing is never part of an
action; case is, where it tells two apart (chess's ``bxc3`` and ``Bxc3``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["action_key", "action_matches", "action_said", "last_action_tag", "spaceless"]

_ACTION_TAG = re.compile(r"<action>(.*?)</action>", re.IGNORECASE | re.DOTALL)
_ACTION_CLOSE = re.compile(r"</action>", re.IGNORECASE)


def action_key(text: str) -> str:
    """``text`` lower-cased with all whitespace removed: what two action texts share when
    they name the same action once case is ignored too (:func:`action_matches` falls back
    to it). Spacing is never part of an action (``calc 3+3`` names ``calc 3 + 3``; word-level
    tokenizers decode ``x(0,1)`` as ``x ( 0 , 1 )``)."""
    return "".join(text.lower().split())


def spaceless(text: str) -> str:
    """``text`` with all whitespace removed, case kept: chess's ``bxc3`` (a pawn takes) and
    ``Bxc3`` (the bishop takes) stay apart."""
    return "".join(text.split())


def action_matches(text: str, texts: Sequence[str]) -> list[int]:
    """Indices of the ``texts`` that ``text`` names: its last ``<action>...</action>`` (else
    all of it) equal to one with whitespace removed and case kept; when none is, equal once
    case is ignored too (:func:`action_key`). Several indices: ``text`` is ambiguous (chess's
    ``BXC3`` names both ``bxc3`` and ``Bxc3``).

    The one matcher of :meth:`Game.parse_action` and ``llm_agents``' ``match_action``: they
    accepted different texts when one collapsed spaces and the other removed them.
    """
    exact = action_said(text)
    found = [i for i, option in enumerate(texts) if spaceless(option) == exact]
    if found:
        return found
    key = _action_candidate(text)
    return [i for i, option in enumerate(texts) if action_key(option) == key]


def last_action_tag(text: str) -> str | None:
    """What the last ``<action>...</action>`` of ``text`` holds (tags read left to right, each
    opening tag closed by the first closing tag after it), or None when there is none.

    The one tag reader of :meth:`Game.parse_action` and ``llm_agents``' ``match_action``.
    """
    # Searched only up to the end of the last closing tag, which finds the same tags: an
    # opening tag after it would be scanned to the end of the text in vain, each of them
    # (20,000 unclosed tags, 160 KB of model output: ~40 s per parse).
    end = max((m.end() for m in _ACTION_CLOSE.finditer(text)), default=0)
    tags = _ACTION_TAG.findall(text, 0, end)
    return tags[-1] if tags else None


def action_said(text: str) -> str:
    """What :func:`action_matches` compares with each legal action's text first: the last
    ``<action>...</action>`` of ``text`` (else all of it), whitespace removed, case kept."""
    tag = last_action_tag(text)
    return spaceless(text if tag is None else tag)


def _action_candidate(text: str) -> str:
    """:func:`action_said` with case ignored too: what :func:`action_matches` falls back to."""
    tag = last_action_tag(text)
    return action_key(text if tag is None else tag)
