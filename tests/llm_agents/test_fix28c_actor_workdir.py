"""A vLLM rollout actor's ``selfplay-actor-*`` folder (the tiny models vLLM serves from
files) was never removed: one per actor and run piled up in the temp folder. The actor's
:class:`~llm_agents.ray_rollouts.ActorWorkdir` is removed by the actor's ``close()``, which
``RayRollouts.close()`` calls before killing it, and at the actor process's normal exit.
vLLM needs a GPU: here the actor's own code path runs with the transformers backend, told
it needs the folder (``needs_workdir``); the GPU path itself is not run."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import torch

from llm_agents import ray_rollouts
from llm_agents.actions import ActionConfig
from llm_agents.backends import SamplingConfig
from llm_agents.build import LLMConfig
from llm_agents.ray_rollouts import ActorWorkdir, RolloutActor, needs_workdir
from llm_agents.tiny import TinyModelConfig
from llm_agents.trainer import GRPOConfig
from tests import subprocs
from tests.llm_agents.conftest import COMPACT, KUHN

ROOT = Path(__file__).resolve().parents[2]


def test_close_removes_the_folder_and_its_files():
    workdir = ActorWorkdir(True)
    folder = Path(workdir.path)
    assert folder.is_dir() and folder.name.startswith("selfplay-actor-")
    (folder / "models" / "shared").mkdir(parents=True)
    (folder / "models" / "shared" / "model.safetensors").write_bytes(b"x" * 64)
    workdir.close()
    assert not folder.exists() and workdir.path is None
    workdir.close()  # again: nothing


def test_other_backends_make_no_folder():
    assert ActorWorkdir(False).path is None
    assert needs_workdir(LLMConfig(backend="vllm")) and not needs_workdir(LLMConfig())


MADE = """
import os
from llm_agents.ray_rollouts import ActorWorkdir
workdir = ActorWorkdir(True)
open(os.path.join(workdir.path, "model.bin"), "w").write("x")
print(workdir.path)
"""


def test_an_actor_process_that_exits_removes_it():
    """A process ending normally (Ray's graceful actor exit, a local worker at shutdown)."""
    run = subprocs.run([sys.executable, "-c", MADE], capture_output=True, text=True,
                        timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr
    made = Path(run.stdout.split()[-1])
    try:
        assert made.name.startswith("selfplay-actor-") and not made.exists()
    finally:
        shutil.rmtree(made, ignore_errors=True)


def test_a_rollout_actor_removes_its_folder_when_closed(monkeypatch):
    monkeypatch.setattr(ray_rollouts, "needs_workdir", lambda llm: True)  # as vllm's actor
    action = ActionConfig(mode="score", sampling=SamplingConfig(max_new_tokens=3))
    grpo = GRPOConfig(group_size=2, groups_per_step=2, action=action, prompt=COMPACT,
                      device="cpu")
    llm = LLMConfig(tiny=TinyModelConfig(n_layer=1, n_embd=32, n_head=2), corpus_episodes=4,
                    grpo=grpo)
    actor = RolloutActor(llm, [KUHN], {}, "cpu", torch.get_num_threads(), {})
    folder = Path(actor.workdir.path)
    assert folder.is_dir()
    actor.close()
    assert not folder.exists()
