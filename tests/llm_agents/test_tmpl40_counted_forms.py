# ruff: noqa: E501 - chat templates, one line each
"""Expression forms the bounded chat render (llm_agents.chat_render.render_bounded) did not
count (review tmpl39b and a walk of the rest): chained comparisons (``a == b == c`` on nested
values), macro, ``{% call %}`` and block bodies run again (``m()``, ``caller()``,
``self.b()``), integers of thousands of digits (``7 ** 30000``, ``x % y``, ``str()`` of them),
list methods comparing nested values (``l.count(x)``), ``is in`` on a long text, slices,
tuple keys, filters that read a text a character at a time (``wordwrap``, ``urlize``,
``s|max``) and slow codecs (``punycode``). Each took one step or a few where it did the work
of thousands: a template spent seconds in a render the step budget was meant to keep under
one. Each template below renders (with transformers, and with the old counting) at a small
size; counted, it goes past the budget -- so each test fails before the fix without timing
anything. Where a form is used as real templates use it, the render still gives
transformers' text; and ``str.format`` reads attributes as jinja2's sandbox does."""

import pytest
from jinja2 import TemplateError
from jinja2.exceptions import SecurityError

from llm_agents.chat_render import MAX_RENDER_STEPS, RenderLimitError, render_bounded

from .test_tmpl39_bounded_render import PROMPT, _ours, _transformers

_NESTED = "{% set a0 = [1] %}{% set b0 = [1] %}" + "".join(
    f"{{% set a{i} = [a{i - 1},a{i - 1}] %}}{{% set b{i} = [b{i - 1},b{i - 1}] %}}" for i in range(1, 12))
"""``a11``, ``b11``: equal lists of 2,048 ones, built apart (``a11 == b11`` reads all of them)."""
_BODY = "{% if x %}{% endif %}" * 400

UNCOUNTED = {
    # chained comparisons: a11 == b11 read 4,095 nodes a time, for no steps
    "chained ==": _NESTED + "{% for i in range(40) %}{{ a11 == b11 == 0 }}{% endfor %}",
    "chained, long": _NESTED + "{% for i in range(10) %}{% if 0 < 1 < 2 != a11 == b11 == a11 == b11 %}{% endif %}{% endfor %}",
    "chained in": "{% set s = 'a' * 30000 %}{% for i in range(60) %}{% if 'a' in s in s in s %}{% endif %}{% endfor %}",
    # bodies run again: a step a call, whatever the body
    "macro body": "{% macro m(x) %}" + _BODY + "{% endmacro %}{% for i in range(200) %}{{ m(0) }}{% endfor %}",
    "call block body": "{% macro m() %}{% for i in range(200) %}{{ caller() }}{% endfor %}{% endmacro %}{% call m() %}" + _BODY + "{% endcall %}",
    "block body": "{% block b %}" + _BODY + "{% endblock %}{% for i in range(200) %}{{ self.b() }}{% endfor %}",
    # integers: 7 ** 30000 (84,000 bits) took 1 ms, x % y 3 ms, str() of 4,300 digits 1 ms
    # (the numbers through names: jinja2 folds 2 ** 50000 and writes it into the code it compiles)
    "power": "{% set n = 30000 %}{% for i in range(20) %}{% set x = 7 ** n %}{% endfor %}",
    "modulo": "{% set n = 25000 %}{% set x = 2 ** (2 * n) - 1 %}{% set y = 2 ** n + 1 %}{% for i in range(20) %}{% set z = x % y %}{% endfor %}",
    "product": "{% set n = 45000 %}{% set x = 2 ** n - 1 %}{% set y = 2 ** n + 1 %}{% for i in range(20) %}{% set z = x * y %}{% endfor %}",
    "divisibleby": "{% set n = 25000 %}{% set x = 2 ** (2 * n) - 1 %}{% set y = 2 ** n + 1 %}{% for i in range(20) %}{% if x is divisibleby y %}{% endif %}{% endfor %}",
    "int to text": "{% set x = ('9' * 4300)|int %}{% for i in range(100) %}{% set s = x ~ '' %}{% endfor %}",
    # methods and tests reading nested values or long texts
    "list.count": _NESTED + "{% set l = [a11] %}{% for i in range(20) %}{% set n = l.count(b11) %}{% endfor %}",
    "loop.changed": _NESTED + "{% for i in range(20) %}{% if loop.changed(a11 if i % 2 else b11) %}{% endif %}{% endfor %}",
    "is upper": "{% set s = 'A' * 33000 %}{% for i in range(200) %}{% if s is upper %}{% endif %}{% endfor %}",
    "is in": "{% set s = 'a' * 33000 %}{% set n = 'a' * 49 + 'b' + 'a' * 49 %}{% for i in range(200) %}{% if n is in s %}{% endif %}{% endfor %}",
    "slice": "{% set s = 'x' * 32000 %}{% for i in range(200) %}{% set t = s[1:] %}{% endfor %}",
    "tuple key": "{% set t = (1,) %}" + "{% set t = (t, t) %}" * 11 + "{% set d = {t: 1} %}{% for i in range(40) %}{% set z = d[t] %}{% endfor %}",
    # filters and codecs working a character at a time
    "wordwrap": "{% set s = 'ab ' * 10000 %}{% for i in range(10) %}{% set t = s|wordwrap(1) %}{% endfor %}",
    "urlize": "{% set s = 'a\n' * 15000 %}{% for i in range(10) %}{% set t = s|urlize %}{% endfor %}",
    "max of a text": "{% set s = 'ab ' * 10000 %}{% for i in range(10) %}{% set t = s|max %}{% endfor %}",
    "striptags": "{% set s = '<>' * 15000 %}{% for i in range(40) %}{% set t = s|striptags %}{% endfor %}",
    "pprint": _NESTED + "{% for i in range(3) %}{% set t = a11|pprint %}{% endfor %}",
    "punycode": "{% set s = '\u00e9' * 8000 %}{% for i in range(10) %}{% set t = s.encode('punycode') %}{% endfor %}",
    "utf-7": "{% set s = '\u00e9' * 30000 %}{% for i in range(10) %}{% set t = s.encode('utf-7') %}{% endfor %}",
}


@pytest.mark.parametrize("name", sorted(UNCOUNTED))
def test_forms_that_did_thousands_of_steps_of_work_for_one_are_counted(name):
    template = UNCOUNTED[name] + "done"
    theirs = _transformers(template, PROMPT)
    assert isinstance(theirs, str) and theirs.endswith("done"), theirs  # transformers renders it
    with pytest.raises(RenderLimitError, match=f"more than {MAX_RENDER_STEPS:,} steps"):
        render_bounded(template, PROMPT)


@pytest.mark.parametrize("template", [
    # chained comparisons, Python's: the right side only where the left holds
    "{{ 1 < 2 < 3 }} {{ 3 < 2 < undefined_name.x }} {{ 'a' in 'ab' in 'abc' }} {{ 1 == 1 != 2 }} {{ messages|length > 1 > 0 }}",
    "{% for m in messages %}{% if 0 <= loop.index0 < 1 %}{{ m.role }}{% endif %}{% endfor %}",
    # macros, call blocks, blocks
    "{% macro m(x) %}<{{ x }}>{% endmacro %}{{ m(1) }}{{ m(2) }}{% block b %}B{% endblock %}{{ self.b() }}"
    "{% macro c() %}[{{ caller(3) }}]{% endmacro %}{% call(v) c() %}v{{ v }}{% endcall %}",
    # integers, slices, methods, codecs, filters as templates use them
    "{{ 2 ** 64 }} {{ 10 ** 18 % 7 }} {{ (2 ** 4096) % 1000 }} {{ 12 is divisibleby 4 }} {{ 2 ** 300 }}",
    "{{ messages[1:]|length }} {{ messages[0].content[:8] }} {{ {(1, 2): 'k'}[(1, 2)] }} {{ [[1], [1]].count([1]) }}",
    "{{ 'A' is upper }} {{ messages[0].content is lower }} {{ 'ab' is lower }}",
    "{{ 'h\u00e9'.encode('utf-8').decode('latin-1') }} {{ 'x'.encode() }} {{ '\u00e9'.encode('punycode') }}",
    "{{ messages[1].content|wordwrap(12) }}|{{ 'see http://x.io'|urlize }}|{{ 'abc'|max }}|{{ '<b>a</b>'|striptags }}|{{ [1, [2]]|pprint }}|{{ [[1], [2, 3]]|sum(start=[]) }}",
    "{% for m in messages %}{% if loop.changed(m.role) %}{{ m.role }}{% endif %}{% endfor %}",
])
def test_the_forms_as_templates_use_them_render_what_transformers_renders(template):
    theirs = _transformers(template, PROMPT)
    assert isinstance(theirs, str), theirs
    assert _ours(template, PROMPT) == theirs


@pytest.mark.parametrize("template", [
    "{{ '{0.__class__}'.format('') }}",  # an unsafe attribute: jinja2's undefined, written ''
    "{{ '{0.__class__!r}'.format('') }}",
    "{{ '{x.__class__}'.format_map({'x': 1}) }}",
    "{% set f = '{0.__class__}'.format %}{{ f('') }}",
    "{{ '{0.upper}'.format('') is string }} {{ '{0[0]}{1[a]}'.format('ab', {'a': 2}) }}",
    "{{ 'a{0[__class__]}'.format({}) }}",
    "{% set f = ''.format %}{{ '{0.__globals__}'.format(f) }}",
])
def test_str_format_reads_attributes_as_the_sandbox_does(template):
    """``str.format`` looks its fields' attributes and items up through the sandbox
    (``SandboxedFormatter``): an unsafe one is jinja2's undefined, which writes nothing --
    what transformers writes, since it renders in the same sandbox."""
    theirs = _transformers(template, PROMPT)
    assert isinstance(theirs, str), theirs
    assert _ours(template, PROMPT) == theirs


@pytest.mark.parametrize("template", [
    "{{ '{0.__class__.__name__}'.format('') }}",
    "{{ '{0.__class__.__mro__[1].__subclasses__}'.format('') }}",
    "{{ '{0.__init__.__globals__}'.format(raise_exception) }}",
    "{{ '{0.__class__.__name__}'.format_map(['']) }}",
])
def test_str_format_never_reaches_past_an_unsafe_attribute(template):
    """Reading on from an unsafe attribute (``{0.__class__.__mro__}``) is refused, as in the
    sandbox: no attribute lookup in a format string escapes it."""
    theirs = _transformers(template, PROMPT)
    ours = _ours(template, PROMPT)
    assert isinstance(ours, TemplateError) and not isinstance(ours, RenderLimitError), ours
    if isinstance(theirs, SecurityError):
        assert isinstance(ours, SecurityError) and str(ours) == str(theirs)
    else:  # (format_map of a list: the same TypeError, as one line)
        assert type(theirs).__name__ in str(ours), (theirs, ours)


def test_summing_lists_counts_the_copies():
    """``items|sum(start=[])`` copies the sum so far at each item: 8,000 one-item lists took
    32 million copies (0.25 s) for the steps of reading them; with a long prompt (the cap on
    what a render builds grows with it) the list fits, and the copies are counted."""
    long = [{"role": "user", "content": "A" * 200_000}]
    template = "{% set n = 8000 %}{% set t = range(n)|batch(1)|sum(start=[]) %}{{ t|length }}"
    assert _transformers(template, long) == "8000"
    with pytest.raises(RenderLimitError, match=f"more than {MAX_RENDER_STEPS:,} steps"):
        render_bounded(template, long)
    assert render_bounded(template.replace("8000", "3000"), long) == "3000"
