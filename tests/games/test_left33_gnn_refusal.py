"""``selfplay-train encoder=gnn`` refuses a game whose entity graphs the GNN cannot read
before it imports torch_geometric and builds the networks (left33): a graph of another
node width was refused only when the game copies were made for training, after the
learner's GNN layers were built (torch_geometric's import: ~6 s of CPU). The config check
now plays one copy's first graphs when a learner of the run reads them. A game with no
entity graphs was refused before that already (by the learner's ``check_game``); both
lines are pinned here with what the refusing process had imported, in a fresh process
(``subprocess``, not the test zygote, whose modules are preloaded)."""

import subprocess
import sys

from tests.games.test_walk25_graphs import COVERAGE, LAYOUT

CHILD = """
import sys
sys.argv = ["selfplay-train", *sys.argv[1:]]
from populations.cli import train_main
try:
    train_main()
except SystemExit as exit:
    print("exit", exit.code, "torch_geometric" in sys.modules, flush=True)
"""
SMALL = ["frames=64", "num_envs=2", "progress=false", "logger=none", "hydra.run.dir=runs/r1"]


def _refused(tmp_path, args):
    res = subprocess.run([sys.executable, "-c", CHILD, *args, *SMALL], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert "Traceback" not in res.stderr, res.stderr
    assert not (tmp_path / "runs").exists()
    return res.stdout.strip().splitlines()[-1], res.stderr.strip().splitlines()[-1]


def test_a_graph_of_another_width_is_refused_before_torch_geometric(tmp_path):
    (tmp_path / "w25_coverage.py").write_text(COVERAGE)
    out, line = _refused(tmp_path, ["imports=[w25_coverage]", "game.name=w25_coverage",
                                    "game.kwargs.width=5", "encoder=gnn"])
    assert line == ("selfplay-train: w25_coverage(width=5) step 0: entity graph nodes have 5 "
                    f"features, expected games.graphs.NODE_DIM=9 {LAYOUT}"), line
    assert out == "exit 2 False", out


def test_a_game_without_graphs_is_refused_before_torch_geometric(tmp_path):
    out, line = _refused(tmp_path, ["game=kuhn", "encoder=gnn"])
    assert line == ("selfplay-train: algo=mappo cannot play openspiel/kuhn_poker: a gnn "
                    "encoder or critic needs entity graphs and it has none; use encoder=mlp "
                    "(ippo and mappo play it with mappo.* at its defaults); algos that play "
                    "it: ['llm_grpo', 'qmix', 'vdn']"), line
    assert out == "exit 2 False", out
