"""The policy store: immutable snapshots of each member on disk, indexed in the league DB.

A snapshot is ``<root>/<member>/v<version>.pt`` (weights, written atomically and loaded with
``torch.load(weights_only=True)``) plus ``v<version>.json`` (kind, game, roles, parent
snapshot, learner step, created-at). Publishing the same (member, version) again — as a
resumed run does — rewrites the same files and keeps one database row.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from marl.core import Policy, load_policy
from populations.db import LeagueDB, SnapshotRow

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


class StoreError(ValueError):
    """A bad member name or an unknown snapshot."""


class PolicyStore:
    """Snapshots of the members of one run (``run_id``) under ``root``."""

    def __init__(self, root: str | Path, db: LeagueDB, run_id: int) -> None:
        self.root, self.db, self.run_id = Path(root), db, run_id
        self.root.mkdir(parents=True, exist_ok=True)
        self._cache: dict[int, Policy] = {}

    def member(self, name: str, kind: str, roles: tuple[str, ...]) -> int:
        """Create (or find) member ``name``; names are used as folder names."""
        if not _NAME.match(name):
            raise StoreError(
                f"member name {name!r} must be 1-64 of letters, digits, '_', '-', '.'")
        return self.db.add_member(self.run_id, name, kind, roles)

    def publish(self, member: str, policy: Policy, version: int | None = None,
                parent: int | None = None) -> SnapshotRow:
        """Save ``policy`` as the next (or the given) version of ``member``."""
        meta = policy.meta
        member_id = self.member(member, meta.kind, meta.roles)
        if version is None:
            version = len(self.db.snapshots(self.run_id, member))
        path = self.root / member / f"v{version:04d}.pt"
        policy.save(path)
        info = {"member": member, "version": version, "kind": meta.kind, "game": meta.game,
                "roles": list(meta.roles), "agents": list(meta.agents), "parent": parent,
                "learner_step": meta.step, "created_at": time.time()}
        path.with_suffix(".json").write_text(json.dumps(info, indent=1))
        sid = self.db.add_snapshot(member_id, version, str(path), meta.kind, meta.game,
                                   meta.roles, parent, meta.step, {"agents": list(meta.agents)})
        self._cache.pop(sid, None)
        return self.get(sid)

    def get(self, snapshot_id: int) -> SnapshotRow:
        for s in self.db.snapshots(self.run_id):
            if s.id == snapshot_id:
                return s
        raise StoreError(f"unknown snapshot id {snapshot_id} in run {self.run_id}")

    def latest(self, member: str) -> SnapshotRow | None:
        snaps = self.db.snapshots(self.run_id, member)
        return snaps[-1] if snaps else None

    def snapshots(self, member: str | None = None) -> list[SnapshotRow]:
        return self.db.snapshots(self.run_id, member)

    def load(self, snapshot_id: int) -> Policy:
        """The policy of a snapshot, without its learner (cached)."""
        if snapshot_id not in self._cache:
            self._cache[snapshot_id] = load_policy(self.get(snapshot_id).path)
        return self._cache[snapshot_id]
