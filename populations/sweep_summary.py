"""A sweep's folder (``selfplay-train -m ...``): its job folders and what identifies each job.

A job folder is ``<n>_<overrides>`` (``hydra.sweep.subdir`` of ``configs/config.yaml``), with
the job's overrides as typed in ``.hydra/overrides.yaml``. The number is the job's place in
the sweep that made the folder: a resumed sweep with a longer list (``seed=0,1,2`` after
``seed=0,1``, seed the inner loop) numbers the same job anew, so a job is found by its
overrides (:func:`find_job_folder`), not by its number.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

JOB_FOLDER = re.compile(r"(\d+)_")
"""A job folder's name starts with its number and ``_`` (``0_algo=mappo,seed=1``)."""


def job_folders(sweep_dir: Path) -> list[Path]:
    """The job folders in ``sweep_dir``, by number then name."""
    if not sweep_dir.is_dir():
        return []
    found = [p for p in sweep_dir.iterdir() if p.is_dir() and JOB_FOLDER.match(p.name)]
    return sorted(found, key=lambda p: (job_number(p), p.name))


def job_number(folder: Path) -> int:
    """The number a job folder's name starts with (``-1`` for a name without one)."""
    m = JOB_FOLDER.match(folder.name)
    return int(m[1]) if m else -1


def override_key(line: str) -> str:
    """The key (or config group) an override sets: ``+mappo.lr=1`` -> ``mappo.lr``,
    ``game@x=kuhn`` -> ``game``, ``~game`` -> ``game``, as Hydra's ``key_or_group``."""
    return line.split("=", 1)[0].lstrip("+~").split("@", 1)[0]


def job_overrides(folder: Path) -> list[str] | None:
    """A job's overrides as typed (its ``.hydra/overrides.yaml``); None when the folder has
    none or it cannot be read (a folder of another program, a damaged file)."""
    import yaml

    try:
        lines = yaml.safe_load((folder / ".hydra" / "overrides.yaml").read_text())
    except (OSError, ValueError, yaml.YAMLError, RecursionError):
        return None
    if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
        return None
    return lines


def identity(overrides: Iterable[str], ignored: Collection[str]) -> frozenset[str]:
    """What tells a job apart in its sweep: its overrides but those setting an ``ignored``
    key (settings a resume may change, left out of job folder names) and the ``~game`` the
    CLI adds before ``game.name=``."""
    return frozenset(line for line in overrides
                     if override_key(line) not in ignored and not line.startswith("~game"))


def find_job_folder(sweep_dir: Path, overrides: Sequence[str], ignored: Collection[str],
                    preferred: str) -> Path | None:
    """The folder in ``sweep_dir`` of the job with these ``overrides`` (compared but for the
    ``ignored`` keys: :func:`identity`), whatever number the sweep that made it gave it;
    ``preferred`` (the job's own name now) where several match (``seed=0,0``). None when no
    folder matches, or several do and none is ``preferred`` (the caller decides)."""
    mine = identity(overrides, ignored)
    same = [f for f in job_folders(sweep_dir)
            if (theirs := job_overrides(f)) is not None and identity(theirs, ignored) == mine]
    for folder in same:
        if folder.name == preferred:
            return folder
    return same[0] if len(same) == 1 else None
