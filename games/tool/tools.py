"""Tools the cooperative tasks let agents call: a safe calculator and a key-value table.

Tools never raise into the game loop: a bad call (division by zero, an expression the
evaluator does not accept, a missing key, a call past the limit) returns a
:class:`ToolResult` with ``ok=False`` and a one-line error text that the game shows the
caller as an observation, the way a tool-using LLM sees an API error.

The calculator parses with :mod:`ast` and evaluates only number literals, unary ``+``/``-``
and the binary operators ``+ - * / // % **`` -- never ``eval``. Arithmetic is exact (``int``
and :class:`~fractions.Fraction`; a decimal literal is the fraction its digits write, never a
float: ``0.1`` is 1/10, ``1e-400`` is 1/10**400), and every intermediate number is bounded
before it is computed: magnitude at most :data:`MAX_MAGNITUDE`, numerator and denominator at
most :data:`MAX_BITS` bits, integer exponents up to :data:`MAX_EXPONENT`. So each call
returns a correct value or a :class:`ToolError` within bounded time, whatever the text.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

Number = int | Fraction

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
MAX_EXPONENT = 64
MAX_MAGNITUDE = 10**18
MAX_BITS = 4096  # numerator / denominator size of any intermediate fraction
MAX_EXPRESSION_CHARS = 200


SHOWN_CHARS = 80
"""Most characters of a caller's text an error repeats back (:func:`shown`)."""


def shown(text: object) -> str:
    """``text`` as an error repeats it to the caller: its ``repr`` (newlines and quotes
    escaped, so the text cannot start a new line of the next prompt), cut to
    :data:`SHOWN_CHARS` characters. An error is an observation: a 10 MB expression must
    not become a 10 MB observation."""
    out = repr(text)
    return out if len(out) <= SHOWN_CHARS else out[:SHOWN_CHARS - 3] + "..."


class ToolError(ValueError):
    """A tool call that cannot be answered; the message is shown to the caller."""


@dataclass(frozen=True)
class ToolResult:
    """Outcome of one tool call: ``ok`` and the text the caller sees."""

    ok: bool
    text: str
    value: Number | None = None


def format_number(x: Number) -> str:
    """``7``, ``-3``, ``2.5``; fractions that are not integers with 4 significant digits."""
    if isinstance(x, Fraction) and x.denominator != 1:
        f = float(x)  # |x| <= MAX_MAGNITUDE: no overflow; tiny values may round to 0
        if f != 0.0:
            return f"{f:.4g}"
        with localcontext() as ctx:  # below float's range (1e-400): decimal has no limit
            ctx.prec = 4
            return format(Decimal(x.numerator) / Decimal(x.denominator), ".4g")
    return str(int(x))


def _bits(x: Number) -> int:
    if isinstance(x, Fraction):
        return max(x.numerator.bit_length(), x.denominator.bit_length())
    return x.bit_length()


def _checked(x: Number) -> Number:
    if abs(x) > MAX_MAGNITUDE:
        raise ToolError(f"result too large (limit {MAX_MAGNITUDE:.0e})")
    if _bits(x) > MAX_BITS:
        raise ToolError(f"number too precise (more than {MAX_BITS} bits of numerator or "
                        "denominator)")
    if isinstance(x, Fraction) and x.denominator == 1:
        return int(x)
    return x


_DECIMAL = re.compile(r"(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?")  # a float literal, no "_"


def _literal(value: float | int, source: str | None) -> Number:
    """The exact number a literal's ``source`` text writes: ``0.1`` is 1/10, ``1e-400`` is
    1/10**400 (the float ``value`` rounds them: 9007199254740993.0 to ...992, 1e-400 to 0).

    Bounded from the digits before it is built: ``1e999999999`` is 10**999999999.
    """
    if isinstance(value, int):
        return _checked(value)
    match = _DECIMAL.fullmatch(source.replace("_", "")) if source else None
    if match is None:  # not expected from ast; the float's shortest decimal form then
        if not math.isfinite(value):
            raise ToolError(f"number too large (limit {MAX_MAGNITUDE:.0e})")
        return _checked(Fraction(repr(value)))
    whole, fraction, exponent = match.group(1), match.group(2) or "", match.group(3) or "0"
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return 0
    scale = int(exponent) - len(fraction)  # value = int(digits) * 10**scale
    if len(digits) - 1 + scale >= len(str(MAX_MAGNITUDE)):  # value >= 10**19 > MAX_MAGNITUDE
        raise ToolError(f"number too large (limit {MAX_MAGNITUDE:.0e})")
    if -scale - len(digits) > MAX_BITS:  # reduced denominator > 10**MAX_BITS > 2**MAX_BITS
        raise ToolError(f"number too precise (more than {MAX_BITS} bits of numerator or "
                        "denominator)")
    if scale >= 0:
        return _checked(int(digits) * 10**scale)
    return _checked(Fraction(int(digits), 10**-scale))


def _power(base: Number, exponent: Number) -> Number:
    if exponent != int(exponent) or abs(exponent) > MAX_EXPONENT:
        raise ToolError(f"exponent {format_number(exponent)} not allowed (integers up to "
                        f"{MAX_EXPONENT})")
    n = int(exponent)
    if base == 0 and n < 0:
        raise ToolError("division by zero (0 to a negative power)")
    # The result's numerator and denominator grow to |n| times the base's bits: refuse
    # before computing, so ((0.1**64)**64)**64 costs nothing.
    if abs(n) * _bits(base) > MAX_BITS + abs(n):
        raise ToolError(f"number too precise (more than {MAX_BITS} bits of numerator or "
                        "denominator)")
    return Fraction(base) ** n


def _eval(node: ast.AST, source: str) -> Number:
    if isinstance(node, ast.Expression):
        return _eval(node.body, source)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _literal(node.value, ast.get_source_segment(source, node))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, source))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left, source), _eval(node.right, source)
        if isinstance(node.op, ast.Pow):
            return _checked(_power(left, right))
        if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and right == 0:
            raise ToolError("division by zero")
        if isinstance(node.op, ast.Div):
            return _checked(Fraction(left) / Fraction(right))
        return _checked(_BINARY[type(node.op)](left, right))
    raise ToolError(f"unsupported syntax {type(node).__name__}: only numbers and + - * / // % **")


def safe_eval(expression: str) -> Number:
    """Value of an arithmetic expression (an ``int`` or an exact ``Fraction``).

    Raises:
        ToolError: syntax errors, names, calls, division by zero, huge exponents, results
            or intermediate numbers.
    """
    if not isinstance(expression, str):
        raise ToolError(f"expression must be text, got {type(expression).__name__}")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    source = expression.strip()
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # ValueError: NUL bytes
        raise ToolError(f"cannot parse {shown(expression)} as arithmetic") from None
    try:
        return _checked(_eval(tree, source))
    except RecursionError:
        raise ToolError("expression nested too deeply") from None


class _Limited:
    """Counts calls; the call after the last allowed one returns an error."""

    name = "tool"

    def __init__(self, max_calls: int) -> None:
        if max_calls < 1:
            raise ValueError(f"max_calls must be >= 1, got {max_calls}")
        self.max_calls = max_calls
        self.calls = 0

    def reset(self) -> None:
        self.calls = 0

    @property
    def calls_left(self) -> int:
        return max(0, self.max_calls - self.calls)

    def _admit(self) -> ToolResult | None:
        if self.calls >= self.max_calls:
            return ToolResult(False, f"error: {self.name} call limit reached ({self.max_calls})")
        self.calls += 1
        return None


class Calculator(_Limited):
    """``call("7 * 3")`` -> ``ToolResult(True, "7 * 3 = 21", 21)``, at most ``max_calls``."""

    name = "calc"

    def call(self, expression: str) -> ToolResult:
        refused = self._admit()
        if refused is not None:
            return refused
        try:
            value = safe_eval(expression)
        except ToolError as err:
            return ToolResult(False, f"error: {shown(expression)} -> {err}")
        # an accepted expression is at most MAX_EXPRESSION_CHARS; one line, as it is read
        return ToolResult(True, f"{' '.join(expression.split())} = {format_number(value)}",
                          value)


class KeyValueTable(_Limited):
    """``call("neon")`` -> ``ToolResult(True, "neon = 10", 10)``, at most ``max_calls``."""

    name = "lookup"

    def __init__(self, table: Mapping[str, int], max_calls: int) -> None:
        super().__init__(max_calls)
        self.table = dict(table)

    def call(self, key: str) -> ToolResult:
        refused = self._admit()
        if refused is not None:
            return refused
        if key not in self.table:
            return ToolResult(False, f"error: no entry {shown(key)}")
        return ToolResult(True, f"{key} = {self.table[key]}", self.table[key])
