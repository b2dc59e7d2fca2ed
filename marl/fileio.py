"""Files written whole or not at all: the one atomic-write helper of ``marl`` and
``populations`` (policies, checkpoints, snapshot sidecars, run settings, repaired metrics).

Standard library only, so ``populations.run_folder`` and ``populations.loggers`` import it
without pulling torch in.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def atomic_write(path: str | os.PathLike, data: bytes | str | Callable[[BinaryIO], object], *,
                 fsync: bool = False) -> Path:  # fmt: skip
    """Write ``path`` whole or not at all: into ``<path>.tmp``, then ``os.replace`` over it.

    ``data`` is bytes, text (as ``open(..., "w", newline="")`` writes it: the locale's
    encoding, line ends kept) or a function writing to the open binary file (``torch.save``).
    A link planted at either name is replaced, never written through: the temporary name is
    unlinked, then created exclusively (``O_EXCL`` fails on a link instead of following it),
    and the rename swaps the link itself. ``fsync``: the bytes reach the disk before the
    rename, so a power cut leaves the old file or the new one. The folder must exist.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    text = isinstance(data, str)
    with open(tmp, "x" if text else "xb", **({"newline": ""} if text else {})) as fh:
        if callable(data):
            data(fh)
        else:
            fh.write(data)
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path
