"""A bad value in a preset of the user's own config folder (``-cd myconfigs``,
``hydra.searchpath=[file://myconfigs]``) is refused in one line that names the file it came
from, as a path from the working folder: ``bad config: myconfigs/algo/my_mappo.yaml:
mappo.lr=-1.0; expected a finite number > 0``. Before: the key and value only, and the user
had to find which of their files set it. A value the command line sets (it wins) or a
shipped preset sets names no file."""

from __future__ import annotations

import pytest

from tests.populations.test_exact_info_state_guarded import _one_line_exit

FILES = {
    "algo/my_mappo.yaml": "# @package _global_\nalgo: mappo\nmappo:\n  lr: -1\n",
    "population/my_pop.yaml": "kind: league\ngenerations: 0\n",  # the group's own package
    "algo/on_mine.yaml": "# @package _global_\ndefaults:\n  - my_mappo\n  - _self_\n"
                         "mappo:\n  gamma: 0.9\n",  # my_mappo's lr, through its defaults
    "experiment/my_exp.yaml": "# @package _global_\ndefaults:\n  - override /algo: mappo\n"
                              "mappo:\n  gamma: 2\n",
}


@pytest.fixture()
def work(tmp_path):
    for name, text in FILES.items():
        (tmp_path / "myconfigs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "myconfigs" / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize("args, line", [
    (["-cd", "myconfigs", "algo=my_mappo"],
     "bad config: myconfigs/algo/my_mappo.yaml: mappo.lr=-1.0; expected a finite number > 0"),
    (["hydra.searchpath=[file://myconfigs]", "population=my_pop"],
     "bad config: myconfigs/population/my_pop.yaml: population.generations=0; expected an "
     "integer >= 1"),
    (["-cd", "myconfigs", "algo=on_mine"],
     "bad config: myconfigs/algo/my_mappo.yaml: mappo.lr=-1.0; expected a finite number > 0"),
    (["-cd", "myconfigs", "experiment=my_exp"],
     "bad config: myconfigs/experiment/my_exp.yaml: mappo.gamma=2.0; expected a number in "
     "[0, 1]"),
    (["-cd", "myconfigs", "algo=my_mappo", "mappo.lr=-2"],  # the command line set it
     "bad config: mappo.lr=-2.0; expected a finite number > 0"),
    (["-cd", "myconfigs", "mappo.gamma=3"],  # no file of the user's sets it
     "bad config: mappo.gamma=3.0; expected a number in [0, 1]"),
])
def test_a_bad_value_of_a_users_preset_names_its_file(args, line, work, monkeypatch, capfd):
    got = _one_line_exit([*args, "logger=none", "progress=false",
                          f"hydra.run.dir={work / 'run'}"], monkeypatch, work, capfd)
    assert got == f"selfplay-train: {line}"
    assert not (work / "run").exists()
