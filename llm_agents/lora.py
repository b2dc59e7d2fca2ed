"""LoRA adapters for real models (``pip install 'selfplay[lora]'``, which pins ``peft``).

:func:`apply_lora` wraps a ``transformers`` causal LM with ``peft`` LoRA adapters: the base
weights are frozen and only the adapters train (the trainer optimizes parameters with
``requires_grad``). Snapshots keep the adapter structure (:func:`lora_fields`,
:func:`rebuild_lora`: the LoRA settings are saved as plain values and checked against an
allow-list on load). :func:`merged_state_dict` gives base-named weights with the adapters
added in, for engines that serve the plain architecture (vLLM).

    >>> from llm_agents.tiny import build_model, build_tokenizer
    >>> tok = build_tokenizer(["Pass Bet"])
    >>> model = apply_lora(build_model(tok), LoRAConfig(r=4))
    >>> all(".lora_" in n for n, p in model.named_parameters() if p.requires_grad)
    True
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

from llm_agents.settings import MAX_RANK, LoRAConfig  # noqa: F401 - their old home

LORA_FIELDS = {"r": int, "lora_alpha": int, "lora_dropout": float, "target_modules": list}
"""The LoRA settings a snapshot may hold, with their types (the loader's allow-list)."""
def _peft() -> Any:
    try:
        import peft
    except ImportError:
        raise ImportError("LoRA needs peft: pip install 'selfplay[lora]'") from None
    return peft


def is_lora(model: nn.Module) -> bool:
    """Whether ``model`` is a ``peft`` model with LoRA adapters."""
    return hasattr(model, "peft_config") and hasattr(model, "get_base_model")


def _peft_config(fields: dict[str, Any]) -> Any:
    peft = _peft()
    targets = fields["target_modules"]
    return peft.LoraConfig(
        r=fields["r"], lora_alpha=fields["lora_alpha"], lora_dropout=fields["lora_dropout"],
        target_modules=targets[0] if targets == ["all-linear"] else targets,
        task_type="CAUSAL_LM")


def apply_lora(model: nn.Module, cfg: LoRAConfig) -> nn.Module:
    """``model`` with LoRA adapters (base weights frozen); ``model`` itself when ``r == 0``."""
    if cfg.r == 0:
        return model
    fields = {"r": cfg.r, "lora_alpha": cfg.alpha, "lora_dropout": cfg.dropout,
              "target_modules": list(cfg.target_modules)}
    return _wrapped(model, fields)


def _wrapped(model: nn.Module, fields: dict[str, Any]) -> nn.Module:
    """``peft.get_peft_model`` without its notes of what it does right by itself, printed as
    raw warnings on every LoRA run: ``fan_in_fan_out is set to False but the target module is
    `Conv1D`. Setting fan_in_fan_out to True.`` (GPT-2 stores its linear weights transposed;
    peft adapts the flag itself) and transformers' ``is_gradient_checkpointing`` deprecation
    that peft calls."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "fan_in_fan_out is set to False", UserWarning)
        warnings.filterwarnings("ignore", ".*is_gradient_checkpointing.* is deprecated",
                                FutureWarning)
        return _peft().get_peft_model(model, _peft_config(fields))


def lora_fields(model: nn.Module) -> dict[str, Any] | None:
    """The plain LoRA settings a snapshot saves (None for a model without adapters)."""
    if not is_lora(model):
        return None
    c = model.peft_config["default"]
    targets = c.target_modules
    targets = [targets] if isinstance(targets, str) else sorted(targets)
    return {"r": int(c.r), "lora_alpha": int(c.lora_alpha), "lora_dropout": float(c.lora_dropout),
            "target_modules": targets}


def check_lora_fields(fields: Any) -> str | None:
    """Why ``fields`` (untrusted) are not valid LoRA settings, or None."""
    if not isinstance(fields, dict) or set(fields) != set(LORA_FIELDS):
        return f"lora settings are not {sorted(LORA_FIELDS)}"
    for key, typ in LORA_FIELDS.items():
        if type(fields[key]) is not typ:
            return f"lora {key} is not a {typ.__name__}"
    if not 1 <= fields["r"] <= MAX_RANK or not 0.0 <= fields["lora_dropout"] < 1.0:
        return f"lora r={fields['r']} or dropout={fields['lora_dropout']} out of range"
    if not fields["target_modules"] or not all(
            isinstance(t, str) and t.replace("-", "_").replace(".", "_").isidentifier()
            for t in fields["target_modules"]):
        return "lora target_modules are not a non-empty list of module names"
    return None


def rebuild_lora(model: nn.Module, fields: dict[str, Any]) -> nn.Module:
    """``model`` wrapped with the adapters ``fields`` (checked by :func:`check_lora_fields`)
    describe, ready for ``load_state_dict`` of a saved LoRA model."""
    return _wrapped(model, fields)


@torch.no_grad()
def merged_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """Base-model weights with the active adapters added in, under the base model's names;
    ``model`` is left as it was (no merge/unmerge round trip that would drift)."""
    from peft.tuners.lora import LoraLayer

    base = model.get_base_model()
    sd = {k: v.detach() for k, v in base.state_dict().items() if ".lora_" not in k}
    for name, mod in base.named_modules():
        if isinstance(mod, LoraLayer):
            key = f"{name}.base_layer.weight"
            for adapter in mod.active_adapters:
                if adapter in mod.lora_A and key in sd:
                    sd[key] = sd[key] + mod.get_delta_weight(adapter).to(sd[key].dtype)
    return {k.replace(".base_layer.", "."): v for k, v in sd.items()}
