"""Argument types of the bench scripts: a size flag refuses a value it cannot run as
argparse's usage error (exit 2, naming the flag, the value and what is accepted) before any
work; ``--steps 0`` was a ZeroDivisionError, ``--sizes 0`` an AssertionError, ``--frames 0``
a table of nan.

A script reaches this file as ``bench._args`` with the repository root on ``sys.path``
(bench/ itself stays off it: bench/games.py would shadow the games package)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer ``>= low`` (1 for a count, 0 for a seed)."""
    accepted = f"an integer >= {low}"

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {accepted}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value}: expected {accepted}")
        return value

    convert.__name__ = "int"
    return convert


def seconds(zero_skips: bool = False) -> Callable[[str], float]:
    """An argparse ``type``: a finite number of seconds > 0 (``>= 0`` where 0 skips a part)."""
    accepted = "a number of seconds >= 0 (0: skip)" if zero_skips else "a number of seconds > 0"

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero_skips):
            raise argparse.ArgumentTypeError(f"{text!r}: expected {accepted}")
        return value

    convert.__name__ = "float"
    return convert
