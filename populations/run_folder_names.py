"""The names ``selfplay-train`` (and Hydra for it) writes at the top of a run (sweep) folder and
inside its folders there, the only ones a failed or refused command removes
(``run_guard._remove_written``, :func:`remove_own`), and the check that nothing Hydra writes
before the task runs is a link planted there (:func:`refuse_planted`)."""

from __future__ import annotations

import contextlib
import re
import shutil
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
_HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")
"""The files Hydra writes in a run's ``.hydra`` before the task runs."""
OWN_INSIDE = {
    ".hydra": re.compile("|".join(map(re.escape, _HYDRA_FILES))),
    "checkpoints": re.compile(r"ckpt_\d+\.pt(\.sha256|\.threads)?"),  # CHECKPOINT, sidecars
    "snapshots": re.compile(r"[A-Za-z0-9][\w.-]{0,63}/(v\d{4,}\.(pt|json))?"),  # store.py
}
"""What selfplay (and Hydra for it) writes inside those of :data:`RUN_NAMES` that are folders,
as paths relative to the folder (a folder's with a trailing ``/``; ``atomic_write``'s
``<name>.tmp`` too): all a failed command removes in them (:func:`remove_own`). Another
program's file put there meanwhile stays, with the folders above it. ``wandb`` and ``models``
hold what wandb and transformers write, under names they choose: removed whole."""
CHECKPOINT = re.compile(r"ckpt_(\d+)\.pt")
"""A checkpoint's name in ``checkpoints`` (``fullmatch``; group 1: its step): what
``populations.checkpoint`` reads and writes, and what makes a run worth keeping."""
SWEEP_NAMES = frozenset({"multirun.yaml", "summary.csv", ".lock"})
"""The names a sweep writes at the top of its folder, besides its jobs' folders
(``run_guard._SWEEP_JOB_FOLDERS``)."""


def remove_own(folder: Path) -> list[str]:
    """Remove ``folder`` (one of :data:`RUN_NAMES`, made by this command) with what selfplay
    wrote in it (:data:`OWN_INSIDE`); what another program put there stays, and the folders
    holding it. Returns the paths that stay, from ``folder``'s name down
    (``'checkpoints/notes.txt'``): empty when the folder went."""
    own = OWN_INSIDE.get(folder.name)
    if own is None:
        shutil.rmtree(folder, ignore_errors=True)
        return []
    kept = [f"{folder.name}/{rel}" for rel in _remove_matching(folder, own, "")]
    if not kept:
        with contextlib.suppress(OSError):
            folder.rmdir()
    return kept


def _remove_matching(folder: Path, own: re.Pattern[str], prefix: str) -> list[str]:
    """:func:`remove_own` below ``folder`` (``prefix``: its path in the folder removed):
    files whose path ``own`` matches go, folders it matches go once empty; the paths that
    stay. A link is never ours (``atomic_write`` replaces them): it stays."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:  # unreadable: all of it stays
        return [prefix]
    kept: list[str] = []
    for path in entries:
        rel = prefix + path.name
        folder_ = path.is_dir() and not path.is_symlink()
        if path.is_symlink() or not own.fullmatch(rel + "/" if folder_ else
                                                  rel.removesuffix(".tmp")):
            kept.append(rel)
        elif folder_:
            inner = _remove_matching(path, own, rel + "/")
            kept += inner
            if not inner:
                with contextlib.suppress(OSError):  # a file made since: it stays, unnamed
                    path.rmdir()
        else:
            path.unlink(missing_ok=True)
    return kept


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
