"""The policy store: immutable snapshots of each member on disk, indexed in the league DB.

A snapshot is ``<root>/<member>/v<version>.pt`` (weights, written atomically and loaded with
``torch.load(weights_only=True)``) plus ``v<version>.json`` (kind, game, roles, parent
snapshot, learner step, created-at, and the SHA-256 of the ``.pt`` file). Publishing the
same (member, version) again — as a resumed run does — with the same weights keeps its files
and its one database row; other weights are refused (the version's matches and ratings were
played by the recorded ones), unless its file is missing or damaged, which they replace.

The database records each file's SHA-256 and its path relative to the run folder; a
snapshot is checked against the hash before it is loaded or handed to a runner, so a
garbled or swapped file stops the run with a one-line error naming it instead of silently
playing other weights.
"""

from __future__ import annotations

import hashlib
import json
import logging
import numbers
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from marl.core import POLICY_FORMAT, Policy, PolicyLoadError, load_policy, safe_torch_load
from marl.fileio import atomic_write, read_regular
from populations.db import LeagueDB, SnapshotRow, refuse_link
from populations.lru import POLICY_CACHE, LRUCache

log = logging.getLogger(__name__)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


class StoreError(ValueError):
    """A bad member name, an unknown snapshot, or a snapshot file that changed on disk."""


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


class PolicyStore:
    """Snapshots of the members of one run (``run_id``) under ``root``."""

    def __init__(self, root: str | Path, db: LeagueDB, run_id: int) -> None:
        self.root, self.db, self.run_id = Path(root), db, run_id
        refuse_link(self.root, "snapshot folder", StoreError)  # written into: the run's own
        self.root.mkdir(parents=True, exist_ok=True)
        self._cache: LRUCache[int, Policy] = LRUCache(None)  # trimmed between generations
        self._verified: dict[str, tuple[int, int, str]] = {}  # path -> (size, mtime, sha)

    def member(self, name: str, kind: str, roles: tuple[str, ...]) -> int:
        """Create (or find) member ``name``; names are used as folder names."""
        if not _NAME.match(name):
            raise StoreError(
                f"member name {name!r} must be 1-64 of letters, digits, '_', '-', '.'")
        return self.db.add_member(self.run_id, name, kind, roles)

    def publish(self, member: str, policy: Policy, version: int | None = None,
                parent: int | None = None, algo: str | None = None,
                retrained: bool = False) -> SnapshotRow:
        """Save ``policy`` as the next (or the given) version of ``member``; a new member is
        recorded as of kind ``algo`` (the learner that trains it: ``ippo``), else as the
        policy's kind (IPPO's snapshots are ``mappo`` policies).

        A version published before is kept as it is when ``policy`` holds the same weights
        and metadata (a resumed run publishes it again: same row, same file) and replaced
        when its file is missing or damaged. ``retrained``: a run's own publish, which may train
        a version again after resuming from an older checkpoint (the newest was damaged or
        removed): other weights then replace the version's, with a warning.

        Raises:
            StoreError: a bad member name, or (not ``retrained``) a version published with
                other weights (its matches and ratings were played by those).
        """
        meta = policy.meta
        member_id = self.member(member, algo or meta.kind, meta.roles)
        if version is None:
            version = len(self.db.snapshots(self.run_id, member))
        path = self.root / member / f"v{version:04d}.pt"
        refuse_link(path.parent, "snapshot folder", StoreError)  # a planted link: files outside
        kept = next((s for s in self.db.snapshots(self.run_id, member) if s.version == version),
                    None)
        if kept is not None and self._same_as(kept, policy, retrained):
            return kept
        policy.save(path)
        sha = file_sha256(path)
        info = {"member": member, "version": version, "kind": meta.kind, "game": meta.game,
                "roles": list(meta.roles), "agents": list(meta.agents), "parent": parent,
                "learner_step": meta.step, "created_at": time.time(), "sha256": sha}
        side = path.with_suffix(".json")
        atomic_write(side, json.dumps(info, indent=1))
        sid = self.db.add_snapshot(member_id, version, path, meta.kind, meta.game,
                                   meta.roles, parent, meta.step, {"agents": list(meta.agents)},
                                   sha256=sha, replace=kept is not None)
        self._cache.pop(sid, None)
        self._verified.pop(str(path), None)
        return self.get(sid)

    def _same_as(self, kept: SnapshotRow, policy: Policy, retrained: bool = False) -> bool:
        """Whether published snapshot ``kept`` holds ``policy``'s metadata and weights
        (compared as values: a policy loaded back saves equal tensors in other bytes); False
        when its file is missing or damaged, or (``retrained``) holds other weights, which
        ``policy`` then replaces.

        Raises:
            StoreError: ``kept`` holds other weights (one line naming the snapshot).
        """
        try:
            data = safe_torch_load(self.verify(kept).path, "snapshot", PolicyLoadError)
        except (StoreError, PolicyLoadError) as err:
            log.warning("publishing %s v%d again over its %s", kept.member, kept.version,
                        "missing file" if "missing" in str(err) else f"damaged file ({err})")
            return False
        meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
        if data.get("format") == POLICY_FORMAT and meta.get("kind") == policy.meta.kind \
                and _same(_weights(data.get("payload")), _weights(policy.payload())):
            if not (_same(meta, policy.meta.to_dict())
                    and _same(data.get("payload"), policy.payload())):
                # a resume may change a seed or a device (MEMBER_MAY_CHANGE): the snapshot
                # that played the matches is the recorded one, with the same weights
                log.info("snapshot %s v%04d is published with these weights; its recorded "
                         "settings are kept", kept.member, kept.version)
            return True
        if retrained:
            log.warning("snapshot %s v%04d is published again with other weights (this run "
                        "trained it again from an older checkpoint); the matches recorded for "
                        "it were played by the weights it replaces", kept.member, kept.version)
            return False
        following = max((s.version for s in self.snapshots(kept.member)), default=-1) + 1
        raise StoreError(
            f"snapshot {kept.member} v{kept.version:04d} is published with other weights "
            f"(its matches and ratings were played by them); publish these as a new version "
            f"(version=None: v{following:04d}) or under another member name")

    def trim_loaded(self, keep: int = POLICY_CACHE) -> None:
        """Keep only the ``keep`` most recently used loaded policies (a league calls it after
        each generation: the loaded opponents were a dict never emptied, +0.3 MB a snapshot).
        Not mid-generation: a member reseeds an opponent on its first use in a generation."""
        self._cache.trim(keep)

    def get(self, snapshot_id: int) -> SnapshotRow:
        """The snapshot row of id ``snapshot_id`` (:attr:`SnapshotRow.id`) in this run.

        Raises:
            StoreError: an id that is not an integer, or no snapshot of this run has it.
        """
        if isinstance(snapshot_id, SnapshotRow):
            raise StoreError(f"a SnapshotRow ({snapshot_id.member} v{snapshot_id.version:04d}) "
                             f"is not a snapshot id; pass its .id ({snapshot_id.id})")
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, numbers.Integral):
            raise StoreError(f"snapshot id {snapshot_id!r:.100} is not an integer; expected a "
                             "SnapshotRow.id of this run")
        for s in self.db.snapshots(self.run_id):
            if s.id == snapshot_id:
                return s
        raise StoreError(f"unknown snapshot id {snapshot_id} in run {self.run_id}")

    def latest(self, member: str) -> SnapshotRow | None:
        """The newest snapshot of ``member`` (None: it has published none)."""
        snaps = self.db.snapshots(self.run_id, member)
        return snaps[-1] if snaps else None

    def snapshots(self, member: str | None = None) -> list[SnapshotRow]:
        """The run's snapshots (``member``'s only, when given), oldest first."""
        return self.db.snapshots(self.run_id, member)

    def verify(self, snap: SnapshotRow) -> SnapshotRow:
        """Check ``snap``'s file against its recorded SHA-256 (once per file version).

        Raises:
            StoreError: the file is missing, lies outside the store's folder (a path or link
                of a crafted database), or its bytes differ from what was published.
        """
        path = snap.path
        if "\0" in path:  # os functions raised a bare "embedded null byte"
            raise StoreError(f"snapshot {snap.member} v{snap.version} is recorded at {path!r}, "
                             "which holds a NUL byte; not reading it")
        root = os.path.realpath(self.root)  # the database row is untrusted: read only inside
        if os.path.commonpath([root, os.path.realpath(path)]) != root:
            raise StoreError(f"snapshot {snap.member} v{snap.version} is recorded at {path}, "
                             f"outside the run's snapshot folder {self.root}; not reading it")
        try:
            st = os.stat(path)
        except OSError:
            raise StoreError(f"snapshot file {path} of {snap.member} v{snap.version} is "
                             "missing; the run folder is incomplete") from None
        if not stat.S_ISREG(st.st_mode):  # a FIFO blocked hashing for good
            raise StoreError(f"snapshot file {path} of {snap.member} v{snap.version} is not a "
                             "regular file; not reading it")
        want = snap.sha256 or _json_sha(path)
        if want is None:  # published by an older selfplay: nothing to check against
            return snap
        seen = self._verified.get(path)
        if seen == (st.st_size, st.st_mtime_ns, want):
            return snap
        got = file_sha256(path)
        if got != want:
            raise StoreError(_hash_differs(path, got, want))
        self._verified[path] = (st.st_size, st.st_mtime_ns, want)
        return snap

    def load(self, snapshot_id: int) -> Policy:
        """The policy of a snapshot, without its learner (cached; checked against its hash)."""
        if snapshot_id not in self._cache:
            self._cache[snapshot_id] = load_policy(self.verify(self.get(snapshot_id)).path)
        return self._cache[snapshot_id]


def _weights(payload: Any, path: str = "") -> dict[str, Any]:
    """The tensors and arrays of a policy file's payload by their place in it (``"actor.0.w"``),
    without its plain values (a seed, a device, a setting a resume may change)."""
    if isinstance(payload, torch.Tensor | np.ndarray):
        return {path: payload}
    if isinstance(payload, dict):
        items = payload.items()
    elif isinstance(payload, list | tuple):
        items = enumerate(payload)
    else:
        return {}
    out: dict[str, Any] = {}
    for key, value in items:
        out.update(_weights(value, f"{path}.{key}" if path else str(key)))
    return out


def _same(a: Any, b: Any) -> bool:
    """Whether two policy files' contents (nested dicts, lists, tensors, arrays, plain
    values) are equal: tensors and arrays by dtype, shape and values."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and \
            a.dtype == b.dtype and a.shape == b.shape and \
            torch.equal(a.detach().cpu(), b.detach().cpu())
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and \
            a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def load_policy_file(path: str | Path) -> Policy:
    """The policy in file ``path`` (a command line's policy file), checked first against the
    SHA-256 its ``.json`` sidecar records when it has one (a run folder's snapshot): a file
    garbled or swapped since it was published is refused as a resume refuses it, instead of
    playing other weights. A file without a sidecar (``Policy.save``'s own) loads as it is.

    Raises:
        StoreError: one line naming the file whose bytes differ from its sidecar's hash.
    """
    want = _json_sha(str(path))
    if want is not None and os.path.isfile(path):  # load_policy says a missing file itself
        got = file_sha256(path)
        if got != want:
            raise StoreError(_hash_differs(
                path, got, want, f"its {Path(path).with_suffix('.json').name} ",
                "; restore it from a copy, or pass another file"))
    return load_policy(path)


def _hash_differs(path: str | Path, got: str, want: str, who: str = "", then: str = "") -> str:
    """The one line of a snapshot file whose SHA-256 ``got`` is not the ``want`` recorded
    (by ``who``) when it was published, and ``then`` what to do."""
    return (f"snapshot file {path} is damaged or was replaced: its SHA-256 {got[:16]}... "
            f"differs from the {want[:16]}... {who}recorded when it was published{then}")


MAX_SIDECAR_BYTES = 1 << 20  # a sidecar is a few hundred bytes


def _json_sha(pt_path: str) -> str | None:
    """The SHA-256 in a snapshot's ``.json`` sidecar (databases before hashes had none).
    Only a regular file of at most :data:`MAX_SIDECAR_BYTES` is read: a link to /dev/zero
    read until memory ran out, and JSON nested 100,000 deep raised RecursionError."""
    side = Path(pt_path).with_suffix(".json")
    try:
        sha = json.loads(read_regular(side, "snapshot sidecar", max_bytes=MAX_SIDECAR_BYTES)
                         ).get("sha256")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return sha if isinstance(sha, str) else None
