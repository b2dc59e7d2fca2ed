"""The text view of PettingZoo observations (games.array_text) against the np.array2string call
it replaced, in one process: a tiny team's corpus (random episodes of a game, every
observation written as text) built with each formatter in turn.

    nice -n 10 python bench/array_text.py [--runs 5] [--episodes 50] [--game mpe2.simple_tag_v3]

Each run builds the corpus once with the old formatter and once with the new, alternating
(which goes first alternates too), and checks that both give the same texts; CPU seconds
(``time.process_time``, steadier than wall time on a shared machine), median over ``--runs``.
Then the formatters alone on the corpus's observations: µs per observation, median of the
runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args, games

from bench._args import at_least  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=at_least(1), default=5)
    ap.add_argument("--episodes", type=at_least(1), default=50)
    ap.add_argument("--game", default="mpe2.simple_tag_v3", help="a pettingzoo/ module")
    args = ap.parse_args()

    import numpy as np

    import games
    import games.pettingzoo as pz
    from games.array_text import array_text, array_text_reference
    from llm_agents.tiny import game_corpus

    game = games.make(f"pettingzoo/{args.game}")
    formatters = {"np.array2string": array_text_reference, "games.array_text": array_text}
    corpus: dict[str, list[float]] = {k: [] for k in formatters}
    texts: dict[str, list[str]] = {}
    for run in range(args.runs):
        for name in sorted(formatters, reverse=bool(run % 2)):
            pz.obs_array_text = formatters[name]
            start = time.process_time()
            texts[name] = game_corpus(game, args.episodes, seed=run)
            corpus[name].append(time.process_time() - start)
        if len({tuple(t) for t in texts.values()}) != 1:
            sys.exit(f"run {run}: the formatters wrote different corpora")
    pz.obs_array_text = array_text

    observations, ts = [], game.reset(0)
    rng = np.random.default_rng(0)
    while len(observations) < 2000:
        ts = game.reset(len(observations)) if ts.done else ts
        observations += [game.observe(a) for a in ts.acting]
        ts = game.step({a: int(rng.choice(np.flatnonzero(ts.legal[a]))) for a in ts.acting})
    per_obs: dict[str, list[float]] = {k: [] for k in formatters}
    for run in range(args.runs):
        for name in sorted(formatters, reverse=bool(run % 2)):
            fmt, start = formatters[name], time.process_time()
            for obs in observations:
                fmt(obs)
            per_obs[name].append((time.process_time() - start) / len(observations) * 1e6)

    old, new = (statistics.median(corpus[k]) for k in formatters)
    fo, fn = (statistics.median(per_obs[k]) for k in formatters)
    print(f"{args.game}, {args.episodes} episodes, median of {args.runs} runs (CPU s)")
    print(f"{'formatter':<18} {'corpus s':>9} {'µs/obs':>8}")
    for name, c, f in zip(formatters, (old, new), (fo, fn), strict=True):
        print(f"{name:<18} {c:9.2f} {f:8.1f}")
    print(f"corpus {old:.2f} → {new:.2f} s ({new / old:.2f}x); "
          f"formatter {fo:.1f} → {fn:.1f} µs per observation ({fo / fn:.1f}x faster)")


if __name__ == "__main__":
    main()
