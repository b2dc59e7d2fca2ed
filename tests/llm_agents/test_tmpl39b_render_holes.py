# ruff: noqa: E501 - chat templates, one line each
"""Holes review39a found in the bounded chat render (llm_agents.chat_render.render_bounded):
each template below hung for seconds to minutes, allocated gigabytes or escaped as a raw
traceback. Each renders in a subprocess under a 60 s kill and a 3 GB address-space limit, so
a regression fails the test instead of hanging the suite; fixed, each is refused in well
under a second with a one-line TemplateError."""

import subprocess
import sys

import pytest
from jinja2 import TemplateError

_RUN = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from jinja2 import TemplateError
from llm_agents.chat_render import render_bounded
messages = [{"role": "system", "content": "You play rock paper scissors."},
            {"role": "user", "content": "Your move? Answer rock, paper or scissors."}]
try:
    out = render_bounded(sys.stdin.read(), messages)
except TemplateError as err:
    print("REFUSED", type(err).__name__, str(err))
else:
    print("RENDERED", len(out))
"""

_NESTED = "".join(f"{{% set a{i} = [a{i - 1},a{i - 1}] %}}{{% set b{i} = [b{i - 1},b{i - 1}] %}}" for i in range(1, 31))


def _render(template: str) -> str:
    """What rendering ``template`` gives: ``REFUSED <error> <message>`` or ``RENDERED <length>``
    (a hang past 60 s, a crash or a traceback fails)."""
    try:
        done = subprocess.run([sys.executable, "-c", _RUN], input=template, capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the render ran past 60 s")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("\n") == 1, done.stdout[-2000:]  # one line
    return done.stdout.strip()


_CHUNKS = "{% for i in range(64 + 64) %}{% for j in range(64 + 64) %}" + "{{ '' }}" * 50 + "{% endfor %}{% endfor %}"

_COUNT_LEN = r"""
import builtins, sys
from llm_agents import chat_render
calls = 0
def counted_len(x):
    global calls
    calls += 1
    return builtins.len(x)
chat_render.len = counted_len  # the module's len, counted: the render itself runs as it is
try:
    chat_render.render_bounded(sys.stdin.read(), [{"role": "user", "content": "Your move?"}])
except chat_render.RenderLimitError as err:
    print(calls, err)
"""


def test_writing_many_empty_chunks_takes_linear_work():
    """H1: each chunk of the output (16,384 iterations of 50 empty writes) summed the length
    of all written so far: ~10**8 len() calls, ~23 s a prompt; now a running total, and each
    chunk is a step."""
    try:
        done = subprocess.run([sys.executable, "-c", _COUNT_LEN], input=_CHUNKS,
                              capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the render ran past 60 s")
    assert done.returncode == 0, done.stderr[-2000:]
    calls, said = done.stdout.split(" ", 1)
    assert "steps" in said
    assert int(calls) < 200_000  # (a few per step; the quadratic sum took ~10**8)


@pytest.mark.parametrize(("template", "said"), [
    # M2f: a parse deeper than Python's recursion limit, at compile time
    ("{{ " + "(" * 120 + "1" + ")" * 120 + " }}", "RecursionError"),
    # M2a: bytes were sized 8 characters
    ("{{ ('x'.encode() * 2000000000)|length }}", "characters"),
    ("{% set b = 'x'.encode() * 4000 %}{{ (b * 4000)|length }}", "characters"),
    # M2b: str.translate maps each character to a text
    ("{% set t = ''.maketrans({'a': '\u00e9' * 30000}) %}{{ ('a' * 30000).translate(t)|length }}", "characters"),
    # M2c: loop(x) iterated without counting
    ("{% set r = range(30000) %}{% for x in [0] recursive %}{% if (loop.first or loop.last) and loop.depth < 13 %}{{ loop(r) }}{% endif %}{% endfor %}", "recursive"),
    # M2d: list literals share their items: 2**30 items written, compared
    ("{% set a0 = [1] %}{% set b0 = [1] %}" + _NESTED + "{{ a30 }}", "RenderLimitError"),
    ("{% set a0 = [1] %}{% set b0 = [1] %}" + _NESTED + "{{ a30 == b30 }}", "RenderLimitError"),
    ("{% set a0 = [1] %}{% set b0 = [1] %}" + _NESTED + "{{ a30|string|length }}", "RenderLimitError"),
    # M2d: a shared value that fits (2**11 items), read whole 3,000 times: each read costs its items
    ("{% set a0 = [1] %}{% set b0 = [1] %}" + _NESTED.split("{% set a12")[0] + "{% for i in range(3000) %}{{ a11 == b11 }}{% endfor %}", "steps"),
    ("{% set a0 = [1] %}{% set b0 = [1] %}" + _NESTED.split("{% set a12")[0] + "{% for i in range(3000) %}{{ a11 is eq b11 }}{% endfor %}", "steps"),
    ("{% set a0 = [1] %}{% set b0 = [1] %}" + _NESTED.split("{% set a12")[0] + "{% for i in range(3000) %}{{ a11|string|length }}{% endfor %}", "steps"),
    # M2e: a filter's iterator yields a large value 4,000 times
    ("{% set big = range(1000)|list %}{{ (range(4000)|map(attribute='zz', default=big)|sum(start=[]))|length }}", "steps"),
])
def test_review39a_templates_are_refused_at_once(template, said):
    result = _render(template)
    assert result.startswith("REFUSED") and said in result, result


def test_literals_nest_at_most_max_value_depth():
    from llm_agents.chat_render import MAX_VALUE_DEPTH

    deep = "{% set x = 1 %}" + "{% set x = [x] %}" * (MAX_VALUE_DEPTH + 1) + "{{ x|length }}"
    result = _render(deep)
    assert result.startswith("REFUSED") and f"more than {MAX_VALUE_DEPTH} deep" in result, result
    assert _render("{% set x = 1 %}" + "{% set x = [x] %}" * (MAX_VALUE_DEPTH - 1) + "{{ x|length }}") == "RENDERED 1"


def test_real_templates_still_render_a_long_conversation():
    """Measuring nested values (comparisons, filters, output) costs real templates little: 60
    turns of 4,000 characters still render what transformers renders."""
    from .test_tmpl39_bounded_render import REAL, _ours, _transformers

    long = [{"role": "system", "content": "s" * 3000}] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": "word " * 800} for i in range(60)
    ] + [{"role": "user", "content": "go"}]
    for name, template in sorted(REAL.items()):
        theirs, ours = _transformers(template, long, None), _ours(template, long, None)
        if isinstance(theirs, Exception):
            assert type(ours) is type(theirs) or isinstance(ours, TemplateError), (name, ours)
        else:
            assert ours == theirs, name
