"""``selfplay-train encoder=gnn`` refuses a game whose entity graphs the GNN cannot read
before it imports torch_geometric and builds the networks (left33): a graph of another
node width was refused only when the game copies were made for training, after the
learner's GNN layers were built (torch_geometric's import: ~6 s of CPU). The config check
now plays one copy's first graphs when a learner of the run reads them. A game with no
entity graphs was refused before that already (by the learner's ``check_game``); both
lines are pinned here with what the refusing process had imported, in a fresh process
(``subprocess``, not the test zygote, whose modules are preloaded): one process for both,
the first case's refusal before the second's."""

import json
import subprocess
import sys

import pytest

from tests.games.test_walk25_graphs import COVERAGE, LAYOUT

CASE_END = "-- end of case --"
CHILD = f"""
import json, os, sys
from populations.cli import train_main
for folder, args in json.loads(sys.argv[1]):  # each case in its own folder, one interpreter
    os.chdir(folder)
    sys.argv = ["selfplay-train", *args]
    try:
        train_main()
    except SystemExit as exit:
        print("exit", exit.code, "torch_geometric" in sys.modules, flush=True)
    print({CASE_END!r}, flush=True)
    print({CASE_END!r}, file=sys.stderr, flush=True)
"""
SMALL = ["frames=64", "num_envs=2", "progress=false", "logger=none", "hydra.run.dir=runs/r1"]
CASES = {
    "other-width": ["imports=[w25_coverage]", "game.name=w25_coverage", "game.kwargs.width=5",
                    "encoder=gnn"],
    "no-graphs": ["game=kuhn", "encoder=gnn"],
}


@pytest.fixture(scope="module")
def refused(tmp_path_factory) -> dict[str, tuple]:
    """Each case's (folder, last stdout line, last stderr line), all refused in one fresh
    interpreter (its imports, torch's among them, once: ~10 s a process), one after the
    other: a case that imported torch_geometric shows it, and so does every later one."""
    folders = {name: tmp_path_factory.mktemp(name) for name in CASES}
    (folders["other-width"] / "w25_coverage.py").write_text(COVERAGE)
    cases = [(str(folders[name]), [*args, *SMALL]) for name, args in CASES.items()]
    res = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cases)],
                         capture_output=True, text=True, timeout=600)
    assert "Traceback" not in res.stderr, res.stderr
    outs = res.stdout.split(CASE_END + "\n")
    errs = res.stderr.split(CASE_END + "\n")
    assert len(outs) == len(errs) == len(CASES) + 1, (res.stdout, res.stderr)
    return {name: (folders[name], out.strip().splitlines()[-1], err.strip().splitlines()[-1])
            for name, out, err in zip(CASES, outs[:-1], errs[:-1], strict=True)}


def test_a_graph_of_another_width_is_refused_before_torch_geometric(refused):
    folder, out, line = refused["other-width"]
    assert not (folder / "runs").exists()
    assert line == ("selfplay-train: w25_coverage(width=5) step 0: entity graph nodes have 5 "
                    f"features, expected games.graphs.NODE_DIM=9 {LAYOUT}"), line
    assert out == "exit 2 False", out


def test_a_game_without_graphs_is_refused_before_torch_geometric(refused):
    folder, out, line = refused["no-graphs"]
    assert not (folder / "runs").exists()
    assert line == ("selfplay-train: algo=mappo cannot play openspiel/kuhn_poker: a gnn "
                    "encoder or critic needs entity graphs and it has none; use encoder=mlp; "
                    "algos that play it: ['llm_grpo', 'qmix', 'vdn'], and ['ippo', 'mappo'] "
                    "with mappo.net.encoder='mlp' and mappo.net.critic='auto', their "
                    "defaults (set to 'gnn' and 'gnn')"), line
    assert out == "exit 2 False", out
