"""A run never closes its LLM trainer's Ray rollout collector, and Ray ends a driver's actors
at its exit without running their exit handlers: a vLLM actor's ``selfplay-actor-*`` folder
stayed in the temp folder after every run. The collector now closes its actors at the
driver's exit, before Ray's own handler, and each removes its folder. vLLM needs a GPU: the
actor here is the transformers one, told by a user module it imports (as ``imports=``
modules are) that it needs the folder; the GPU path itself is not run. Starts Ray. One actor
(was two): what is under test is the driver's exit closing the collector, which a second
actor's start does not add to."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ACTOR_FILES = """
import llm_agents.ray_rollouts as rollouts
rollouts.needs_workdir = lambda llm: True  # the vLLM actor's folder, on the CPU backend
"""
DRIVER = """
import glob, os, tempfile
from games.registry import IMPORTS_ENV
os.environ[IMPORTS_ENV] = "fix28c_actor_files"  # each actor imports it, as imports= modules
from llm_agents.actions import ActionConfig
from llm_agents.backends import SamplingConfig
from llm_agents.build import LLMConfig, build_trainer
from llm_agents.ray_rollouts import RolloutWorkersConfig
from llm_agents.tiny import TinyModelConfig
from llm_agents.trainer import GRPOConfig
from populations.runners import init_ray
from tests.llm_agents.conftest import COMPACT, KUHN

pattern = os.path.join(tempfile.gettempdir(), "selfplay-actor-*")
before = set(glob.glob(pattern))
grpo = GRPOConfig(group_size=2, groups_per_step=2, prompt=COMPACT, device="cpu",
                  action=ActionConfig(mode="score", sampling=SamplingConfig(max_new_tokens=3)))
llm = LLMConfig(tiny=TinyModelConfig(n_layer=1, n_embd=32, n_head=2), corpus_episodes=4,
                grpo=grpo)
trainer = build_trainer(llm, [KUHN], {KUHN: {}}, seed=0,
                        rollouts=RolloutWorkersConfig(kind="ray", workers=1), ray_init=init_ray)
trainer.collect()  # the actors play
print(" ".join(sorted(set(glob.glob(pattern)) - before)), flush=True)
# the run ends without closing the collector, as selfplay-train's runs do
"""


def test_the_actors_folders_are_gone_after_the_driver_exits(tmp_path):
    (tmp_path / "fix28c_actor_files.py").write_text(ACTOR_FILES)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    run = subprocess.run([sys.executable, "-c", DRIVER], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    made = [Path(p) for p in run.stdout.strip().splitlines()[-1].split()]
    assert len(made) == 1, run.stdout  # the actor's, there while the run played
    assert [p for p in made if p.exists()] == []
