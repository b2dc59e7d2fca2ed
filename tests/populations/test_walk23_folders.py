"""Run folders after a failed ``selfplay-train`` (walk 23).

* A PSRO run keeps no checkpoint (it resumes after the last iteration league.db records): a
  user error after an iteration was recorded removed its folder, league.db, snapshots and
  settings with it. It is kept now, and the error line names the resume command.
* A bug (not a user error) before the first checkpoint left the folder, and the same command
  was then refused ('already holds a run') though the folder held nothing to resume.
* A run whose cli.log cannot be opened said only "Unable to configure handler 'file'".
"""

from __future__ import annotations

import shlex
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.populations.test_walk18_cli_more import TINY, _train

LATE = '''
import numpy as np
from populations.meta_solvers import register_meta_solver

FAIL = True

@register_meta_solver("walk23_late")
def late(payoffs, full_game=None):
    if FAIL and payoffs.shape[1] >= 3:
        raise ValueError("late failure")
    return [np.ones(k) / k for k in payoffs.shape[1:]]
'''


def _iterations(run: Path) -> int:
    db = sqlite3.connect(run / "league.db")
    try:
        return db.execute("SELECT COUNT(*) FROM psro_iterations").fetchone()[0]
    finally:
        db.close()


def test_psro_folder_kept_after_late_user_error(tmp_path, monkeypatch, capsys):
    from populations import meta_solvers

    # the module's solver registers in a copy of the registry, dropped after the test
    monkeypatch.setattr(meta_solvers, "_META_SOLVERS", dict(meta_solvers._META_SOLVERS))
    (tmp_path / "walk23_late.py").write_text(LATE)
    monkeypatch.syspath_prepend(str(tmp_path))
    run = tmp_path / "late"
    argv = ["imports=[walk23_late]", "experiment=kuhn_psro", "eval_episodes=1",
            "population.psro.meta_solver=walk23_late", "population.iterations=3",
            "progress=false", f"hydra.run.dir={run}"]
    try:
        with pytest.raises(SystemExit) as exit_:
            _train(argv, monkeypatch, tmp_path)
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert "late failure" in err
        # the folder holds the recorded iteration, and the line says how it goes on
        assert (run / "league.db").is_file() and (run / "settings.json").is_file()
        assert _iterations(run) == 1
        line = err.strip().splitlines()[-1]
        assert f"{run} keeps the PSRO iterations league.db records" in line
        resume = line.split("resumes after the last one with: ", 1)[1]
        assert "resume=true" in resume
        # the cause fixed, the printed command goes on after the recorded iteration
        sys.modules["walk23_late"].FAIL = False
        _train(shlex.split(resume)[1:], monkeypatch, tmp_path)
        assert _iterations(run) == 3
    finally:
        sys.modules.pop("walk23_late", None)


def test_bug_before_first_checkpoint_removes_the_folder(tmp_path, monkeypatch, capsys):
    import populations.single_run as single_run

    real = single_run.make_learner

    def bug(*args, **kwargs):
        raise ZeroDivisionError("a bug")  # no user error: Hydra prints its traceback

    monkeypatch.setattr(single_run, "make_learner", bug)
    run = tmp_path / "run"
    argv = [*TINY, f"hydra.run.dir={run}"]
    with pytest.raises(SystemExit) as exit_:
        _train(argv, monkeypatch, tmp_path)
    assert exit_.value.code == 1
    assert "ZeroDivisionError" in capsys.readouterr().err
    assert not run.exists()  # it held nothing to resume (settings.json, league.db only)
    # the same command again runs (it was refused: 'already holds a run; set resume=true')
    monkeypatch.setattr(single_run, "make_learner", real)
    _train(argv, monkeypatch, tmp_path)
    assert (run / "checkpoints").is_dir()


def test_unwritable_log_names_the_file(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    (run / "cli.log").mkdir(parents=True)  # the run's log cannot be opened (as unwritable)
    with pytest.raises(SystemExit) as exit_:
        _train([*TINY, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert exit_.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == (f"selfplay-train: cannot write the run's log {run / 'cli.log'}: "
                    "[Errno 21] Is a directory")


def test_log_line_names_a_permission_error():
    """The line for the unwritable folder of the walk (root without its permission bypass)."""
    from populations.cli_common import one_line

    try:
        try:
            raise PermissionError(13, "Permission denied", "/r/cli.log")
        except OSError as e:
            raise ValueError("Unable to configure handler 'file'") from e
    except ValueError as err:
        assert one_line(err) == \
            "cannot write the run's log /r/cli.log: [Errno 13] Permission denied"
