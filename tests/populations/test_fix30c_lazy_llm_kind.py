"""The ``llm`` policy kind is registered on demand (fix 30c): ``populations.runners`` imported
``llm_agents.learner`` at the top to register it, so every process that plays a match (each
CLI run, each Ray match worker) loaded the LLM stack, and an import error anywhere in
``llm_agents`` broke runs that play no LLM. Now the runner only tells the registry which
module saves ``llm`` files, and :func:`marl.core.load_policy` imports it when it meets one."""

import json
import sys

import games
from llm_agents.policy import LLMPolicy
from llm_agents.team import Team
from llm_agents.tiny import TinyModelConfig, build_model, build_tokenizer
from tests import subprocs
from tests.llm_agents.conftest import COMPACT, corpus

KUHN = "openspiel/kuhn_poker"

# a fresh interpreter: what importing the runner loads, then a match with an LLM seat
CHILD = """
import json, sys
import populations.runners as runners
before = "llm_agents.learner" in sys.modules
job = runners.MatchJob(key="k", game="openspiel/kuhn_poker", episodes=2, seed=0, num_envs=2,
                       seats={"player_0": sys.argv[1], "player_1": runners.RANDOM})
res = runners.LocalRunner().play([job])[0]
print(json.dumps({"before": before, "episodes": len(res.returns),
                  "after": "llm_agents.learner" in sys.modules}))
"""


def _llm_file(tmp_path):
    tok = build_tokenizer(corpus(KUHN))
    model = build_model(tok, TinyModelConfig(n_layer=1, n_embd=16, n_head=2))
    pol = LLMPolicy.from_team(Team.shared(model, tok), games.make(KUHN).spec, prompt=COMPACT)
    return str(pol.save(tmp_path / "llm" / "v0000.pt"))


def test_the_runner_loads_the_llm_stack_only_for_an_llm_seat(tmp_path):
    path = _llm_file(tmp_path)
    out = subprocs.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True,
                        timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == {"before": False, "episodes": 2, "after": True}


def test_a_run_without_an_llm_seat_never_imports_it():
    code = ("import sys, populations.runners as r; "
            "job = r.MatchJob(key='k', game='openspiel/kuhn_poker', episodes=2, seed=0, "
            "seats={'player_0': r.RANDOM, 'player_1': r.RANDOM}); "
            "r.LocalRunner().play([job]); "
            "print(sorted(m for m in sys.modules if m.startswith('llm_agents')))")
    out = subprocs.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
