# ruff: noqa: E501 - chat templates, one line each
"""The chat template is rendered in a bounded sandbox (llm_agents.chat_render.render_chat):
the static check passed templates that still wrote ~15 MB a render (``range(64 + 64)`` twice
around ``messages|tojson(indent=8)``), nested values without end (``ns.x = [ns.x]``) or ran
long, and transformers rendered them unbounded. Real templates render the same text -- so the
same token ids -- as ``apply_chat_template``."""

import time

import pytest
from jinja2 import TemplateError, TemplateRuntimeError
from jinja2.exceptions import SecurityError
from transformers.utils.chat_template_utils import render_jinja_template

from llm_agents.chat_render import (
    MAX_RENDER_STEPS,
    MAX_VALUE_DEPTH,
    TRUST_CHAT_TEMPLATES,
    render_bounded,
    render_chat,
)
from llm_agents.chat_templates import chat_template_problem
from llm_agents.prompts import PromptBuilder
from llm_agents.tiny import SIMPLE_CHAT_TEMPLATE, build_tokenizer

from .test_llm38_chat_templates import LLAMA3_LIKE, MISTRAL_LIKE, QWEN3_LIKE, SMOLLM2
from .test_tmpl38_chat_templates import LLAMA31, MISTRAL_V3, QWEN25, TOOLS

MISTRAL_V3_TOOLS = r"""{%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}
{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}{{- ", " }}{%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}{{- ", " }}{%- else %}{{- "]" }}{%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
        {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}{{- ", " }}{%- else %}{{- "]" + eos_token }}{%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}"""
"""Mistral-7B-Instruct-v0.3's template in full (its tools and tool calls), as it is built."""
IDIOMS = (
    "{{ bos_token ~ 'a' ~ 1 }}{{ 1 in [1, 2] }}{{ 'x' not in 'abc' }}{{ 2 ** 3 }}{{ 7 % 3 }}"
    "{{ '%s-%d' % ('a', 2) }}{{ '{}!'.format('hi') }}{{ messages|length > 1 }}"
    "{% for m in messages if m.role != 'tool' %}{{ loop.index }}/{{ loop.length }}"
    "{{ loop.cycle('a', 'b') }}{% if loop.last %}{% break %}{% endif %}{% endfor %}"
    "{% for m in [] %}{% else %}empty{% endfor %}{% set ns = namespace(n=0) %}"
    "{% for m in messages %}{% set ns.n = ns.n + m.content|length %}{% endfor %}{{ ns.n }}"
    "{{ messages|map(attribute='role')|join(', ') }}{{ dict(a=1)|tojson }}"
    "{{ (messages|first).content|truncate(20) }}{{ messages[0].content.split(' ')|length }}"
    "{% generation %}{{ eos_token }}{% endgeneration %}{{ raw_missing is defined }}"
    "{{ ('x' * 3)|center(9) }}{{ [1, 2] + [3] }}{{ none }}"
)
"""What chat templates do, in one: ``~``, comparisons, loop controls, namespaces, filters,
``{% generation %}``."""
REAL = {"tiny": SIMPLE_CHAT_TEMPLATE, "smollm2": SMOLLM2, "qwen3": QWEN3_LIKE, "qwen2.5": QWEN25,
        "llama3": LLAMA3_LIKE, "llama3.1": LLAMA31, "mistral": MISTRAL_LIKE,
        "mistral_v0.3": MISTRAL_V3, "mistral_v0.3_tools": MISTRAL_V3_TOOLS, "idioms": IDIOMS}
PROMPT = [{"role": "system", "content": "You are player_0 playing kuhn_poker. " * 12},
          {"role": "user", "content": "Your card: King.\nLegal actions: Pass | Bet\nYour action:"}]
CHAT = [{"role": "user", "content": "Bet or pass?"},
        {"role": "assistant", "content": "Bet."},
        {"role": "user", "content": "Why?"}]
TOOL_CHAT = [{"role": "user", "content": "Bet for me."},
             {"role": "assistant", "tool_calls": [{"id": "abcdefghi", "type": "function", "function": {"name": "bet", "arguments": {"chips": 1}}}]},
             {"role": "tool", "tool_call_id": "abcdefghi", "content": "done"},
             {"role": "assistant", "content": "I bet one chip."},
             {"role": "user", "content": "Thanks."}]
SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}
SAYS = "You are player_0 playing kuhn_poker. " * 20  # 740 characters, as a real system prompt


def _transformers(template, messages, tools=None):
    """What transformers renders (the text), or the error it raises."""
    try:
        (out,), _ = render_jinja_template([messages], chat_template=template, tools=tools,
                                          add_generation_prompt=True, **SPECIAL)
        return out
    except Exception as err:  # noqa: BLE001 - compared below
        return err


def _ours(template, messages, tools=None):
    try:
        return render_bounded(template, messages, tools=tools, add_generation_prompt=True,
                              **SPECIAL)
    except TemplateError as err:
        return err


@pytest.mark.parametrize("name", sorted(REAL))
@pytest.mark.parametrize("messages, tools", [(PROMPT, None), (CHAT, None), (PROMPT, TOOLS),
                                             (TOOL_CHAT, TOOLS)],
                         ids=["prompt", "chat", "prompt+tools", "tool_calls"])
def test_real_templates_render_what_transformers_renders(name, messages, tools):
    theirs, ours = _transformers(REAL[name], messages, tools), _ours(REAL[name], messages, tools)
    if isinstance(theirs, TemplateError):  # Mistral's: roles must alternate (the same line)
        assert type(ours) is type(theirs) and str(ours) == str(theirs)
    elif isinstance(theirs, Exception):  # Qwen3-like: tojson of a missing field, TypeError
        assert isinstance(ours, TemplateRuntimeError)
        assert str(ours) == f"{type(theirs).__name__}: {theirs}"
    else:
        assert ours == theirs


@pytest.mark.parametrize("name", sorted(REAL))
def test_prompt_token_ids_are_those_of_apply_chat_template(name):
    """Through the tokenizer (its special tokens) and PromptBuilder, as a run renders them."""
    messages = CHAT if name == "mistral" else PROMPT
    text = _transformers(REAL[name], messages)
    tok = build_tokenizer([text], chat_template=REAL[name])
    tok.add_special_tokens({"bos_token": "<s>"})
    want = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ours = render_chat(tok, messages)
    assert ours == want
    ids = tok.apply_chat_template(messages, add_generation_prompt=True)["input_ids"]
    assert tok(ours, add_special_tokens=False)["input_ids"] == ids


def test_prompt_builder_renders_through_the_bounded_render(monkeypatch):
    tok = build_tokenizer(["a"], chat_template=SMOLLM2)
    calls = []
    monkeypatch.setattr(type(tok), "apply_chat_template", lambda *a, **k: calls.append(a))
    text = PromptBuilder().build(tok, game="openspiel/kuhn_poker", agent="player_0",
                                 role="player_0", role_prompt="", observation="1",
                                 legal=["Pass", "Bet"], instruction="")
    assert text.startswith("<|im_start|>system\n") and not calls


def _refused(template, said, messages=None, seconds=10.0):
    """``template`` fails through PromptBuilder in one line saying ``said``, quickly."""
    tok = build_tokenizer(["a"], chat_template=template)
    start = time.perf_counter()
    with pytest.raises(ValueError) as err:
        PromptBuilder().build(tok, game="openspiel/kuhn_poker", agent="player_0",
                              role="player_0", role_prompt=SAYS, observation="1",
                              legal=["Pass", "Bet"], instruction="")
    took = time.perf_counter() - start
    line = str(err.value)
    assert "\n" not in line and said in line and "chat template" in line, line
    assert took < seconds, took
    return line


AMPLIFIER = ("{% for a in range(64 + 64) %}{% for b in range(64 + 64) %}"
             "{{ messages|tojson(indent=8) }}{% endfor %}{% endfor %}")
"""review: passes the static check and wrote ~15 MB a render (~1 s) on a 900-character prompt."""
NESTER = ("{% set ns = namespace(x=1) %}{% for a in range(64 + 64) %}{% for b in range(64 + 64) %}"
          "{% set ns.x = [ns.x] %}{% endfor %}{% endfor %}{{ ns.x|length }}")
"""review: passes the static check and nests a list 16,384 deep."""
SCANNER = ("{% for a in range(64 + 64) %}{% for b in range(64 + 64) %}"
           "{% if messages[0].content.startswith('zz') or messages[1].content.endswith('zz') %}"
           "x{% endif %}{% endfor %}{% endfor %}")
"""Passes the static check: 16,384 iterations of a body that reads the prompt twice."""


@pytest.mark.parametrize("template, said", [
    (AMPLIFIER, "writes a prompt of more than"),
    (NESTER, f"nests a value more than {MAX_VALUE_DEPTH} deep"),
    (SCANNER, f"takes more than {MAX_RENDER_STEPS:,} steps"),
])
def test_templates_the_static_check_passes_are_bounded_when_rendered(template, said):
    assert chat_template_problem(template) is None
    _refused(template, said, seconds=5.0)


def test_a_range_budget_bomb_is_refused_before_it_runs():
    # 9 million empty iterations: transformers ran them (seconds); 10**10 ran for hours
    _refused("{% for a in range(3000) %}{% for b in range(3000) %}{% endfor %}{% endfor %}x",
             f"takes more than {MAX_RENDER_STEPS:,} steps", seconds=2.0)
    _refused("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
             "steps", seconds=2.0)


def test_other_errors_of_a_template_are_one_line_too():
    _refused("{{ 1 // 0 }}", "ZeroDivisionError")


@pytest.mark.parametrize("template, said", [
    ("{{ 'x' * 10**10 }}", "builds a value of more than"),
    ("{{ (10 ** 100000000)|string|length }}", "builds a value"),
    ("{{ '%999999999d' % 1 }}", "width or precision over 999"),
    ("{{ '{:>999999999}'.format(1) }}", "width of 1,000 or more"),
    ("{{ '{:{}}'.format('x', '999999999') }}", "nested field"),
    ("{% set ns = namespace(s='ab') %}{% for m in range(60) %}{% set ns.s = ns.s ~ ns.s %}"
     "{% endfor %}{{ ns.s|length }}", "builds a value"),
    ("{% set ns = namespace(s=[1]) %}{% for m in range(60) %}{% set ns.s = ns.s + ns.s %}"
     "{% endfor %}{{ ns.s|length }}", "takes more than"),  # measuring the list costs steps
    ("{{ 'x'|center(1000000000) }}", "gives filter 'center' the number 1000000000"),
    ("{{ 'x'.ljust(1000000000) }}", "gives ljust() the number"),
    ("{{ lipsum(1000000) }}", "the number 1000000"),
    ("{% set s = messages[0].content * 40 %}{{ s.replace('', s)|length }}", "builds a value"),
    ("{% set s = messages[0].content * 40 %}{{ s|join(s)|length }}", "builds a value"),
    ("{% set s = messages[0].content * 40 %}{{ (s|list)|join(s)|length }}", "builds a value"),
    ("{{ ('\\n' * 30000)|indent(4000)|length }}", "builds a value"),
    ("{{ ('\\t' * 30000).expandtabs(4000)|length }}", "builds a value"),
    ("{% set big %}{% for a in range(300) %}{% for b in range(300) %}{{ messages|tojson }}"
     "{% endfor %}{% endfor %}{% endset %}{{ big|length }}", "writes a prompt"),
    ("{% for a in range(300) %}{% for b in range(300) %}" + "y" * 900 + "{% endfor %}{% endfor %}",
     "writes a prompt"),  # template text counts too
    ("{{ strftime_now('%1000000000Y') }}", "strftime_now a width"),
    ("{% set l = messages[0].content|list %}{% for a in range(128) %}{% for b in range(128) %}"
     "{{ l|max }}{% endfor %}{% endfor %}", "steps"),  # a filter reading a list
    ("{% set l = messages[0].content|list %}{% set m = l|list %}{% for a in range(128) %}"
     "{% for b in range(128) %}{% if l == m %}{% endif %}{% endfor %}{% endfor %}", "steps"),
    ("{% for a in range(64) %}{% for x in [1]|batch(4096, 0) %}{% endfor %}{% endfor %}",
     "steps"),  # a loop item that is a 4,096-item list
    ("{% set ns = namespace(x=1) %}{% for a in range(40) %}{% set ns.x = dict(a=ns.x) %}"
     "{% endfor %}", "nests a value"),
    ("{{ ''.__class__.__mro__ }}", "is unsafe"),  # the sandbox's own refusal
    ("{% set ns = namespace() %}{% set ns._x = 1 %}", "stores '_x' on a namespace"),
])
def test_each_bound(template, said):
    start = time.perf_counter()
    with pytest.raises(SecurityError) as err:
        render_bounded(template, PROMPT, **SPECIAL)
    assert said in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert time.perf_counter() - start < 5.0


def test_the_cap_grows_with_the_prompt():
    """32 KiB + 8 x the input: a template writing its prompt eight times passes, ten does not."""
    big = [{"role": "user", "content": "x" * 20_000}]
    assert len(render_bounded("{% for i in range(8) %}{{ messages[0].content }}{% endfor %}",
                              big)) == 160_000
    with pytest.raises(SecurityError, match="writes a prompt"):
        render_bounded("{% for i in range(10) %}{{ messages[0].content }}{% endfor %}", big)


def test_trusted_templates_render_with_transformers_unbounded(monkeypatch):
    template = "{% for a in range(64) %}{{ messages|tojson(indent=8) }}{% endfor %}"
    tok = build_tokenizer(["a"], chat_template=template)
    messages = [{"role": "user", "content": SAYS}]
    with pytest.raises(SecurityError, match="writes a prompt"):
        render_chat(tok, messages)
    monkeypatch.setenv(TRUST_CHAT_TEMPLATES, "1")
    assert render_chat(tok, messages) == tok.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False)
