"""Findings of user-path walk 18 in the command lines (``populations/cli.py``): what a new
researcher meets on the path README describes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import games
from marl.mappo import MAPPO, MAPPOConfig
from populations.store import file_sha256


def _policies(folder: Path, seed: int) -> list[str]:
    """Two Kuhn MAPPO policies (every seat) saved as ``folder/v0000.pt`` and ``v0001.pt``,
    their weights drawn from ``seed``: a run's snapshot names, other weights per seed."""
    spec = games.make("openspiel/kuhn_poker").spec
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(2):
        path = folder / f"v{k:04d}.pt"
        MAPPO(spec, MAPPOConfig(), seed=seed + k).policy().save(path)
        paths.append(str(path))
    return paths


def _eval(db: Path, files: list[str]) -> None:
    from populations.cli import eval_main

    eval_main(["--game", "openspiel/kuhn_poker", "--db", str(db), "--episodes", "1", *files])


def _recorded(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT path, sha256 FROM snapshots ORDER BY id").fetchall()


def test_evaluations_beside_each_other_keep_their_own_snapshot_files(tmp_path, capsys):
    # before: every selfplay-eval wrote eval_snapshots/<name>/v0000.pt beside its --db, so a
    # second evaluation (into another database in the folder, or the same one) of files
    # with the same names (a run's v0000.pt, v0001.pt) overwrote the first one's files: its
    # rows then named files holding other weights than their recorded SHA-256
    first = _policies(tmp_path / "run_a", seed=0)
    second = _policies(tmp_path / "run_b", seed=10)
    _eval(tmp_path / "a.db", first)
    _eval(tmp_path / "b.db", second)
    _eval(tmp_path / "a.db", second)  # the same database, a second evaluation run
    capsys.readouterr()
    rows = _recorded(tmp_path / "a.db") + _recorded(tmp_path / "b.db")
    assert len(rows) == 6
    for path, sha in rows:
        assert file_sha256(tmp_path / path) == sha, path
    assert len({path for path, _ in rows}) == 6  # each evaluation's files its own
