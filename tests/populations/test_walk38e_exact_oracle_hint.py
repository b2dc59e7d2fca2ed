"""walk38e L2: ``population.oracle=exact`` on a game that is not OpenSpiel's is refused in one
line that names what to use instead (the same hint a too-large OpenSpiel game gets)."""
from __future__ import annotations

import pytest

from tests.populations.user_modules import train_here


def test_exact_oracle_on_a_pettingzoo_game_names_the_sampled_settings(tmp_path, monkeypatch,
                                                                      capsys):
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        train_here(["game.name=pettingzoo/pettingzoo.classic.tictactoe_v3", "population=psro",
                    "population.oracle=exact", "population.iterations=2",
                    f"hydra.run.dir={run}", "progress=false"], monkeypatch)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "exact solvers need an OpenSpiel game" in err[0]
    assert "population.psro.payoffs=sampled population.oracle=rl" in err[0]
    assert not run.exists()
