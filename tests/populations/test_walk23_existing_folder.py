"""A failed ``selfplay-train`` and a run folder that existed before it (walk 23).

A folder holding only ``.hydra`` and ``*.log`` files was taken for one this command made:
``hydra.run.dir=.`` in a folder holding ``notes.log``, with ``resume=true`` (refused: no run
there), removed the working folder and the user's file, and the line was
``[Errno 2] No such file or directory``. Whether the command made the folder is now recorded
before Hydra makes it: a folder that existed stays, with what it held; only what the command
wrote in it goes. A folder the command made is removed as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.populations.test_walk18_cli_more import TINY, _train


def _failing(monkeypatch, error: Exception) -> None:
    """The run writes its first file, then fails with ``error`` (before any checkpoint)."""
    import populations.experiment as experiment

    def run_experiment(exp, run_dir):
        (Path(run_dir) / "settings.json").write_text("{}")
        raise error

    monkeypatch.setattr(experiment, "run_experiment", run_experiment)


def test_working_folder_with_a_log_is_kept(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "notes.log").write_text("keep\n")
    with pytest.raises(SystemExit) as exit_:
        _train(["hydra.run.dir=.", "game=kuhn", "resume=true"], monkeypatch, folder)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "holds no run" in err and "Errno" not in err
    assert len([line for line in err.splitlines() if line.startswith("selfplay-train:")]) == 1
    assert sorted(p.name for p in folder.iterdir()) == ["notes.log"]  # .hydra, cli.log gone
    assert (folder / "notes.log").read_text() == "keep\n"


@pytest.mark.parametrize("bug", [False, True])
def test_existing_empty_folder_kept_empty(tmp_path, monkeypatch, capsys, bug):
    from populations.command_line import CLIError

    run = tmp_path / "mine"
    run.mkdir()
    _failing(monkeypatch, RuntimeError("a bug") if bug else CLIError("a user error"))
    with pytest.raises(SystemExit) as exit_:  # a bug: Hydra's traceback, exit 1
        _train([*TINY, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert exit_.value.code == (1 if bug else 2)
    assert run.is_dir() and list(run.iterdir()) == []  # what the command wrote is gone


def test_existing_folder_with_logs_given_by_path(tmp_path, monkeypatch, capsys):
    run = tmp_path / "logs"
    run.mkdir()
    (run / "old.log").write_text("mine\n")
    _failing(monkeypatch, RuntimeError("a bug"))
    with pytest.raises(SystemExit):
        _train([*TINY, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert "a bug" in capsys.readouterr().err
    assert sorted(p.name for p in run.iterdir()) == ["old.log"]


def test_new_folder_still_removed(tmp_path, monkeypatch, capsys):
    from populations.command_line import CLIError

    _failing(monkeypatch, CLIError("a user error"))
    with pytest.raises(SystemExit) as exit_:
        _train([*TINY, "hydra.run.dir=runs/new"], monkeypatch, tmp_path)
    assert exit_.value.code == 2
    assert "a user error" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # the folder and the parent it made


def test_new_sweep_folder_still_removed(tmp_path, monkeypatch, capsys):
    from populations.command_line import CLIError

    _failing(monkeypatch, CLIError("a user error"))
    with pytest.raises(SystemExit) as exit_:
        _train(["-m", *TINY, "seed=0,1", "hydra.sweep.dir=sweep"], monkeypatch, tmp_path)
    assert exit_.value.code == 2
    assert not (tmp_path / "sweep").exists()


def test_existing_sweep_folder_kept(tmp_path, monkeypatch, capsys):
    from populations.command_line import CLIError

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "notes.log").write_text("keep\n")
    _failing(monkeypatch, CLIError("a user error"))
    with pytest.raises(SystemExit):
        _train(["-m", *TINY, "seed=0,1", f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    assert (sweep / "notes.log").read_text() == "keep\n"
    assert not any(p.name.startswith("0_") for p in sweep.iterdir())  # the job's folder went


def test_working_folder_kept_in_a_new_process(tmp_path):
    """The same through ``python -m populations.cli`` (its ``__main__`` and the callback
    Hydra imports as ``populations.cli`` read one record of what the folder held)."""
    from tests.populations.test_cli import _cli

    (tmp_path / "notes.log").write_text("keep\n")
    res = _cli(["hydra.run.dir=.", "game=kuhn", "resume=true"], tmp_path, check=False)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("selfplay-train: resume=true but ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.log"]
