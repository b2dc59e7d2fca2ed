"""The pasteable resume commands repeat what chose the run's config (walk 19): Hydra's
``--config-dir``/``-cd``, ``--config-path``/``-cp``, ``--config-name``/``-cn`` and
``hydra.searchpath=[...]`` are not task overrides, so the printed command left them out and,
pasted, composed the packaged config: refused as 'other settings', or an option of the other
config dir not found."""

from __future__ import annotations

from pathlib import Path

import pytest

from populations.command_line import resume_command
from populations.sweeps import sweep_resume_command
from populations.train_overrides import config_flags
from tests.populations.test_walk18_cli_more import TINY, _pasted, _train, ctrl_c_after_the_run

MYEXP = """\
defaults:
  - config
  - override game: kuhn
  - _self_
frames: 200
num_envs: 4
eval_episodes: 1
progress: false
logger:
  kind: csv
mappo:
  rollout_steps: 4
  epochs: 1
  minibatches: 1
"""


def _summary_command(out: str) -> list[str]:
    (line,) = [x for x in out.splitlines() if x.startswith("checkpoints:")]
    return _pasted(line.split(" (", 1)[1].removesuffix(")"))


@pytest.mark.parametrize("short", [False, True])
def test_a_run_of_another_config_dir_and_name_resumes_with_its_printed_command(
        short, tmp_path, monkeypatch, capsys):
    # before: 'selfplay-train seed=3 resume=true hydra.run.dir=...' composed config.yaml:
    # 'cannot continue ... with other settings (frames=200 (run) vs 60000 (now); ...)'
    conf = tmp_path / "my conf"
    conf.mkdir()
    (conf / "myexp.yaml").write_text(MYEXP)
    run = tmp_path / "my run"
    flags = ["-cd", str(conf), "-cn", "myexp"] if short else \
        [f"--config-dir={conf}", "--config-name", "myexp"]
    _train([*flags, "seed=3", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    words = _summary_command(capsys.readouterr().out)
    assert words[:4] == ["--config-dir", str(conf), "--config-name", "myexp"], words
    assert words[4:6] == ["seed=3", "resume=true"], words
    _train(words, monkeypatch, tmp_path)  # accepted: the finished run's summary again
    out = capsys.readouterr().out
    assert f"run folder : {run}" in out


def test_ctrl_cs_command_repeats_the_search_path_of_an_experiment_preset(
        tmp_path, monkeypatch, capsys):
    # before: pasted, "Could not find 'experiment/mine'" (the search path was left out)
    conf = tmp_path / "conf"
    (conf / "experiment").mkdir(parents=True)
    (conf / "experiment" / "mine.yaml").write_text("# @package _global_\nseed: 5\n")
    go_on = ctrl_c_after_the_run(monkeypatch)
    run = tmp_path / "run"
    searchpath = f"hydra.searchpath=[file://{conf}]"
    with pytest.raises(SystemExit) as stop:
        _train([searchpath, *TINY, "experiment=mine", f"hydra.run.dir={run}"], monkeypatch,
               tmp_path)
    assert stop.value.code == 130
    err = capsys.readouterr().err.strip().splitlines()[-1]
    words = _pasted(err.split("resumes with: ", 1)[1])
    assert words[0] == searchpath and "experiment=mine" in words, words
    go_on()
    _train(words, monkeypatch, tmp_path)
    assert f"run folder : {run}" in capsys.readouterr().out


def test_config_flags_are_the_ones_that_choose_the_config():
    argv = ["-cp", "/a b", "--config-name=x", "-m", "--config-dir", "d", "seed=1",
            "+hydra.searchpath=[pkg://p]", "hydra.job.chdir=false", "~hydra.searchpath"]
    assert config_flags(argv) == ["--config-path", "/a b", "--config-dir", "d",
                                  "--config-name", "x", "+hydra.searchpath=[pkg://p]",
                                  "~hydra.searchpath"]
    assert config_flags(["seed=1", "algo=ippo"]) == []
    assert config_flags(["--config-name"]) == []  # Hydra reports it itself


def test_resume_command_puts_the_flags_first_quoted():
    assert resume_command(Path("/r/run"), ["seed=1"], ["--config-dir", "/my conf"]) == \
        "selfplay-train --config-dir '/my conf' seed=1 resume=true hydra.run.dir=/r/run"


def test_a_sweeps_resume_command_repeats_the_flags_too():  # a guard: it repeats the line
    words = _pasted(sweep_resume_command(Path("/s"), ["-m", "-cd", "/my conf", "-cn", "x",
                                                      "hydra.searchpath=[pkg://p]", "seed=0,1"]))
    assert words[:7] == ["-m", "-cd", "/my conf", "-cn", "x", "hydra.searchpath=[pkg://p]",
                         "seed=0,1"], words
