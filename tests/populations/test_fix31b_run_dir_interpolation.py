"""A run or sweep folder whose ``${...}`` does not resolve is refused in one line naming the
key (walk31 L1): ``selfplay-train 'hydra.run.dir=runs/${x}'`` said Hydra's "Interpolation key
'x' not found" after a 5-line warning, naming neither the key nor that a literal ``${`` is
refused (README says it is)."""

from __future__ import annotations

import pytest

from populations import cli
from tests.populations.test_walk18_cli_more import _train


@pytest.mark.parametrize(("argv", "key"), [
    (["hydra.run.dir=runs/${x}"], "hydra.run.dir"),
    (["-m", "seed=0,1", "hydra.sweep.dir=runs/${x}"], "hydra.sweep.dir"),
])
def test_an_unresolved_folder_name_is_one_line(argv, key, tmp_path, monkeypatch, capsys):
    started = []
    monkeypatch.setattr(cli, "_train_task", started.append)
    with pytest.raises(SystemExit) as stop:
        _train([*argv, "game=kuhn", "progress=false"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and started == [], err
    assert err == [f"selfplay-train: {key}=runs/${{x}}: Interpolation key 'x' not found; Hydra "
                   "resolves '${...}' in the folder's name, and a literal '${' is refused: give "
                   "the name without it"], err
    assert list(tmp_path.iterdir()) == []


def test_a_folder_name_that_resolves_is_taken(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(cli, "_train_task", started.append)
    _train(["game=kuhn", "progress=false", "hydra.run.dir=runs/${seed}"], monkeypatch, tmp_path)
    assert len(started) == 1
