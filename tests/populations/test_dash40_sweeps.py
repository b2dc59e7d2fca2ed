"""The dashboard's sweep view (session 40): a sweep whose swept value holds a ``/``
(``game.name=openspiel/kuhn_poker,openspiel/leduc_poker``) is one sweep, its jobs grouped by
that value, whether Hydra nested the jobs a folder deeper (its own
``${hydra.job.num}_${hydra.job.override_dirname}``: a sweep made before ``job_dirname``, or a
``hydra.sweep.subdir`` of one's own) or the project's ``job_dirname`` wrote the ``/`` as
``_``. Before, the nested jobs gave no sweep at all, and ``python -m populations.sweep_summary``
listed four "not started" folders. And a change in one job's database reads that job again,
not the whole sweep (reads counted: the databases opened)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from populations import db as league_db
from populations import sweep_summary
from populations.dashboard import create_app
from populations.dashboard.data import DashboardData, sweep_folders
from populations.dashboard.sources import resolve
from tests import subprocs

TRAIN = str(Path(sys.executable).parent / "selfplay-train")
GAMES = "game.name=openspiel/kuhn_poker,openspiel/leduc_poker"
ARGS = ["-m", "algo=mappo", "frames=64", "num_envs=4", "mappo.rollout_steps=4",
        "mappo.epochs=1", "mappo.minibatches=1", "eval_episodes=2", "progress=false",
        "logger=none"]
HYDRA_SUBDIR = "hydra.sweep.subdir=${hydra.job.num}_${hydra.job.override_dirname}"


def _sweep(base: Path, *extra: str) -> Path:
    folder = base / "multirun" / "sw"
    done = subprocs.run([TRAIN, *ARGS, *extra, f"hydra.sweep.dir={folder}"], cwd=base,
                        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder


_BUILT: dict[str, Path] = {}


def nested_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 4-job sweep (two OpenSpiel games x seed=0,1), its job folders named by
    Hydra's own rule: ``0_algo=...,game.name=openspiel/kuhn_poker,...,seed=0,~game=null``,
    a folder ``0_algo=...,game.name=openspiel`` holding the job's; made once per session."""
    if "nested" not in _BUILT:
        _BUILT["nested"] = _sweep(tmp_path_factory.mktemp("dash40_nested"), GAMES, "seed=0,1",
                                  HYDRA_SUBDIR)
    return _BUILT["nested"]


@pytest.fixture(scope="module")
def nested(tmp_path_factory) -> Path:
    return nested_sweep(tmp_path_factory)


@pytest.fixture(scope="module")
def flat(tmp_path_factory) -> Path:
    """A finished 2-job sweep of the two games, its job folders named by the project's
    ``job_dirname``: ``0_algo=...,game.name=openspiel_kuhn_poker,...``, one folder a job."""
    return _sweep(tmp_path_factory.mktemp("dash40_flat"), GAMES, "seed=0")


def _games(doc: dict) -> list[str]:
    return [g["setting"]["game.name"] for g in doc["groups"]]


def test_a_sweep_nested_by_a_slash_in_its_values_is_one_sweep_grouped_by_them(nested):
    jobs = sorted(nested.rglob("league.db"))
    assert len(jobs) == 4 and all(j.parent.parent.parent == nested for j in jobs)  # nested
    client = TestClient(create_app([nested.parent.parent]))  # the project's folder of runs
    assert len(client.get("/api/runs").json()["runs"]) == 4
    (doc,) = client.get("/api/sweeps").json()["sweeps"]
    assert doc["path"] == str(nested) and doc["jobs"] == 4 and doc["statuses"] == {"finished": 4}
    assert doc["by"] == ["game.name"] and doc["pooled_keys"] == ["seed"]
    assert _games(doc) == ["openspiel/kuhn_poker", "openspiel/leduc_poker"]
    present = sweep_summary.summarize(nested)  # what the command line reads: the same jobs
    groups = sweep_summary.grouped(present, ["game.name"])
    for got, want in zip(doc["groups"], groups, strict=True):
        assert got["n"] == len(want.jobs) == 2 and got["others"] == 0
        assert {c: (s["mean"], s["std"], s["n"]) for c, s in got["stats"].items()} == want.stats
    assert [j.job for j in present] == [0, 1, 2, 3]
    assert [j.name for j in present] == [str(j.parent.relative_to(nested)) for j in jobs]
    assert sweep_folders(resolve([nested])) == [nested]


def test_the_command_lines_summary_reads_the_nested_jobs(nested, capsys):
    sweep_summary.main([str(nested)])
    out = capsys.readouterr().out
    assert "not started" not in out and "4 jobs" in out
    assert "by game.name, pooling seed" in out
    rows = sweep_summary.removed_jobs(nested, sweep_summary.summarize(nested))
    assert rows == []  # its summary.csv names the nested jobs as they are: none is gone


def test_a_folder_numbered_as_a_job_outside_a_sweep_is_no_sweep(nested, tmp_path):
    # a single run whose folder sits below a numbered one, with no multirun.yaml above it
    run = tmp_path / "runs" / "0_trial" / "run1"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("- seed=0\n")
    job = next(nested.rglob("league.db")).read_bytes()
    (run / "league.db").write_bytes(job)
    assert sweep_summary.sweep_of(run) is None
    assert DashboardData([tmp_path]).sweeps() == {"sweeps": []}


def test_a_sweep_with_the_slash_written_as_underscore_is_grouped_by_the_value(flat):
    assert all(j.parent.parent == flat for j in flat.rglob("league.db"))
    (doc,) = DashboardData([flat]).sweeps()["sweeps"]
    assert doc["jobs"] == 2 and doc["by"] == ["game.name"]
    assert _games(doc) == ["openspiel/kuhn_poker", "openspiel/leduc_poker"]


@pytest.mark.parametrize("name", ["flat", "nested"])
def test_a_change_in_one_jobs_database_reads_that_job_again_only(name, request, monkeypatch):
    folder: Path = request.getfixturevalue(name)
    opened: list[Path] = []
    real = league_db.LeagueDB.__init__

    def counted(self, path, *args, **kwargs):
        opened.append(Path(path))
        real(self, path, *args, **kwargs)

    monkeypatch.setattr(league_db.LeagueDB, "__init__", counted)
    client = TestClient(create_app([folder]))
    first = client.get("/api/sweeps")
    dbs = sorted(folder.rglob("league.db"))
    assert sorted(opened) == dbs  # each job read once
    again = client.get("/api/sweeps", headers={"if-none-match": first.headers["etag"]})
    assert again.status_code == 304 and len(opened) == len(dbs)  # nothing changed, none read
    st = dbs[0].stat()
    try:
        os.utime(dbs[0], ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # as a write
        assert client.get("/api/sweeps").json() == first.json()
        assert opened[len(dbs):] == [dbs[0]]  # the changed job alone (before: every job)
    finally:
        os.utime(dbs[0], ns=(st.st_atime_ns, st.st_mtime_ns))
    assert client.get("/api/sweeps").json() == first.json()
    assert opened[len(dbs) + 1:] == [dbs[0]]  # changed back: read again, it alone
