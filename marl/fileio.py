"""Files written whole or not at all: the one atomic-write helper of ``marl`` and
``populations`` (policies, checkpoints, snapshot sidecars, run settings, repaired metrics);
and :func:`check_torch_zip`, which refuses a torch file that would unpack to more than it
holds.

Standard library only, so ``populations.run_folder`` and ``populations.loggers`` import it
without pulling torch in.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
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


def check_torch_zip(source: str | os.PathLike | bytes, what: str,
                    error: type[Exception] = ValueError) -> None:
    """Raise ``error`` (one line naming ``what``) when a torch file would unpack to more
    bytes than it holds: ``torch.save`` stores its zip entries uncompressed, but
    ``torch.load`` also inflates compressed ones, so a crafted 1 MB file could allocate
    1 GB of tensor storage before any check of the loaded tensors sees it. Only the zip's
    directory is read. A file that is not a zip (truncated, or torch's legacy format, which
    holds its storages' bytes as they are) is left for ``torch.load`` to judge."""
    def opened() -> io.BytesIO | str | os.PathLike:
        return io.BytesIO(source) if isinstance(source, bytes) else source

    size = len(source) if isinstance(source, bytes) else os.path.getsize(source)
    if not zipfile.is_zipfile(opened()):
        return
    try:
        with zipfile.ZipFile(opened()) as z:
            entries = z.infolist()
    except Exception as err:  # noqa: BLE001 - any way a crafted directory fails to parse
        raise error(f"cannot read {what}: its zip directory is malformed "
                    f"({type(err).__name__})") from None
    packed = [e.filename for e in entries if e.compress_type != zipfile.ZIP_STORED]
    if packed:
        raise error(f"cannot read {what}: entry {packed[0][:80]!r} is compressed; torch.save "
                    "writes stored entries only (a compressed one may unpack to gigabytes)")
    unpacked = sum(e.file_size for e in entries)
    if unpacked > size:
        raise error(f"cannot read {what}: its entries claim {unpacked} bytes, more than the "
                    f"{size} bytes of the file")


def read_regular(path: str | os.PathLike, what: str, error: type[Exception] = ValueError,
                 max_bytes: int | None = None) -> bytes:
    """The bytes of ``path``, which must be a regular file (of at most ``max_bytes``): a run
    folder from elsewhere may hold a link (to /dev/zero: read until memory runs out) or a
    FIFO (blocks for good) in place of one of its files. The file is opened without
    following a link or waiting for a writer, and checked on the open descriptor.

    Raises:
        error: one line naming ``what`` and ``path``: missing, a link, not a regular file,
            larger than ``max_bytes``, or unreadable. A missing file raises
            ``FileNotFoundError`` instead (callers tell "absent" from "bad").
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as err:
        why = "a link" if os.path.islink(path) else err.strerror
        raise error(f"cannot read {what} {path}: {why}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"cannot read {what} {path}: not a regular file")
        if max_bytes is not None and st.st_size > max_bytes:
            raise error(f"cannot read {what} {path}: {st.st_size} bytes, more than the "
                        f"{max_bytes} it may hold")
        return fh.read() if max_bytes is None else fh.read(max_bytes)
