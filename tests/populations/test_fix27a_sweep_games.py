"""A sweep's check before its first job (``populations.sweep_jobs.check_sweep_jobs``) built
the game once per distinct pairing of its jobs (``-m mappo.lr=0.1,0.2``: twice), and closed
none of them (a game may hold a renderer or a subprocess), as the single run's check
(``check_experiment``) closed none. Each distinct game is built once and closed."""

from __future__ import annotations

import games
from games.matrix import CLIMBING, MatrixGame
from tests.populations.test_walk18_cli_more import _train

NAME = "fix27a_counted"
MADE: list[int] = []
CLOSED: list[int] = []


class Counted(MatrixGame):
    """The climbing game, counting its constructions and closes."""

    def __init__(self, repeats: int = 1) -> None:
        super().__init__(NAME, CLIMBING, repeats)
        MADE.append(id(self))

    def close(self) -> None:
        CLOSED.append(id(self))


games.register(NAME)(Counted)


def _refused_sweep(argv, tmp_path, monkeypatch, capsys) -> str:
    """Run ``selfplay-train -m ...`` on the counted game, refused before any job (70000
    copies of a stepped game): the last stderr line."""
    MADE.clear()
    CLOSED.clear()
    sweep = tmp_path / "sweep"
    try:
        _train(["-m", *argv, f"game.name={NAME}", "num_envs=70000",
                f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    except SystemExit as exit_:
        assert exit_.code == 2
    else:
        raise AssertionError("the sweep was not refused")
    assert not sweep.exists()
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_two_seeds_build_the_game_once_and_close_it(tmp_path, monkeypatch, capsys):
    err = _refused_sweep(["seed=0,1"], tmp_path, monkeypatch, capsys)
    assert "all 2 jobs of the sweep cannot run: num_envs=70000: at most 65536 copies" in err
    assert len(MADE) == 1 and CLOSED == MADE, (MADE, CLOSED)


def test_pairings_of_one_game_share_it(tmp_path, monkeypatch, capsys):
    err = _refused_sweep(["seed=0,1", "mappo.lr=0.1,0.2"], tmp_path, monkeypatch, capsys)
    assert "all 4 jobs of the sweep cannot run: num_envs=70000" in err
    assert len(MADE) == 1 and CLOSED == MADE, (MADE, CLOSED)


def test_distinct_games_are_each_built_once(tmp_path, monkeypatch, capsys):
    _refused_sweep(["mappo.lr=0.1,0.2", "game.kwargs.repeats=1,2"], tmp_path, monkeypatch,
                   capsys)
    # each of the two games: once stepped to check its arguments, once for the checks
    assert len(MADE) == 4 and sorted(CLOSED) == sorted(MADE), (MADE, CLOSED)


def test_a_single_runs_check_closes_its_game(tmp_path, monkeypatch, capsys):
    MADE.clear()
    CLOSED.clear()
    run = tmp_path / "run"
    try:
        _train([f"game.name={NAME}", "num_envs=70000", f"hydra.run.dir={run}"], monkeypatch,
               tmp_path)
    except SystemExit as exit_:
        assert exit_.code == 2
    assert "at most 65536 copies" in capsys.readouterr().err
    assert len(MADE) == 1 and CLOSED == MADE, (MADE, CLOSED)
