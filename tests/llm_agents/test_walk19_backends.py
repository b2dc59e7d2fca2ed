"""Model and backend choices that cannot work on this machine are refused in one line (walk 19).

* ``llm=vllm`` / ``llm.backend=vllm`` where the ``vllm`` package or a CUDA GPU is missing: the
  model loaded (~8 s), then ``RuntimeError: the vllm backend needs a CUDA GPU`` with a full
  traceback, exit 1 and a run folder left behind. Now ``selfplay-train`` refuses the line
  before Hydra composes (without torch when vllm is not installed), and the backend itself
  raises a one-line ``ValueError``.
* A hub name (``llm.model=org/xyz``) on a machine that cannot reach the hub: ~50 s of
  huggingface_hub retries (~40 warning lines) before the error. Now the local cache is tried
  first (a cached model loads offline) and one short probe of the hub decides.
* A damaged model folder (a truncated ``model.safetensors``, a ``config.json`` whose sizes
  do not match the weights): a ``SafetensorError`` / ``RuntimeError`` traceback and a
  multi-line load report. Now one line naming the folder and what is wrong.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from llm_agents.build import LLMConfig, build_team
from llm_agents.tiny import TinyModelConfig, build_model, save_model_dir

KUHN = "openspiel/kuhn_poker"
VLLM_RUNS = importlib.util.find_spec("vllm") is not None and torch.cuda.is_available()
needs_no_vllm = pytest.mark.skipif(VLLM_RUNS, reason="vllm and a CUDA GPU are here: it runs")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, kuhn_tok):
    """A tiny GPT-2 saved with save_pretrained (what a user's model directory holds)."""
    model = build_model(kuhn_tok, TinyModelConfig(n_layer=1, n_embd=16, n_head=2))
    return save_model_dir(tmp_path_factory.mktemp("model") / "tiny", model, kuhn_tok)


def _damaged(src: Path, dst: Path, damage) -> Path:
    dst.mkdir(parents=True)
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    damage(dst)
    return dst




@needs_no_vllm
def test_the_vllm_backend_and_the_team_builder_refuse_in_one_line(model_dir, monkeypatch):
    from transformers import AutoModelForCausalLM

    from llm_agents.backends import VLLMBackend

    with pytest.raises(ValueError, match=r"^the vllm backend cannot run here: .*; use backend "
                                         r"'transformers'$"):
        VLLMBackend(str(model_dir))
    loaded = []  # refused before the model loads (~8 s for a real one)
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained",
                        lambda *a, **k: loaded.append(a))
    with pytest.raises(ValueError, match=r"^llm\.backend='vllm' cannot run here: .*; use "
                                         r"llm\.backend=transformers \(llm=hf\)$"):
        build_team(LLMConfig(model=str(model_dir), backend="vllm"), [KUHN])
    assert loaded == []
