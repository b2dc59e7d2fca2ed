"""A chat template rendered with bounds on its time and size: the text transformers renders.

transformers renders a tokenizer's ``chat_template`` in jinja2's sandbox, which blocks
attribute tricks but bounds neither time nor memory; the static allow-list that snapshots pass
(:mod:`llm_agents.chat_templates`) is leaky by construction -- templates it passed wrote 15 MB
a render (``range(64 + 64)`` twice around ``messages|tojson(indent=8)``) or nested a list
16,384 deep. :func:`render_chat` renders every prompt in transformers' environment (its
globals ``raise_exception``, ``strftime_now``, ``dict``, ``namespace``, its ``tojson``, loop
controls, ``{% generation %}``; the same variables: messages, ``add_generation_prompt``,
``tools``, ``documents`` and the special tokens), so real templates give the same text -- and
tokenized with ``add_special_tokens=False`` as ``apply_chat_template(tokenize=True)`` does,
the same ids -- with each render's work counted:

* operators (``+ - * / // % **``, ``~``), calls and filters refuse size arguments over
  :data:`MAX_SIZE_ARG` and results over a character cap (``RENDER_BASE_CHARS +
  RENDER_CHARS_PER_INPUT x`` the input's characters), estimated before they run where a
  result could be far larger than its inputs (``'x' * n``, ``s.replace('', s)``, ``join``);
* loop iterations and each run of a macro's, ``{% call %}`` body's or block's body (as many
  steps as the body has syntax nodes), ``range`` items, comparisons (chained ones too:
  ``a < b < c``), tests, slices, output chunks and the texts, bytes and lists operations read
  count against :data:`MAX_RENDER_STEPS` (a nested value compared, written, filtered or
  passed to a method is read item by item, shared items as often as they occur: ``[a, a]``);
  so do integers by the square of their digits (``7 ** 30000``, ``x % y``, ``str()`` of a
  4,300-digit number) and text filters and codecs that work a character at a time in Python
  by their characters (``wordwrap``, ``urlize``, ``s|max``, ``encode('punycode')``);
  ``recursive`` loops are refused;
* everything written (inside ``{% set %}`` blocks too) counts against the cap, and the
  output is read chunk by chunk (``Template.generate``);
* values a namespace stores, operations, filters (item by item, for their iterators) and
  literals (``[x]``, ``{...}``) return or the template writes nest at most
  :data:`MAX_VALUE_DEPTH` deep and are measured against the cap.

A template past a bound fails with a one-line :class:`RenderLimitError` in well under a
second; ``SELFPLAY_TRUST_CHAT_TEMPLATES=1`` renders with transformers instead, unbounded.
It applies them by rewriting the parsed template: loops' iterables, ``~``, comparisons and
their operands, slices and list, tuple and dict literals become filters that count (names no
template can write), macro, call-block and block bodies begin with one, template text is
written through the environment's ``finalize``. ``str.format`` looks its fields' attributes up
through the sandbox as transformers' does: an unsafe one (``'{0.__class__}'``) is jinja2's
undefined, written as nothing there and here, and reading on from it is a ``SecurityError``.
A template too deep to compile (``((((...))))``) fails with a one-line ``TemplateError`` too.
"""

from __future__ import annotations

import codecs
import functools
import json
import operator
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from jinja2 import TemplateError, TemplateRuntimeError, nodes
from jinja2.exceptions import SecurityError
from jinja2.utils import Namespace

TRUST_CHAT_TEMPLATES = "SELFPLAY_TRUST_CHAT_TEMPLATES"
"""``=1``: load any snapshot's template and render templates with transformers, unbounded
(``llm_agents.policy`` reads the same variable)."""
RENDER_BASE_CHARS = 32_768
RENDER_CHARS_PER_INPUT = 8
"""A render writes (and builds values of) at most ``RENDER_BASE_CHARS + RENDER_CHARS_PER_INPUT
x`` its input's characters (messages, tools, special tokens): real templates write the input
once plus a few hundred characters of their own."""
MAX_RENDER_STEPS = 50_000
"""Steps one render may take: each loop iteration and macro, call-block or block body run as
many as its body has syntax nodes, each ``range`` item, call, filter, operator, comparison and
measured value node one, plus one per 64 characters of the texts and one per item of the lists
they read (real templates take 50-400 on a system + user prompt, 30,000-41,000 on 60 turns of
4,000 characters)."""
MAX_VALUE_DEPTH = 32
"""Deepest nesting of a value a render builds, stores or writes (messages are 3 deep)."""
MAX_SIZE_ARG = 4_096
"""Largest integer a call or filter (but ``range``, ``namespace``, ``dict``, ``default``) takes:
``center(10**9)``, ``lipsum(10**9)`` are sizes."""
_BUDGET: ContextVar[_Budget | None] = ContextVar("selfplay_chat_budget", default=None)
_WIDE_FORMAT = re.compile(r"%(\([^)]*\))?[-+ #0]*(\*|\d{4,}|\d*\.(\*|\d{4,}))")
_WIDE_BRACE = re.compile(r"\{[^{}]*:[^{}]*(\d{4,}|\{)")
_WIDE_TIME = re.compile(r"%[-_0^#]*\d")


class RenderLimitError(SecurityError):
    """A chat template went past a bound of :func:`render_bounded` (one line)."""


class _Budget:
    """What one render has used: steps, characters written, and its character cap."""

    def __init__(self, chars: int) -> None:
        self.chars, self.steps, self.written = chars, 0, 0

    def step(self, n: int = 1) -> None:
        self.steps += n
        if self.steps > MAX_RENDER_STEPS:
            raise RenderLimitError(f"chat template takes more than {MAX_RENDER_STEPS:,} steps "
                                "(loop iterations, calls, operators) in one render")

    def fits(self, chars: int, what: str = "builds a value") -> None:
        if chars > self.chars:
            raise RenderLimitError(f"chat template {what} of more than {self.chars:,} characters "
                                f"({RENDER_BASE_CHARS:,} + {RENDER_CHARS_PER_INPUT} x the "
                                "prompt's)")

    def write(self, chars: int) -> None:
        self.written += chars
        self.fits(self.written, "writes a prompt")

    def measure(self, value: Any, level: int = 1, read: bool = True) -> tuple[int, int, int]:
        """``(characters, nodes, depth)`` of ``value``, counted as steps (a text one per 64
        characters too where ``read``); refuses a value deeper than :data:`MAX_VALUE_DEPTH` or
        larger than the cap (texts count their length, containers their items plus 2
        characters each)."""
        if level > MAX_VALUE_DEPTH:
            raise RenderLimitError(f"chat template nests a value more than {MAX_VALUE_DEPTH} deep")
        if isinstance(value, str | bytes | bytearray):
            self.step(1 + (len(value) >> 6) if read else 1)
            return len(value), 1, level
        self.step()
        if isinstance(value, int):
            self.step(_cost(value) - 1)  # (str() of it, written or compared)
            return value.bit_length() // 3 + 1, 1, level
        if isinstance(value, Namespace):
            value = object.__getattribute__(value, "_Namespace__attrs")
        if isinstance(value, dict):
            children: Any = (x for pair in value.items() for x in pair)
        elif isinstance(value, list | tuple | set | frozenset):
            children = value
        else:
            return 8, 1, level
        chars, nodes, depth = 2, 1, level
        for child in children:
            c, n, d = self.measure(child, level + 1, read)
            chars, nodes, depth = chars + c + 2, nodes + n, max(depth, d)
            self.fits(chars)
        return chars, nodes, depth

    def check(self, value: Any) -> Any:
        self.measure(value)
        return value


def _cost(*values: Any) -> int:
    """Steps a call, filter, operator or comparison takes on ``values``: one, plus one per 64
    characters of a text and per item of a list or dict (``s.count('x')``, ``items|max`` and
    ``a == b`` read all of them) and, for an integer, as :func:`_int_work` of it by itself
    (``str()`` of a 4,300-digit number takes 1 ms; of up to ~100 digits, nothing)."""
    return 1 + sum(len(v) >> 6 if isinstance(v, str | bytes | bytearray) else len(v) if isinstance(
        v, list | tuple | dict | set | frozenset) else _int_work(v, v) if isinstance(
        v, int) else 0 for v in values)


def _int_work(left: Any, right: Any) -> int:
    """Steps ``left * right``, ``//``, ``%``, ``divisibleby`` take on two integers besides
    reading them: one per 16,384 products of their characters, as numbers of as many bits/3
    (``x % y`` on 15,000- and 7,500-digit numbers takes 3 ms, 8,400 steps)."""
    if not isinstance(left, int) or not isinstance(right, int):
        return 0
    return (left.bit_length() // 3 + 1) * (right.bit_length() // 3 + 1) >> 14


def _ints(args: Any, kwargs: dict[str, Any], what: str) -> None:
    for arg in (*args, *kwargs.values()):
        if type(arg) is int and abs(arg) > MAX_SIZE_ARG:
            raise RenderLimitError(f"chat template gives {what} the number {arg} (sizes up to "
                                f"{MAX_SIZE_ARG:,})")


def _mod_size(budget: _Budget, fmt: str, values: Any) -> int:
    """At most how long ``fmt % values`` is (refused: widths of 1,000 and more, ``*``)."""
    if _WIDE_FORMAT.search(fmt):
        raise RenderLimitError("chat template formats with a width or precision over 999")
    parts = values.values() if isinstance(values, dict) else values if isinstance(
        values, tuple) else (values,)
    widest = max((budget.measure(v)[0] for v in parts), default=0)
    return len(fmt) + fmt.count("%") * (widest + 999)


_FAST_CODECS = frozenset({"utf-8", "ascii", "iso8859-1", "utf-16", "utf-16-le", "utf-16-be",
                          "utf-32", "utf-32-le", "utf-32-be"})
"""Codecs that encode and decode at memory speed (others take a step per character;
``punycode`` is quadratic: 8,000 characters take 20 ms)."""


def _str_method_size(budget: _Budget, method: Any, args: tuple, kwargs: dict) -> tuple | None:
    """Refuse a text method call whose result would pass the cap (checked before it runs);
    the arguments to call it with (a ``join``'s iterable read into a list), None: unchanged."""
    text, name = method.__self__, method.__name__
    if name == "join" and args:
        items = list(args[0])
        budget.step(len(items))
        budget.fits(budget.measure(items)[0] + len(text) * len(items))
        return (items, *args[1:])
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str | bytes | bytearray):
        hits = text.count(args[0]) if args[0] else len(text) + 1
        budget.fits(len(text) + hits * budget.measure(args[1])[0])
    elif name == "translate" and args:
        table = args[0]
        mapped = table.values() if isinstance(table, dict) else table if isinstance(
            table, list | tuple) else ()
        budget.fits(len(text) * max((budget.measure(v)[0] for v in mapped), default=1))
    elif name == "expandtabs":
        budget.fits(len(text) + text.count("\t") * int((args or [8])[0]))
    elif name in ("encode", "decode"):
        try:
            codec = codecs.lookup((args or [kwargs.get("encoding", "utf-8")])[0]).name
        except (LookupError, TypeError):
            return None  # (the call fails)
        if codec not in _FAST_CODECS:  # utf-7, punycode: a character at a time, in Python
            budget.step(len(text) * len(text) >> 12 if codec == "punycode" else len(text))
    elif name in ("format", "format_map"):
        if _WIDE_BRACE.search(text):
            raise RenderLimitError("chat template formats with a width of 1,000 or more or a "
                                "nested field")
        widest = max((budget.measure(v)[0] for v in (*args, *kwargs.values())), default=0)
        budget.fits(len(text) + text.count("{") * (widest + 999))
    return None


def _filter_size(budget: _Budget, name: str, value: Any, args: tuple, kwargs: dict) -> Any:
    """Refuse a filter whose result would pass the cap (checked before it runs); the value to
    run it on (a ``join``'s iterable read into a list)."""
    if name == "join" and not isinstance(value, str | list | tuple):
        value = list(value)
        budget.step(len(value))
    if name == "join":
        sep = args[0] if args else kwargs.get("d", "")
        budget.fits(budget.measure(value)[0] + len(str(sep)) * len(value))
    elif name == "replace" and isinstance(value, str) and len(args) >= 2:
        hits = value.count(str(args[0])) if args[0] else len(value) + 1
        budget.fits(len(value) + hits * len(str(args[1])))
    elif name == "format" and isinstance(value, str):
        budget.fits(_mod_size(budget, value, args or kwargs))
    elif name == "indent" and isinstance(value, str):
        width = (args or [kwargs.get("width", 4)])[0]
        budget.fits(len(value) + (value.count("\n") + 1) * (
            width if isinstance(width, int) else len(str(width))))
    elif name == "sum" and isinstance(kwargs.get("start", args[1] if len(args) > 1 else 0),
                                      list | tuple):  # each + copies the sum so far
        value = list(value)
        budget.step(len(value) + (len(value) * sum(
            len(x) if isinstance(x, list | tuple) else 1 for x in value) >> 13))
    elif name == "tojson":
        indent = kwargs.get("indent", args[1] if len(args) > 1 else None)
        chars, nodes, depth = budget.measure(value)
        step = indent if type(indent) is int else len(indent) if isinstance(indent, str) else 0
        budget.fits(chars + nodes * (2 + step * depth))
    return value


def _bounded_filter(name: str, func: Any) -> Any:
    """``func`` (a filter) with the render's bounds: size arguments, results."""
    from jinja2.utils import _PassArg, pass_context

    pass_arg = _PassArg.from_obj(func)

    @pass_context
    def bounded(context: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        budget = _BUDGET.get()
        if budget is None:  # rendered outside render_bounded: as jinja2 would
            return func(*_passed(pass_arg, context), value, *args, **kwargs)
        budget.step(_cost(value, *args, *kwargs.values()))
        if isinstance(value, str) and name in _CHARS_PER_STEP:
            budget.step(len(value) // _CHARS_PER_STEP[name])
        if name == "pprint":  # each level reprs what is under it
            nodes, depth = budget.measure(value, read=False)[1:]
            budget.step(nodes * depth)
        if name not in _SHALLOW_FILTERS:
            _measure_nested(budget, value, *args, *kwargs.values())
        if name not in ("default", "d"):
            _ints(args, kwargs, f"filter {name!r}")
        value = _filter_size(budget, name, value, args, kwargs)
        result = func(*_passed(pass_arg, context), value, *args, **kwargs)
        return _checked_items(budget, result) if isinstance(result, Iterator) else budget.check(
            result)

    return bounded


_CHARS_PER_STEP = {"wordwrap": 1, "urlize": 1, "min": 1, "max": 1, "sort": 1, "unique": 1,
                   "groupby": 1, "striptags": 8, "title": 8, "wordcount": 8, "pprint": 8,
                   "int": 8}
"""Filters that read a text a character (or a word) at a time in Python: a step per so many
of its characters besides the one per 64 every filter takes (``wordwrap`` and ``urlize`` take
~4 us a character, ``s|max`` keys each one)."""
_SHALLOW_FILTERS = frozenset({"length", "count", "first", "last", "default", "d", "list", "reverse",
                              "batch", "slice", "select", "reject", "selectattr", "rejectattr",
                              "map", "attr", "items", "random"})
"""Filters that read a nested value's top level only (what ``select``, ``map`` yield is
measured item by item); the others (``string``, ``sum``, ``sort``, ``unique``...) read it
whole, so its nested values are measured first."""


def _checked_items(budget: _Budget, items: Iterator) -> Iterator:
    """A filter's iterator (``map``, ``select``, ...), each item measured as it is read."""
    for item in items:
        budget.measure(item, read=False)
        yield item


def _measure_nested(budget: _Budget, *values: Any) -> None:
    """Measure the containers among ``values`` (each item a step, whatever its length):
    ``a == b``, ``a|string`` read all of a value, shared items as often as they occur."""
    for value in values:
        if isinstance(value, list | tuple | dict | set | frozenset | Namespace):
            budget.measure(value, read=False)


_READING_TESTS = frozenset({"eq", "equalto", "==", "ne", "!=", "in", "lt", "lessthan", "<",
                            "le", "<=", "gt", "greaterthan", ">", "ge", ">="})
"""Tests that read their operands whole (``a is eq b``): counted as the comparison, their
nested operands measured."""
_COUNTED_TESTS = _READING_TESTS | {"upper", "lower", "divisibleby"}
"""Tests counted by their operands (``s is upper`` reads all of a text, ``x is divisibleby y``
divides)."""


def _bounded_test(name: str, func: Any) -> Any:
    """``func`` (a test: ``is eq``, ``is in``, ``is upper``, ``is divisibleby``) with its
    operands counted: texts and lists by their length, nested operands measured, integers
    divided by their digits."""
    if name not in _COUNTED_TESTS:
        return func

    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        if (budget := _BUDGET.get()) is not None:
            budget.step(_cost(*args, *kwargs.values()) + (
                _int_work(*args[:2]) if len(args) >= 2 else 0))
            _measure_nested(budget, *args, *kwargs.values())
        return func(*args, **kwargs)

    return bounded


def _passed(pass_arg: Any, context: Any) -> tuple:
    from jinja2.utils import _PassArg

    return {None: (), _PassArg.context: (context,), _PassArg.eval_context: (context.eval_ctx,),
            _PassArg.environment: (context.environment,)}[pass_arg]


def _counted(context: Any, value: Any, weight: int) -> Any:
    """A loop's iterable, each item ``weight`` steps (its body's syntax nodes: what one
    iteration evaluates, but the calls, filters and operators that count themselves) and as
    many as its text or list costs (``[1]|batch(4096, 0)`` makes a 4,096-item list an item)."""
    budget = _BUDGET.get()
    if budget is None:
        yield from value
        return
    for item in value:
        kind = type(item)  # _cost, inlined: loops are most of a render's steps
        budget.steps += weight + (len(item) >> 6 if kind in (str, bytes) else len(item) if kind in (
            list, tuple, dict) else 0)
        if budget.steps > MAX_RENDER_STEPS:
            budget.step(0)
        yield item


def _concat(context: Any, parts: list[Any]) -> str:
    """``a ~ b``: jinja2's ``str_join``, its size checked first."""
    budget = _BUDGET.get()
    if budget is not None:
        budget.step()
        budget.fits(sum(budget.measure(p)[0] for p in parts))
        return budget.check("".join(map(str, parts)))
    return "".join(map(str, parts))


_COMPARISONS = {"eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "gteq": operator.ge,
                "lt": operator.lt, "lteq": operator.le, "in": lambda a, b: a in b,
                "notin": lambda a, b: a not in b}


def _compare(context: Any, pair: list[Any], op: str) -> bool:
    """``a == b``, ``a in b``, ...: what jinja2 compiles them to, its cost counted."""
    if (budget := _BUDGET.get()) is not None:
        budget.step(_cost(*pair))
        _measure_nested(budget, *pair)
    return _COMPARISONS[op](*pair)


def _operand(value: Any) -> Any:
    """An operand of a chained comparison (``a < b < c``), as Python evaluates it (``c`` only
    where ``a < b``): counted as the comparisons with its two neighbours read it."""
    if (budget := _BUDGET.get()) is not None:
        budget.step(2 * _cost(value))
        if isinstance(value, list | tuple | dict | set | frozenset | Namespace):
            budget.step(budget.measure(value, read=False)[1])
    return value


def _sliced(context: Any, value: Any) -> Any:
    """``x[a:b]`` (jinja2 slices with Python's ``[]``, not the environment's ``getitem``): a
    copy of its items, counted."""
    if (budget := _BUDGET.get()) is not None:
        budget.step(_cost(value))
    return value


def _steps(context: Any, value: Any, weight: int) -> Any:
    """A macro's, ``{% call %}`` body's or block's body, evaluated once more: ``weight`` steps
    (its syntax nodes, as a loop iteration's; with the context, so not run at compile time)."""
    if (budget := _BUDGET.get()) is not None:
        budget.step(weight)
    return value


def _finalize(context: Any, value: Any) -> str:
    """Every ``{{ ... }}`` and every piece of template text goes through here: counted."""
    if isinstance(value, str):
        text = value
    else:
        if (budget := _BUDGET.get()) is not None:
            _measure_nested(budget, value)  # before str() reads it all
            budget.step(_cost(value) - 1 if isinstance(value, int) else 0)
        text = str(value)
    if (budget := _BUDGET.get()) is not None:
        budget.step(_cost(text))
        budget.write(len(text))
    return text


_LOOP, _CONCAT, _COMPARE = "selfplay loop", "selfplay concat", "selfplay compare"
_CHECK, _OPERAND, _STEPS = "selfplay check", "selfplay operand", "selfplay steps"
_SLICED = "selfplay sliced"
"""Filters the render adds (names no template can write)."""


def _rewrite(node: Any) -> Any:
    """The parsed template with loops' iterables and macros', call blocks' and blocks' bodies
    counted, ``~`` and comparisons checked and template text written through the finalizer
    (:func:`_finalize`)."""
    for child in node.iter_child_nodes():
        _rewrite(child)
    for field in node.fields:
        value = getattr(node, field)
        if isinstance(value, list):
            setattr(node, field, [_swap(v) for v in value])
        elif isinstance(value, nodes.Node):
            setattr(node, field, _swap(value))
    if isinstance(node, nodes.For):
        if node.recursive:  # loop(x) would iterate x uncounted (and no chat template recurses)
            raise RenderLimitError("chat template has a recursive loop")
        weight = 1 + sum(1 for part in (node.test, *node.body, *node.else_) if part is not None
                         for _ in part.find_all(nodes.Node))
        node.iter = nodes.Filter(node.iter, _LOOP, [nodes.Const(weight)], [], None, None,
                                 lineno=node.lineno)
    if isinstance(node, nodes.Macro | nodes.CallBlock | nodes.Block):  # each call, self.b()
        weight = 1 + sum(1 for part in node.body for _ in part.find_all(nodes.Node))
        node.body.insert(0, nodes.ExprStmt(nodes.Filter(
            nodes.Const(None), _STEPS, [nodes.Const(weight)], [], None, None, lineno=node.lineno),
            lineno=node.lineno))
    if isinstance(node, nodes.Output):
        node.nodes = [nodes.Const(n.data, lineno=n.lineno) if isinstance(
            n, nodes.TemplateData) else n for n in node.nodes]
    return node


def _swap(node: Any) -> Any:
    if isinstance(node, nodes.List | nodes.Dict) or isinstance(node, nodes.Tuple) and (
            node.ctx == "load"):  # a literal: [a, a] shares a, so is measured
        return nodes.Filter(node, _CHECK, [], [], None, None, lineno=node.lineno)
    if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Slice) and (
            node.ctx == "load"):
        return nodes.Filter(node, _SLICED, [], [], None, None, lineno=node.lineno)
    if isinstance(node, nodes.Concat):
        return nodes.Filter(nodes.List(node.nodes, lineno=node.lineno), _CONCAT, [], [], None,
                            None, lineno=node.lineno)
    if isinstance(node, nodes.Compare) and len(node.ops) == 1:
        pair = nodes.List([node.expr, node.ops[0].expr], lineno=node.lineno)
        return nodes.Filter(pair, _COMPARE, [nodes.Const(node.ops[0].op)], [], None, None,
                            lineno=node.lineno)
    if isinstance(node, nodes.Compare):  # a < b < c: each operand as Python reads it, counted
        node.expr = nodes.Filter(node.expr, _OPERAND, [], [], None, None, lineno=node.lineno)
        for op in node.ops:
            op.expr = nodes.Filter(op.expr, _OPERAND, [], [], None, None, lineno=node.lineno)
    return node


def _generation_extension() -> Any:
    from jinja2.ext import Extension

    class Generation(Extension):
        """transformers' ``{% generation %}...{% endgeneration %}``: its body, as rendered
        without an assistant mask."""

        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            next(parser.stream)
            return parser.parse_statements(("name:endgeneration",), drop_needle=True)

    return Generation


@functools.lru_cache(maxsize=16)  # every prompt renders; a run has one or two templates
def _compiled(template: str) -> Any:
    """``template`` compiled as transformers compiles chat templates (its globals, ``tojson``,
    loop controls, ``{% generation %}``), in an environment that bounds each render."""
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from jinja2.utils import pass_context

    class Bounded(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            budget = _BUDGET.get()
            if budget is not None:
                budget.step(_cost(left, right))
                _binop_size(budget, operator, left, right)
            result = self.binop_table[operator](left, right)
            return result if budget is None else budget.check(result)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            budget = _BUDGET.get()
            if budget is None:
                return super().call(__context, __obj, *args, **kwargs)
            method = getattr(__obj, "__wrapped__", __obj)  # the sandbox wraps str.format
            budget.step(_cost(getattr(method, "__self__", None), *args, *kwargs.values()))
            # lst.count(x), loop.changed(x) compare nested values item by item
            _measure_nested(budget, getattr(method, "__self__", None), *args, *kwargs.values())
            if __obj not in (_range, _Namespace, _TEMPLATE_DICT):
                _ints(args, kwargs, f"{getattr(__obj, '__name__', 'a function')}()")
            if isinstance(getattr(method, "__self__", None), str | bytes | bytearray):
                args = _str_method_size(budget, method, args, kwargs) or args
            return budget.check(super().call(__context, __obj, *args, **kwargs))

        def getitem(self, obj: Any, argument: Any) -> Any:
            """``d[key]`` hashes a tuple key whole: measured (``x[a:b]`` is :func:`_sliced`)."""
            if isinstance(argument, tuple) and (budget := _BUDGET.get()) is not None:
                budget.measure(argument, read=False)
            return super().getitem(obj, argument)

    env = Bounded(trim_blocks=True, lstrip_blocks=True, finalize=pass_context(_finalize),
                  extensions=[_generation_extension(), loopcontrols])
    env.filters["tojson"] = _tojson
    env.filters = {name: _bounded_filter(name, f) for name, f in env.filters.items()}
    env.filters.update({_LOOP: pass_context(_counted), _CONCAT: pass_context(_concat),
                        _COMPARE: pass_context(_compare), _CHECK: _check,
                        _OPERAND: _operand, _STEPS: pass_context(_steps),
                        _SLICED: pass_context(_sliced)})
    env.tests = {name: _bounded_test(name, t) for name, t in env.tests.items()}
    env.globals.pop("lipsum", None)  # lipsum(n, min, max) is n x max words
    env.globals.update(raise_exception=_raise_exception, strftime_now=_strftime_now,
                       dict=_TEMPLATE_DICT, namespace=_Namespace, range=_range)
    return env.from_string(_rewrite(env.parse(template)))


def _binop_size(budget: _Budget, operator: str, left: Any, right: Any) -> None:
    """Refuse ``text * n``, ``n ** m``, ``'%99999d' % 1`` and the like before they run; count
    the work of multiplying and dividing large integers (:func:`_int_work`)."""
    if operator in ("*", "/", "//", "%"):
        budget.step(_int_work(left, right))
    if operator == "*":
        for seq, n in ((left, right), (right, left)):
            if type(n) is int and isinstance(seq, str | bytes | bytearray | list | tuple):
                budget.fits(budget.measure(seq)[0] * max(n, 0))
        if type(left) is int and type(right) is int:
            budget.fits((left.bit_length() + right.bit_length()) // 3)
    elif operator == "**" and type(left) is int and type(right) is int and right > 0:
        chars = max(left.bit_length(), 1) * right // 3
        budget.fits(chars)
        budget.step(chars * chars >> 16)  # (squarings up to the result's size)
    elif operator == "%" and isinstance(left, str):
        budget.fits(_mod_size(budget, left, right))


def _check(value: Any) -> Any:
    """A list, tuple or dict the template writes (``[a, a]``), measured."""
    if (budget := _BUDGET.get()) is not None:
        budget.check(value)
    return value


def _range(*args: int) -> range:
    """``range``, its items counted as steps."""
    items = range(*args)
    budget = _BUDGET.get()
    if budget is not None:
        try:
            budget.step(len(items))
        except OverflowError:
            budget.step(MAX_RENDER_STEPS + 1)
    return items


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


def _strftime_now(fmt: str) -> str:
    if _WIDE_TIME.search(fmt):
        raise RenderLimitError("chat template gives strftime_now a width")
    return datetime.now().strftime(fmt)


def _tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    """transformers' ``tojson``: ``json.dumps`` without HTML escaping."""
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


class _Namespace(Namespace):
    """transformers' namespace (no ``_`` names); what it stores is measured."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - jinja2's trick
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _Namespace._check_name(name)
        Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _Namespace._check_name(name)
        if (budget := _BUDGET.get()) is not None:
            budget.measure(value)
        Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise SecurityError(f"chat template stores {name!r} on a namespace")


class _TemplateDict:
    """transformers' ``dict``: the constructor and ``fromkeys``, nothing else."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
        return dict.fromkeys(*args, **kwargs)


_TEMPLATE_DICT = _TemplateDict()


def render_bounded(template: str, messages: list[dict[str, Any]], *,
                   add_generation_prompt: bool = True, tools: Any = None, documents: Any = None,
                   **kwargs: Any) -> str:
    """``template`` rendered as transformers' ``apply_chat_template(..., tokenize=False)``
    renders it (the same variables, globals and filters: the same text), bounded: at most
    :data:`MAX_RENDER_STEPS` steps, values and output of at most ``RENDER_BASE_CHARS +
    RENDER_CHARS_PER_INPUT x`` the input's characters and :data:`MAX_VALUE_DEPTH` deep, size
    arguments up to :data:`MAX_SIZE_ARG`. A template past a bound fails with a one-line
    :class:`RenderLimitError`; any other error it raises is a ``TemplateError`` too."""
    messages = [{k: v for k, v in m.items() if v is not None} for m in messages]
    size = _Budget(1 << 62)
    inputs = size.measure([messages, tools, documents, kwargs])[0]
    budget = _Budget(RENDER_BASE_CHARS + RENDER_CHARS_PER_INPUT * inputs)
    token = _BUDGET.set(budget)
    try:
        compiled = _compiled(template)  # (a RecursionError on a deep parse: one line too)
        out, written = [], 0
        for chunk in compiled.generate(messages=messages, tools=tools, documents=documents,
                                       add_generation_prompt=add_generation_prompt, **kwargs):
            out.append(chunk)
            written += len(chunk)
            budget.step()  # (an empty chunk costs a step too)
            budget.fits(written, "writes a prompt")
        return "".join(out)
    except TemplateError:
        raise
    except Exception as err:  # noqa: BLE001 - the template's own error, as one line
        raise TemplateRuntimeError(" ".join(f"{type(err).__name__}: {err}".split())) from None
    finally:
        _BUDGET.reset(token)


def render_chat(tokenizer: Any, messages: list[dict[str, Any]], *,
                add_generation_prompt: bool = True) -> str:
    """``tokenizer``'s chat template rendered on ``messages`` by :func:`render_bounded`, with
    the tokenizer's special tokens (``bos_token``, ...) as transformers passes them: the text
    ``apply_chat_template(messages, tokenize=False)`` gives, whose ids (tokenized with
    ``add_special_tokens=False``) are the ones ``tokenize=True`` gives. With
    ``SELFPLAY_TRUST_CHAT_TEMPLATES=1`` transformers renders it, unbounded."""
    if os.environ.get(TRUST_CHAT_TEMPLATES) == "1":
        return tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt,
                                             tokenize=False)
    getter = getattr(tokenizer, "get_chat_template", None)
    template = getter() if callable(getter) else tokenizer.chat_template
    special = dict(getattr(tokenizer, "special_tokens_map", None) or {})
    return render_bounded(template, messages, add_generation_prompt=add_generation_prompt,
                          **special)
