"""A failed ``selfplay-train`` and the files other programs made in its run folder meanwhile
(audit29 F1).

A run that failed (or was refused) in a folder that existed removed every entry of it that was
not there when it took the folder's lock: files and folders another program made there while
the run ran (an editor's, another job's, with ``hydra.run.dir=.``) were deleted with the run's
own. A folder the command made was removed whole (``rmtree``), another program's files in it
too. Now only the names selfplay and Hydra write go (``run_folder_names.RUN_NAMES``, the job
log, a sweep's ``multirun.yaml`` and job folders); another program's stay, and a folder the
command made stays with them (its line says so).

The other program is a user's game (``imports=[...]``): once the run holds its folder (the
lock file is there), its reset writes a file and a folder in the folder named by
``TOOL_DIR``, and its next step raises, so the run fails before any checkpoint. The runs are
real ``selfplay-train`` commands, started ahead two at a time (``tests/subprocs.py``);
nothing races.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.subprocs import Ahead, wanted

REPO = Path(__file__).resolve().parents[2]

GAME = f'''
import os
import sys
from pathlib import Path

sys.path.insert(0, {str(REPO / "examples")!r})
import games
from nim import Nim


@games.register("fix29b_nim")
class WriterNim(Nim):
    """Nim whose reset, once the run holds TOOL_DIR, writes there as another program would;
    its next step then fails."""

    def _reset(self, seed):
        where = Path(os.environ["TOOL_DIR"])
        if (where / ".lock").exists() and not (where / "other.txt").exists():
            (where / "other.txt").write_text("another program's file\\n")
            (where / "other_job").mkdir()
            (where / "other_job" / "out.txt").write_text("its output\\n")
        super()._reset(seed)

    def _step(self, actions):
        if (Path(os.environ["TOOL_DIR"]) / "other.txt").exists():
            raise RuntimeError("boom: the game failed")
        return super()._step(actions)
'''

ARGS = ["imports=[fix29bgame]", "game.name=fix29b_nim", "algo=ippo", "frames=2000",
        "num_envs=2", "eval_episodes=2", "progress=false", "logger=csv"]


def _job(tmp_path: Path, args: list[str], tool_dir: Path,
         flags: tuple[str, ...] | list[str] = ()) -> dict:
    """The failing ``selfplay-train`` in ``tmp_path``: :func:`subprocess.run`'s arguments."""
    (tmp_path / "fix29bgame.py").write_text(GAME)
    env = {**os.environ, "TOOL_DIR": str(tool_dir), "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("HYDRA_FULL_ERROR", None)
    return {"args": [sys.executable, "-m", "populations.cli", *flags, *ARGS, *args],
            "cwd": tmp_path, "env": env}


def _existing(tmp_path: Path) -> dict:
    run = tmp_path / "work"
    run.mkdir()
    (run / "notes.txt").write_text("the user's\n")
    return _job(tmp_path, [f"hydra.run.dir={run}"], run)


def _new(tmp_path: Path) -> dict:
    run = tmp_path / "runs" / "new"
    return _job(tmp_path, [f"hydra.run.dir={run}"], run)


def _new_untouched(tmp_path: Path) -> dict:
    run, elsewhere = tmp_path / "runs" / "new", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".lock").touch()  # the game writes there, and fails
    return _job(tmp_path, [f"hydra.run.dir={run}"], elsewhere)


def _sweep(existed: bool):
    def job(tmp_path: Path) -> dict:
        sweep = tmp_path / "sweep"
        if existed:
            sweep.mkdir()
            (sweep / "notes.txt").write_text("the user's\n")
        return _job(tmp_path, ["seed=0", f"hydra.sweep.dir={sweep}"], sweep, flags=["-m"])
    return job


# each failing command's folder is made as its test describes, then the commands run ahead,
# two at a time (each test waits on its own; they share nothing)
FAILING = {"existing": _existing, "new": _new, "new_untouched": _new_untouched,
           "sweep_existed": _sweep(True), "sweep_new": _sweep(False)}


def _case(item) -> str:
    """The case of a test below that asks ``failed``."""
    if item.originalname.startswith("test_a_failed_sweep"):
        return "sweep_existed" if item.callspec.params["existed"] else "sweep_new"
    return {"test_a_failed_run_keeps_what_another_program_made_in_its_existing_folder":
            "existing",
            "test_a_failed_run_keeps_its_new_folder_when_another_program_wrote_there": "new",
            "test_a_failed_run_still_removes_its_new_folder": "new_untouched"}[item.originalname]


@pytest.fixture(scope="module")
def failed(request, tmp_path_factory):
    """``failed(case)``: the finished command of ``FAILING[case]`` and its folder."""
    cases = wanted(request, "failed", _case)
    ahead = Ahead({c: FAILING[c](tmp_path_factory.mktemp(c)) for c in cases})
    yield lambda case: (ahead.result(case), ahead.jobs[case]["cwd"])
    ahead.close()


def _line(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 2, res.stderr
    said = [line for line in res.stderr.splitlines() if line.startswith("selfplay-train:")]
    assert len(said) == 1, res.stderr
    assert "boom: the game failed" in said[0]
    return said[0]


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _others_kept(folder: Path) -> None:
    assert (folder / "other.txt").read_text() == "another program's file\n"
    assert (folder / "other_job" / "out.txt").read_text() == "its output\n"


def test_a_failed_run_keeps_what_another_program_made_in_its_existing_folder(failed):
    res, tmp_path = failed("existing")
    run = tmp_path / "work"
    _line(res)
    # the run's own files (.hydra, cli.log, settings.json, league.db, .lock...) went
    assert _tree(run) == ["notes.txt", "other.txt", "other_job", "other_job/out.txt"]
    _others_kept(run)


def test_a_failed_run_keeps_its_new_folder_when_another_program_wrote_there(failed):
    res, tmp_path = failed("new")
    run = tmp_path / "runs" / "new"
    line = _line(res)
    assert _tree(run) == ["other.txt", "other_job", "other_job/out.txt"]  # only theirs
    _others_kept(run)
    assert f"{run} stays: it holds files this command did not write ('other.txt', " \
           "'other_job')" in line


def test_a_failed_run_still_removes_its_new_folder(failed):
    """Nobody else wrote there: the folder the command made goes, and the parent it made."""
    res, tmp_path = failed("new_untouched")
    line = _line(res)
    assert "stays" not in line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("existed", [True, False])
def test_a_failed_sweep_keeps_what_another_program_made_in_its_folder(failed, existed):
    res, tmp_path = failed("sweep_existed" if existed else "sweep_new")
    sweep = tmp_path / "sweep"
    line = _line(res)
    # the job's folder, multirun.yaml and the sweep's lock went; the folder stays with theirs
    assert _tree(sweep) == [*(["notes.txt"] if existed else []), "other.txt", "other_job",
                            "other_job/out.txt"]
    _others_kept(sweep)
    note = f"; {sweep} stays: it holds files this command did not write ('other.txt', "
    assert (note in line) is not existed  # a folder it made: kept for theirs, and said so


@pytest.mark.parametrize("kind", ["single", "league", "psro", "sweep"])
def test_every_name_a_run_writes_is_one_run_guard_removes(tmp_path, monkeypatch, kind):
    """The names ``run_guard`` removes after a failure are a list (``run_folder_names``): a
    run that writes a new one at the top of its folder would leave it behind when it fails
    (and keep the folder)."""
    from populations.run_folder_names import RUN_NAMES, SWEEP_NAMES
    from tests.populations.test_walk18_cli_more import TINY
    from tests.populations.test_walk18_cli_more import _train as train_here

    league = ["game.name=openspiel/kuhn_poker", "algo=ippo", "population=self_play",
              "population.generations=2", "population.frames_per_generation=200",
              "frames=400", "eval_episodes=2", "progress=false", "logger=csv"]
    psro = ["experiment=kuhn_psro", "population.iterations=1", "eval_episodes=2",
            "progress=false", "logger=csv"]
    argv = {"single": TINY, "league": league, "psro": psro,
            "sweep": ["-m", *TINY, "seed=0,1", "hydra.sweep.dir=sweep"]}[kind]
    train_here([*argv, *([] if kind == "sweep" else ["hydra.run.dir=run"])], monkeypatch,
               tmp_path)
    if kind == "sweep":
        jobs = {p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir()}
        assert len(jobs) == 2
        assert {p.name for p in (tmp_path / "sweep").iterdir()} - jobs <= SWEEP_NAMES
        runs = [tmp_path / "sweep" / job for job in jobs]
    else:
        runs = [tmp_path / "run"]
    for run in runs:
        names = {p.name for p in run.iterdir()}
        assert {"settings.json", "league.db", ".hydra", "cli.log"} <= names
        assert names <= RUN_NAMES | {"cli.log"}, names - RUN_NAMES
