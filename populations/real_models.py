"""Before/after figures of a real model trained on Kuhn poker (the SmolLM2 recipe of
``bench/llm_real.py``). They live in ``populations`` because NashConv comes from
:mod:`populations.exploitability`, and ``llm_agents`` never imports ``populations``."""

from __future__ import annotations

import logging
import os
from typing import Any

from llm_agents.real_models import KUHN, load_llm_preset, smollm2_path

log = logging.getLogger(__name__)


def kuhn_figures(trainer: Any, episodes: int) -> dict[str, float]:
    """Legal-action rate (``episodes`` evaluation games) and NashConv of ``trainer``'s team on
    Kuhn poker; in generate mode NashConv is exact over the *estimated* behaviour policy
    (``action.policy_samples`` generations per information state, invalid replies counted
    as the fallback)."""
    from populations.exploitability import nash_conv

    legal = trainer.evaluate(episodes)["charts/legal_rate"]
    return {"legal_rate": float(legal), "nash_conv": float(nash_conv(KUHN, trainer.policy())
                                                           .nash_conv)}


def smollm2_kuhn_run(iterations: int = 12, episodes: int = 64, seed: int = 0,
                     cache_dir: str | os.PathLike[str] | None = None,
                     preset: str = "smollm2_kuhn") -> dict[str, Any]:
    """Train SmolLM2-135M-Instruct on Kuhn self-play with ``preset`` (CPU) and measure it
    before and after: ``{"before": figures, "after": figures, "iterations", "seed",
    "seconds"}`` (:func:`kuhn_figures`)."""
    import time

    import torch

    from llm_agents.build import build_trainer

    t0 = time.perf_counter()
    cfg = load_llm_preset(preset, model=str(smollm2_path(cache_dir)))
    trainer = build_trainer(cfg, [KUHN], seed=seed, device="cpu")
    torch.manual_seed(seed)
    before = kuhn_figures(trainer, episodes)
    log.info("before training: %s", before)
    trainer.train(iterations, log_every=1)
    after = kuhn_figures(trainer, episodes)
    log.info("after %d iterations: %s", iterations, after)
    return {"before": before, "after": after, "iterations": iterations, "seed": seed,
            "seconds": time.perf_counter() - t0}
