"""The dashboard's sweep view (walk 39b L4): a folder holding a sweep's jobs
(``selfplay-train -m``) is served at ``api/sweeps`` as ``python -m populations.sweep_summary``
pools it (one row per setting, mean ± std over seeds), read by that module's own functions,
cached by the jobs' database change markers, read-only. Before, the dashboard listed each
job apart and the pooled table existed only on the command line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from populations import sweep_summary
from populations.dashboard import create_app
from populations.dashboard.data import DashboardData
from tests import subprocs
from tests.populations.test_dash38_server import small_league, sweep

TRAIN = str(Path(sys.executable).parent / "selfplay-train")
ARGS = ["-m", "algo=mappo,ippo", "seed=0,1", "game=kuhn", "frames=64", "num_envs=4",
        "mappo.rollout_steps=4", "mappo.epochs=1", "mappo.minibatches=1", "eval_episodes=2",
        "progress=false", "logger=none"]
_BUILT: dict[str, Path] = {}


def real_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 4-job sweep (algo=mappo,ippo x seed=0,1 on Kuhn poker, a few frames each)
    in ``<base>/multirun/sw``, made once per session by ``selfplay-train -m``."""
    if "sweep" not in _BUILT:
        base = tmp_path_factory.mktemp("dash39b_sweep")
        folder = base / "multirun" / "sw"
        done = subprocs.run([TRAIN, *ARGS, f"hydra.sweep.dir={folder}"], cwd=base,
                            capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        _BUILT["sweep"] = folder
    return _BUILT["sweep"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    return real_sweep(tmp_path_factory)


def expected_groups(folder: Path) -> tuple[list[sweep_summary.JobResult],
                                           list[sweep_summary.Group]]:
    present = sweep_summary.summarize(folder)
    jobs = [*present, *sweep_summary.removed_jobs(folder, present)]
    return jobs, sweep_summary.grouped(jobs, ["algo"])


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_api_sweeps_serves_the_sweep_summarys_table_pooled_over_seeds(swept):
    before = _files(swept.parent)
    client = TestClient(create_app([swept.parent.parent]))  # the project's folder of runs
    assert len(client.get("/api/runs").json()["runs"]) == 4  # each job, as before
    resp = client.get("/api/sweeps")
    assert resp.status_code == 200
    (doc,) = resp.json()["sweeps"]
    jobs, groups = expected_groups(swept)
    assert doc["path"] == str(swept) and doc["jobs"] == 4 and doc["statuses"] == {"finished": 4}
    assert doc["by"] == ["algo"] and doc["pooled_keys"] == ["seed"]
    pooled = [c for c in sweep_summary.figure_columns(jobs) if c not in sweep_summary.NOT_POOLED]
    assert [c["key"] for c in doc["columns"]] == pooled == ["final_return", "eval_return"]
    assert [g["setting"] for g in doc["groups"]] == [g.setting for g in groups] == [
        {"algo": "mappo"}, {"algo": "ippo"}]
    printed = "\n".join(sweep_summary.report(jobs))  # what the command prints
    for got, want in zip(doc["groups"], groups, strict=True):
        assert got["n"] == len(want.jobs) == 2 and got["others"] == want.others == 0
        assert {c: (s["mean"], s["std"], s["n"]) for c, s in got["stats"].items()} == want.stats
        row = next(x for x in printed.splitlines()
                   if x.split()[:2] == [want.setting["algo"], "2"])
        assert all(s["text"] in row for s in got["stats"].values()), (row, got)
        assert all(" ± " in s["text"] for s in got["stats"].values())
    assert _files(swept.parent) == before  # read-only: nothing written, nothing created


def test_the_table_is_cached_until_a_jobs_database_changes(swept, monkeypatch):
    calls: list[Path] = []
    real = sweep_summary.job_result  # what summarize reads of each job

    def counted(folder, sweep_dir=None):
        calls.append(Path(folder))
        return real(folder, sweep_dir)

    monkeypatch.setattr(sweep_summary, "job_result", counted)
    client = TestClient(create_app([swept]))
    first = client.get("/api/sweeps")
    again = client.get("/api/sweeps", headers={"if-none-match": first.headers["etag"]})
    jobs = sweep_summary.sweep_jobs(swept)
    assert again.status_code == 304 and calls == jobs  # each job read once
    db = next(swept.glob("0_*")) / "league.db"
    st = db.stat()
    try:
        os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # as a write would
        # that job read again, not the sweep (session 40: test_dash40_sweeps counts the opens)
        assert client.get("/api/sweeps").json() == first.json() and calls == [*jobs, db.parent]
    finally:
        os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_runs_that_are_no_sweeps_jobs_give_no_sweep(tmp_path):
    small_league(tmp_path / "runs" / "a", ["x", "y"])
    sweep(tmp_path / "multirun", {"0": "- seed=0\n"})  # a folder "0": no <n>_<overrides> job
    assert TestClient(create_app([tmp_path])).get("/api/sweeps").json() == {"sweeps": []}
    assert "api/sweeps" not in DashboardData([tmp_path]).snapshot_all()  # nor in an export


def test_an_export_of_a_sweep_embeds_its_table(swept):
    data = DashboardData([swept])
    assert data.snapshot_all()["api/sweeps"] == data.sweeps()
