"""The kinds of value a game parameter takes, alike in every adapter: numpy's numbers and
bools count as Python's (a sweep computing counts with numpy), a bool is not a number, and a
flag takes true or false or the integer 0 or 1, as top-level flags do (``progress=1``), not
a word (``'false'`` is true when tested) nor another number."""

from __future__ import annotations

from typing import Any

import numpy as np


def is_flag(value: Any) -> bool:
    """A bool, or the integer 0 or 1."""
    if isinstance(value, (bool, np.bool_)):
        return True
    return isinstance(value, (int, np.integer)) and value in (0, 1)


def is_integer(value: Any) -> bool:
    """An integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """An integer or a float, not a bool."""
    return is_integer(value) or isinstance(value, (float, np.floating))


def refusal(kind: Any, value: Any) -> str | None:
    """What a parameter of ``kind`` (``bool``, ``int``, ``float``) accepts, when ``value`` is
    not of it (``"true or false"``, ``"an integer"``, ``"a number"``); None when it is, or
    when ``kind`` is none of those (the adapter's own rules judge it, or nothing does)."""
    if kind is bool:
        return None if is_flag(value) else "true or false"
    if kind is int:
        return None if is_integer(value) else "an integer"
    if kind is float:
        return None if is_number(value) else "a number"
    return None
