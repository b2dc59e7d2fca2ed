"""A tiny LLM team's start in a new run folder (the vocabulary built from ``--episodes``
random episodes of ``--game``, then saved in the folder) against its start on a resume (the
saved vocabulary read back), in seconds.

    python bench/vocab_resume.py [--episodes 200] [--game pettingzoo/mpe2.simple_tag_v3]
                                 [--runs 1]

mixed_algo_league's defaults: its LLM member rebuilt the vocabulary on every resume (43-73 s
on a loaded machine). Both are ``llm_agents.build.build_team`` with a one-layer tiny model, in
one process after a warm-up build (imports off the clock), alternating ``--runs`` times; CPU
seconds (steadier on a shared machine) and wall seconds, medians. The two teams' token ids
are checked equal.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

from bench._args import at_least  # noqa: E402


def _timed(fn):
    c, w = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c, time.perf_counter() - w


def main() -> None:
    doc = (__doc__ or "").split("\n\n")
    ap = argparse.ArgumentParser(description=doc[0], epilog=doc[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=at_least(1), default=200, help="llm.corpus_episodes")
    ap.add_argument("--game", default="pettingzoo/mpe2.simple_tag_v3")
    ap.add_argument("--runs", type=at_least(1), default=1, help="new/resume pairs")
    args = ap.parse_args()
    from llm_agents.build import build_team
    from llm_agents.settings import LLMConfig, TinyModelConfig

    tiny = TinyModelConfig(n_layer=1, n_embd=16, n_head=2)
    build_team(LLMConfig(tiny=tiny, corpus_episodes=1), [args.game])  # imports, caches
    cfg = LLMConfig(tiny=tiny, corpus_episodes=args.episodes)
    times: dict[str, list[tuple[float, float]]] = {"new run": [], "resume": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as run:
            new, *t_new = _timed(lambda: build_team(cfg, [args.game], workdir=run))  # noqa: B023
            again, *t_again = _timed(lambda: build_team(cfg, [args.game], workdir=run))  # noqa: B023
        a, b = (t.models["shared"].tokenizer for t in (new, again))
        if a.get_vocab() != b.get_vocab():
            sys.exit("the resumed team's token ids differ from the new run's")
        times["new run"].append(tuple(t_new))
        times["resume"].append(tuple(t_again))
    print(f"tiny team start, {args.game}, corpus_episodes={args.episodes} "
          f"(median of {args.runs}; vocabulary {len(a)} tokens, same ids)")
    for name, rows in times.items():
        cpu, wall = (statistics.median(col) for col in zip(*rows, strict=True))
        print(f"{name:<8} {cpu:8.2f} CPU s {wall:8.2f} wall s")


if __name__ == "__main__":
    main()
