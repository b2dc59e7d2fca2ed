# ruff: noqa: E501 - chat templates as their models write them, one line each
"""A snapshot's chat template is code run on every prompt (sec38 MEDIUM): transformers'
sandbox blocks attribute tricks but bounds neither time nor memory, and check_payload never
looked at it. ``chat_template_problem`` accepts what chat templates do and refuses loops
that run long and values that grow."""

import pytest

from llm_agents.chat_templates import MAX_TEMPLATE_CHARS, chat_template_problem, templates_of
from llm_agents.tiny import SIMPLE_CHAT_TEMPLATE

from .test_tmpl38_chat_templates import LLAMA31, MISTRAL_V3, QWEN25

SMOLLM2 = (  # SmolLM2-135M-Instruct's (llm=smollm2_kuhn)
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}")
QWEN3_LIKE = """{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}{%- set content = message.content %}{%- else %}{%- set content = '' %}{%- endif %}
    {%- if '</think>' in content %}
        {%- set reasoning = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1] %}
    {%- endif %}
    {{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>' + '\\n' }}
    {%- if message.tool_calls %}{%- for tool_call in message.tool_calls %}{{- tool_call.name | tojson }}{%- endfor %}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"""
LLAMA3_LIKE = """{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}{%- else %}{%- set system_message = "" %}{%- endif %}
{%- if tools is not none %}{%- for t in tools %}{{- t | tojson(indent=4) }}{%- endfor %}{%- endif %}
{{- system_message }}{{- "<|eot_id|>" }}
{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}
{%- for m in messages %}{%- for key, value in m.items() %}{%- if key == 'name' %}{{ value }}{%- endif %}{%- endfor %}{%- endfor %}"""
MISTRAL_LIKE = (
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate') }}"
    "{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + "
    "' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
    "{% endif %}{% endfor %}")


@pytest.mark.parametrize("template", [SIMPLE_CHAT_TEMPLATE, SMOLLM2, QWEN3_LIKE, LLAMA3_LIKE,
                                      MISTRAL_LIKE, QWEN25, LLAMA31, MISTRAL_V3],
                         ids=["tiny", "smollm2", "qwen3", "llama3", "mistral", "qwen2.5",
                              "llama3.1", "mistral_v0.3"])
def test_chat_templates_of_instruct_models_pass(template):
    assert chat_template_problem(template) is None


@pytest.mark.parametrize("template, said", [
    ("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}x",
     "calls range with more than small numbers"),  # sec38 chat_template_loop: hours
    ("{{ 'x' * 10**10 }}", "uses *"),  # sec38 chat_template_mem: 10 GB
    ("{{ ('x' * 300000000)|length }}", "uses *"),
    ("{% set ns = namespace(s='ab') %}{% for m in messages %}{% set ns.s = ns.s ~ ns.s %}"
     "{% endfor %}", "builds an assigned value with ~"),  # doubling
    ("{% set a = messages %}{% set b = a + a %}", "read from 2 variables"),
    ("{% for m in messages %}{% for c in m.content %}{% endfor %}{% endfor %}",
     "loops over something other than the messages"),  # characters of the prompt
    ("{% for a in messages %}{% for b in messages %}{% for c in messages %}{% endfor %}"
     "{% endfor %}{% endfor %}", "nests loops more than 2 deep"),
    ("{{ 'x'|center(1000000000) }}", "uses filter 'center'"),
    ("{{ '%999999999d' % 1 }}", "uses %"),
    ("{{ lipsum(1000000) }}", "calls 'lipsum'"),
    ("{% macro f() %}{{ f() }}{{ f() }}{% endmacro %}{{ f() }}", "uses {% macro %}"),
    ("{{ messages[1].content.replace('', messages[1].content) }}", "calls 'replace'"),
    ("{{ messages|map(attribute='content')|join(messages[1].content) }}",
     "gives filter 'join' an argument other than a small constant"),
    ("{{ messages|tojson|tojson|tojson|tojson }}", "chains 4 of the filters"),
    ("{{ messages|map('center', 1000000000)|list }}", "gives filter 'map' a filter"),
    ("{% set ns = namespace(s=1) %}{% set ns.s = messages|string %}", "filter 'string' in an"),
    ("{{ cycler.__init__.__globals__.os.system('touch x') }}", "calls 'system'"),
    ("{{ ''.__class__ }}", "reads attribute '__class__'"),
    ("{% for m in messages recursive %}{{ loop(m.children) }}{% endfor %}", "recursive loop"),
    ("{% set messages = 'x' %}", "assigns 'messages' something other than a slice"),
    ("{{ strftime_now('%1000000000Y') }}", "strftime_now"),
    ("{% if %}", "is not a Jinja template"),
    ("x" * (MAX_TEMPLATE_CHARS + 1), f"at most {MAX_TEMPLATE_CHARS}"),
    (["not", "text"], "is not text"),
    # review38b H1: templates the first check passed that then hang or take gigabytes
    ("{% for a in range(" + "+".join(["64"] * 300) + ") %}x{% endfor %}",
     "bounds adding up to more than 128"),  # sums of small constants
    ("{% for a in range(64 + 64 + 1) %}x{% endfor %}", "bounds adding up to more than 128"),
    ("{% for a in range(messages|length + 64 + 64) %}x{% endfor %}", "more than 128"),
    ("{% set loop = dict(a='%-900000000s') %}{{ loop.a % 1 }}", "assigns 'loop'"),
    ("{% set loop = namespace(a='%-900000000s') %}{{ loop.a % 1 }}", "assigns 'loop'"),
    ("{% for loop in messages %}{% endfor %}", "assigns 'loop'"),
    ("{% for m in messages %}{{ loop.cycle % 1 }}{% endfor %}", "uses %"),
    ("{% for m in messages %}{{ loop.index % messages|length }}{% endfor %}", "uses %"),
    ("{% set ns = namespace(x=[1]) %}{% set dict = ns %}{% for a in range(40) %}"
     "{% set ns.x = ns.x + dict.x %}{% endfor %}", "assigns 'dict'"),  # doubling
    ("{% set ns = namespace(x='ab') %}{% set raise_exception = ns %}{% for a in range(40) %}"
     "{% set ns.x = ns.x + raise_exception.x %}{% endfor %}", "assigns 'raise_exception'"),
    ("{% set ns = namespace(x=[]) %}{% for a in range(64) %}{% for b in range(64) %}"
     "{% set ns.x = ns.x + [1, 1, 1, 1] %}{% endfor %}{% endfor %}",
     "grows an assigned value from itself in a loop"),  # quadratic
    ("{% for a in range(64) %}{% for b in range(64) %}{{ '" + "z" * 1000 + "'|list|"
     "join('xxxxxxxxxxxxxxxx') }}{% endfor %}{% endfor %}", "feeds filter 'list' to 'join'"),
    ("{% set s = messages[0].content|list %}{{ s|join('xxxxxxxxxxxxxxxx') }}",
     "uses filter 'list' on something other than the messages"),
    ("{{ messages|tojson(indent=8)|list|sort|join('xxxxxxxxxxxxxxxx') }}",
     "feeds filter 'list' to 'join'"),
    ("{% for a in range(64) %}{{ " + "[" * 60 + "]" * 60 + "|tojson(indent=8) }}{% endfor %}",
     "gives tojson(indent=...) something other than"),
    ("{{ '" + "z" * 1025 + "' }}", "holds a text of 1025 characters"),
    ("{% for m in messages %}" + "y" * 1025 + "{% endfor %}", "writes 1025 characters of text"),
    ("{{ " + "[" * 300 + "]" * 300 + " }}", "is nested too deeply to parse"),  # L1
])
def test_templates_that_run_long_or_grow_are_refused(template, said):
    problem = chat_template_problem(template)
    assert problem is not None and said in problem, problem
    assert "\n" not in problem


def test_templates_of_finds_every_place_a_tokenizer_keeps_one():
    files = {"tokenizer.json": "{}", "chat_template.jinja": "A",
             "tokenizer_config.json": '{"chat_template": [{"name": "default", "template": "B"}]}',
             "chat_template.json": '{"chat_template": "C"}',
             "additional_chat_templates/tool_use.jinja": "D"}
    assert sorted(t for _, t in templates_of(files)) == ["A", "B", "C", "D"]
    assert templates_of({"tokenizer_config.json": '{"model_max_length": 8}'}) == []
