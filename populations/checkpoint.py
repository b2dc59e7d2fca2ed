"""Run checkpoints: ``<run>/checkpoints/ckpt_<step>.pt``, written atomically, newest kept.

Each checkpoint has a sidecar ``ckpt_<step>.pt.sha256`` (``sha256sum`` format, so
``sha256sum -c`` checks it by hand) holding the SHA-256 of its bytes. ``torch.load`` does
not check a zip's CRC, so without it a few garbled bytes inside a tensor load silently as
other weights. Resuming takes the newest checkpoint that matches its hash and loads; a
garbled, truncated or unreadable one is reported in one line naming the file and skipped in
favour of the previous good one. A checkpoint without a sidecar (written by an older
selfplay) loads unverified, with a warning.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from marl.core import CheckpointError, check_tensors
from marl.fileio import atomic_write, check_torch_zip, read_regular
from populations.db import refuse_link
from populations.experiment_config import KEEP_CHECKPOINTS
from populations.run_folder_names import CHECKPOINT

log = logging.getLogger(__name__)
HASH_SUFFIX = ".sha256"
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def checkpoint_files(folder: str | Path) -> list[Path]:
    """Checkpoint files in ``folder``, newest (highest step) first."""
    folder = Path(folder)
    refuse_link(folder, "checkpoint folder", CheckpointError)  # pruned and read: the run's own
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := CHECKPOINT.fullmatch(p.name))]
    return [p for _, p in sorted(found, reverse=True)]


def _hash_file(path: Path) -> Path:
    return path.with_name(path.name + HASH_SUFFIX)


def _threads_file(path: Path) -> Path:
    return path.with_name(path.name + ".threads")


def save_checkpoint(folder: str | Path, step: int, state: dict[str, Any],
                    keep: int = KEEP_CHECKPOINTS,
                    torch_threads: int | None = None) -> Path:
    """Write ``state`` as checkpoint ``step`` with its hash; delete all but the newest
    ``keep``. The hash is written after the file: a kill in between leaves either the
    previous hash of this step (no match: resuming skips the file) or none (the file,
    renamed into place whole, loads with a warning). ``torch_threads`` (the run's setting
    that trained it) goes in a sidecar ``ckpt_<step>.pt.threads`` (:func:`checkpoint_threads`;
    the hash file stays plain ``sha256sum`` format)."""
    folder = Path(folder)
    refuse_link(folder, "checkpoint folder", CheckpointError)  # written and pruned
    folder.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save(state, buf)
    data = buf.getvalue()
    path = folder / f"ckpt_{step:06d}.pt"
    atomic_write(path, data, fsync=True)
    atomic_write(_hash_file(path), f"{hashlib.sha256(data).hexdigest()}  {path.name}\n", fsync=True)
    if torch_threads is not None:
        atomic_write(_threads_file(path), f"{torch_threads}\n")
    for old in checkpoint_files(folder)[keep:]:
        old.unlink(missing_ok=True)
        _hash_file(old).unlink(missing_ok=True)
        _threads_file(old).unlink(missing_ok=True)
    return path


def checkpoint_threads(folder: str | Path) -> int | None:
    """The ``torch_threads`` the newest checkpoint in ``folder`` was trained with, as
    :func:`save_checkpoint` recorded it (None: no checkpoint, or one that did not record it).
    A resume's thread-count note compares with it: the run's recorded settings keep the
    first session's count, though a later session may have trained the checkpoint."""
    try:
        files = checkpoint_files(folder)
        if not files:
            return None
        text = read_regular(_threads_file(files[0]), "checkpoint threads", CheckpointError,
                            max_bytes=64).decode("utf-8", "replace").strip()
    except (OSError, CheckpointError):
        return None
    return int(text) if text.isdigit() else None


def note_resume_threads(folder: str | Path, threads: int,
                        recorded: Callable[[], object]) -> None:
    """One line when a resume runs at another ``torch_threads`` than trained the newest
    checkpoint in ``folder`` (:func:`checkpoint_threads`), or, where none recorded it, than the
    run's recorded settings (``recorded()``: its settings mapping, read only then): allowed,
    but sums round otherwise from the first update on, so the numbers after the checkpoint
    are not the uninterrupted run's. selfplay-train's single and PSRO runs and every league
    (the league CLI's, selfplay-train's) say it through here."""
    saved = checkpoint_threads(folder)  # the session that trained it last
    if saved is None:  # none yet, or from before checkpoints recorded it
        settings = recorded()
        saved = settings.get("torch_threads") if isinstance(settings, dict) else None
    if isinstance(saved, int) and not isinstance(saved, bool) and saved != threads:
        log.warning("resuming with torch_threads=%d (the run had %d): training goes on, but "
                    "its numbers from here on differ from the run kept at %d (sums round "
                    "otherwise)", threads, saved, saved)


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """One checkpoint, checked against its hash, loaded with ``weights_only=True``.

    Raises:
        CheckpointError: missing, garbled (hash mismatch), truncated or not a dict; the
            message is one line naming the file.
    """
    path = Path(path)
    refuse_link(path, "checkpoint", CheckpointError)  # resuming reads only the run's own files
    try:  # a FIFO blocked for good; a link is refused above
        data = read_regular(path, "checkpoint", CheckpointError)
    except OSError as err:
        raise CheckpointError(f"cannot read checkpoint {path}: {err.strerror}") from None
    try:  # a link to /dev/zero read until memory ran out
        text = read_regular(_hash_file(path), "checkpoint hash", CheckpointError,
                            max_bytes=4096).decode("utf-8", "replace")
    except FileNotFoundError:
        text = None
    recorded = None if text is None else (text.split() or [""])[0]
    if recorded is None:  # the hash is written after the checkpoint (save_checkpoint)
        log.warning("checkpoint %s has no %s file (from an older selfplay, or the process was "
                    "killed between writing the checkpoint and its hash): loading it "
                    "unverified", path, HASH_SUFFIX)
    elif not _SHA256.fullmatch(recorded):  # not "differs": there is nothing to compare with
        raise CheckpointError(f"checkpoint {path} cannot be checked: {_hash_file(path).name} "
                              "is unreadable (it holds no SHA-256, 64 hex digits)")
    elif hashlib.sha256(data).hexdigest() != recorded.lower():
        raise CheckpointError(f"checkpoint {path} is damaged: its SHA-256 differs from the one "
                              f"recorded in {_hash_file(path).name}")
    check_torch_zip(data, f"checkpoint {path}", CheckpointError)  # no inflating entries
    try:
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unpickling failure means a bad file
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if "weights_only" in first:  # torch's advice (weights_only=False) runs a file's code
            first = ("not a checkpoint of tensors and plain values (torch's weights-only "
                     f"loader refused it: {type(err).__name__})")
        raise CheckpointError(f"cannot read checkpoint {path}: {first}") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {path} does not hold a dict")
    check_tensors(state, f"checkpoint {path}")  # no file-chosen shape claims more than it holds
    return state


def load_latest(folder: str | Path) -> tuple[Path, dict[str, Any]] | None:
    """The newest good checkpoint, or None when there is none at all.

    Raises:
        CheckpointError: checkpoints exist but none is good (each error is logged).
    """
    files = checkpoint_files(folder)
    errors: dict[str, list[str]] = {}  # why -> the files it names
    for k, path in enumerate(files):
        try:
            return path, read_checkpoint(path)
        except CheckpointError as err:
            if k + 1 < len(files):  # the last one's error is in the one below
                log.error("%s; trying the previous checkpoint", err)
            errors.setdefault(_why(str(err), path), []).append(path.name)
    if files:
        # each file named once (its folder once) and what to do: every checkpoint damaged
        # repeated 'checkpoint <path> is damaged: ...' per file, with no next step. Not
        # "delete the checkpoints and resume": the run's recorded matches and ratings would
        # then be read beside snapshots trained again under the same names (review)
        said = "; ".join(_named(names, why) for why, names in errors.items())
        raise CheckpointError(
            f"no readable checkpoint in {folder}: {said}; this run cannot go on: start a new "
            "run folder (what it recorded stays readable here)")
    return None


def _why(message: str, path: Path) -> str:
    """:func:`read_checkpoint`'s ``message`` about ``path`` without the path (``is damaged:
    its SHA-256 differs from the one recorded in its .sha256 file``), alike for every file."""
    why = message.replace(f"{path}{HASH_SUFFIX}", f"its {HASH_SUFFIX} file")
    why = why.replace(_hash_file(path).name, f"its {HASH_SUFFIX} file")
    why = why.replace(f"checkpoint {path}", "").replace(str(path), "it")
    return re.sub(r"\s+:", ":", why).strip(" :")


def _named(names: list[str], why: str) -> str:
    """``ckpt_000016.pt is damaged: ...``, ``ckpt_a.pt, ckpt_b.pt: each is damaged: ...``."""
    verb = why.split(" ", 1)[0] in ("is", "does", "holds", "has")
    if len(names) == 1:
        return f"{names[0]}{' ' if verb else ': '}{why}"
    return f"{', '.join(names)}: {'each ' if verb else ''}{why}"
