"""A sweep job that could never run was found only when the sweep reached it:
``-m algo=mappo,ippo,maddpg game.name=openspiel/dots_and_boxes seed=0,1`` trained the mappo
and ippo jobs, then job 4 failed with 'algo=maddpg cannot play openspiel/dots_and_boxes'
(each maddpg job on its own with ``keep_going=true``), and a game module that cannot be
imported failed once per job. The sweep checks each distinct pairing of its jobs (as Hydra
composes them; seeds apart) before the first job, and refuses in one line naming the
failing jobs and their swept overrides; a valid sweep runs as before."""

from __future__ import annotations

import pytest

from tests.populations.test_walk18_cli_more import _train
from tests.populations.test_walk21_sweeps import FAST

GAME = "game.name=openspiel/dots_and_boxes"


@pytest.mark.parametrize("keep_going", ["keep_going=false", "keep_going=true"])
def test_a_pairing_no_job_can_run_is_refused_before_the_first_job(tmp_path, monkeypatch,
                                                                   capsys, keep_going):
    sweep = tmp_path / "sweep"
    with pytest.raises(SystemExit) as exit_:
        _train(["-m", "algo=mappo,maddpg", GAME, "seed=0,1", *FAST[1:], keep_going,
                f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(
        "selfplay-train: jobs 2, 3 (algo=maddpg) cannot run: algo=maddpg cannot play "
        "openspiel/dots_and_boxes: maddpg plays simultaneous-move games only"), err
    assert err[-1].endswith("; no job was started: drop them from the sweep")
    assert not sweep.exists()  # job 0 (mappo) never trained


def test_a_game_module_no_job_can_import_is_said_once(tmp_path, monkeypatch, capsys):
    (tmp_path / "mypz.py").write_text("raise RuntimeError('broken env file')\n")
    with pytest.raises(SystemExit):
        _train(["-m", "game.name=pettingzoo/mypz:make_env", "seed=0,1,2", *FAST[1:],
                f"hydra.sweep.dir={tmp_path / 'sweep'}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err
    assert err.count("broken env file") == 1, err
    assert "selfplay-train: all 3 jobs of the sweep cannot run: game.name=pettingzoo/" \
           "mypz:make_env: cannot import 'mypz'" in err
    assert not (tmp_path / "sweep").exists()


def test_a_valid_sweep_runs_every_job(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "sweep"
    _train(["-m", "algo=mappo,ippo", GAME, "seed=0", *FAST[1:], f"hydra.sweep.dir={sweep}"],
           monkeypatch, tmp_path)
    assert len([p for p in sweep.iterdir() if (p / "settings.json").is_file()]) == 2
