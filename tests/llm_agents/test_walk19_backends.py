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
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llm_agents.build import LLMConfig, build_team
from llm_agents.tiny import TinyModelConfig, build_model, save_model_dir
from tests import subprocs

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
    code = ("import sys\nimport populations.cli\nfrom populations.command_line import CLIError\n"
            "from populations.train_overrides import check_command_line\n"
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
    from populations.train_overrides import check_command_line

    check_command_line(["experiment=kuhn_llm_selfplay", "llm=vllm", f"llm.model={model_dir}"])
    check_command_line(["algo=llm_grpo", "llm.backend=vllm", f"llm.model={model_dir}"])


# ---------------------------------------------------------------------- hub, offline
OFFLINE = """
import logging, sys
logging.basicConfig(level=logging.WARNING)
from llm_agents.build import LLMConfig, build_team
for name in sys.argv[1:]:
    print("--- build_team", name, file=sys.stderr, flush=True)
    try:
        team = build_team(LLMConfig(model=name), ["openspiel/kuhn_poker"])
        print(name, "loaded", type(team.models['shared'].model).__name__, flush=True)
    except ValueError as err:
        print(name, "refused", err, flush=True)
"""


@pytest.fixture(scope="module")
def offline(tmp_path_factory, model_dir) -> dict[str, tuple[list[str], str]]:
    """``build_team`` of hub names ``org/tiny`` (in the Hugging Face cache, as a download
    leaves it: ``models--org--tiny/snapshots/<rev>``), then ``org/xyz`` (not in it), where
    the hub cannot be reached (its address: a closed local port), one after the other in one
    child (each child imports torch and transformers, ~6 s CPU; build_team keeps no state
    between names). Returns each name's stdout lines and stderr."""
    home = tmp_path_factory.mktemp("offline") / "hf"
    repo = home / "hub" / "models--org--tiny"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    _damaged(model_dir, repo / "snapshots" / ("0" * 40), lambda d: None)
    env = {k: v for k, v in __import__("os").environ.items()
           if not k.startswith(("HF_", "TRANSFORMERS_", "HUGGINGFACE_"))}
    env.update(HF_HOME=str(home), HF_ENDPOINT="http://127.0.0.1:9", HF_HUB_DISABLE_TELEMETRY="1")
    run = subprocs.run([sys.executable, "-c", OFFLINE, "org/tiny", "org/xyz"],
                         capture_output=True, text=True, timeout=300, env=env,
                         cwd=Path(__file__).parents[2])
    out: dict[str, list[str]] = {"org/tiny": [], "org/xyz": []}
    for line in run.stdout.strip().splitlines():
        name, _, rest = line.partition(" ")
        out.setdefault(name, []).append(rest)
    head, *parts = run.stderr.split("--- build_team ")  # each name's stderr on its own
    err = dict.fromkeys(out, head)  # (what came before the first: the imports')
    for part in parts:
        name, _, text = part.partition("\n")
        err[name] = head + text
    return {name: (lines, err[name]) for name, lines in out.items()}


def test_a_hub_name_offline_fails_in_one_line_without_retries(offline):
    out, stderr = offline["org/xyz"]
    assert len(out) == 1 and out[0].startswith(
        "refused llm.model='org/xyz' is not in the local Hugging Face cache"), (out, stderr)
    assert "the hub could not be reached" in out[0] and "local model directory" in out[0]
    assert "Retry" not in stderr and "thrown while requesting" not in stderr, stderr


def test_a_cached_hub_model_loads_offline(offline):
    """A model in the Hugging Face cache loads with the hub out of reach."""
    out, stderr = offline["org/tiny"]
    assert out == ["loaded GPT2LMHeadModel"], (out, stderr)
    assert "Retry" not in stderr and "thrown while requesting" not in stderr, stderr


def test_a_hub_name_not_cached_is_downloaded_where_the_hub_answers(model_dir, monkeypatch):
    """The cache first, then (the hub answering) the download as before."""
    import huggingface_hub
    from transformers import AutoModelForCausalLM, AutoTokenizer

    calls, asked = [], []

    def fake(label, real):
        def load(name, **kw):
            calls.append((label, name, kw.get("local_files_only", False)))
            if kw.get("local_files_only"):
                raise OSError(f"{name} is not in the cache")
            return real(str(model_dir), **kw)
        return load

    monkeypatch.setattr(AutoTokenizer, "from_pretrained",
                        fake("tokenizer", AutoTokenizer.from_pretrained))
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained",
                        fake("model", AutoModelForCausalLM.from_pretrained))
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info",
                        lambda self, name, **kw: asked.append(name))
    team = build_team(LLMConfig(model="org/tiny"), [KUHN])
    assert type(team.models["shared"].model).__name__ == "GPT2LMHeadModel"
    assert calls == [("tokenizer", "org/tiny", True), ("tokenizer", "org/tiny", False),
                     ("model", "org/tiny", False)] and asked == ["org/tiny"]


# -------------------------------------------------------------------- damaged folders
def _truncate(d: Path, keep: int) -> None:
    f = d / "model.safetensors"
    f.write_bytes(f.read_bytes()[:keep])


def _cut(f: Path) -> None:  # a copy stopped half way (tokenizers raised a bare Exception)
    f.write_bytes(f.read_bytes()[:len(f.read_bytes()) // 2])


def _resize(d: Path) -> None:
    config = json.loads((d / "config.json").read_text())
    config["n_embd"] = 32
    (d / "config.json").write_text(json.dumps(config))


DAMAGES = {
    "truncated header": (lambda d: _truncate(d, 5), "its safetensors weights are damaged"),
    "truncated weights": (lambda d: _truncate(d, 200), "its safetensors weights are damaged"),
    "sizes": (_resize, "its weights do not match its config.json"),
    "truncated tokenizer.json": (lambda d: _cut(d / "tokenizer.json"),
                                 "its tokenizer.json is damaged"),
    "truncated config.json": (lambda d: _cut(d / "config.json"), "its config.json is damaged"),
}


@pytest.mark.parametrize("kind", DAMAGES)
def test_a_damaged_model_folder_fails_in_one_line_naming_it(kind, model_dir, tmp_path, capfd):
    damage, words = DAMAGES[kind]
    folder = _damaged(model_dir, tmp_path / "damaged", damage)
    with pytest.raises(ValueError) as err:
        build_team(LLMConfig(model=str(folder)), [KUHN])
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"llm.model={str(folder)!r} could not be "
                                                f"loaded ({words}"), text
    assert "LOAD REPORT" not in capfd.readouterr().err  # the multi-line table is held back


def test_a_sizes_mismatch_names_a_tensor_and_both_shapes(model_dir, tmp_path):
    folder = _damaged(model_dir, tmp_path / "damaged", _resize)
    with pytest.raises(ValueError, match=r"config\.json \(\S+: \[.*\] in the weights, \[.*\] "
                                         r"by config\.json"):
        build_team(LLMConfig(model=str(folder)), [KUHN])


def test_a_good_folder_still_loads(model_dir):
    team = build_team(LLMConfig(model=str(model_dir)), [KUHN])
    assert type(team.models["shared"].model).__name__ == "GPT2LMHeadModel"
