"""A refused ``selfplay-train`` and the folders above its run (sweep) folder.

A refused command removed the run folder it made and then every empty folder above it up to
the working folder, so a folder the user had made for runs (``mkdir runs``, then
``hydra.run.dir=runs/x``) went with it when still empty. Now only the folders the command
made itself go: before the lock makes the run folder, the nearest folder above it that exists
is recorded, and it and the folders above it stay, even empty. The same holds for a sweep's
folder, for a sweep folder that existed (what the sweep wrote there goes, the folder stays),
and for a run refused at its lock ("in use": inside a running sweep's folder).

The refusals are the cheap real ones: ``resume=true`` into a folder holding no run (refused
after Hydra made the folder), a job that fails before its first checkpoint
(``test_walk23_existing_folder._failing``), a value refused before Hydra makes anything.
"""

from __future__ import annotations

import pytest

from tests.populations.test_fix28b_sweep_job_folders import hold  # noqa: F401 - a fixture
from tests.populations.test_walk18_cli_more import TINY, _train
from tests.populations.test_walk23_existing_folder import _failing


def _refused(argv, monkeypatch, cwd, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        _train(argv, monkeypatch, cwd)
    assert exit_.value.code == 2
    said = [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("selfplay-train:")]
    assert len(said) == 1, said
    return said[0]


def _tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("absolute", [False, True])
def test_an_empty_folder_the_user_made_stays(tmp_path, monkeypatch, capsys, absolute):
    runs = tmp_path / "runs"
    runs.mkdir()
    run = runs / "x" if absolute else "runs/x"
    line = _refused(["game=kuhn", "resume=true", f"hydra.run.dir={run}"], monkeypatch,
                    tmp_path, capsys)
    assert "holds no run" in line
    assert _tree(tmp_path) == ["runs"]  # x went, runs stays (empty)


def test_only_the_missing_part_of_the_chain_goes(tmp_path, monkeypatch, capsys):
    from populations.command_line import CLIError

    (tmp_path / "a").mkdir()
    _failing(monkeypatch, CLIError("a user error"))
    line = _refused([*TINY, f"hydra.run.dir={tmp_path / 'a' / 'b' / 'c'}"], monkeypatch,
                    tmp_path, capsys)
    assert "a user error" in line
    assert _tree(tmp_path) == ["a"]  # b and c were this command's


def test_a_bug_keeps_the_users_empty_folder(tmp_path, monkeypatch, capsys):
    (tmp_path / "runs").mkdir()
    _failing(monkeypatch, RuntimeError("a bug"))
    with pytest.raises(SystemExit) as exit_:  # a bug: Hydra's traceback, exit 1
        _train([*TINY, "hydra.run.dir=runs/x/y"], monkeypatch, tmp_path)
    assert exit_.value.code == 1
    assert _tree(tmp_path) == ["runs"]


def test_a_config_error_makes_nothing(tmp_path, monkeypatch, capsys):
    (tmp_path / "runs").mkdir()
    line = _refused(["game=kuhn", "frames=-1", "hydra.run.dir=runs/x"], monkeypatch, tmp_path,
                    capsys)
    assert "frames" in line
    assert _tree(tmp_path) == ["runs"]


def test_a_sweep_keeps_the_users_empty_folder(tmp_path, monkeypatch, capsys):
    from populations.command_line import CLIError

    (tmp_path / "sweeps").mkdir()
    _failing(monkeypatch, CLIError("a user error"))
    line = _refused(["-m", *TINY, "seed=0,1", "hydra.sweep.dir=sweeps/sub"], monkeypatch,
                    tmp_path, capsys)
    assert "a user error" in line
    assert _tree(tmp_path) == ["sweeps"]


def test_an_empty_sweep_folder_the_user_made_stays_empty(tmp_path, monkeypatch, capsys):
    from populations.command_line import CLIError

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    _failing(monkeypatch, CLIError("a user error"))
    _refused(["-m", *TINY, "seed=0,1", f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path,
             capsys)
    assert _tree(tmp_path) == ["sweep"]  # its job folder, multirun.yaml and lock went


def test_a_run_refused_inside_a_running_sweep_removes_what_it_made(tmp_path, monkeypatch,
                                                                   capsys, hold):  # noqa: F811
    sweep = tmp_path / "sw"
    hold(sweep, "sweep")
    before = _tree(tmp_path)
    line = _refused(["game=kuhn", f"hydra.run.dir={sweep / 'x' / 'y'}"], monkeypatch, tmp_path,
                    capsys)
    assert "inside the sweep folder" in line
    assert _tree(tmp_path) == before  # y and x (made above it) went; the sweep's folder stays


def test_a_command_without_hydra_records_its_folder_the_same_way(tmp_path, monkeypatch):
    """``python -m populations.league`` has no Hydra callback: :func:`note_run_folder`
    records the folder before the command makes it, and :func:`discard_run_dir` then removes
    the folders made (``new/x``), not the user's empty ``runs``."""
    from populations import run_guard

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(run_guard, "_START_CWD", [tmp_path])
    monkeypatch.setattr(run_guard, "_BEFORE", {})
    (tmp_path / "runs").mkdir()
    run = tmp_path / "runs" / "new" / "x"
    assert run_guard.note_run_folder(run) is True
    run.mkdir(parents=True)
    (run / "settings.json").write_text("{}")
    assert run_guard.discard_run_dir(run) is True
    assert _tree(tmp_path) == ["runs"]
    assert run_guard.note_run_folder(tmp_path / "runs") is False  # it exists: not new
