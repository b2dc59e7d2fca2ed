"""A snapshot's chat template is code: which ones a loaded snapshot may carry.

``transformers`` renders a tokenizer's ``chat_template`` (Jinja) on every prompt in its
sandbox, which blocks attribute tricks but bounds neither time nor memory: ``{% for a in
range(100000) %}{% for b in range(100000) %}...`` runs for hours and ``{{ 'x' * 10**10 }}``
asks for 10 GB. :func:`chat_template_problem` reads a template's syntax tree before it is
ever rendered and accepts only what chat templates do -- loops over the messages, tests,
outputs, plain assignments -- so that each render's work is bounded by the template's
length times the prompt's:

* at most :data:`MAX_TEMPLATE_CHARS` characters;
* loops (at most :data:`MAX_LOOP_DEPTH` deep, never ``recursive``) run over ``messages``,
  ``tools`` or ``documents`` (sliced or filtered), a field of a loop item other than its
  ``content``/``role`` (``message.tool_calls``) or its ``items()``, or ``range`` of small
  numbers and
  ``messages|length``;
* no ``*``, ``**`` or ``%`` (but ``loop.index0 % 2``), no macros, blocks, includes or
  ``{% set %}...{% endset %}``; no attribute named with ``_``;
* filters and methods from short lists of ones whose result is not larger than their input
  (:data:`FILTERS`, :data:`METHODS`), plus ``tojson``, ``join``, ``escape`` in outputs;
* an assigned value (``{% set x = ... %}``) never grows: no ``~`` or string constant in an
  ``+``, at most one variable read (besides ``loop`` and ``...|length``).

A template outside these rules is refused when its snapshot loads (one line naming it).
"""

from __future__ import annotations

import json
from typing import Any

from jinja2 import TemplateSyntaxError, nodes

MAX_TEMPLATE_CHARS = 16_384
"""Longest chat template a snapshot may carry (common instruct models' are 0.5-6 KB)."""
MAX_LOOP_DEPTH = 2
ROOTS = frozenset({"messages", "tools", "documents"})
"""The render's inputs loops may run over (transformers passes them)."""
FILTERS = frozenset({
    "trim", "length", "count", "lower", "upper", "title", "capitalize", "first", "last",
    "default", "d", "reverse", "int", "float", "abs", "round", "items", "list",
    "selectattr", "rejectattr", "map", "unique", "sort", "dictsort", "min", "max", "safe",
})
"""Filters whose result is no larger than their input (allowed everywhere)."""
OUTPUT_FILTERS = frozenset({"tojson", "join", "escape", "e", "string"})
"""Filters allowed only in an output (``{{ ... }}``): a few times their input, never stored
(``string`` of a list of characters is five times their number)."""
METHODS = frozenset({
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith",
    "lower", "upper", "title", "capitalize", "items", "keys", "values", "get", "count", "find",
})
"""Methods a template may call (on strings and dicts): results no larger than the object."""
MAX_OUTPUT_FILTERS = 2
FUNCTIONS = frozenset({"raise_exception", "namespace", "range", "strftime_now", "dict"})
_STATEMENTS = ("Template", "Output", "TemplateData", "If", "For", "Assign", "Break",
               "Continue", "ExprStmt")
_EXPRESSIONS = ("Const", "Name", "NSRef", "Getattr", "Getitem", "Slice", "Tuple", "List",
                "Dict", "Pair", "Keyword", "CondExpr", "Compare", "Operand", "And", "Or", "Not",
                "Neg", "Pos", "Add", "Sub", "Div", "FloorDiv", "Concat", "Mod", "Test",
                "Filter", "Call")


_OPERATORS = {"Mul": "*", "Pow": "**"}


class _Refused(Exception):
    pass


def _env() -> Any:
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                         extensions=[loopcontrols])


def chat_template_problem(template: Any) -> str | None:
    """Why a snapshot may not carry ``template`` (the rest of a sentence naming it), or None.
    See the module docstring for the rules."""
    if not isinstance(template, str):
        return f"is not text ({type(template).__name__})"
    if len(template) > MAX_TEMPLATE_CHARS:
        return f"has {len(template)} characters (at most {MAX_TEMPLATE_CHARS})"
    try:
        tree = _env().parse(template)
    except TemplateSyntaxError as err:
        return f"is not a Jinja template this loader reads ({err.message})"
    try:
        _Check().stmt(tree, depth=0, loop_vars=frozenset())
    except _Refused as why:
        return f"{why}; a snapshot's chat template may only loop over the messages and may " \
               "not build large values (llm_agents.chat_templates)"
    except RecursionError:
        return "is nested too deeply"
    return None


def templates_of(files: dict[str, Any]) -> list[tuple[str, Any]]:
    """``(where, template)`` of every chat template in a tokenizer's files: the
    ``chat_template`` of ``tokenizer_config.json`` (text or ``[{name, template}]``),
    ``chat_template.jinja``/``.json`` and ``additional_chat_templates/*.jinja``."""
    out: list[tuple[str, Any]] = []
    for name, content in files.items():
        if name.endswith(".jinja"):
            out.append((name, content))
        elif name in ("tokenizer_config.json", "chat_template.json") and isinstance(content, str):
            try:
                value = json.loads(content)
            except ValueError:
                continue  # the tokenizer's own check names a file that is not JSON
            value = value.get("chat_template") if isinstance(value, dict) else None
            if isinstance(value, list):
                out += [(f"{name} chat_template[{i}]", v.get("template") if isinstance(v, dict)
                         else v) for i, v in enumerate(value)]
            elif value is not None:
                out.append((f"{name} chat_template", value))
    return out


def _names(node: Any) -> list[str]:
    """Variables an expression reads, but ``loop``, functions and anything under ``|length``."""
    if isinstance(node, nodes.Filter) and node.name == "length":
        return []
    if isinstance(node, nodes.Name):
        return [] if node.name == "loop" or node.name in FUNCTIONS else [node.name]
    return [n for child in node.iter_child_nodes() for n in _names(child)]


def _targets(node: Any) -> list[str]:
    """Names an assignment or loop target binds (``x``, ``a, b``; ``ns.x`` binds none)."""
    if isinstance(node, nodes.Name):
        return [node.name]
    return [n.name for n in node.find_all(nodes.Name)]


class _Check:
    """One walk over a parsed template; raises :class:`_Refused` naming the first problem."""

    def stmt(self, node: Any, depth: int, loop_vars: frozenset[str]) -> None:
        kind = type(node).__name__
        if kind not in _STATEMENTS:
            if kind in _EXPRESSIONS:
                return self.expr(node, stored=False, loop_vars=loop_vars)
            raise _Refused(f"uses {{% {kind.lower()} %}}")
        if isinstance(node, nodes.For):
            if node.recursive:
                raise _Refused("has a recursive loop")
            if depth >= MAX_LOOP_DEPTH:
                raise _Refused(f"nests loops more than {MAX_LOOP_DEPTH} deep")
            self._iterable(node.iter, loop_vars)
            inner = loop_vars | set(_targets(node.target))
            for child in (node.test, *node.body, *node.else_):
                if child is not None:
                    self.stmt(child, depth + 1, inner)
            return
        if isinstance(node, nodes.Assign):
            self._assign(node, loop_vars)
            return
        if isinstance(node, nodes.Output):
            for child in node.nodes:
                grows = [f.name for f in (child, *child.find_all(nodes.Filter))
                         if isinstance(f, nodes.Filter) and f.name in OUTPUT_FILTERS]
                if len(grows) > MAX_OUTPUT_FILTERS:
                    raise _Refused(f"chains {len(grows)} of the filters "
                                   f"{', '.join(sorted(OUTPUT_FILTERS))} in one output")
                self.expr(child, stored=False, loop_vars=loop_vars)
            return
        for child in node.iter_child_nodes():
            self.stmt(child, depth, loop_vars)

    def _assign(self, node: Any, loop_vars: frozenset[str]) -> None:
        targets = set(_targets(node.target))
        if targets & (ROOTS | loop_vars):
            root = next(iter(targets & (ROOTS | loop_vars)))
            if root not in ROOTS or not self._rooted(node.node, root):
                raise _Refused(f"assigns {root!r} something other than a slice of it")
        self.expr(node.node, stored=True, loop_vars=loop_vars)
        read = _names(node.node)
        if len(read) > 1:
            raise _Refused(f"assigns a value read from {len(read)} variables ({', '.join(read)})")

    def expr(self, node: Any, stored: bool, loop_vars: frozenset[str]) -> None:
        kind = type(node).__name__
        if kind not in _EXPRESSIONS and kind != "TemplateData":
            raise _Refused(f"uses {_OPERATORS.get(kind, kind)}")
        if isinstance(node, nodes.Getattr) and node.attr.startswith("_"):
            raise _Refused(f"reads attribute {node.attr!r}")
        if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and \
                isinstance(node.arg.value, str) and node.arg.value.startswith("_"):
            raise _Refused(f"reads item {node.arg.value!r}")
        if isinstance(node, nodes.Mod) and not (
                isinstance(node.left, nodes.Getattr) and isinstance(node.left.node, nodes.Name)
                and node.left.node.name == "loop"):
            raise _Refused("uses % (but loop.index % n)")
        if stored and isinstance(node, nodes.Concat):
            raise _Refused("builds an assigned value with ~")
        if stored and isinstance(node, nodes.Add) and any(
                isinstance(c, nodes.Const) and isinstance(c.value, str)
                for c in node.find_all(nodes.Const)):
            raise _Refused("builds an assigned value with + of text")
        if isinstance(node, nodes.Filter):
            allowed = FILTERS if stored else FILTERS | OUTPUT_FILTERS
            if node.name not in allowed:
                raise _Refused(f"uses filter {node.name!r}" + (" in an assigned value" if
                                                               node.name in OUTPUT_FILTERS else ""))
            self._small_args(node)
            if node.name in ("map", "select", "reject") and node.args and not (
                    isinstance(node.args[0], nodes.Const) and node.args[0].value in FILTERS
                    and len(node.args) == 1):
                raise _Refused(f"gives filter {node.name!r} a filter or arguments of its own")
        if isinstance(node, nodes.Call):
            self._call(node, loop_vars)
        for child in node.iter_child_nodes():
            self.expr(child, stored, loop_vars)

    def _small_args(self, node: Any) -> None:
        """``tojson(indent=4)``, ``join(', ')``: constants only, numbers at most 8, texts at
        most 16 characters (``join(message.content)`` would multiply two texts' lengths)."""
        if node.name not in OUTPUT_FILTERS:
            return
        if node.dyn_args or node.dyn_kwargs:
            raise _Refused(f"gives filter {node.name!r} * or ** arguments")
        for arg in [*node.args, *(k.value for k in node.kwargs)]:
            v = arg.value if isinstance(arg, nodes.Const) else None
            if not isinstance(arg, nodes.Const) or (isinstance(v, int) and abs(v) > 8) or (
                    isinstance(v, str) and len(v) > 16):
                raise _Refused(f"gives filter {node.name!r} an argument other than a small "
                               "constant")

    def _call(self, node: Any, loop_vars: frozenset[str]) -> None:
        func = node.node
        if isinstance(func, nodes.Name) and func.name in FUNCTIONS:
            if func.name == "strftime_now" and not all(
                    isinstance(a, nodes.Const) and isinstance(a.value, str) and len(a.value) <= 32
                    and not any(c.isdigit() for c in a.value) for a in node.args):
                raise _Refused("calls strftime_now with other than a short format without widths")
            if func.name == "range":
                for arg in node.args:
                    self._small_int(arg)
                if node.kwargs or node.dyn_args or node.dyn_kwargs:
                    raise _Refused("calls range with keywords")
            return
        if isinstance(func, nodes.Getattr) and func.attr in METHODS:
            return
        name = func.attr if isinstance(func, nodes.Getattr) else getattr(func, "name", "?")
        raise _Refused(f"calls {name!r}")

    def _small_int(self, node: Any) -> None:
        """A ``range`` bound: small numbers, ``messages|length``, ``loop.index``, + and -."""
        if isinstance(node, nodes.Const) and isinstance(node.value, int) and abs(node.value) <= 64:
            return
        if isinstance(node, nodes.Filter) and node.name == "length" and \
                self._rooted(node.node, "messages"):
            return
        if isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Name) and \
                node.node.name == "loop":
            return
        if isinstance(node, nodes.Add | nodes.Sub):
            self._small_int(node.left)
            self._small_int(node.right)
            return
        if isinstance(node, nodes.Neg):
            self._small_int(node.node)
            return
        raise _Refused("calls range with more than small numbers and messages|length")

    def _rooted(self, node: Any, root: str) -> bool:
        """``root``, sliced (``messages[1:]``) or filtered (``messages|reverse``)."""
        while True:
            if isinstance(node, nodes.Name):
                return node.name == root
            sliced = isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Slice)
            if sliced or isinstance(node, nodes.Filter) and node.name in (
                    "reverse", "selectattr", "rejectattr", "map", "list", "unique", "sort"):
                node = node.node
            else:
                return False

    def _iterable(self, node: Any, loop_vars: frozenset[str]) -> None:
        if any(self._rooted(node, r) for r in ROOTS):
            return
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and \
                node.node.name == "range":
            self._call(node, loop_vars)
            return
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr) and \
                node.node.attr in ("items", "keys", "values") and isinstance(
                node.node.node, nodes.Name) and node.node.node.name in loop_vars | ROOTS:
            return  # message.items(): a message's two keys
        field = None
        if isinstance(node, nodes.Getattr):
            field = node.attr
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            field = node.arg.value
        if isinstance(field, str) and field not in ("content", "role") and isinstance(
                node.node, nodes.Name) and node.node.name in loop_vars:
            return  # message.tool_calls: our messages have no such field, it loops 0 times
        raise _Refused("loops over something other than the messages, tools, documents, a "
                       "loop item's field (not its content) or items(), or a small range")
