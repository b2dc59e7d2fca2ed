"""Links planted where Hydra writes in a run (sweep) folder (audit29 F3, F4).

The run folder checks refused links at ``settings.json``, ``league.db``, ``.lock``,
``checkpoints/``... but not at what Hydra writes before the task runs: a run folder from
elsewhere, resumed, with ``.hydra/config.yaml -> <a file>`` had that file overwritten with the
run's config, ``.hydra -> <a folder>`` got Hydra's three files written there, ``cli.log ->
<a file>`` had the run's log lines appended to it, and a sweep folder's ``multirun.yaml`` (or a
resumed sweep's job folder's ``.hydra`` files) wrote through their links. A FIFO at
``cli.log`` blocked the command forever. Each is now refused in one line before anything is
written, and the folder stays as it was. A ``wandb`` link sent wandb's files to its target:
refused as the ``checkpoints`` and ``snapshots`` links are.

Real ``selfplay-train`` commands (in this process, as ``test_walk18_cli_more`` runs them;
the FIFO and wandb ones in child processes, started ahead together).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.populations.test_walk18_cli_more import TINY, _train
from tests.subprocs import Ahead, wanted

REPO = Path(__file__).resolve().parents[2]
VICTIM = "precious: not the run's\n"


def _refused(argv, monkeypatch, cwd, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        _train(argv, monkeypatch, cwd)
    assert exit_.value.code == 2
    said = [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("selfplay-train:")]
    assert len(said) == 1, said
    return said[0]


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    return victim


@pytest.mark.parametrize("where", [".hydra/config.yaml", ".hydra/overrides.yaml", "cli.log",
                                   ".hydra"])
def test_a_link_where_hydra_writes_in_a_run_folder_is_refused(tmp_path, monkeypatch, capsys,
                                                              where):
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / "notes.txt").write_text("the user's\n")
    if where == ".hydra":  # the folder itself: Hydra's three files went to its target
        (run / ".hydra").rmdir()
        target = tmp_path / "elsewhere"
        target.mkdir()
        (target / "config.yaml").write_text(VICTIM)
        victim = target / "config.yaml"
    else:
        target = victim = _victim(tmp_path)
    (run / where).symlink_to(target)
    before = _tree(run)
    line = _refused([*TINY, "resume=true", f"hydra.run.dir={run}"], monkeypatch, tmp_path,
                    capsys)
    assert line.endswith(f"{run / where} is a link (to {target}); a run folder's files must "
                         "be its own: remove the link")
    assert victim.read_text() == VICTIM
    if where == ".hydra":  # no hydra.yaml, overrides.yaml written there
        assert _tree(target) == ["config.yaml"]
    assert _tree(run) == before  # no lock left, nothing written


def test_a_link_at_a_sweep_folders_multirun_yaml_is_refused(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    victim = _victim(tmp_path)
    (sweep / "multirun.yaml").symlink_to(victim)
    line = _refused(["-m", *TINY, "seed=0", f"hydra.sweep.dir={sweep}"], monkeypatch,
                    tmp_path, capsys)
    assert f"sweep file {sweep / 'multirun.yaml'} is a link (to {victim})" in line
    assert victim.read_text() == VICTIM
    assert _tree(sweep) == ["multirun.yaml"]


def test_a_link_in_a_job_folder_of_a_resumed_sweep_is_refused(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "sweep"
    _train(["-m", *TINY, "seed=0", f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    (job,) = [p for p in sweep.iterdir() if p.is_dir()]
    victim = _victim(tmp_path)
    (job / ".hydra" / "overrides.yaml").unlink()
    (job / ".hydra" / "overrides.yaml").symlink_to(victim)
    before = {p: p.read_bytes() for p in sweep.rglob("*") if p.is_file()}
    capsys.readouterr()
    line = _refused(["-m", *TINY, "seed=0", "resume=true", f"hydra.sweep.dir={sweep}"],
                    monkeypatch, tmp_path, capsys)
    assert f"Hydra file {job / '.hydra' / 'overrides.yaml'} is a link (to {victim})" in line
    assert victim.read_text() == VICTIM
    assert {p: p.read_bytes() for p in sweep.rglob("*") if p.is_file()} == before


def _job(tmp_path: Path, args: list[str], timeout: int,
         env: dict[str, str] | None = None) -> dict:
    """``selfplay-train TINY args`` in ``tmp_path``: :func:`subprocess.run`'s arguments."""
    full = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")]), **(env or {})}
    full.pop("HYDRA_FULL_ERROR", None)
    return {"args": [sys.executable, "-m", "populations.cli", *TINY, *args], "cwd": tmp_path,
            "timeout": timeout, "env": full}


def _fifo(tmp_path: Path) -> dict:
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "cli.log")
    return _job(tmp_path, ["resume=true", f"hydra.run.dir={run}"], timeout=120)


def _wandb(tmp_path: Path) -> dict:
    run, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    run.mkdir()
    elsewhere.mkdir()
    (run / "wandb").symlink_to(elsewhere)
    return _job(tmp_path, ["logger=wandb", f"hydra.run.dir={run}"], timeout=600,
                env={"WANDB_MODE": "offline"})


@pytest.fixture(scope="module")
def in_child(request, tmp_path_factory):
    """The two commands below that run in a child process, each in a folder made as its test
    says: started ahead together (independent); ``in_child(name)`` -> ``(res, folder)``."""
    cases = {"test_a_fifo_at_the_run_log_is_refused": _fifo,
             "test_a_linked_wandb_folder_is_refused": _wandb}
    names = wanted(request, "in_child", lambda item: item.originalname)
    ahead = Ahead({n: cases[n](tmp_path_factory.mktemp(n[:20])) for n in names})
    yield lambda name: (ahead.result(name), ahead.jobs[name]["cwd"])
    ahead.close()


def test_a_fifo_at_the_run_log_is_refused(in_child):
    """Hydra's log handler opened it for writing and waited for a reader, forever."""
    res, tmp_path = in_child("test_a_fifo_at_the_run_log_is_refused")
    run = tmp_path / "run"
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        f"selfplay-train: run log {run / 'cli.log'} is not a regular file; a run folder's "
        "files must be its own: move it away")
    assert _tree(run) == ["cli.log"]


def test_a_linked_wandb_folder_is_refused(in_child):
    res, tmp_path = in_child("test_a_linked_wandb_folder_is_refused")
    run, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    assert res.returncode == 2, res.stderr
    said = [line for line in res.stderr.splitlines() if line.startswith("selfplay-train:")]
    assert len(said) == 1, res.stderr
    assert f"wandb folder {run / 'wandb'} is a link (to {elsewhere}); a run folder's files " \
           "must be its own: remove the link" in said[0]
    assert list(elsewhere.iterdir()) == []  # wandb wrote nothing there
