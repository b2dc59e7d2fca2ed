"""Tokens per second of batched multi-game LLM rollouts against one game at a time, in one run.

Scenario: a tiny GPT-2-style model (built in code from the games' texts, no download)
plays 64 episodes -- Kuhn poker, ``tool/relay`` and ``tool/lookup`` in turn -- with every
seat an LLM agent, default prompts. Batched: :class:`llm_agents.RolloutEngine` keeps all 64
games in flight and sends every pending decision of a step in one backend call. Baseline:
the same engine with one game in flight, i.e. one prompt per backend call. Both play the
same jobs with the same model; each measurement is repeated, interleaved, and the median
reported. Tokens = prompt + generated tokens of every LLM turn (generated tokens are also
shown on their own). Target: batched >= 5x the baseline.

    python bench/llm_rollouts.py [--games 64] [--repeats 3] [--max-new-tokens 32]
                                 [--device cpu|cuda] [--n-layer 2 --n-embd 64]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# bench/games.py is named like the games package: keep bench/ off the import path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

import torch  # noqa: E402

from bench._args import at_least  # noqa: E402
from llm_agents import (  # noqa: E402
    ActionConfig,
    EpisodeJob,
    PromptConfig,
    RolloutEngine,
    SamplingConfig,
    Team,
)
from llm_agents.tiny import TinyModelConfig, build_model, build_tokenizer, game_corpus  # noqa: E402

GAMES = [("openspiel/kuhn_poker", {}), ("tool/relay", {}), ("tool/lookup", {})]


def jobs(n: int) -> list[EpisodeJob]:
    return [EpisodeJob(GAMES[i % 3][0], seed=i, group=i, game_kwargs=GAMES[i % 3][1])
            for i in range(n)]


def measure(team: Team, action: ActionConfig, n: int, in_flight: int) -> dict[str, float]:
    engine = RolloutEngine(team, action, PromptConfig(), max_in_flight=in_flight, seed=0)
    t0 = time.perf_counter()
    m = engine.run(jobs(n)).metrics
    seconds = time.perf_counter() - t0
    tokens = m["charts/prompt_tokens"] + m["charts/generated_tokens"]
    return {"tok/s": tokens / seconds, "gen/s": m["charts/generated_tokens"] / seconds,
            "calls": m["charts/backend_calls"], "turns": m["charts/turns"], "s": seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=at_least(1), default=64)
    ap.add_argument("--repeats", type=at_least(1), default=3)
    ap.add_argument("--max-new-tokens", type=at_least(1), default=32)
    ap.add_argument("--threads", type=at_least(1), default=1)
    ap.add_argument("--device", default="cpu", help="cpu | cuda[:i]: where the model runs")
    ap.add_argument("--n-layer", type=at_least(1), default=TinyModelConfig.n_layer)
    ap.add_argument("--n-embd", type=at_least(1), default=TinyModelConfig.n_embd)
    args = ap.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        ap.exit(2, f"--device {args.device}: no CUDA device here (torch {torch.__version__})\n")
    try:  # the model's and sampling's own bounds, before the corpus and tokenizer are built
        model_config = TinyModelConfig(n_layer=args.n_layer, n_embd=args.n_embd)
        sampling = SamplingConfig(max_new_tokens=args.max_new_tokens)
    except ValueError as err:
        ap.error(str(err))
    torch.set_num_threads(args.threads)
    texts = [PromptConfig().static_text()]
    for name, kw in GAMES:
        texts += game_corpus(name, episodes=100, **kw)
    tok = build_tokenizer(texts)
    model = build_model(tok, model_config)
    team = Team.shared(model.to(args.device), tok)
    params = sum(p.numel() for p in team.models["shared"].model.parameters())
    rows = []
    for mode in ("generate", "score"):
        action = ActionConfig(mode=mode, sampling=sampling)
        runs: dict[str, list[dict[str, float]]] = {"one": [], "batched": []}
        for _ in range(args.repeats):
            runs["one"].append(measure(team, action, args.games, 1))
            runs["batched"].append(measure(team, action, args.games, args.games))
        med = {k: {f: statistics.median(r[f] for r in v) for f in v[0]} for k, v in runs.items()}
        base = med["one"]["tok/s"]
        for k, label in (("one", "one game at a time (baseline)"),
                         ("batched", f"{args.games} games in flight")):
            m = med[k]
            rows.append(f"| {mode} | {label} | {m['tok/s']:,.0f} | {m['gen/s']:,.0f} | "
                        f"{m['calls']:,.0f} | {m['tok/s'] / base:.1f} |")
    print(f"tiny GPT-2: {params:,} parameters, vocabulary {len(tok)}, {args.games} episodes, "
          f"median of {args.repeats}, {args.threads} thread(s), device {args.device}\n")
    print("| mode | rollout | tokens/s | generated tokens/s | backend calls | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
