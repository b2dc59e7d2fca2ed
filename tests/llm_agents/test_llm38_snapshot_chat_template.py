"""A snapshot whose tokenizer carries a chat template that could run for hours or take
gigabytes is refused when it loads, in one line naming the file (sec38 MEDIUM: check_payload
never looked at chat_template, and transformers rendered it on every prompt; sec38 LOW: a
template's SecurityError ended selfplay-eval in a traceback)."""

import json
import os
import subprocess
import sys
import time

import pytest
import torch

import games
from llm_agents.policy import LLMPolicy
from llm_agents.team import Team
from llm_agents.tiny import (
    SIMPLE_CHAT_TEMPLATE,
    TinyModelConfig,
    build_model,
    build_tokenizer,
    game_corpus,
)
from marl.core import PolicyLoadError, load_policy

KUHN = "openspiel/kuhn_poker"
LOOP = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}x"
MEM = "{{ 'x' * 10**10 }}"
ESC = "{{ cycler.__init__.__globals__.os.system('touch PWN') }}"


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    tok = build_tokenizer(game_corpus(KUHN, 10), chat_template=SIMPLE_CHAT_TEMPLATE)
    model = build_model(tok, TinyModelConfig(n_layer=1, n_embd=16, n_head=2))
    policy = LLMPolicy.from_team(Team.shared(model, tok), games.make(KUHN).spec)
    return policy.save(tmp_path_factory.mktemp("snap") / "llm.pt")


def _tampered(snapshot, tmp_path, template, where="tokenizer_config.json"):
    data = torch.load(snapshot, weights_only=True)
    files = data["payload"]["models"]["shared"]["tokenizer_files"]
    if where == "tokenizer_config.json":
        config = json.loads(files[where])
        config["chat_template"] = template
        files[where] = json.dumps(config)
    else:
        files[where] = template
    path = tmp_path / "evil.pt"
    torch.save(data, path)
    return path


def test_a_snapshot_with_a_plain_chat_template_loads_with_it(snapshot):
    policy = load_policy(snapshot)
    (model,) = policy.team.models.values()
    assert model.tokenizer.chat_template == SIMPLE_CHAT_TEMPLATE


@pytest.mark.parametrize("template, where, said", [
    (LOOP, "tokenizer_config.json", "calls range"),
    (MEM, "tokenizer_config.json", "uses *"),
    (MEM, "chat_template.jinja", "uses *"),
    (LOOP, "additional_chat_templates/tools.jinja", "calls range"),
    (ESC, "tokenizer_config.json", "calls 'system'"),
])
def test_a_snapshot_whose_chat_template_runs_long_or_grows_is_refused(snapshot, tmp_path,
                                                                     template, where, said):
    path = _tampered(snapshot, tmp_path, template, where)
    start = time.perf_counter()
    with pytest.raises(PolicyLoadError) as err:
        load_policy(path)
    assert time.perf_counter() - start < 30
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{path}: model 'shared': ")
    assert "chat template" in line and said in line, line


def test_selfplay_eval_refuses_it_in_one_line(snapshot, tmp_path):
    """The real CLI (sec38's chat_template_escape and _loop cases), exit 2, no traceback."""
    evil = _tampered(snapshot, tmp_path, ESC)
    exe = os.path.join(os.path.dirname(sys.executable), "selfplay-eval")
    res = subprocess.run([exe, str(evil), str(snapshot), "--episodes", "1", "--db", "e.db"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "Traceback" not in res.stderr and "chat template" in res.stderr, res.stderr[-2000:]
    assert not (tmp_path / "PWN").exists()
