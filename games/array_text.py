"""The text an LLM agent reads for a numeric observation: ``np.array2string`` of the array as
float32, flattened, ``precision=2``, ``separator=" "``, with numpy's default print options,
byte for byte, in about a quarter of its time (array2string formats every number twice
through Dragon4 and wraps lines word by word: half of a tiny team's corpus build was it).

The fast path covers what observations almost always are, finite numbers printed positionally:

* numpy prints a float array in scientific notation when a nonzero magnitude is ``>= 1e6``
  (float32), ``< 1e-4`` or more than 1000 times the smallest one (compared in float32, as
  numpy does); those arrays, non-finite values and magnitudes ``>= 2**17`` go to
  ``np.array2string`` itself, as do arrays printed while the print options are not numpy's
  defaults (``np.set_printoptions``);
* below ``2**17`` a float32's spacing is under 0.01, so Dragon4's shortest digits cut at two
  decimals (``unique=True``, ``precision=2``, ``trim='.'``) are the exact value rounded half
  to even at two decimals with trailing zeros dropped: what Python's ``f"{x:.2f}"`` gives
  for the same number as a double (exact), less its trailing zeros;
* every number is padded to the widest integer part (right-aligned) and the widest fraction
  (left-aligned), and the words are wrapped at numpy's 75 columns; an array of more than 1000
  numbers shows its first and last 3 around ``...``, formatted from those 6 alone.
"""

from __future__ import annotations

import math

import numpy as np

_F32 = np.float32
_POSITIONAL_BELOW = 2.0**17  # a float32's spacing is 2**-7 under it, 2**-6 from it
_SMALLEST = float(np.float32(1e-4))  # numpy tests ``min < 0.0001`` on float32 scalars
_OPTIONS = ("edgeitems", "threshold", "floatmode", "suppress", "linewidth", "sign",
            "formatter", "legacy")
_DEFAULTS = (3, 1000, "maxprec", False, 75, "-", None, False)
_WIDTH = 74  # numpy's line width (75) less the closing bracket
_EDGE = 3


def array_text_reference(x: np.ndarray) -> str:
    """The text view as numpy writes it (the slow path, and the definition)."""
    return np.array2string(np.asarray(x, dtype=np.float32).ravel(), precision=2, separator=" ")


def array_text(x: np.ndarray) -> str:
    """``x`` (any shape, any real dtype) as :func:`array_text_reference` writes it."""
    v = np.asarray(x, dtype=np.float32).ravel()
    n = v.size
    if not n or tuple(map(np.get_printoptions().get, _OPTIONS)) != _DEFAULTS:
        return array_text_reference(x)
    summary = n > _DEFAULTS[1]
    nums = v[:_EDGE].tolist() + v[-_EDGE:].tolist() if summary else v.tolist()
    words = _positional_words(nums)
    if words is None:
        return array_text_reference(x)
    if summary:
        words.insert(_EDGE, "...")
    elif n * (len(words[0]) + 1) <= _WIDTH:  # one line: no word reaches the width
        return "[" + " ".join(words) + "]"
    return _wrapped(words)


def _positional_words(nums: list[float]) -> list[str] | None:
    """The padded words numpy prints for ``nums`` (float32 values as Python floats), or None
    where numpy would print them otherwise (scientific notation, nan, inf) or the two-decimal
    rounding is not provably Dragon4's (magnitudes from ``2**17``)."""
    if not math.isfinite(sum(nums)):  # exact sums of float32s: inf/nan only from inf/nan
        return None
    mags = [abs(f) for f in nums if f]
    if mags:
        hi, lo = max(mags), min(mags)
        if hi >= _POSITIONAL_BELOW or lo < _SMALLEST or _F32(hi) / _F32(lo) > 1000.0:
            return None
    parts = [f"{f:.2f}".rstrip("0").partition(".") for f in nums]
    left = max(len(p[0]) for p in parts)
    right = max(len(p[2]) for p in parts)
    return [p[0].rjust(left) + "." + p[2].ljust(right) for p in parts]


def _wrapped(words: list[str]) -> str:
    """numpy's ``_formatArray`` for one axis: words joined by a space and wrapped before a word
    that would pass the width (never on a line holding no word yet), trailing spaces dropped
    at each break, continuation lines indented by one space under the ``[``."""
    done, line = "", " "
    for i, word in enumerate(words):
        if len(line) + len(word) > _WIDTH and len(line) > 1:
            done += line.rstrip() + "\n"
            line = " "
        line += word if i == len(words) - 1 else word + " "
    return "[" + (done + line)[1:] + "]"
