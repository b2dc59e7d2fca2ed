"""The dashboard's folder scan and its read of a job's ``.hydra/overrides.yaml`` (review38a
M1, L2): a run folder from elsewhere may hold a FIFO or a link to /dev/zero in place of the
file, and a run folder may be a link."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from starlette.testclient import TestClient

from populations.dashboard import create_app
from populations.dashboard.sources import job_overrides, resolve
from tests.populations.test_dash38_server import small_league


def _returns(fn, timeout_s: float = 20.0):
    """``fn()``'s value, or a failure if it has not returned after ``timeout_s`` (a read of a
    FIFO with no writer blocks for good: the point is that it returns at all)."""
    box: list = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(timeout_s)
    assert box, f"{fn} did not return (blocked on a FIFO or an endless file)"
    return box[0]


def _bad_overrides(tmp_path: Path) -> dict[str, Path]:
    runs = {}
    for name in ("fifo", "zero"):
        run = small_league(tmp_path / "runs" / name, ["x", "y"])
        (run / ".hydra").mkdir()
        f = run / ".hydra" / "overrides.yaml"
        os.mkfifo(f) if name == "fifo" else f.symlink_to("/dev/zero")
        runs[name] = run / "league.db"
    return runs


def test_a_fifo_or_a_link_to_dev_zero_as_overrides_is_no_overrides(tmp_path):
    for db in _bad_overrides(tmp_path).values():
        assert _returns(lambda db=db: job_overrides(db)) == []


def test_the_runs_list_still_serves_beside_a_fifo_overrides_file(tmp_path):
    _bad_overrides(tmp_path)
    client = TestClient(create_app([tmp_path / "runs"]))
    body = _returns(lambda: client.get("/api/runs").json())
    assert sorted(Path(r["path"]).parent.name for r in body["runs"]) == ["fifo", "zero"]
    assert all(r["overrides"] == [] for r in body["runs"]) and not body["errors"]


def test_a_linked_run_folder_is_found_but_links_are_not_entered(tmp_path):
    runs = tmp_path / "runs"
    small_league(runs / "a", ["x", "y"])
    elsewhere = small_league(tmp_path / "elsewhere" / "b", ["x", "y"])
    (runs / "b").symlink_to(Path("..") / "elsewhere" / "b", target_is_directory=True)
    (runs / "deep").mkdir()
    (runs / "deep" / "c").symlink_to(elsewhere, target_is_directory=True)
    (runs / "loop").symlink_to(runs, target_is_directory=True)  # as /proc/<pid>/cwd
    (runs / "group").symlink_to(elsewhere.parent, target_is_directory=True)  # not entered
    assert [s.path for s in resolve([runs])] == [runs / "a" / "league.db",
                                                 runs / "b" / "league.db"]
    # the same database under two names is one source (the id is from the resolved path);
    # a link at the second level is found too
    (runs / "b").unlink()
    assert [s.path for s in resolve([runs])] == [runs / "a" / "league.db",
                                                 runs / "deep" / "c" / "league.db"]
