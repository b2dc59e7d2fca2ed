"""A config folder of the user's own (walk 23, F8): the printed resume command names it by its
absolute path, so it resumes the run from any folder; a preset of theirs that a shipped one
of the same name hides is named in a warning."""

from __future__ import annotations

from pathlib import Path

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


KUHN3 = "# @package _global_\ngame:\n  name: openspiel/kuhn_poker\n  kwargs: {players: 3}\n"


@pytest.mark.parametrize("flags", [["-cd", "cfg2"], ["hydra.searchpath=[file://cfg2]"]])
def test_a_preset_a_shipped_one_hides_is_named_with_how_to_use_it(
        flags, tmp_path, monkeypatch, capsys):
    # before: nothing said; --cfg job showed the shipped preset's kwargs: {} (Hydra reads the
    # first game/kuhn.yaml on its search path, and the shipped configs come first)
    import configs

    (tmp_path / "cfg2" / "game").mkdir(parents=True)
    (tmp_path / "cfg2" / "game" / "kuhn.yaml").write_text(KUHN3)
    _train([*flags, "game=kuhn", "--cfg", "job"], monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    assert "kwargs: {}" in out  # still the shipped one: Hydra has no way to put theirs first
    shipped = configs.__path__[0] + "/game/kuhn.yaml"
    assert err.splitlines() == [
        f"warning: cfg2/game/kuhn.yaml is not used: the shipped {shipped} has the same name "
        "and comes first on Hydra's search path (game=kuhn reads it); give yours a name of "
        "its own (cfg2/game/my_kuhn.yaml, then game=my_kuhn)"], err


def test_a_copy_of_a_shipped_preset_and_presets_of_their_own_names_are_not_named(
        tmp_path, monkeypatch, capsys):
    import configs

    (tmp_path / "cfg2" / "game").mkdir(parents=True)
    shipped = Path(configs.__path__[0], "game", "kuhn.yaml")
    (tmp_path / "cfg2" / "game" / "kuhn.yaml").write_bytes(shipped.read_bytes())
    (tmp_path / "cfg2" / "game" / "kuhn3.yaml").write_text(KUHN3)
    _train(["-cd", "cfg2", "game=kuhn3", "--cfg", "job"], monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    assert "players: 3" in out and "warning" not in err, err


def test_a_sweeps_resume_command_names_its_config_folder_absolute(
        tmp_path, monkeypatch, capsys):
    # before: 'the sweep resumes with: selfplay-train -m hydra.searchpath=[file://conf] ...',
    # pasted elsewhere: the experiment it holds not found
    conf = tmp_path / "conf"
    (conf / "experiment").mkdir(parents=True)
    (conf / "experiment" / "mine.yaml").write_text("# @package _global_\nseed: 5\n")
    go_on = ctrl_c_after_the_run(monkeypatch)
    with pytest.raises(SystemExit) as stop:
        _train(["-m", "hydra.searchpath=[file://conf]", *TINY, "experiment=mine",
                "mappo.lr=0.001,0.002", f"hydra.sweep.dir={tmp_path / 'sweep'}"], monkeypatch,
               tmp_path)
    assert stop.value.code == 130
    words = _resume_words(capsys.readouterr().err)
    assert words[:2] == ["-m", f"hydra.searchpath=[file://{conf}]"], words
    go_on()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _train(words, monkeypatch, elsewhere)  # the sweep goes on: both jobs run
    assert (tmp_path / "sweep").is_dir()
    assert len([p for p in (tmp_path / "sweep").iterdir() if (p / "settings.json").is_file()]) \
        == 2
