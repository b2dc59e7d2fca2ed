"""How a ``selfplay-train`` run goes on after it stopped: what refused the command before its
run started (:func:`is_refusal`: nothing ran, so nothing resumes) and whether the run started
in this process (:func:`started_here`), what makes a folder worth resuming without a
checkpoint (:func:`psro_recorded`: PSRO goes on from ``league.db``), the text an error line
adds with the command that resumes the run (:func:`resumes_after`,
:func:`run_resume_command`), and ``resume=true`` without a folder refused
(:func:`refuse_resume_without_folder`). :mod:`populations.run_guard`'s guard says these lines.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from populations.command_line import CLIError, resume_command, run_dir_override
from populations.sweeps import folder_given, sweep_started

if TYPE_CHECKING:
    from omegaconf import DictConfig


def _refusals() -> tuple[type[BaseException], ...]:
    """The errors that refuse a command before its run starts (its command line, its folder,
    its checkpoints, the snapshots a resume restores: ``StoreError``, a file damaged or
    replaced on disk): nothing ran, the folder stays as it was."""
    return (CLIError, *(getattr(sys.modules.get(module), name, CLIError) for module, name in (
        ("populations.run_folder", "RunFolderError"), ("marl.core", "CheckpointError"),
        ("populations.store", "StoreError"), ("hydra.errors", "HydraException"),
        ("omegaconf.errors", "OmegaConfBaseException"))))


def is_refusal(err: BaseException) -> bool:
    """Whether ``err`` refuses a command before its run starts (:func:`_refusals`)."""
    return isinstance(err, _refusals())


def forget_started() -> None:
    """Forget the runs this process started (:func:`~populations.run_folder.mark_started`):
    a new command (tests run several in a process) starts none yet."""
    from populations.run_folder import forget_started  # lazily: --help loads no marl

    forget_started()


def started_here(run_dir: Path) -> bool:
    """Whether the run in ``run_dir`` started in this process
    (:func:`~populations.run_folder.mark_started`)."""
    from populations.run_folder import run_started

    return run_started(run_dir)


def run_resume_command(run_dir: Path, overrides: Sequence[str] | None,
                        flags: Sequence[str]) -> str:
    """The command that resumes the run ``run_dir`` holds, with that run's own overrides (its
    ``.hydra/overrides.yaml``, put back after a refused command) where it has them: this
    command's may differ (another seed) and would be refused as other settings."""
    from populations.sweep_summary import job_overrides

    own = job_overrides(run_dir)
    return resume_command(run_dir, own if own is not None else overrides, flags)


def resumes_after(err: BaseException, run_dir: Path, overrides: Sequence[str] | None,
                   flags: Sequence[str]) -> str:
    """What a single run's error line adds when the run failed while running (a NaN, a game
    error) and keeps checkpoints: the command that resumes it from the last one (it does: the
    error stopped training before the weights changed), as the summary and Ctrl-C name it.
    Nothing for refusals of the command line, the folder or its checkpoints."""
    ckpt = run_dir / "checkpoints"
    if _damaged_database(err):  # a resume needs the same database: its command would fail so
        return (f"; {run_dir / 'league.db'} is damaged (truncated or overwritten): restore it "
                "from a copy, or start a new run in another folder")
    if is_refusal(err) and not started_here(run_dir):
        return ""
    if ckpt.is_dir() and any(p.suffix == ".pt" for p in ckpt.iterdir()):
        kept = "keeps its checkpoints: once the cause is fixed, it resumes from the last one"
    elif psro_recorded(run_dir):  # PSRO keeps no checkpoint: it goes on from league.db
        kept = ("keeps the PSRO iterations league.db records: once the cause is fixed, it "
                "resumes after the last one")
    else:
        return ""
    settings = (" (other settings, such as a lower learning rate, also need "
                "resume_override=true)") if type(err).__name__ == "NonFiniteError" else ""
    return f"; {run_dir} {kept} with: {resume_command(run_dir, overrides, flags)}{settings}"


def _damaged_database(err: BaseException) -> bool:
    """Whether ``err`` says SQLite found the league database damaged (a truncated file: "database
    disk image is malformed"; one overwritten: "file is not a database"), as opened
    (:class:`populations.db.LeagueDBError`) or read later (``sqlite3.DatabaseError``)."""
    import sqlite3

    db_error = getattr(sys.modules.get("populations.db"), "LeagueDBError", None)
    kinds = (sqlite3.DatabaseError, *([db_error] if db_error is not None else []))
    return isinstance(err, kinds) and re.search(r"malformed|not a database", str(err)) is not None


def psro_recorded(run_dir: Path) -> bool:
    """Whether ``<run>/league.db`` records a PSRO iteration: a PSRO run keeps no checkpoint,
    it resumes after the last iteration its database records (so that database, its
    snapshots and settings are worth keeping). A database that cannot be read is kept too:
    nothing is removed that might hold a run."""
    import sqlite3

    from populations.db import LeagueDB, LeagueDBError

    path = run_dir / "league.db"
    if not path.is_file():
        return False
    try:
        db = LeagueDB(path, readonly=True)  # removes the -wal/-shm it made on close
        try:
            row = db.conn.execute("SELECT 1 FROM psro_iterations LIMIT 1").fetchone()
        finally:
            db.close()
    except (LeagueDBError, sqlite3.Error, OSError) as err:  # no such table: nothing recorded
        return "no such table" not in str(err)
    return row is not None


def refuse_resume_without_folder(config: DictConfig, key: str = "hydra.run.dir",
                                  folder: Path | None = None) -> None:
    """``resume=true`` without ``hydra.run.dir`` (a sweep's ``hydra.sweep.dir``): Hydra names
    a new folder after the clock, which holds no run, so such a resume could never go on (it
    made that folder, said 'check the folder name' and removed it). Refused before the folder
    is made, naming the newest run (sweep) beside it as the folder to give. A folder of the
    user's own config (a fixed ``hydra.run.dir``) that holds a run resumes as before.
    ``folder``: the one the run (sweep) would go to, when not the config's own."""
    from populations.run_folder import holds_run

    if folder_given(config, key):
        return  # a folder given: run_folder's own check names it if it holds no run
    sweep = key == "hydra.sweep.dir"
    run_dir = folder or Path(str(config.hydra.sweep.dir if sweep else config.hydra.run.dir))

    def held(folder: Path) -> bool:
        return sweep_started(folder) if sweep else holds_run(folder)

    if run_dir.is_dir() and held(run_dir):
        return
    parent = run_dir.parent
    runs = sorted(p.name for p in parent.iterdir() if p.is_dir() and held(p)) \
        if parent.is_dir() else []
    what = "sweep" if sweep else "run"
    # absolute, as the resume lines a run and a sweep print (pasted from another folder, a
    # relative one started a new run there); from this process's folder, where `parent` was
    # listed (no run has started: Hydra's runtime.cwd may be an earlier run's in-process)
    newest = Path(os.path.abspath(parent / runs[-1])) if runs else None
    where = (f"the newest {what} there: {run_dir_override(newest, key)}" if newest
             else f"{parent} holds no {what} yet (start one without resume=true)")
    raise CLIError(f"resume=true needs the folder of the {what} to resume, {key}=<folder> "
                   f"(without it the {what} would go to a new folder, {run_dir}); {where}")
