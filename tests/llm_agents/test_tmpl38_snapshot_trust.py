"""Snapshots of real instruct models' tokenizers save and load with their chat templates
(review38b H2: the project saved snapshots it then refused), and a refused template names
the way out for one's own snapshots: SELFPLAY_TRUST_CHAT_TEMPLATES=1 loads it unchecked."""

import json

import pytest
import torch

import games
from llm_agents.policy import LLMPolicy
from llm_agents.team import Team
from llm_agents.tiny import TinyModelConfig, build_model, build_tokenizer, game_corpus
from marl.core import PolicyLoadError, load_policy

from .test_tmpl38_chat_templates import REAL

KUHN = "openspiel/kuhn_poker"
REFUSED = "{{ 'x' * 3 }}"
HINT = "SELFPLAY_TRUST_CHAT_TEMPLATES=1 loads it anyway (only for snapshots you trust)"


def _save(path, template):
    tok = build_tokenizer(game_corpus(KUHN, 10), chat_template=template)
    model = build_model(tok, TinyModelConfig(n_layer=1, n_embd=16, n_head=2))
    return LLMPolicy.from_team(Team.shared(model, tok), games.make(KUHN).spec).save(path)


@pytest.mark.parametrize("name", sorted(REAL))
def test_a_snapshot_with_a_real_models_template_loads_with_it(tmp_path, name, monkeypatch):
    monkeypatch.delenv("SELFPLAY_TRUST_CHAT_TEMPLATES", raising=False)
    policy = load_policy(_save(tmp_path / "llm.pt", REAL[name]))
    (model,) = policy.team.models.values()
    assert model.tokenizer.chat_template == REAL[name]


def test_trust_chat_templates_loads_a_refused_template(tmp_path, monkeypatch):
    path = _save(tmp_path / "llm.pt", "{{ messages[0].content }}")
    data = torch.load(path, weights_only=True)
    files = data["payload"]["models"]["shared"]["tokenizer_files"]
    if "chat_template.jinja" in files:  # where newer transformers keep it
        files["chat_template.jinja"] = REFUSED
    else:
        config = json.loads(files["tokenizer_config.json"])
        config["chat_template"] = REFUSED
        files["tokenizer_config.json"] = json.dumps(config)
    torch.save(data, path)
    monkeypatch.delenv("SELFPLAY_TRUST_CHAT_TEMPLATES", raising=False)
    with pytest.raises(PolicyLoadError) as err:
        load_policy(path)
    assert str(err.value).endswith(HINT) and "uses *" in str(err.value), str(err.value)
    monkeypatch.setenv("SELFPLAY_TRUST_CHAT_TEMPLATES", "0")
    with pytest.raises(PolicyLoadError):
        load_policy(path)
    monkeypatch.setenv("SELFPLAY_TRUST_CHAT_TEMPLATES", "1")
    (model,) = load_policy(path).team.models.values()
    assert model.tokenizer.chat_template == REFUSED
