"""Files written whole or not at all: the one atomic-write helper of ``marl`` and
``populations`` (policies, checkpoints, snapshot sidecars, run settings, repaired metrics),
which says :class:`NoSpaceError` naming the file when the disk is full; and
:func:`check_torch_zip`, which refuses a torch file that would unpack to more than it holds.

Standard library only, so ``populations.run_folder`` and ``populations.loggers`` import it
without pulling torch in.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import stat
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

_FULL = (errno.ENOSPC, errno.EDQUOT)


class NoSpaceError(OSError):
    """The disk (or the user's quota) filled up writing ``filename``: one line naming it and
    the space left on its filesystem. An ``OSError`` (``errno`` ENOSPC), so the CLIs print it
    as the user error it is, with the command that resumes the run once space is freed."""

    def __init__(self, path: str | os.PathLike, what: str = "") -> None:
        super().__init__(errno.ENOSPC, "No space left on device", os.fspath(path))
        free = free_bytes(os.path.dirname(os.path.abspath(path)))
        left = "" if free is None else f" ({free:,} bytes free on its filesystem)"
        self.line = f"no space left on device writing {what}{os.fspath(path)}{left}"

    def __str__(self) -> str:
        return self.line


def free_bytes(folder: str | os.PathLike) -> int | None:
    """Bytes free to this user in ``folder``'s filesystem (None where that cannot be read)."""
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def disk_full(err: BaseException) -> bool:
    """Whether ``err`` is, or was raised while handling, a write that found the disk full:
    ``torch.save`` into a full disk raises "unexpected pos 5632 vs 5584" (a RuntimeError)
    from its zip writer while the ENOSPC of the write before is being handled."""
    seen: set[int] = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        if isinstance(e, OSError) and e.errno in _FULL:
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def atomic_write(path: str | os.PathLike, data: bytes | str | Callable[[BinaryIO], object], *,
                 fsync: bool = False) -> Path:  # fmt: skip
    """Write ``path`` whole or not at all: into ``<path>.tmp``, then ``os.replace`` over it.

    ``data`` is bytes, text (as ``open(..., "w", newline="")`` writes it: the locale's
    encoding, line ends kept) or a function writing to the open binary file (``torch.save``).
    A link planted at either name is replaced, never written through: the temporary name is
    unlinked, then created exclusively (``O_EXCL`` fails on a link instead of following it),
    and the rename swaps the link itself. ``fsync``: the bytes reach the disk before the
    rename, so a power cut leaves the old file or the new one. The folder must exist.

    A write that fails removes the temporary file (``path`` keeps its old contents); one
    that found the disk full raises :class:`NoSpaceError` naming ``path``.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    text = isinstance(data, str)
    try:
        with open(tmp, "x" if text else "xb", **({"newline": ""} if text else {})) as fh:
            if callable(data):
                data(fh)
            else:
                fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        if not isinstance(err, FileExistsError):  # a file made by another writer is not ours
            with contextlib.suppress(OSError):  # the error that stopped the write is reported
                tmp.unlink(missing_ok=True)
        if isinstance(err, Exception) and disk_full(err):
            raise NoSpaceError(path) from err
        raise
    return path


_LOCAL, _CENTRAL = b"PK\x03\x04", b"PK\x01\x02"


class _NoEndRecord(ValueError):
    """No zip end record in the file (it was cut): torch's reader, which looks for it the same
    way, finds none either and fails before reading any entry."""
_END, _END64, _LOCATOR64 = b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07"
_ALL_ONES = 0xFFFFFFFF  # a 32-bit size or offset field saying "see the zip64 extra field"


def _zip_directory(fh: BinaryIO, size: int) -> list[tuple[bytes, int, int, int]]:
    """(name, method, compressed size, uncompressed size) of each central-directory entry,
    read where torch's reader (miniz) reads them: the end record is the last one in the file
    with a whole record after it, the directory sits at the offset that record (or the zip64
    record its locator points at) gives. Python's ``zipfile`` instead trusts the bytes just
    before the end record, so a crafted file could show it a second, harmless directory.
    Anything not shaped as ``torch.save`` writes it (the directory not right before its end
    records, a zip64 record anywhere but just before its locator, several disks, bytes left
    over) raises ValueError naming what."""
    def at(offset: int, n: int) -> bytes:
        fh.seek(offset)
        got = fh.read(n)
        if len(got) != n:
            raise ValueError(f"{n} bytes at offset {offset} lie past the end")
        return got

    tail_start = max(0, size - (0xFFFF + 22))  # the end record plus the longest comment
    tail = at(tail_start, size - tail_start)
    found = tail.rfind(_END, 0, max(0, len(tail) - 22 + 4))
    if found < 0:
        raise _NoEndRecord("no end of central directory record")
    end = tail_start + found
    _, disk, dir_disk, on_disk, total, dir_size, dir_offset, _ = struct.unpack(
        "<4s4H2LH", tail[found:found + 22])
    dir_end = end
    if end >= 20 and at(end - 20, 4) == _LOCATOR64:  # miniz then reads the zip64 record
        _, _, end64, disks = struct.unpack("<4sLQL", at(end - 20, 20))
        if end64 > size - 56:
            raise ValueError("zip64 locator points past the end")
        record = at(end64, 56)
        if record[:4] == _END64:
            if end64 != end - 20 - 56:  # Python's zipfile reads the one just before
                raise ValueError("zip64 end record is not where its locator says")
            if disks != 1:
                raise ValueError(f"zip64 locator claims {disks} disks")
            (_, _, _, _, disk, dir_disk, on_disk, total, dir_size, dir_offset
             ) = struct.unpack("<4sQ2H2L4Q", record)
            dir_end = end64
    if disk or dir_disk or on_disk != total:
        raise ValueError("it spans several disks")
    if dir_offset + dir_size != dir_end:
        raise ValueError(f"the end record places the directory at {dir_offset}, "
                         f"not right before it ({dir_end - dir_size})")
    if total * 46 > dir_size:
        raise ValueError(f"{total} entries cannot fit in a {dir_size}-byte directory")
    directory = at(dir_offset, dir_size)
    entries, pos = [], 0
    for _ in range(total):
        head = directory[pos:pos + 46]
        if len(head) < 46 or head[:4] != _CENTRAL:
            raise ValueError(f"no directory entry at offset {dir_offset + pos}")
        method, = struct.unpack_from("<H", head, 10)
        packed, unpacked, n_name, n_extra, n_comment = struct.unpack_from("<2L3H", head, 20)
        local, = struct.unpack_from("<L", head, 42)
        name = directory[pos + 46:pos + 46 + n_name]
        extra = directory[pos + 46 + n_name:pos + 46 + n_name + n_extra]
        if _ALL_ONES in (packed, unpacked, local):  # miniz's order: sizes, then offset
            fields = _zip64_fields(extra)
            if unpacked == _ALL_ONES:
                unpacked = next(fields)
            if packed == _ALL_ONES:
                packed = next(fields)
        entries.append((name, method, packed, unpacked))
        pos += 46 + n_name + n_extra + n_comment
    if pos != dir_size:
        raise ValueError(f"its directory holds {dir_size - pos} bytes past its {total} entries")
    return entries


def _zip64_fields(extra: bytes):
    """The 64-bit values of a directory entry's zip64 extra field (id 1), in order."""
    pos = 0
    while pos + 4 <= len(extra):
        kind, n = struct.unpack_from("<2H", extra, pos)
        if kind == 1:
            body = extra[pos + 4:pos + 4 + n]
            for i in range(0, len(body) - 7, 8):
                yield struct.unpack_from("<Q", body, i)[0]
            break
        pos += 4 + n
    raise ValueError("an entry's zip64 sizes are missing")


def check_torch_zip(source: str | os.PathLike | bytes, what: str,
                    error: type[Exception] = ValueError) -> None:
    """Raise ``error`` (one line naming ``what``) when a torch file would unpack to more
    bytes than it holds: ``torch.save`` stores its zip entries uncompressed, but
    ``torch.load`` also inflates compressed ones, so a crafted 1 MB file could allocate
    1 GB of tensor storage before any check of the loaded tensors sees it. Only the zip's
    directory is read, where torch's reader reads it (see :func:`_zip_directory`), and the
    names and sizes torch's own reader then reports must be the same. A file is a zip when
    it starts as one, as torch decides; any other file (truncated, or torch's legacy
    format, which holds its storages' bytes as they are) is left for ``torch.load`` to
    judge."""
    try:
        with (io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb")) as fh:
            if fh.read(4) != _LOCAL:
                return
            size = fh.seek(0, os.SEEK_END)
            entries = _zip_directory(fh, size)
    except _NoEndRecord:  # a truncated file: torch.load says so ("truncated or not ...")
        return
    except (OSError, ValueError, struct.error) as err:
        raise error(f"cannot read {what}: its zip directory is malformed "
                    f"({str(err) or type(err).__name__})") from None
    names = [name.decode("utf-8", "replace") for name, *_ in entries]
    packed = [name for name, (_, method, *_) in zip(names, entries, strict=True) if method]
    if packed:
        raise error(f"cannot read {what}: entry {packed[0][:80]!r} is compressed; torch.save "
                    "writes stored entries only (a compressed one may unpack to gigabytes)")
    if any(p != u for _, _, p, u in entries):
        raise error(f"cannot read {what}: an entry's stored size differs from its size")
    unpacked = sum(u for *_, u in entries)
    if unpacked > size:
        raise error(f"cannot read {what}: its entries claim {unpacked} bytes, more than the "
                    f"{size} bytes of the file")
    folder = names[0].split("/", 1)[0] + "/" if names else ""
    if len(set(names)) != len(names) or not all(n.startswith(folder) for n in names):
        raise error(f"cannot read {what}: its zip directory names an entry twice or one "
                    "outside its folder")
    ours = sorted((n[len(folder):], u) for n, (*_, u) in zip(names, entries, strict=True))
    bad = _bad_crc(source)
    if bad:
        raise error(f"cannot read {what}: damaged (bad CRC in {bad[:80]}); its bytes changed "
                    "after it was written (torch.load does not check them)")
    import torch  # only callers about to torch.load get here

    try:  # torch's own reader must list the same entries (building it reads only `version`)
        reader = torch._C.PyTorchFileReader(io.BytesIO(source) if isinstance(source, bytes)
                                            else os.fspath(source))
        theirs = sorted((n, reader.get_record_size(n)) for n in reader.get_all_records())
    except Exception:  # noqa: BLE001 - torch.load will give its own message
        return
    if theirs != ours:
        raise error(f"cannot read {what}: torch's zip reader lists other entries than its "
                    "directory does")


def _bad_crc(source: str | os.PathLike | bytes) -> str | None:
    """The first entry whose bytes fail the CRC-32 its zip directory records (torch.save
    writes them; torch.load never checks them), or None: zipfile's ``testzip`` reads the
    file once (a few ms for 10 MB). A directory zipfile cannot follow is left to torch.load."""
    try:
        with zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source) as zf:
            return zf.testzip()
    except (OSError, zipfile.BadZipFile, ValueError, EOFError, NotImplementedError):
        return None


def not_a_file(path: str | os.PathLike, what: str) -> str:
    """Why ``path``, no regular file (nor a folder), cannot be read as ``what``'s file:
    missing, a dangling link, or something else at that name (a FIFO, a device, a socket:
    a link to /dev/zero is no "file not found")."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return (f"{what} file {path} is a link to a missing file" if os.path.islink(path)
                else f"{what} file not found: {path}")
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")
    via = " (through a link)" if os.path.islink(path) else ""
    return f"{what} {path} is not a regular file but {kind}{via}; give a .pt file"


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
