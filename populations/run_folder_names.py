"""The names ``selfplay-train`` (and Hydra for it) writes at the top of a run (sweep) folder,
the only ones a failed or refused command removes there (``run_guard._remove_written``), and
the check that nothing Hydra writes before the task runs is a link planted there
(:func:`refuse_planted`)."""

from __future__ import annotations

from pathlib import Path

from populations.command_line import CLIError

RUN_NAMES = frozenset({
    ".hydra",  # Hydra: the run's config and overrides (its job log: run_guard._written_names)
    ".lock",  # run_folder.LOCK_NAME
    "settings.json",  # run_folder.SETTINGS_NAME
    "league.db", "league.db-wal", "league.db-shm", "league.db-journal",  # db.LeagueDB
    "metrics.csv",  # loggers.CSVLogger
    "checkpoints",  # checkpoint.save_checkpoint
    "snapshots",  # store.PolicyStore
    "wandb",  # loggers.WandbLogger (wandb.init(dir=<run>) writes there too)
    ".checkpointed",  # single_run.CHECKPOINTED
    "models",  # llm_agents.build: the tiny models vLLM serves
})
"""The names selfplay (and Hydra for it) writes at the top of a run folder: all a failed or
refused command removes there (``run_guard._remove_written``). Anything else new in the folder
was made by another program while the command ran (an editor, another job writing into
``hydra.run.dir=.``): it stays."""
SWEEP_NAMES = frozenset({"multirun.yaml", "summary.csv", ".lock"})
"""The names a sweep writes at the top of its folder, besides its jobs' folders
(``run_guard._SWEEP_JOB_FOLDERS``)."""
_HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")
"""The files Hydra writes in a run's ``.hydra`` before the task runs."""


def refuse_planted(folder: Path, depth: int, log_name: str, sweep: bool = False) -> None:
    """Refuse (:class:`CLIError`, in :func:`~populations.db.refuse_link`'s words) what Hydra
    would write through: a link at ``.hydra``, its three files (:data:`_HYDRA_FILES`), the job
    log ``log_name``, or a sweep folder's (``sweep``) ``multirun.yaml`` (a run folder from
    elsewhere, resumed, had ``.hydra/config.yaml`` overwrite the file it pointed to and
    ``cli.log`` append to it), or something there that is not what Hydra writes (a FIFO
    blocks it). In a sweep folder (``depth`` 1), the same for each job folder in it (a
    sweep's resume), and a job folder's name holding a link or a file is refused
    (:func:`_refuse_job_link`)."""
    from populations.db import refuse_link

    if sweep:  # Hydra writes only multirun.yaml here
        checks = [folder / "multirun.yaml"]
    else:
        hydra = folder / ".hydra"
        checks = [folder / log_name, hydra, *(hydra / name for name in _HYDRA_FILES)]
    for path in checks:
        what = ("sweep file" if path.name == "multirun.yaml" else "run log" if
                path.name == log_name else "Hydra folder" if path.name == ".hydra" else
                "Hydra file")
        refuse_link(path, what, CLIError)
        # a FIFO (a device, a socket) blocks or swallows what Hydra writes; a folder where a
        # file goes, or a file for .hydra, fails Hydra's own open: its line names the file
        if path.exists() and not path.is_file() and not path.is_dir():
            raise CLIError(f"{what} {path} is not a regular file; a run folder's files must "
                           "be its own: move it away")
        if path == folder / ".hydra" and not path.is_dir():
            break  # no .hydra folder: none of its files either (checked last)
    if depth > 0:
        try:
            inner = list(folder.iterdir())
        except OSError:  # unreadable: Hydra says so
            return
        for sub in inner:
            if sweep:
                _refuse_job_link(sub)
            if sub.is_dir() and not sub.is_symlink():
                refuse_planted(sub, depth - 1, log_name)


def _refuse_job_link(path: Path) -> None:
    """Refuse (:class:`CLIError`) a link, or something that is no folder, at a job folder's
    name (``<number>_...``, :data:`~populations.sweep_summary.JOB_FOLDER`) in a sweep folder:
    Hydra makes a job's folder with ``exist_ok`` and writes its ``.hydra`` and log there, then
    the job its run (a link's target got them all; a file failed with Python's raw
    ``[Errno 17] File exists``). Other names are no job's: a user's own link stays."""
    from populations.db import refuse_link
    from populations.sweep_summary import JOB_FOLDER

    if not JOB_FOLDER.match(path.name):
        return
    refuse_link(path, "sweep job folder", CLIError)
    if not path.is_dir():
        raise CLIError(f"sweep job folder {path} is not a folder; a sweep's job folders must "
                       "be its own: move it away")
