"""A model folder without weights, or with damaged safetensors weights, is refused before the
run as the other ``llm.model`` refusals are (walk35b item 4): ``selfplay-train: bad config:
llm.model=... could not be loaded (...); ...``, exit 2, no run folder. The loader refused
them once torch and transformers had loaded, without the ``bad config:`` of the others
(``its safetensors weights are damaged: ...``) or in transformers' own words (``Error no
file named model.safetensors, or pytorch_model.bin, found in directory ...``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from llm_agents.settings import LLMConfig
from llm_agents.tiny import TinyModelConfig, build_model, save_model_dir
from tests import subprocs


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, kuhn_tok):
    model = build_model(kuhn_tok, TinyModelConfig(n_layer=1, n_embd=16, n_head=2))
    return save_model_dir(tmp_path_factory.mktemp("model") / "tiny", model, kuhn_tok)


def _copy(src: Path, dst: Path, leave: str = "", keep: int | None = None) -> Path:
    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.name != leave:
            data = f.read_bytes()
            (dst / f.name).write_bytes(data if f.suffix != ".safetensors" or keep is None
                                       else data[:keep])
    return dst


def test_a_folder_without_weights(model_dir, tmp_path):
    folder = _copy(model_dir, tmp_path / "noweights", leave="model.safetensors")
    with pytest.raises(ValueError) as err:
        LLMConfig(model=str(folder))
    assert str(err.value) == (
        f"llm.model={str(folder)!r} could not be loaded (it has no weights: none of "
        "model.safetensors, model.safetensors.index.json, pytorch_model.bin, "
        "pytorch_model.bin.index.json); save the model into the folder too "
        "(model.save_pretrained(folder))")


@pytest.mark.parametrize(("keep", "why"), [
    (5, "is 5 bytes, shorter than its 8-byte header length"),
    (200, "is 200 bytes, shorter than its header of "),
    (-100, "is {cut} bytes, shorter than the {size} its tensors need"),
])
def test_damaged_safetensors(model_dir, tmp_path, keep, why):
    size = (model_dir / "model.safetensors").stat().st_size
    cut = keep if keep > 0 else size + keep
    folder = _copy(model_dir, tmp_path / "damaged", keep=cut)
    why = why.format(cut=cut, size=size)
    with pytest.raises(ValueError) as err:
        LLMConfig(model=str(folder))
    text = str(err.value)
    assert text.startswith(f"llm.model={str(folder)!r} could not be loaded (its safetensors "
                           f"weights are damaged: model.safetensors {why}"), text
    assert text.endswith("); copy or download them again") and "\n" not in text


def test_the_good_folder_passes(model_dir):
    assert LLMConfig(model=str(model_dir)).model == str(model_dir)


@pytest.mark.parametrize("damage", ["noweights", "truncated"])
def test_selfplay_train_refuses_them_as_bad_config_before_the_run(model_dir, tmp_path, damage):
    folder = (_copy(model_dir, tmp_path / damage, leave="model.safetensors")
              if damage == "noweights" else _copy(model_dir, tmp_path / damage, keep=200))
    args = [sys.executable, "-m", "populations.cli", "experiment=kuhn_llm_selfplay", "llm=hf",
            f"llm.model='{folder}'", "hydra.run.dir=runs/r1"]
    res = subprocs.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"selfplay-train: bad config: llm.model={str(folder)!r} could not be loaded (it"), lines
    assert not (tmp_path / "runs").exists()
