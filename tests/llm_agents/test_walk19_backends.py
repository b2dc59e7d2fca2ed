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
import subprocess
import sys
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


# ------------------------------------------------------------------------- vllm backend
VLLM_LINES = [["experiment=kuhn_llm_selfplay", "llm=vllm"],
              ["algo=llm_grpo", "llm.backend=vllm"]]


@needs_no_vllm
@pytest.mark.parametrize("line", VLLM_LINES, ids=lambda line: " ".join(line))
def test_vllm_without_vllm_or_cuda_is_refused_before_any_folder(
        line, model_dir, tmp_path, monkeypatch, capsys):
    import populations.cli as cli
    from tests.populations.test_walk18_cli_more import _train

    started = []  # Hydra's task: a missed refusal would load the model and fail after it
    monkeypatch.setattr(cli, "_train_task", started.append)
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        _train([*line, f"llm.model={model_dir}", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert stop.value.code == 2 and started == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "selfplay-train: bad config: llm.backend='vllm' cannot run here: "), err
    assert "use llm.backend=transformers" in err[0]
    assert not run.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_vllm_not_installed_is_refused_without_torch(tmp_path):
    code = ("import sys\nfrom populations.cli import CLIError, check_command_line\n"
            "try:\n    check_command_line(['experiment=kuhn_llm_selfplay', 'llm=vllm', "
            "'llm.model=m'])\nexcept CLIError as err:\n    print(err)\n"
            "print('torch:', 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, check=True).stdout.splitlines()
    assert out == ["bad config: llm.backend='vllm' cannot run here: the vllm package is not "
                   "installed (pip install 'selfplay[vllm]', on a machine with a CUDA GPU); "
                   "use llm.backend=transformers (llm=hf)", "torch: False"], out


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


@pytest.mark.skipif(not VLLM_RUNS, reason="needs vllm and a CUDA GPU")
def test_vllm_with_a_gpu_is_accepted(model_dir):
    from populations.cli import check_command_line

    check_command_line(["experiment=kuhn_llm_selfplay", "llm=vllm", f"llm.model={model_dir}"])
    check_command_line(["algo=llm_grpo", "llm.backend=vllm", f"llm.model={model_dir}"])
