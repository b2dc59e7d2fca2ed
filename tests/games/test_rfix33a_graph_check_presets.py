"""The early entity-graph check (abbd1f0, ``populations.cli.check_entity_graphs``) asks what
each learner of the run trains with: its section with its preset applied, and for PSRO its
oracle's learner. It read the raw section, so runs that read no graphs were refused
("openspiel/kuhn_poker has no entity graph; with_graphs needs one"): IPPO's preset makes
``mappo.net.critic=gnn`` a local critic, PSRO's exact oracle reads no ``mappo`` section, and a
league of IPPO members likewise. A real graph reader on a graphless game is still refused
early (tests/games/test_left33_gnn_refusal.py)."""

import os
import sys
from pathlib import Path

import pytest

from tests import subprocs

TRAIN = Path(sys.executable).with_name("selfplay-train")
ENV = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
SMALL = ["num_envs=2", "progress=false", "logger=none", "eval_episodes=2"]


@pytest.mark.parametrize("args", [
    ["algo=ippo", "game=kuhn", "mappo.net.critic=gnn", "frames=64"],
    ["population=psro", "game=kuhn", "encoder=gnn", "population.iterations=1"],
    ["population=pfsp", "game=kuhn", "population.members=[ippo]", "mappo.net.critic=gnn",
     "population.generations=1", "population.frames_per_generation=64", "mappo.epochs=1",
     "mappo.minibatches=1"],
], ids=["ippo", "psro-exact", "league-of-ippo"])
def test_a_run_that_reads_no_graphs_is_not_refused_for_them(tmp_path, args):
    done = subprocs.run([str(TRAIN), *args, *SMALL, f"hydra.run.dir={tmp_path / 'run'}"],
                        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=600)
    assert "with_graphs needs one" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
