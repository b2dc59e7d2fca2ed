"""A population (or any section's) value of the wrong type was refused in our words only
where the early check could read the group options the command line chose: with the
``population=`` group swept (``-m population=psro,fsp``), an experiment swept, or the key
given twice, Hydra refused it, naming a value the user did not type and not the integer to
write (``Error merging override population.iterations=1e3; Value '1000.0' of type 'float'
could not be converted to Integer``). A setting's type does not depend on the presets: it is
refused in the same line as when the group options are read."""

from __future__ import annotations

import pytest

from populations.command_line import CLIError
from populations.train_overrides import check_command_line
from tests.populations.test_walk18_cli_more import _train

PSRO_KEYS = ["population.iterations=1e3", "population.oracle_frames=2e4",
             "population.psro.episodes_per_entry=1e3", "population.psro.num_envs=1e1",
             "population.psro.seed=1e1", "population.iterations=1e20",
             "population.oracle_frames=2.5", "population.psro.stop_nash_conv=abc",
             "population.opponent_prob=abc", "population.generations=1e3"]
UNREAD = [  # group options the early check cannot read (swept; an experiment swept)
    ["-m", "population=psro,fsp"], ["-m", "experiment=kuhn_psro,main"],
    ["-m", "population=psro", "population=fsp"]]


def _line(argv):
    with pytest.raises(CLIError) as err:
        check_command_line(argv)
    return str(err.value)


@pytest.mark.parametrize("override", PSRO_KEYS)
@pytest.mark.parametrize("groups", UNREAD, ids=" ".join)
def test_the_line_does_not_depend_on_reading_the_group_options(override, groups):
    read = _line(["population=psro", override])  # the options read: the early check's line
    assert read.startswith(f"bad config: {override}"), read
    assert _line([*groups, override]) == read


@pytest.mark.parametrize(("argv", "message"), [
    (["-m", "population=psro,fsp", "population.iterations=1e3"],
     "bad config: population.iterations=1e3; expected an integer (write 1000)"),
    (["-m", "experiment=kuhn_psro,main", "population.iterations=1e20"],
     "bad config: population.iterations=1e20; expected an integer in [1, 1000000] (10**6 PSRO "
     "iterations, each adding matches to the payoff table)"),
    (["population=psro", "population.iterations=1e3", "population.iterations=20"],
     "bad config: population.iterations=1e3; expected an integer (write 1000)"),
    (["-m", "population=psro,fsp", "population.psro.num_envs=8,2.5e1"],
     "bad config: population.psro.num_envs=2.5e1; expected an integer (write 25)"),
    (["population=psro", "++population.psro.episodes_per_entry=1e3"],
     "bad config: ++population.psro.episodes_per_entry=1e3; expected an integer (write 1000)"),
])
def test_a_mistyped_value_is_named_as_typed(argv, message):
    assert _line(argv) == message


def test_selfplay_train_says_it_in_one_line_before_any_folder(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "sweep"
    with pytest.raises(SystemExit) as exit_:
        _train(["-m", "population=psro,fsp", "population.iterations=1e3",
                f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "selfplay-train: bad config: population.iterations=1e3; expected an " \
                      "integer (write 1000)", err
    assert "Traceback" not in "\n".join(err) and not sweep.exists()


def test_good_values_pass_without_the_group_options():
    check_command_line(["-m", "population=psro,fsp", "population.iterations=3",
                        "population.psro.stop_nash_conv=null", "population.opponent_prob=0.3",
                        "population.psro.num_envs=8,16", "mappo.lr=1e-3"])
    check_command_line(["population=psro", "population.iterations=3",
                        "population.iterations=4"])
