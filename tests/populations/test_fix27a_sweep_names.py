"""``selfplay-train -m frames=1e4,2e4`` was refused naming ``frames=10000.0``, a value the
user did not type (Hydra's parser reads a sweep's ``1e4`` as a float), where the single run
``frames=1e4`` names ``frames=1e4``; a section's sweep (``-m
population.frames_per_generation=2e4,3e4``) named the whole line with the first job's
integer, and ``frames=range(1e4,3e4,1e4)`` passed the early checks and was refused per job
in OmegaConf's words. A sweep's job is named as typed, as a single run's value is."""

from __future__ import annotations

import pytest

from populations.command_line import CLIError
from populations.train_overrides import check_command_line
from tests.populations.test_walk18_cli_more import _train

CASES = [
    (["-m", "frames=1e4,2e4"], "bad config: frames=1e4; expected an integer >= 1 (write 10000)"),
    (["-m", "frames=10000,2e4"],
     "bad config: frames=2e4; expected an integer >= 1 (write 20000)"),
    (["-m", "frames=choice(1e4, 2e4)"],
     "bad config: frames=1e4; expected an integer >= 1 (write 10000)"),
    (["-m", "num_envs=3.2e1,64"],
     "bad config: num_envs=3.2e1; expected an integer >= 1 (write 32)"),
    (["-m", "population.frames_per_generation=3,2e4"],
     "bad config: population.frames_per_generation=2e4; expected an integer (write 20000)"),
    (["-m", "mappo.rollout_steps=1e2,2e2"],
     "bad config: mappo.rollout_steps=1e2; expected an integer (write 100)"),
    (["-m", "frames=range(1e4,3e4,1e4)"], "bad config: frames=10000.0 (of range(1e4,3e4,1e4)); "
                                          "expected an integer >= 1 (write 10000)"),
]


@pytest.mark.parametrize(("argv", "message"), CASES)
def test_a_swept_value_is_named_as_typed(argv, message):
    with pytest.raises(CLIError) as err:
        check_command_line(argv)
    assert str(err.value) == message


@pytest.mark.parametrize("argv", [["frames=1e4"], ["-m", "frames=1e4,2e4"]])
def test_a_sweep_and_a_single_run_say_the_same(argv):
    with pytest.raises(CLIError) as err:
        check_command_line(argv)
    assert str(err.value) == "bad config: frames=1e4; expected an integer >= 1 (write 10000)"


def test_the_sweep_command_names_it_before_any_folder(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "sweep"
    with pytest.raises(SystemExit) as exit_:
        _train(["-m", "frames=1e4,2e4", f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "selfplay-train: bad config: frames=1e4; expected an integer >= 1 " \
                      "(write 10000)", err
    assert not sweep.exists()


def test_good_sweeps_pass():
    check_command_line(["-m", "frames=10000,20000", "mappo.lr=1e-3,3e-4"])
    check_command_line(["-m", "frames=range(1000,3000,1000)"])


def test_jobs_that_cannot_run_are_named_as_typed(tmp_path, monkeypatch, capsys):
    """Before: ``job 2 (algo=maddpg mappo.lr=0.001), job 3 (algo=maddpg mappo.lr=0.0003)``."""
    sweep = tmp_path / "sweep"
    with pytest.raises(SystemExit):
        _train(["-m", "algo=mappo,maddpg", "mappo.lr=1e-3,3e-4",
                "game.name=openspiel/dots_and_boxes", f"hydra.sweep.dir={sweep}"], monkeypatch,
               tmp_path)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("selfplay-train: job 2 (algo=maddpg mappo.lr=1e-3), job 3 "
                          "(algo=maddpg mappo.lr=3e-4) cannot run: algo=maddpg cannot play "), err
    assert not sweep.exists()
