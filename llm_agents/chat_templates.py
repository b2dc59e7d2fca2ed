"""A snapshot's chat template is code: which ones a loaded snapshot may carry.

``transformers`` renders a tokenizer's ``chat_template`` (Jinja) on every prompt in its
sandbox, which blocks attribute tricks but bounds neither time nor memory: ``{% for a in
range(100000) %}{% for b in range(100000) %}...`` runs for hours and ``{{ 'x' * 10**10 }}``
asks for 10 GB. :func:`chat_template_problem` is a static allow-list: it reads a template's
syntax tree before it is ever rendered and accepts only what chat templates do -- loops over
the messages, tests, outputs, plain assignments -- so that each render's work is bounded by
the template's length times the prompt's (times at most 128 x 128 for two nested ``range``
loops):

* at most :data:`MAX_TEMPLATE_CHARS` characters, no string constant longer than
  :data:`MAX_CONST_CHARS` (nor literal text that long inside a loop);
* loops (at most :data:`MAX_LOOP_DEPTH` deep, never ``recursive``) run over ``messages``,
  ``tools``, ``documents`` or ``custom_tools`` (sliced or filtered, or a name only ever
  assigned such a value: ``loop_messages``), a field of a loop item other than its
  ``content``/``role`` (``message.tool_calls``), its ``items()``/``|items``, or ``range``
  whose bounds add up to at most :data:`MAX_RANGE` (``messages|length`` and ``loop.*``
  count as 64);
* no ``*``, ``**`` or ``%`` (but ``loop.index0 % 2``), no macros, blocks, includes or
  ``{% set %}...{% endset %}``; no attribute named with ``_``; ``loop`` and the functions
  (:data:`FUNCTIONS`) are never re-bound;
* filters and methods from short lists of ones whose result is not larger than their input
  (:data:`FILTERS`, :data:`METHODS`), plus ``tojson``, ``join``, ``escape`` in outputs
  (``tojson(indent=...)`` only of the inputs, ``list`` never of a text nor fed to
  ``join``/``string``);
* an assigned value (``{% set x = ... %}``) never grows: no ``~`` or string constant in an
  ``+``, at most one variable read (besides ``loop`` and ``...|length``), and inside a loop
  a value read from its own target only adds numbers to it (``ns.count = ns.count + 1``).

A template outside these rules is refused when its snapshot loads (one line naming it;
``SELFPLAY_TRUST_CHAT_TEMPLATES=1`` skips the check for snapshots one made oneself).

These rules are leaky by construction (templates that pass wrote 15 MB a render or nested a
list 16,384 deep), so every prompt is also rendered with bounds on its time and size
(:func:`llm_agents.chat_render.render_chat`). This check stays as the load-time refusal: it
names the rule a snapshot's template breaks before any run starts.
"""

from __future__ import annotations

import json
from typing import Any

from jinja2 import TemplateSyntaxError, nodes

MAX_TEMPLATE_CHARS = 16_384
"""Longest chat template a snapshot may carry (common instruct models' are 0.5-6 KB)."""
MAX_LOOP_DEPTH = 2
MAX_RANGE = 128
"""Largest sum of a ``range``'s bounds (``messages|length`` and ``loop.*`` count as 64)."""
MAX_CONST_CHARS = 1_024
"""Longest string constant (and literal text inside a loop) a template may hold."""
ROOTS = frozenset({"messages", "tools", "documents", "custom_tools"})
"""The render's inputs loops may run over (transformers passes them)."""
FILTERS = frozenset({
    "trim", "length", "count", "lower", "upper", "title", "capitalize", "first", "last",
    "default", "d", "reverse", "int", "float", "abs", "round", "items", "list",
    "selectattr", "rejectattr", "select", "reject", "map", "unique", "sort", "dictsort", "min",
    "max", "safe",
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
    except RecursionError:
        return "is nested too deeply to parse"
    try:
        _Check(tree).stmt(tree, depth=0, loop_vars=frozenset())
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


_LOOP_COUNTERS = frozenset({"index", "index0", "revindex", "revindex0", "length"})
_UNBOUND = FUNCTIONS | {"loop"}
"""Names a template may not re-bind (the check trusts what they are)."""


def _names(node: Any, rebound: frozenset[str] = frozenset()) -> list[str]:
    """Variables an expression reads, but ``loop``, functions (unless the template re-bound
    them) and anything under ``|length``."""
    if isinstance(node, nodes.Filter) and node.name == "length":
        return []
    if isinstance(node, nodes.Name):
        return [] if node.name in _UNBOUND - rebound else [node.name]
    return [n for child in node.iter_child_nodes() for n in _names(child, rebound)]


def _based(node: Any, names: frozenset[str] | set[str]) -> bool:
    """``node`` is one of ``names``, a field of one or filtered (``tool_call.arguments``)."""
    while isinstance(node, nodes.Getattr | nodes.Getitem | nodes.Filter):
        node = node.node
    return isinstance(node, nodes.Name) and node.name in names


def _self_refs(node: Any, target: Any) -> list[Any]:
    """The places in ``node`` that read an assignment's own ``target`` (``ns.x``, ``x``)."""
    if isinstance(target, nodes.NSRef):
        return [n for n in node.find_all(nodes.Getattr | nodes.Getitem) if isinstance(
            n.node, nodes.Name) and n.node.name == target.name and target.attr == (
            n.attr if isinstance(n, nodes.Getattr) else getattr(n.arg, "value", None))]
    if isinstance(target, nodes.Name):
        return [n for n in node.find_all(nodes.Name) if n.name == target.name]
    return []


def _terms(node: Any) -> list[Any]:
    """The operands of a sum (``a + 1 - b``: a, 1, b)."""
    if isinstance(node, nodes.Add | nodes.Sub):
        return _terms(node.left) + _terms(node.right)
    return [node]


def _targets(node: Any) -> list[str]:
    """Names an assignment or loop target binds (``x``, ``a, b``; ``ns.x`` binds none)."""
    if isinstance(node, nodes.Name):
        return [node.name]
    return [n.name for n in node.find_all(nodes.Name)]


class _Check:
    """One walk over a parsed template; raises :class:`_Refused` naming the first problem."""

    def __init__(self, tree: Any) -> None:
        bound = {n for a in tree.find_all(nodes.Assign | nodes.For) for n in _targets(a.target)}
        self.rebound = frozenset(bound & _UNBOUND)
        # aliases of the inputs: names only ever assigned one of them, sliced or filtered
        # (``{% set loop_messages = messages[1:] %}``)
        values: dict[str, list[Any]] = {}
        for a in tree.find_all(nodes.Assign):
            if isinstance(a.target, nodes.Name):
                values.setdefault(a.target.name, []).append(a.node)
        looped = {n for f in tree.find_all(nodes.For) for n in _targets(f.target)}
        self.aliases = set(ROOTS)
        while grown := {n for n, vs in values.items() if n not in self.aliases | looped and all(
                any(self._rooted(v, r) for r in self.aliases) for v in vs)}:
            self.aliases |= grown
        self.derived: set[str] = set()  # names assigned a field of a loop item (tool_call)

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
            self._bindable(_targets(node.target))
            inner = loop_vars | set(_targets(node.target))
            for child in (node.test, *node.body, *node.else_):
                if child is not None:
                    self.stmt(child, depth + 1, inner)
            return
        if isinstance(node, nodes.Assign):
            self._assign(node, depth, loop_vars)
            return
        if isinstance(node, nodes.Output):
            for child in node.nodes:
                if depth and isinstance(child, nodes.TemplateData) and \
                        len(child.data) > MAX_CONST_CHARS:
                    raise _Refused(f"writes {len(child.data)} characters of text in a loop (at "
                                   f"most {MAX_CONST_CHARS})")
                grows = [f.name for f in (child, *child.find_all(nodes.Filter))
                         if isinstance(f, nodes.Filter) and f.name in OUTPUT_FILTERS]
                if len(grows) > MAX_OUTPUT_FILTERS:
                    raise _Refused(f"chains {len(grows)} of the filters "
                                   f"{', '.join(sorted(OUTPUT_FILTERS))} in one output")
                self.expr(child, stored=False, loop_vars=loop_vars)
            return
        for child in node.iter_child_nodes():
            self.stmt(child, depth, loop_vars)

    def _bindable(self, targets: list[str]) -> None:
        for name in targets:
            if name in _UNBOUND:
                raise _Refused(f"assigns {name!r}, a name the template may not re-bind")

    def _assign(self, node: Any, depth: int, loop_vars: frozenset[str]) -> None:
        targets = set(_targets(node.target))
        self._bindable(sorted(targets))
        if targets & (ROOTS | loop_vars):
            root = next(iter(targets & (ROOTS | loop_vars)))
            value = node.node
            if root in ROOTS:  # tools = custom_tools, messages = messages[1:], tools = none
                ok = isinstance(value, nodes.Const) and value.value is None or any(
                    self._rooted(value, r) for r in self.aliases)
            else:  # a loop item replaced by a field of itself: tool_call = tool_call.function
                ok = not isinstance(value, nodes.Name) and _based(value, {root}) and not any(
                    isinstance(n, nodes.Filter) for n in value.find_all(nodes.Filter))
            if not ok:
                raise _Refused(f"assigns {root!r} something other than a slice of it")
        self.expr(node.node, stored=True, loop_vars=loop_vars)
        read = _names(node.node, self.rebound)
        if len(read) > 1:
            raise _Refused(f"assigns a value read from {len(read)} variables ({', '.join(read)})")
        terms = _terms(node.node)  # a sum: ns.x = ns.x + [1, 2] doubles nothing but grows
        if depth and len(terms) > 1 and _self_refs(node.node, node.target) and not all(
                isinstance(t, nodes.Const) and type(t.value) in (int, float)
                or _self_refs(nodes.Not(t), node.target) == [t] for t in terms):
            raise _Refused("grows an assigned value from itself in a loop (only numbers may be "
                           "added to it)")
        if isinstance(node.target, nodes.Name) and _based(
                node.node, loop_vars | self.derived) and not isinstance(node.node, nodes.Name):
            self.derived.add(node.target.name)

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
                and node.left.node.name == "loop" and node.left.attr in _LOOP_COUNTERS
                and isinstance(node.right, nodes.Const) and type(node.right.value) is int
                and abs(node.right.value) <= 64):
            raise _Refused("uses % (but loop.index % n)")
        if isinstance(node, nodes.Const) and isinstance(node.value, str) and \
                len(node.value) > MAX_CONST_CHARS:
            raise _Refused(f"holds a text of {len(node.value)} characters (at most "
                           f"{MAX_CONST_CHARS})")
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
            self._sized(node, stored, loop_vars)
            if node.name == "map" and node.args and not (
                    isinstance(node.args[0], nodes.Const) and node.args[0].value in FILTERS
                    and len(node.args) == 1):
                raise _Refused(f"gives filter {node.name!r} a filter or arguments of its own")
        if isinstance(node, nodes.Call):
            self._call(node, loop_vars)
        for child in node.iter_child_nodes():
            self.expr(child, stored, loop_vars)

    def _sized(self, node: Any, stored: bool, loop_vars: frozenset[str]) -> None:
        """Filters that multiply their input's size: ``list`` of a text (its characters),
        ``join``/``string`` of a ``list`` and ``tojson(indent=...)`` of a nested constant."""
        if node.name == "list" and not any(self._rooted(node.node, r)
                                           for r in self.aliases | loop_vars):
            raise _Refused("uses filter 'list' on something other than the messages, tools or "
                           "documents")
        if node.name in ("join", "string") and not stored:
            inner = node.node
            while isinstance(inner, nodes.Filter):
                if inner.name == "list":
                    raise _Refused(f"feeds filter 'list' to {node.name!r}")
                inner = inner.node
        if node.name == "tojson" and (node.args or node.kwargs) and not _based(
                node.node, self.aliases | loop_vars | self.derived):
            raise _Refused("gives tojson(indent=...) something other than the messages, tools "
                           "or a loop item")

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
                if node.kwargs or node.dyn_args or node.dyn_kwargs:
                    raise _Refused("calls range with keywords")
                if sum(self._small_int(arg) for arg in node.args) > MAX_RANGE:
                    raise _Refused(f"calls range with bounds adding up to more than {MAX_RANGE}")
            return
        if isinstance(func, nodes.Getattr) and func.attr in METHODS:
            return
        name = func.attr if isinstance(func, nodes.Getattr) else getattr(func, "name", "?")
        raise _Refused(f"calls {name!r}")

    def _small_int(self, node: Any) -> int:
        """A ``range`` bound -- small numbers, ``messages|length``, ``loop.index``, + and - --
        and the most it can be (constants folded; the length and ``loop.*`` count as 64)."""
        if isinstance(node, nodes.Const) and type(node.value) is int and abs(node.value) <= 64:
            return abs(node.value)
        if isinstance(node, nodes.Filter) and node.name == "length" and \
                self._rooted(node.node, "messages"):
            return 64
        if isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Name) and \
                node.node.name == "loop" and node.attr in _LOOP_COUNTERS:
            return 64
        if isinstance(node, nodes.Add | nodes.Sub):
            total = self._small_int(node.left) + self._small_int(node.right)
            if total > MAX_RANGE:
                raise _Refused(f"calls range with bounds adding up to more than {MAX_RANGE}")
            return total
        if isinstance(node, nodes.Neg):
            return self._small_int(node.node)
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
        if any(self._rooted(node, r) for r in self.aliases):
            return
        if isinstance(node, nodes.Filter) and node.name in ("items", "dictsort") and not (
                node.args or node.kwargs) and _based(node.node, loop_vars | self.derived):
            return  # tool_call.arguments|items: a call's arguments
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and \
                node.node.name == "range":
            self._call(node, loop_vars)
            return
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr) and \
                node.node.attr in ("items", "keys", "values") and _based(
                node.node.node, loop_vars | self.aliases | self.derived):
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
