"""Huge sizes were taken: ``frames=100000000000000000000`` (10**20) made the run folder and
trained "forever" (a progress bar of 10**20 frames, an estimate of 10**13 hours), as did
``eval_episodes=10**15`` after its training, and ``frames=1e20`` was refused with "(write
100000000000000000000)", a value then taken. Each size setting has an upper bound, and a
value past it is refused in one line naming the value and the accepted range, before the
schema (and torch) loads and before any run folder; ``frames=1e4`` still names the integer
to write."""

from __future__ import annotations

import pytest

from populations.command_line import CLIError
from populations.config_checks import MAX_SIZES, check_run_values
from populations.train_overrides import check_command_line
from tests.populations.test_walk18_cli_more import _train

TOO_MANY = [
    ("frames=100000000000000000000",
     "bad config: frames=100000000000000000000; expected an integer from 1 to "
     f"{MAX_SIZES['frames'][0]} ("),
    ("frames=1e20", f"bad config: frames=1e20; expected an integer from 1 to "
                    f"{MAX_SIZES['frames'][0]} ("),
    ("num_envs=1000000000000", "bad config: num_envs=1000000000000; expected an integer from "
                               f"1 to {MAX_SIZES['num_envs'][0]} ("),
    ("eval_episodes=1000000000000000", "bad config: eval_episodes=1000000000000000; expected "
                                       f"an integer from 1 to {MAX_SIZES['eval_episodes'][0]} ("),
]


@pytest.mark.parametrize(("override", "message"), TOO_MANY)
def test_a_size_past_its_bound_is_refused_with_the_range(override, message):
    with pytest.raises(CLIError) as err:
        check_command_line([override])
    text = str(err.value)
    assert text.startswith(message) and "\n" not in text and "write" not in text, text


@pytest.mark.parametrize("name", ["frames", "num_envs", "eval_episodes", "torch_threads"])
def test_each_bound_is_taken_and_one_past_it_refused(name):
    top = MAX_SIZES[name][0]
    check_run_values({name: top})
    with pytest.raises(ValueError, match=rf"^{name}={top + 1}; expected an integer from 1 to "
                                         rf"{top} \(.+\)$"):
        check_run_values({name: top + 1})


def test_a_whole_float_within_the_bound_still_names_the_integer_to_write():
    with pytest.raises(CLIError, match=r"^bad config: frames=1e4; expected an integer >= 1 "
                                       r"\(write 10000\)$"):
        check_command_line(["frames=1e4"])


def test_the_run_folder_is_not_made(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        _train(["frames=100000000000000000000", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("selfplay-train: bad config: frames=100000000000000000000; "
                              "expected an integer from 1 to "), err
    assert not run.exists()
