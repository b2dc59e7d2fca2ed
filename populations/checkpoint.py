"""Run checkpoints: ``<run>/checkpoints/ckpt_<step>.pt``, written atomically, newest kept.

Resuming takes the newest checkpoint that loads; a corrupt or truncated one is reported
(naming the file) and skipped in favour of the previous good one.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from marl.core import CheckpointError, atomic_torch_save, safe_torch_load

log = logging.getLogger(__name__)
_CKPT = re.compile(r"^ckpt_(\d+)\.pt$")


def checkpoint_files(folder: str | Path) -> list[Path]:
    """Checkpoint files in ``folder``, newest (highest step) first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _CKPT.match(p.name))]
    return [p for _, p in sorted(found, reverse=True)]


def save_checkpoint(folder: str | Path, step: int, state: dict[str, Any], keep: int = 3) -> Path:
    """Write ``state`` as checkpoint ``step`` and delete all but the newest ``keep``."""
    path = atomic_torch_save(state, Path(folder) / f"ckpt_{step:06d}.pt")
    for old in checkpoint_files(folder)[keep:]:
        old.unlink(missing_ok=True)
    return path


def load_latest(folder: str | Path) -> tuple[Path, dict[str, Any]] | None:
    """The newest readable checkpoint, or None when there is none at all.

    Raises:
        CheckpointError: checkpoints exist but none can be read (each error is logged).
    """
    files = checkpoint_files(folder)
    errors = []
    for path in files:
        try:
            return path, safe_torch_load(path, "checkpoint")
        except CheckpointError as err:
            log.error("%s; trying the previous checkpoint", err)
            errors.append(str(err))
    if files:
        raise CheckpointError(f"no readable checkpoint in {folder}: {'; '.join(errors)}")
    return None
