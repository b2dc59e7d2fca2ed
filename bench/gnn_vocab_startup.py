"""Two startup waits: the first GNN encoder of a process (torch_geometric's import) and a
tiny LLM team's vocabulary (``llm.corpus_episodes`` random episodes of a game, then the
word-level tokenizer), each timed in fresh interpreters.

    python bench/gnn_vocab_startup.py [--runs 3] [--episodes 200] [--trees OLD,NEW]

CPU seconds (``OMP_NUM_THREADS=1``; steadier than wall time on a shared machine) and wall
seconds, median over ``--runs``. ``--trees`` runs each measurement once per source folder in
turn (``PYTHONPATH``; e.g. a ``git archive`` of an older commit beside the working tree).
torch and torch._dynamo are imported before the encoder's clock starts (the first optimizer
of every run imports torch._dynamo anyway), transformers before the vocabulary's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for bench._args

from bench._args import at_least  # noqa: E402

GNN = """
import json, time, torch, torch._dynamo
from games.graphs import NODE_FEATURES
from marl.gnn import GraphEncoder
c, w = time.process_time(), time.perf_counter()
GraphEncoder(len(NODE_FEATURES))
c1, w1 = time.process_time(), time.perf_counter()
GraphEncoder(len(NODE_FEATURES), layer="transformer")
print(json.dumps({"first encoder": [c1 - c, w1 - w],
                  "second encoder": [time.process_time() - c1, time.perf_counter() - w1]}))
"""
VOCAB = """
import json, sys, time, transformers
from llm_agents.tiny import build_tokenizer, game_corpus
build_tokenizer(["warm up"])
c, w = time.process_time(), time.perf_counter()
texts = game_corpus("pettingzoo/mpe2.simple_tag_v3", int(sys.argv[1]))
c1, w1 = time.process_time(), time.perf_counter()
build_tokenizer(texts)
print(json.dumps({"corpus": [c1 - c, w1 - w],
                  "tokenizer": [time.process_time() - c1, time.perf_counter() - w1]}))
"""


def run(code: str, tree: str, *args: str) -> dict[str, list[float]]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=tree)
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=tree,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=at_least(1), default=3)
    ap.add_argument("--episodes", type=at_least(1), default=200)
    ap.add_argument("--trees", default=os.getcwd())
    args = ap.parse_args()
    trees = [os.path.abspath(t) for t in args.trees.split(",")]
    rows: dict[tuple[str, str], list[list[float]]] = {}
    for _ in range(args.runs):
        for tree in trees:
            for code, extra in ((GNN, ()), (VOCAB, (str(args.episodes),))):
                for label, cw in run(code, tree, *extra).items():
                    rows.setdefault((label, tree), []).append(cw)
    print(f"{'measurement':<16} {'tree':<40} {'CPU s':>7} {'wall s':>7}")
    for (label, tree), vals in rows.items():
        cpu = statistics.median(v[0] for v in vals)
        wall = statistics.median(v[1] for v in vals)
        print(f"{label:<16} {tree[-40:]:<40} {cpu:7.2f} {wall:7.2f}")


if __name__ == "__main__":
    main()
