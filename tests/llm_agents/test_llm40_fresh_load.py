"""An ``llm`` snapshot loads in a fresh interpreter that imported only ``marl`` (llm40).

``marl`` never names ``llm_agents`` (tests/test_structure.py), so the ``llm`` kind was known
only once something imported ``llm_agents`` or ``populations.runners``: ``marl.core.
load_policy`` and ``populations.store.load_policy_file`` said "unknown policy kind 'llm'" in a
script that loads a saved LLM team. The packages installed beside ``marl`` declare their kinds
(``POLICY_MODULES`` in their ``__init__``); ``load_policy`` reads those declarations (parsed,
not imported) and imports the one module that registers the kind."""

import json
import subprocess
import sys

import games
from llm_agents.policy import LLMPolicy
from llm_agents.team import Team
from llm_agents.tiny import TinyModelConfig, build_model, build_tokenizer

from .conftest import COMPACT, KUHN, corpus

# a real interpreter (not the test zygote, which has imported llm_agents already)
CHILD = """
import json, sys
import {module} as m
before = sorted(n for n in sys.modules if n.startswith("llm_agents"))
p = m.{func}(sys.argv[1])
print(json.dumps({{"before": before, "type": type(p).__name__, "game": p.meta.game,
                  "agents": sorted(p.meta.agents)}}))
"""


def _llm_file(tmp_path):
    tok = build_tokenizer(corpus(KUHN))
    model = build_model(tok, TinyModelConfig(n_layer=1, n_embd=16, n_head=2))
    pol = LLMPolicy.from_team(Team.shared(model, tok), games.make(KUHN).spec, prompt=COMPACT)
    return pol, str(pol.save(tmp_path / "llm" / "v0000.pt"))


def _load_in_fresh_process(module, func, path):
    code = CHILD.format(module=module, func=func)
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_marl_load_policy_loads_an_llm_snapshot_without_importing_llm_agents(tmp_path):
    pol, path = _llm_file(tmp_path)
    found = _load_in_fresh_process("marl.core", "load_policy", path)
    assert found == {"before": [], "type": "LLMPolicy", "game": KUHN,
                     "agents": sorted(pol.meta.agents)}


def test_the_store_loads_an_llm_snapshot_in_a_fresh_process(tmp_path):
    pol, path = _llm_file(tmp_path)
    found = _load_in_fresh_process("populations.store", "load_policy_file", path)
    assert found["type"] == "LLMPolicy" and found["game"] == KUHN


def test_the_declared_kinds_are_read_without_importing_their_packages():
    code = ("import sys, marl.registry as r; mod = r.declared_policy_module('llm'); "
            "print(mod, r.declared_policy_module('nope'), "
            "sorted(n for n in sys.modules if n.startswith('llm_agents')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["llm_agents.policy", "None", "[]"]
