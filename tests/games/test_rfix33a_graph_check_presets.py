"""The early entity-graph check (abbd1f0, ``populations.cli.check_entity_graphs``) asks what
each learner of the run trains with: its section with its preset applied, and for PSRO its
oracle's learner. It read the raw section, so runs that read no graphs were refused
("openspiel/kuhn_poker has no entity graph; with_graphs needs one"): IPPO's preset makes
``mappo.net.critic=gnn`` a local critic, PSRO's exact oracle reads no ``mappo`` section, and a
league of IPPO members likewise. A real graph reader on a graphless game is still refused
early (tests/games/test_left33_gnn_refusal.py, through the CLI's config check, before
torch_geometric is imported). The check is called here on the config ``selfplay-train``
composes, in this process; one league run goes through the CLI end to end and trains."""

import os
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module

from games.core import GameError
from populations.cli import check_entity_graphs
from populations.train_overrides import prepare
from tests import subprocs

TRAIN = Path(sys.executable).with_name("selfplay-train")
ENV = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
SMALL = ["num_envs=2", "progress=false", "logger=none", "eval_episodes=2"]
IPPO = ["algo=ippo", "game=kuhn", "mappo.net.critic=gnn", "frames=64"]
PSRO_EXACT = ["population=psro", "game=kuhn", "encoder=gnn", "population.iterations=1"]
LEAGUE_OF_IPPO = ["population=pfsp", "game=kuhn", "population.members=[ippo]",
                  "mappo.net.critic=gnn", "population.generations=1",
                  "population.frames_per_generation=64", "mappo.epochs=1", "mappo.minibatches=1"]


def _checked(args: list[str]) -> None:
    """The early check on the config ``selfplay-train args`` composes and prepares, as its
    config check (``ConfigCheck``) runs it: in this process (a child process of the CLI takes
    seconds); raises what the CLI would refuse with."""
    overrides = [*args, *SMALL]
    with initialize_config_module(config_module="configs", version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    check_entity_graphs(prepare(cfg, overrides))


@pytest.mark.parametrize("args", [IPPO, PSRO_EXACT, LEAGUE_OF_IPPO],
                         ids=["ippo", "psro-exact", "league-of-ippo"])
def test_a_run_that_reads_no_graphs_is_not_refused_for_them(args):
    _checked(args)  # it raised "openspiel/kuhn_poker has no entity graph; with_graphs needs one"


def test_a_learner_that_reads_graphs_is_still_checked_here():
    # the same call refuses a graph reader on a graphless game (so the cases above pass
    # because the check lets them through, not because it is not reached)
    overrides = ["algo=mappo", "game=kuhn", "mappo.net.critic=gnn", *SMALL]
    with initialize_config_module(config_module="configs", version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    exp = prepare(cfg, overrides, check=False)  # check=True: the learner's own refusal first
    with pytest.raises(GameError, match="with_graphs needs one"):
        check_entity_graphs(exp)


def test_the_cli_runs_a_league_of_ippo_members_with_a_gnn_critic_setting(tmp_path):
    # one run end to end: the check is the CLI's (its config check), and the run it lets
    # through trains (the league's IPPO members read mappo.net.critic=gnn as local critics)
    done = subprocs.run([str(TRAIN), *LEAGUE_OF_IPPO, *SMALL, f"hydra.run.dir={tmp_path / 'run'}"],
                        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=600)
    assert "with_graphs needs one" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
