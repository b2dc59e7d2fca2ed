"""A config folder of the user's own (walk 23, F8): the printed resume command names it by its
absolute path, so it resumes the run from any folder; a preset of theirs that a shipped one
of the same name hides is named in a warning."""

from __future__ import annotations

import pytest

from tests.populations.test_walk18_cli_more import TINY, _pasted, _train, ctrl_c_after_the_run
from tests.populations.test_walk19_resume_flags import MYEXP


def _resume_words(err: str) -> list[str]:
    return _pasted(err.strip().splitlines()[-1].split("resumes with: ", 1)[1])


@pytest.mark.parametrize("how", ["searchpath", "bare searchpath", "config dir"])
def test_the_resume_command_of_a_relative_config_folder_works_from_another_folder(
        how, tmp_path, monkeypatch, capsys):
    # before: the command repeated hydra.searchpath=[file://conf] (-cd conf) as typed; pasted
    # in another folder: "provider=hydra.searchpath in command-line, path=conf is not
    # available", then "Could not find 'experiment/mine'" (or the config name not found)
    conf = tmp_path / "conf"
    (conf / "experiment").mkdir(parents=True)
    (conf / "experiment" / "mine.yaml").write_text("# @package _global_\nseed: 5\n")
    (conf / "myexp.yaml").write_text(MYEXP)
    given = {"searchpath": ["hydra.searchpath=[file://conf]", *TINY, "experiment=mine"],
             "bare searchpath": ["hydra.searchpath=[conf]", *TINY, "experiment=mine"],
             "config dir": ["-cd", "conf", "-cn", "myexp"]}[how]
    run = tmp_path / "run"
    go_on = ctrl_c_after_the_run(monkeypatch)
    with pytest.raises(SystemExit) as stop:
        _train([*given, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert stop.value.code == 130
    words = _resume_words(capsys.readouterr().err)
    if how == "config dir":
        assert words[:2] == ["--config-dir", str(conf)], words
    else:
        assert words[0] == f"hydra.searchpath=[file://{conf}]", words
    go_on()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _train(words, monkeypatch, elsewhere)  # accepted: the run's summary
    assert f"run folder : {run}" in capsys.readouterr().out
