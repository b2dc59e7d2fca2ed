"""A config group's typo in the user's own config file is told the file and the nearest
option (session 36, item 2).

Before: an experiment of a ``--config-dir`` folder whose defaults list said ``override /algo:
mapo`` was refused with Hydra's "In 'config': Could not find 'algo/mapo'; Available options
in 'algo': ...; nearest: algo=mappo, algo=maddpg": no file named (Hydra names the primary
config, where the override lands), and a command-line form for a fix that goes in the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.populations.user_modules import refused_line

ALGOS = "ippo, llm_grpo, maddpg, mappo, qmix, vdn"
GAMES = ("climbing, kuhn, leduc, lookup, mpe_adversary, mpe_reference, mpe_spread, mpe_tag, "
         "relay, rps, rps_biased, tictactoe, vmas_navigation, vmas_spread, vmas_tag")


def _experiment(folder: Path, name: str, *defaults: str) -> None:
    (folder / "experiment").mkdir(parents=True, exist_ok=True)
    lines = "".join(f"  - {d}\n" for d in defaults)
    (folder / "experiment" / f"{name}.yaml").write_text(
        f"# @package _global_\ndefaults:\n{lines}experiment: {name}\n")


def _line(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.chdir(tmp_path)
    line = refused_line([*argv, "progress=false", "logger=none",
                         f"hydra.run.dir={tmp_path / 'run'}",
                         f"hydra.sweep.dir={tmp_path / 'sweep'}"], monkeypatch, capsys)
    assert not (tmp_path / "run").exists() and not (tmp_path / "sweep").exists()
    return line.removeprefix("selfplay-train: ")


def test_an_algo_typo_in_a_config_dir_experiment_names_the_file(tmp_path, monkeypatch, capsys):
    _experiment(tmp_path / "myconfigs", "mine", "override /algo: mapo", "override /game: kuhn")
    _experiment(tmp_path / "myconfigs", "other", "override /game: kuhn")
    line = _line(["--config-dir", "myconfigs", "experiment=mine"], tmp_path, monkeypatch, capsys)
    assert line == (f"In 'config': Could not find 'algo/mapo'; Available options in 'algo': "
                    f"{ALGOS}; in myconfigs/experiment/mine.yaml's defaults: override /algo: "
                    "mapo; nearest: override /algo: mappo, override /algo: maddpg"), line


def test_a_game_typo_by_searchpath_names_the_file_and_the_preset(tmp_path, monkeypatch, capsys):
    _experiment(tmp_path / "cfg", "mine", "/game: kuhnn")
    line = _line(["hydra.searchpath=[file://cfg]", "experiment=mine"], tmp_path, monkeypatch,
                 capsys)
    assert line == (f"In 'experiment/mine': Could not find 'game/kuhnn'; Available options in "
                    f"'game': {GAMES}; in cfg/experiment/mine.yaml's defaults: /game: kuhnn; "
                    "nearest: /game: kuhn"), line


def test_a_sweeps_job_names_the_file(tmp_path, monkeypatch, capsys):
    _experiment(tmp_path / "myconfigs", "mine", "override /algo: mapo", "override /game: kuhn")
    _experiment(tmp_path / "myconfigs", "other", "override /game: kuhn")
    line = _line(["--config-dir", "myconfigs", "-m", "experiment=other,mine"], tmp_path,
                 monkeypatch, capsys)
    assert line == (f"job 1 (experiment=mine) cannot run: In 'config': Could not find "
                    f"'algo/mapo'; Available options in 'algo': {ALGOS}; in "
                    "myconfigs/experiment/mine.yaml's defaults: override /algo: mapo; nearest: "
                    "override /algo: mappo, override /algo: maddpg; no job was started: drop "
                    "it from the sweep"), line


def test_the_command_lines_own_typo_is_told_as_before(tmp_path, monkeypatch, capsys):
    _experiment(tmp_path / "myconfigs", "mine", "override /game: kuhn")
    line = _line(["--config-dir", "myconfigs", "experiment=mine", "algo=mapo"], tmp_path,
                 monkeypatch, capsys)
    assert line == (f"In 'config': Could not find 'algo/mapo'; Available options in 'algo': "
                    f"{ALGOS}; nearest: algo=mappo, algo=maddpg"), line
