"""Exact tools on a simultaneous game made from an .nfg file: the solver copy is the
turn-based version of the same game object. It was reloaded from OpenSpiel's ``str(game)``,
'matrix_nfg()', which no game string loads: PSRO and league NashConv on
``openspiel/nfg_game`` ended in a pyspiel traceback listing every OpenSpiel game."""

import numpy as np
import pyspiel
import pytest

from populations import exploitability as ex
from tests.populations.user_modules import train_here

RPS = pyspiel.game_to_nfg_string(pyspiel.load_game("matrix_rps"))


@pytest.fixture
def nfg(tmp_path):
    path = tmp_path / "rps.nfg"
    path.write_text(RPS)
    return path


def test_game_tree_of_an_nfg_file_game(nfg):
    tree = ex.game_tree(f"openspiel/nfg_game(filename={nfg})")
    assert tree.solver_game.num_players() == 2
    assert [len(p.keys) for p in tree.players] == [1, 1]
    # rock-paper-scissors: payoffs of the 9 pure profiles are 0, -1 or 1
    assert sorted(np.unique(tree.terminals.returns)) == [-1.0, 0.0, 1.0]


def test_selfplay_train_psro_on_an_nfg_file_game(nfg, tmp_path, monkeypatch):
    try:
        train_here(["game.name=openspiel/nfg_game", f"+game.kwargs.filename={nfg}",
                    "population=psro", "population.iterations=1", "eval_episodes=4",
                    "progress=false", "logger=none", f"hydra.run.dir={tmp_path / 'run'}"],
                   monkeypatch, tmp_path)
    except SystemExit as stop:
        assert stop.code in (0, None)
    log = (tmp_path / "run" / "cli.log").read_text()
    # PSRO's auto settings: exact tools serve the game (resolve_auto)
    assert "oracle=exact, payoffs=exact" in log and "NashConv" in log
