"""Dashboard server fixes from walk 38b, on real SQLite files: text or impossible values in
number columns are served as gaps, a database path that is a folder says so, the folder
scan stays out of links and system folders, the CLI warns when it listens beyond this
machine."""

from __future__ import annotations

import itertools
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import httpx
from starlette.testclient import TestClient

from populations.dashboard import cli, create_app
from populations.dashboard.sources import resolve
from populations.db import LeagueDB, MatchRow


def small_league(folder: Path, members: Sequence[str], run_name: str = "small") -> Path:
    """``folder/league.db``: one run whose members (one snapshot each) all met once, rated
    and with payoffs, written straight through :class:`LeagueDB` (no training)."""
    folder.mkdir(parents=True, exist_ok=True)
    db = LeagueDB(folder / "league.db")
    run = db.create_run(run_name, experiment="exp", game="g")
    sids = []
    for name in members:
        mid = db.add_member(run, name, "mappo", ["r"])
        sids.append(db.add_snapshot(mid, 0, f"/nowhere/{mid}.pt", "mappo", "g", ["r"]))
    db.add_ratings(run, 1, [(s, 1000.0 + i, 25.0, 8.0, 2) for i, s in enumerate(sids)])
    pairs = list(itertools.combinations(sids, 2))
    db.add_matches(run, [MatchRow(f"m{a}-{b}", "g", {"p0": a, "p1": b}, {"p0": 1.0, "p1": -1.0})
                         for a, b in pairs])
    db.set_payoffs(run, [e for a, b in pairs
                         for e in ((a, b, 2.0, 1.0, 1, False), (b, a, -2.0, 0.0, 1, False))])
    db.close()
    return folder


def _client(folder: Path) -> tuple[TestClient, str, int]:
    client = TestClient(create_app([folder]))
    run = client.get("/api/runs").json()["runs"][0]
    return client, run["source"], run["id"]


def test_text_and_impossible_values_in_number_columns_are_gaps(tmp_path):
    folder = small_league(tmp_path / "run", ["a", "b"])
    with sqlite3.connect(folder / "league.db") as con:  # what a crafted file may hold
        con.execute("UPDATE runs SET started_at = 'yesterday', updated_at = 'later'")
        con.execute("UPDATE ratings SET elo = 'abc', sigma = -8.0, matches = -5 "
                    "WHERE snapshot_id = (SELECT MIN(snapshot_id) FROM ratings)")
        con.execute("UPDATE ratings SET mu = 'high' "
                    "WHERE snapshot_id = (SELECT MAX(snapshot_id) FROM ratings)")
    con.close()
    client, s, r = _client(folder)
    run = client.get("/api/runs").json()["runs"][0]
    assert run["started_at"] is None and run["updated_at"] is None
    assert client.get(f"/api/runs/{s}/{r}").json()["started_at"] is None
    rows = {row["member"]: row for row in client.get(f"/api/runs/{s}/{r}/league").json()}
    assert rows["a"]["elo"] is None and rows["a"]["sigma"] is None
    assert rows["a"]["rated_pairs"] is None and rows["a"]["mu"] == 25.0
    assert rows["b"]["mu"] is None and rows["b"]["elo"] == 1001.0
    resp = client.get(f"/api/runs/{s}/{r}/crossplay")  # μ ± 2σ from a text μ: no 500
    assert resp.status_code == 200
    by = {x["label"]: x for x in resp.json()["ratings"]}
    assert by["a v0"]["elo"] is None and by["a v0"]["mu_lo"] is None
    assert by["b v0"]["mu"] is None and by["b v0"]["mu_hi"] is None


def test_a_database_path_that_is_a_folder_says_so(tmp_path):
    (tmp_path / "run" / "league.db").mkdir(parents=True)  # was: "league database not found"
    for named in (tmp_path / "run", tmp_path / "run" / "league.db"):
        errors = TestClient(create_app([named])).get("/api/runs").json()["errors"]
        assert len(errors) == 1 and "is a folder, not a database file" in errors[0]["error"]
        assert "not found" not in errors[0]["error"]


def test_the_folder_scan_follows_no_links_to_folders_nor_system_folders(tmp_path):
    runs = tmp_path / "runs"
    small_league(runs / "a", ["x", "y"])
    elsewhere = small_league(tmp_path / "elsewhere" / "b", ["x", "y"])
    (runs / "link").symlink_to(elsewhere.parent, target_is_directory=True)
    (runs / "loop").symlink_to(runs, target_is_directory=True)  # as /proc/<pid>/cwd
    assert [s.path for s in resolve([runs])] == [runs / "a" / "league.db"]


def test_paths_are_shown_absolute_whatever_the_working_directory(tmp_path, monkeypatch):
    small_league(tmp_path / "run", ["x", "y"])
    monkeypatch.chdir(tmp_path)
    (src,) = resolve(["run"])
    assert src.path == tmp_path / "run" / "league.db"
    (missing,) = resolve(["nothing-yet"])
    assert missing.path == tmp_path / "nothing-yet" / "league.db"
    run = TestClient(create_app(["run"])).get("/api/runs").json()["runs"][0]
    assert run["path"] == str(tmp_path / "run" / "league.db")


def _start(args: list[str], tmp_path: Path) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "populations.dashboard.cli", *args, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: list[str] = []
    for line in proc.stdout:
        seen.append(line)
        if "league dashboard on" in line:
            return proc, seen
    proc.wait()
    raise AssertionError(f"the dashboard did not start: {''.join(seen)}")


def test_listening_on_every_interface_warns_once_and_sigterm_stops_in_one_line(tmp_path):
    proc, seen = _start([str(tmp_path), "--host", "0.0.0.0"], tmp_path)
    try:
        warnings = [x for x in seen if "warning" in x]
        assert len(warnings) == 1, seen
        assert "no authentication" in warnings[0] and "ssh -L" in warnings[0]
        url = seen[-1].split()[3]  # a URL a browser opens, not http://0.0.0.0:...
        assert url.startswith("http://127.0.0.1:"), seen
        assert httpx.get(url + "api/health").status_code == 200
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rest.strip().splitlines() == ["selfplay-dashboard: stopped (SIGTERM)"], rest
    assert proc.returncode == 128 + signal.SIGTERM


def test_the_default_loopback_host_gives_no_warning(tmp_path):
    proc, seen = _start([str(tmp_path)], tmp_path)
    proc.terminate()
    proc.communicate(timeout=60)
    assert not [x for x in seen if "warning" in x], seen


def test_a_scan_of_the_home_folder_is_warned_about(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    cli._warn_wide_scans(["~", str(tmp_path / "runs")])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is your home folder" in err[0] and "5 folders deep" in err[0]


def sweep(base: Path, jobs: dict[str, str]) -> Path:
    """``base/<job>/league.db`` runs of one name, each with ``.hydra/overrides.yaml``."""
    for job, overrides in jobs.items():
        small_league(base / job, ["x", "y"], run_name="league")
        (base / job / ".hydra").mkdir()
        (base / job / ".hydra" / "overrides.yaml").write_text(overrides)
    return base


def test_runs_carry_their_jobs_overrides_read_as_untrusted_text(tmp_path):
    base = sweep(tmp_path / "multirun", {
        "0": "- game=kuhn\n- seed=0\n", "1": "- game=kuhn\n- seed=1\n",
        "2": "{a: 1}\n", "3": "- " + "y" * 5000 + "\n- 7\n- [nested]\n", "4": "- [unclosed\n",
        "5": "- x=1\n" * 20_000})
    runs = TestClient(create_app([base])).get("/api/runs").json()["runs"]
    by = {Path(r["path"]).parent.name: r["overrides"] for r in runs}
    assert by["0"] == ["game=kuhn", "seed=0"] and by["1"] == ["game=kuhn", "seed=1"]
    assert by["2"] == [] and by["4"] == [] and by["5"] == []  # not a list, broken, too big
    assert by["3"] == ["y" * 200]  # strings only, each cut
