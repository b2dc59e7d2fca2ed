"""A sweep's values as the command line typed them, for messages that name one job's value
as a single run's is named: Hydra's parser reads ``-m frames=1e4,2e4`` as the floats
``10000.0`` and ``20000.0``, and keeps only the whole line's text (``Override.input_line``);
:func:`typed_text` finds the element the user wrote (``1e4``). Nothing here imports more
than Hydra's override parser.
"""

from __future__ import annotations

import re
from typing import Any

RANGE_VALUES = 1000
"""The values of a swept ``range(...)`` the early checks read: its first (a range of more
jobs is no sweep to run, and all its values have the first's type)."""


def typed_text(override: Any, value: Any) -> str:
    """``value`` of ``override`` (its element, or one of a sweep's) as the command line typed
    it, for messages: ``1e4`` where Hydra's parser made ``10000.0`` (``frames=1e4``, ``-m
    frames=1e4,2e4``), so a sweep's job is named as a single run's; a range's value with the
    range (``10000.0 (of range(1e4,3e4,1e4))``); ``str(value)`` where the text is not found."""
    from hydra.core.override_parser.types import ValueType

    raw = override.input_line.partition("=")[2]
    if override.value_type == ValueType.ELEMENT:
        return raw
    if override.value_type == ValueType.RANGE_SWEEP:
        return f"{value} (of {raw.strip()})"
    found = element_text(override, value)
    return str(value) if found is None else found


def element_text(override: Any, value: Any) -> str | None:
    """The text of the element of ``override``'s choice sweep (``a,b``, ``choice(a,b)``,
    ``shuffle(...)``) that Hydra reads as ``value`` (of its type), or None."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType

    inner = override.input_line.partition("=")[2].strip()
    while (m := re.fullmatch(r"(?:choice|shuffle)\s*\((.*)\)", inner, re.S)) and \
            _top_level_parts(m[1]) is not None:  # not "choice(a),choice(b)"
        inner = m[1].strip()
    parser = OverridesParser.create()
    for part in _top_level_parts(inner) or []:
        try:
            element = parser.parse_override(f"k={part.strip()}")
        except Exception:  # noqa: BLE001 - a named argument (choice(x=...)): not this one
            continue
        if element.value_type == ValueType.ELEMENT and type(element.value()) is type(value) \
                and element.value() == value:
            return part.strip()
    return None


def _top_level_parts(text: str) -> list[str] | None:
    """``text`` split at its commas outside quotes and brackets (``[1,2],'a,b',3``: three);
    None where its brackets do not close in order (``a),(b``)."""
    parts, depth, quote, start, escaped = [], 0, "", 0, False
    for i, ch in enumerate(text):
        if quote:
            escaped, quote = (False, quote) if escaped else (ch == "\\", "" if ch == quote
                                                             else quote)
        elif ch in "'\"":
            quote = ch
        elif ch in "([{" or ch in ")]}":
            depth += 1 if ch in "([{" else -1
            if depth < 0:
                return None
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]] if depth == 0 else None


def swept_line(override: Any, value: Any) -> str:
    """The ``key=value`` line of one job of a swept ``override``, as typed
    (``population.frames_per_generation=2e4`` of ``...=2e4,3e4``: named as a single run names
    it); the whole line where the element's text is not found."""
    found = element_text(override, value)
    return override.input_line if found is None else \
        f"{override.input_line.partition('=')[0]}={found}"
