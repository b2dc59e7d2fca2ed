"""League dashboard: every JSON endpoint against a database written by a tiny real league
run, escaping, clear errors for missing/corrupt/locked databases, the static export and
the command line."""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
from pathlib import Path

import httpx
import numpy as np
import pytest
from starlette.testclient import TestClient

from marl.configs import MAPPOConfig, NetConfig
from populations.dashboard import (
    BackgroundServer,
    DashboardData,
    cli,
    create_app,
    export_html,
    queries,
)
from populations.dashboard.app import PLOTLY_JS, STATIC
from populations.dashboard.data import crossplay_rows_path, metrics_path
from populations.dashboard.export import script_json
from populations.dashboard.queries import ELO_RESAMPLES
from populations.dashboard.sources import resolve
from populations.db import LeagueDB, MatchRow
from populations.league import League, LeagueConfig

XSS = "<script>alert(1)</script>"
PSRO_META = [  # per iteration: seat → weights (populations grow by one per iteration)
    {"player_0": [1.0], "player_1": [1.0]},
    {"player_0": [0.25, 0.75], "player_1": [0.5, 0.5]},
    {"player_0": [0.2, 0.3, 0.5], "player_1": [0.1, 0.6, 0.3]},
]
PSRO_NASH_CONV = [0.9, None, 0.25]


# ---------------------------------------------------------------------------- the database
def build_league_db(base: Path) -> Path:
    """``base/league.db``: a tiny real league run, plus a member with a hostile name (an
    LLM team with a snapshot, a rating, payoffs and its own metrics) and a PSRO run.
    Built once per folder; callers copy it before writing."""
    out = base / "league.db"
    if out.exists():
        return out
    # one pass of one minibatch per update: the pages read what the league recorded, not how
    # far it learned (the default 10 x 4 took half of the build's ~8 s CPU). Seed 2: the
    # newest snapshot's win rate is 0.625 over pairs of 0.5 and 0.75, inside its interval and
    # not 0.5, so a win rate read from the other side shows (seed 0 here: 1.0)
    mappo = MAPPOConfig(net=NetConfig(share="role"), epochs=1, minibatches=1)
    league = League(LeagueConfig(generations=2, frames_per_generation=1600, num_envs=8,
                                 eval_episodes=2, mappo=mappo, seed=2), base / "build")
    try:
        league.run()
        run = league.run_id
    finally:
        league.close()
    db = LeagueDB(base / "build" / "league.db")
    v0 = db.snapshots(run, "main")[0].id
    mid = db.add_member(run, XSS, "llm_team", ["adversary"])
    xs = db.add_snapshot(mid, 0, "/nowhere/x.pt", "llm_team", "g", ["adversary"])
    db.set_payoffs(run, [(xs, v0, 1.0, 0.75, 4, False), (v0, xs, -1.0, 0.25, 4, False)])
    db.add_ratings(run, 3, [(xs, 1100.0, 30.0, 2.0, 4)])
    db.log_metrics(run, 100, {"charts/episode_return": 1.5, "losses/grad_norm": math.inf},
                   member_id=mid)
    db.log_metrics(run, 200, {"charts/episode_return": 2.5}, member_id=mid)
    psro = db.create_run("psro-kuhn", experiment="psro", game="openspiel/kuhn_poker")
    for seat in ("player_0", "player_1"):
        for k in range(3):
            db.add_member(psro, f"psro/{seat}/{k}", "exact_br", [seat])
    for i, (meta, nc) in enumerate(zip(PSRO_META, PSRO_NASH_CONV, strict=True)):
        db.add_psro_iteration(psro, i, meta, nc, 0.5)
    db.close()
    copy_db(base / "build" / "league.db", out)
    return out


def copy_db(src: Path, dst: Path) -> None:
    """A consistent copy of a (WAL) database, through SQLite's backup API."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    a.close()
    b.close()


@pytest.fixture(scope="session")
def built_db(tmp_path_factory) -> Path:
    return build_league_db(tmp_path_factory.getbasetemp() / "dashboard-league")


@pytest.fixture
def run_dir(built_db, tmp_path) -> Path:
    """A run folder of one's own holding a copy of the built database."""
    copy_db(built_db, tmp_path / "run" / "league.db")
    return tmp_path / "run"


@pytest.fixture(scope="module")
def shared(built_db, tmp_path_factory):
    """A read-only client over one copy, with the ids of both runs."""
    d = tmp_path_factory.mktemp("dash-shared")
    copy_db(built_db, d / "league.db")
    client = TestClient(create_app([d]))
    runs = client.get("/api/runs").json()["runs"]
    ids = {r["name"]: (r["source"], r["id"]) for r in runs}
    return client, LeagueDB(d / "league.db", readonly=True), ids


def get(client: TestClient, path: str, status: int = 200):
    r = client.get(path)
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    return r.json()


# ---------------------------------------------------------------------------- endpoints
def test_runs_list_counts_match_the_database(shared):
    client, db, ids = shared
    doc = get(client, "/api/runs")
    assert doc["errors"] == []
    assert [r["name"] for r in doc["runs"]] == ["psro-kuhn", "league"]  # newest first
    league = next(r for r in doc["runs"] if r["name"] == "league")
    run = ids["league"][1]
    assert league["members"] == len(db.members(run)) == 2
    assert league["episodes"] == db.count_matches(run) > 0
    assert league["snapshots"] == len(db.snapshots(run)) == 4
    assert league["status"] == "finished"
    assert league["game"] == "pettingzoo/mpe2.simple_adversary_v3(max_cycles=25)"  # + kwargs


def test_run_summary_has_the_config(shared):
    client, _, ids = shared
    s, r = ids["league"]
    doc = get(client, f"/api/runs/{s}/{r}")
    assert doc["config"]["generations"] == 2 and doc["experiment"] == "league"


def test_league_table_has_one_row_per_member(shared):
    client, db, ids = shared
    s, r = ids["league"]
    rows = {row["member"]: row for row in get(client, f"/api/runs/{s}/{r}/league")}
    assert set(rows) == {m["name"] for m in db.members(r)} == {"main", XSS}
    main = rows["main"]
    latest = db.latest_ratings(r)
    v2 = db.snapshots(r, "main")[-1]
    assert (main["kind_label"], main["latest_version"], main["rated_version"]) == ("MAPPO", 2, 2)
    assert main["learner_step"] == v2.learner_step > 0
    assert main["elo"] == pytest.approx(latest[v2.id]["elo"])
    assert main["mu"] == pytest.approx(latest[v2.id]["mu"])
    assert main["sigma"] == pytest.approx(latest[v2.id]["sigma"])
    assert main["episodes"] == db.count_matches(r)  # every match has main on both sides
    assert main["rated_pairs"] == latest[v2.id]["matches"] > 0  # the rating's own pairs
    assert main["step_unit"] == "frames"  # MAPPO records frames as its learner step
    mine = [p for p in db.payoffs(r) if p["row_snapshot"] == v2.id]
    expected = sum(p["win_rate"] * p["count"] for p in mine) / sum(p["count"] for p in mine)
    assert main["win_rate"] == pytest.approx(expected)
    hostile = rows[XSS]  # returned as stored: escaping is the page's job
    assert (hostile["kind_label"], hostile["elo"], hostile["win_rate"]) == ("LLM team", 1100.0,
                                                                           0.75)
    # a proportion comes with its 95 % Wilson interval: 3 of 4 pairs is [30.1 %, 95.4 %]
    assert hostile["win_pairs"] == 4
    assert (hostile["win_rate_lo"], hostile["win_rate_hi"]) == pytest.approx((0.3006, 0.9544),
                                                                              abs=1e-4)
    n = sum(p["count"] for p in mine)
    assert main["win_pairs"] == n and main["win_rate_lo"] < expected < main["win_rate_hi"]
    assert hostile["episodes"] == 0 and hostile["rated_pairs"] == 4


def test_payoff_matrix_matches_the_payoff_table(shared):
    client, db, ids = shared
    s, r = ids["league"]
    doc = get(client, f"/api/runs/{s}/{r}/payoffs")
    labels = {sn.id: f"{sn.member} v{sn.version}" for sn in db.snapshots(r)}
    assert doc["labels"] == [labels[i] for i in doc["ids"]]
    assert f"{XSS} v0" in doc["labels"]
    assert doc["value_kind"] == "margin"  # not a "mean payoff" (a return): says so in words
    assert "mean margin per episode" in doc["value_label"]
    n = len(doc["ids"])
    assert all(doc["value"][i][i] is None and doc["count"][i][i] == 0 for i in range(n))
    pos = {sid: i for i, sid in enumerate(doc["ids"])}
    for p in db.payoffs(r):
        i, j = pos[p["row_snapshot"]], pos[p["col_snapshot"]]
        assert doc["value"][i][j] == pytest.approx(p["value"])
        assert doc["win_rate"][i][j] == pytest.approx(p["win_rate"])
        assert doc["count"][i][j] == p["count"]
        assert doc["value"][j][i] == pytest.approx(-p["value"])  # zero-sum estimates


def test_psro_payoffs_are_labelled_returns_not_margins(run_dir):
    """PSRO stores each seat's expected return (psro_run.DBRecorder), half a zero-sum margin:
    its table says "return", a league's says "margin"."""
    from populations.psro_run import DBRecorder

    db = LeagueDB(run_dir / "league.db")
    psro = db.run_id("psro-kuhn")
    rec = DBRecorder(db, psro, store=None)
    snaps = [db.add_snapshot(db.members(psro)[k]["id"], 0, f"/x/{k}.pt", "exact_br", "g",
                             [seat]) for k, seat in ((0, "player_0"), (3, "player_1"))]
    rec.snapshot = {"player_0": [snaps[0]], "player_1": [snaps[1]]}
    rec.on_payoffs(np.array([[[0.125]], [[-0.125]]]))  # Kuhn, uniform against uniform
    doc = queries.payoff_matrix(db, psro)
    assert doc["value_kind"] == "return" and doc["exact"]
    assert "return" in doc["value_label"] and "margin per episode" not in doc["value_label"]
    assert doc["value"][0][1] == 0.125
    league = queries.payoff_matrix(db, db.run_id("league"))
    assert league["value_kind"] == "margin"
    db.close()


def test_rating_history_per_snapshot(shared):
    client, db, ids = shared
    s, r = ids["league"]
    series = get(client, f"/api/runs/{s}/{r}/ratings")
    rows = db.conn.execute("SELECT snapshot_id, step, elo, mu, sigma FROM ratings "
                           "WHERE run_id = ? ORDER BY snapshot_id, step", (r,)).fetchall()
    flat = [(x["snapshot_id"], st, e, m, sg) for x in series
            for st, e, m, sg in zip(x["step"], x["elo"], x["mu"], x["sigma"], strict=True)]
    assert flat == [tuple(row) for row in rows]
    assert {x["label"] for x in series} >= {"main v0", "main v1", "main v2", f"{XSS} v0"}


def test_psro_meta_strategy_and_nash_conv(shared):
    client, _, ids = shared
    s, r = ids["psro-kuhn"]
    doc = get(client, f"/api/runs/{s}/{r}/psro")
    assert doc["iteration"] == [0, 1, 2]
    assert doc["nash_conv"] == PSRO_NASH_CONV
    seats = {x["seat"]: x for x in doc["seats"]}
    assert set(seats) == {"player_0", "player_1"}
    p0 = seats["player_0"]
    assert p0["members"] == ["#0", "#1", "#2"]
    assert p0["weights"] == [[1.0, 0.25, 0.2], [0.0, 0.75, 0.3], [0.0, 0.0, 0.5]]
    for seat in seats.values():  # a distribution per iteration
        assert [sum(col) for col in zip(*seat["weights"], strict=True)] == pytest.approx([1] * 3)
    league_psro = get(client, "/api/runs/{}/{}/psro".format(*ids["league"]))
    assert league_psro == {"iteration": [], "nash_conv": [], "seconds": [], "seats": []}


def test_learner_panels_per_agent_and_role(shared):
    client, db, ids = shared
    s, r = ids["league"]
    doc = get(client, f"/api/runs/{s}/{r}/learner")
    db_keys = [k for (k,) in db.conn.execute(
        "SELECT DISTINCT key FROM metrics WHERE run_id = ? ORDER BY key", (r,))]
    assert doc["keys"] == db_keys
    panels = {p["title"]: p for p in doc["panels"]}
    assert {"Episode return", "Losses", "Entropy", "Gradient norm", "Advantage per agent",
            "Advantage per role",
            "Raw advantage per agent and role"} <= set(panels)
    keys = {p: {x["key"] for x in panels[p]["series"]} for p in panels}
    assert {"losses/pg_loss", "losses/v_loss"} <= keys["Losses"]
    assert "losses/entropy" not in keys["Losses"]
    assert keys["Advantage per agent"] >= {"adv/agent_adversary_0/adv_mean",
                                           "adv/agent_adversary_0/adv_std"}  # named (fix26h)
    assert all(re.match(r"adv/role_\w+/adv_(mean|std)$", k) for k in keys["Advantage per role"])
    pg = next(x for x in panels["Losses"]["series"] if x["key"] == "losses/pg_loss")
    steps, values = zip(*db.metric(r, "losses/pg_loss"), strict=True)
    assert pg["step"] == list(steps) and pg["value"] == pytest.approx(list(values))
    ret = panels["Episode return"]["series"]
    # the league's learner logs its training return (walk 20), beside the crafted member's
    assert [x["member"] for x in ret] == [None, XSS] and ret[1]["value"] == [1.5, 2.5], ret
    assert ret[0]["value"] and all(isinstance(v, float) for v in ret[0]["value"]), ret[0]
    inf = next(x for x in panels["Gradient norm"]["series"] if x["member"] == XSS)
    assert inf["value"] == [None]  # +inf is not JSON: shown as a gap


def test_metrics_endpoint_buckets_long_histories(run_dir):
    db = LeagueDB(run_dir / "league.db")
    run = db.run_id("league")
    db.log_metrics(run, 0, {"x/long": 0.0})
    for step in range(1, 1001):
        db.log_metrics(run, step * 10, {"x/long": float(step)})
    db.close()
    client = TestClient(create_app([run_dir], max_points=10))
    s = client.get("/api/runs").json()["runs"][0]["source"]
    (series,) = get(client, f"/api/runs/{s}/{run}/metrics?key=x/long")
    assert 2 <= len(series["step"]) <= 10
    assert series["step"] == sorted(series["step"]) and series["step"][-1] == 10_000
    assert min(series["value"]) >= 0.0 and max(series["value"]) <= 1000.0
    assert get(client, f"/api/runs/{s}/{run}/metrics?key=no/such") == []
    hint = get(client, f"/api/runs/{s}/{run}/metrics", 400)["error"]
    assert "metric keys" in hint
    # the hint names where the run's keys are (it named losses/pg_loss, which a league's
    # per-member keys never are), and that view lists this run's key
    view = re.search(r"api/runs/<source>/<run>/(\w+)", hint).group(1)
    assert "x/long" in get(client, f"/api/runs/{s}/{run}/{view}")["keys"]


def test_unknown_ids_are_404_with_a_message(shared):
    client, _, ids = shared
    s, r = ids["league"]
    assert "no run 999" in get(client, f"/api/runs/{s}/999/league", 404)["error"]
    assert "unknown database id" in get(client, "/api/runs/nope/1/league", 404)["error"]
    assert "expected one of" in get(client, f"/api/runs/{s}/{r}/nope", 404)["error"]


# ---------------------------------------------------------------------------- failures
def _first_source(client: TestClient) -> str:
    doc = client.get("/api/runs").json()
    return (doc["runs"] or doc["errors"])[0]["source"]


def test_missing_database_is_a_clear_message(tmp_path):
    client = TestClient(create_app([tmp_path / "not-started"]))
    doc = get(client, "/api/runs")
    assert doc["runs"] == []
    (err,) = doc["errors"]
    assert "league database not found" in err["error"] and "not-started" in err["error"]
    body = get(client, f"/api/runs/{err['source']}/1/league", 404)
    assert "not found" in body["error"] and "Traceback" not in body["error"]


@pytest.mark.parametrize("content, expected", [
    (b"this is not sqlite " * 200, "file is not a database"),
    (b"", "not initialised yet"),
])
def test_corrupt_or_empty_database_is_a_clear_message(tmp_path, content, expected):
    (tmp_path / "league.db").write_bytes(content)
    client = TestClient(create_app([tmp_path]))
    (err,) = get(client, "/api/runs")["errors"]
    assert expected in err["error"] and str(tmp_path) in err["error"]
    assert expected in get(client, f"/api/runs/{err['source']}/1/league", 503)["error"]


def test_locked_database_is_a_clear_message(run_dir):
    writer = sqlite3.connect(run_dir / "league.db")
    try:
        writer.execute("PRAGMA locking_mode = EXCLUSIVE")
        writer.execute("BEGIN EXCLUSIVE")
        client = TestClient(create_app([run_dir]))
        (err,) = get(client, "/api/runs")["errors"]
        assert "is locked by another process" in err["error"]
        body = get(client, f"/api/runs/{err['source']}/1/league", 503)
        assert "locked" in body["error"]
    finally:
        writer.rollback()
        writer.close()
    assert get(client, f"/api/runs/{err['source']}/1/league")  # readable again


def test_newer_schema_is_a_clear_message(run_dir):
    conn = sqlite3.connect(run_dir / "league.db")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    (err,) = get(TestClient(create_app([run_dir])), "/api/runs")["errors"]
    assert "upgrade selfplay" in err["error"]


def test_the_dashboard_never_writes_the_database(run_dir):
    path = run_dir / "league.db"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    client = TestClient(create_app([run_dir]))
    for r in client.get("/api/runs").json()["runs"]:
        base = f"/api/runs/{r['source']}/{r['id']}"
        for view in ("", "/league", "/payoffs", "/ratings", "/psro", "/learner"):
            get(client, base + view)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


# ---------------------------------------------------------------------------- live reads
def test_new_rows_and_new_runs_appear_without_restart(tmp_path, built_db):
    copy_db(built_db, tmp_path / "a" / "league.db")
    client = TestClient(create_app([tmp_path]))  # a folder of runs
    assert len(get(client, "/api/runs")["runs"]) == 2
    s, r = _first_source(client), LeagueDB(tmp_path / "a" / "league.db").run_id("league")
    writer = LeagueDB(tmp_path / "a" / "league.db")  # a live writer holds the file
    writer.add_member(r, "newcomer", "vdn", ["agent"])
    assert "newcomer" in [x["member"] for x in get(client, f"/api/runs/{s}/{r}/league")]
    writer.add_matches(r, [MatchRow("live/0", "g", {}, {})])
    assert get(client, f"/api/runs/{s}/{r}/league")
    copy_db(built_db, tmp_path / "b" / "league.db")  # a run started later
    assert len(get(client, "/api/runs")["runs"]) == 4
    writer.close()


def test_several_paths_and_duplicates(tmp_path, built_db):
    copy_db(built_db, tmp_path / "x" / "league.db")
    copy_db(built_db, tmp_path / "y.db")
    data = DashboardData([tmp_path / "x", tmp_path / "x" / "league.db", tmp_path / "y.db"])
    assert len(data.sources.all()) == 2
    assert len(data.runs()["runs"]) == 4


def test_a_folder_of_runs_finds_sweep_jobs_and_skips_hidden_folders(tmp_path):
    # selfplay-dashboard . in a project: runs/<exp>/<stamp> (2 below), a sweep's jobs at
    # multirun/<exp>/<stamp>/<job> (4 below, and 5 for a job of game.name=openspiel/x: the
    # '/' nests it); before, only 3 levels were searched, so no sweep job showed
    for rel in ["runs/main/t0", "multirun/default/t1/0_seed=0",
                "multirun/default/t1/1_game.name=openspiel/kuhn_poker,seed=0", ".venv/x/y"]:
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "league.db").write_bytes(b"")
    found = [s.path.relative_to(tmp_path).as_posix() for s in resolve([tmp_path])]
    assert found == ["runs/main/t0/league.db", "multirun/default/t1/0_seed=0/league.db",
                     "multirun/default/t1/1_game.name=openspiel/kuhn_poker,seed=0/league.db"]


def test_the_folder_scan_skips_run_folders_and_virtualenvs(tmp_path, monkeypatch):
    # review TW-3: the 5-level scan (on every request, ~9 a refresh) walked each run's
    # snapshots/<member>/ and a venv/ 's lib/python3.11/site-packages: 3.7x the CPU of 3 levels
    import populations.dashboard.sources as sources

    for rel in ["runs/main/t0/snapshots/main", "runs/main/t0/checkpoints", "venv/lib/py/x",
                "multirun/e/t1/0_seed=0/snapshots/m", "node_modules/a/b"]:
        (tmp_path / rel).mkdir(parents=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for rel in ["runs/main/t0", "multirun/e/t1/0_seed=0"]:
        (tmp_path / rel / "league.db").write_bytes(b"")
    walked = []
    real = sources.os.scandir
    monkeypatch.setattr(sources.os, "scandir", lambda d: walked.append(Path(d)) or real(d))
    found = [s.path.relative_to(tmp_path).as_posix() for s in resolve([tmp_path])]
    assert found == ["runs/main/t0/league.db", "multirun/e/t1/0_seed=0/league.db"]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in walked) == [
        ".", "multirun", "multirun/e", "multirun/e/t1", "runs", "runs/main"]


# ---------------------------------------------------------------------------- page, server
def test_page_static_files_and_no_cdn():
    client = TestClient(create_app([]))
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-eval" not in csp
    js = client.get("/static/plotly.min.js")
    assert js.status_code == 200 and len(js.content) == PLOTLY_JS.stat().st_size > 1_000_000
    for name in ("dashboard.js", "dashboard.css"):
        assert client.get(f"/static/{name}").status_code == 200
    for f in STATIC.iterdir():  # nothing is loaded from another host
        assert not re.search(r"(src|href)=\"?(https?:)?//", f.read_text()), f.name
        assert "innerHTML" not in f.read_text(), f.name  # strings go in with textContent


def test_trusted_hosts_refuse_other_host_headers():
    app = create_app([], allowed_hosts=["127.0.0.1", "localhost"])
    assert TestClient(app, base_url="http://127.0.0.1").get("/api/health").status_code == 200
    assert TestClient(app, base_url="http://evil.example").get("/api/health").status_code == 400


def test_background_server_serves_over_http(run_dir):
    with BackgroundServer(create_app([run_dir])) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=server.url, timeout=10) as http:
            assert http.get("/api/health").json()["ok"] is True
            assert len(http.get("/api/runs").json()["runs"]) == 2
            # DNS rebinding: a page of evil.example resolved to 127.0.0.1 read the league
            for host in ("evil.example", f"evil.example:{server.port}"):
                assert http.get("/api/runs", headers={"host": host}).status_code == 400
    assert not server.thread.is_alive()


def test_background_server_keeps_the_hosts_a_caller_names():
    """Review S3: BackgroundServer put its own loopback check in front of an app made with
    create_app(allowed_hosts=[...]), so a dashboard behind a notebook proxy (which keeps the
    browser's Host) answered 400."""
    def status(server: BackgroundServer, host: str) -> int:
        server.sock.close()  # never started: its app is called directly
        return TestClient(server.server.config.app, base_url=f"http://{host}") \
            .get("/api/health").status_code

    proxied = create_app([], allowed_hosts=["dash.example", "127.0.0.1"])
    assert status(BackgroundServer(proxied), "dash.example") == 200
    assert status(BackgroundServer(proxied), "evil.example") == 400
    named = BackgroundServer(create_app([]), allowed_hosts=["dash.example"])
    assert status(named, "dash.example") == 200
    assert status(BackgroundServer(create_app([])), "dash.example") == 400  # loopback only
    assert status(BackgroundServer(create_app([]), allowed_hosts=None), "dash.example") == 200


# ---------------------------------------------------------------------------- export, CLI
def _embedded(html: str) -> dict:
    m = re.search(r'<script id="dashboard-export" type="application/json">(.*?)</script>',
                  html, re.S)
    assert m, "no embedded data"
    return json.loads(m.group(1))


def test_static_export_embeds_every_answer(run_dir, tmp_path):
    out = tmp_path / "report.html"
    answers = export_html(DashboardData([run_dir]), out)
    html = out.read_text()
    assert XSS not in html  # the hostile name is inside JSON as \u003cscript\u003e
    assert 'src="static/' not in html and 'href="static/' not in html  # all inline
    assert len(html) > PLOTLY_JS.stat().st_size
    embedded = _embedded(html)
    assert embedded.keys() == answers.keys()
    assert embedded["api/config"]["export"] is True
    # what the page reads of a run: each part in the form it asks for (compact() adds
    # ?compact=1), and one metric's curve per key of its learner panel
    js = (STATIC / "dashboard.js").read_text(encoding="utf-8")
    compact = set(re.findall(r"part\(compact\(`\$\{base\}/(\w+)`\)", js))
    # cross-play: compact, and its first crossplay_rows pairs until "show all" (crossPath)
    assert "part(crossPath(base), renderCrossplay)" in js
    assert re.search(r"const crossPath = [^;]*compact\(`\$\{base\}/crossplay`\)[^;]*"
                     r"&rows=\$\{state\.config\.crossplay_rows\}", js)
    compact.add("crossplay")
    plain = set(re.findall(r"part\(`\$\{base\}/(\w+)`", js)) - {"metrics"}
    assert compact == {"payoffs", "crossplay", "ratings"} and "league" in plain
    assert "const compact = (path) => `${path}?compact=1`;" in js  # live and exported alike
    client = TestClient(create_app([run_dir]))
    runs = embedded["api/runs"]["runs"]
    assert len(runs) == 2
    expected = {"api/config", "api/runs"}
    for r in runs:
        base = f"api/runs/{r['source']}/{r['id']}"
        paths = [base, *(f"{base}/{v}" for v in sorted(plain)),
                 *(f"{base}/{v}?compact=1" for v in sorted(compact)), crossplay_rows_path(base)]
        for path in paths:
            assert embedded[path] == get(client, f"/{path}"), path
        for view in compact:  # the dense forms, which the page does not read, are left out
            assert f"{base}/{view}" not in embedded
        keys = embedded[f"{base}/learner"]["keys"]
        metrics = [metrics_path(r["source"], r["id"], key) for key in keys]
        for path in metrics:
            assert embedded[path] == get(client, f"/{path}"), path
        expected |= {*paths, *metrics, f"{base}/exploitability"}  # (the API's, too)
    assert embedded.keys() == expected


def test_script_json_cannot_close_its_script_element():
    text = script_json({"name": XSS, "amp": "a & b", "sep": "\u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text)["name"] == XSS


def test_cli_export(run_dir, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert cli.main([str(run_dir), "--export", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out and out.stat().st_size > 1_000_000
    missing = tmp_path / "nothing-here"
    # no database anywhere: refused in one line, nothing written (cli36; it was exit 1)
    assert cli.main([str(missing), "--export", str(tmp_path / "m.html")]) == 2
    assert "league database not found" in capsys.readouterr().err


def test_cli_rejects_bad_options_and_a_busy_port(run_dir, capsys):
    with pytest.raises(SystemExit):
        cli.main([str(run_dir), "--refresh", "0"])
    assert "--refresh" in capsys.readouterr().err
    with BackgroundServer(create_app([])) as busy:
        assert cli.main([str(run_dir), "--port", str(busy.port)]) == 2
    assert "pass another --port" in capsys.readouterr().err


# ------------------------------------------------------------------ hardening (issue 13)
@pytest.mark.parametrize("host", ["::1", "127.0.0.2"])
def test_every_loopback_host_guards_the_host_header(host, tmp_path):
    """The real command line on a loopback address other than 127.0.0.1: a page on another
    site that rebinds its name to this address is refused; the address itself is served."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "populations.dashboard.cli", str(tmp_path), "--host", host,
         "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:
            if "league dashboard on" in line:
                url = line.split()[3]
                break
        else:
            pytest.fail(f"the dashboard did not start on {host}")
        netloc = url.split("//")[1].rstrip("/")
        assert httpx.get(url + "api/health", headers={"host": "evil.example"}).status_code == 400
        rebound = netloc.replace(netloc.rsplit(":", 1)[0], "evil.example")
        assert httpx.get(url + "api/health", headers={"host": rebound}).status_code == 400
        assert httpx.get(url + "api/health").status_code == 200  # Host: the address itself
    finally:
        proc.terminate()
        proc.wait()


def test_run_ids_beyond_sqlite_integers_are_404(shared):
    client, _, ids = shared
    s, _ = ids["league"]
    for path in ("", "/league", "/metrics?key=x"):
        body = get(client, f"/api/runs/{s}/{2**63}{path}", 404)
        assert f"no run {2**63}" in body["error"]
    assert "no run" in get(client, f"/api/runs/{s}/{2**63 - 1}/league", 404)["error"]


def _read_everything(client: TestClient) -> int:
    runs = get(client, "/api/runs")
    assert runs["errors"] == []
    for r in runs["runs"]:
        base = f"/api/runs/{r['source']}/{r['id']}"
        for view in ("", "/league", "/payoffs", "/ratings", "/psro", "/learner"):
            get(client, base + view)
    return len(runs["runs"])


def test_reading_leaves_the_run_folder_as_it_was(run_dir):
    """No -wal/-shm files appear next to a database no one writes; with a live writer the
    reader uses the writer's files and sees its rows."""
    before = sorted(p.name for p in run_dir.iterdir())
    assert _read_everything(TestClient(create_app([run_dir]))) == 2
    assert sorted(p.name for p in run_dir.iterdir()) == before
    writer = LeagueDB(run_dir / "league.db")  # a live writer: -wal and -shm are its own
    try:
        writer.create_run("live-run")
        assert _read_everything(TestClient(create_app([run_dir]))) == 3
    finally:
        writer.close()
    assert sorted(p.name for p in run_dir.iterdir()) == before  # the writer cleaned up


@pytest.fixture
def unwritable(run_dir):
    """``run_dir`` made unwritable: ``chattr +i`` for root (which ignores modes), else a
    read-only mode; skipped where neither stops a write."""
    import os
    import shutil
    import subprocess

    run_dir.chmod(0o555)
    chattr = shutil.which("chattr") if os.geteuid() == 0 else None  # root ignores modes
    if chattr:
        chattr = chattr if subprocess.run([chattr, "+i", str(run_dir)]).returncode == 0 else None
    try:
        try:
            (run_dir / "probe").touch()
        except OSError:
            yield run_dir
        else:
            pytest.skip("cannot make a folder unwritable here")
    finally:
        if chattr:
            subprocess.run([chattr, "-i", str(run_dir)], check=True)
        run_dir.chmod(0o755)


def test_a_run_folder_the_user_cannot_write_still_displays(unwritable):
    assert _read_everything(TestClient(create_app([unwritable]))) == 2
    assert sorted(p.name for p in unwritable.iterdir()) == ["league.db"]


# ---------------------------------------------------------------------------- cross-play
def add_hostile_matches(path: Path, episodes: int = 6) -> tuple[int, int]:
    """Episodes between the hostile-named snapshot and ``main v0`` (the hostile one wins
    4 of 6 by 1.0, loses 2 by 0.5), so its name reaches the cross-play view."""
    db = LeagueDB(path)
    try:
        run = next(r["id"] for r in db.conn.execute("SELECT id FROM runs WHERE name = 'league'"))
        snaps = {s.member: s.id for s in db.snapshots(run) if s.version == 0}
        xs, v0 = snaps[XSS], snaps["main"]
        rows = [MatchRow(f"xss/{t}", "g", {"adversary_0": xs, "agent_0": v0, "agent_1": v0},
                         {"adversary_0": 1.0 if t < 4 else -0.5, "agent_0": 0.0, "agent_1": 0.0})
                for t in range(episodes)]
        db.add_matches(run, rows)
    finally:
        db.close()
    return xs, v0


def test_crossplay_view_matches_the_crossplay_module(run_dir):
    from populations import crossplay as cp

    xs, v0 = add_hostile_matches(run_dir / "league.db")
    client = TestClient(create_app([run_dir]))
    runs = get(client, "/api/runs")["runs"]
    s, r = next((x["source"], x["id"]) for x in runs if x["name"] == "league")
    doc = get(client, f"/api/runs/{s}/{r}/crossplay")
    db = LeagueDB(run_dir / "league.db", readonly=True)
    eps = cp.episodes(db.matches(r))
    want = cp.crossplay(eps, resamples=cp.RESAMPLES, seed=0)
    assert doc["ids"] == want.ids and doc["n"] == want.n
    for stat, table in want.table.items():
        assert doc[stat] == table, stat
    assert doc["episodes"] == len(eps.a) > 6 and doc["confidence"] == 0.95
    pair = next(p for p in doc["pairs"] if {p["row"], p["col"]} == {xs, v0})
    assert pair["n"] == 6 and f"{XSS} v0" in (pair["row_label"], pair["col_label"])
    hostile_wins = 4 / 6 if pair["row"] == xs else 2 / 6
    assert pair["win"] == pytest.approx(hostile_wins)
    assert pair["win_lo"] <= pair["win"] <= pair["win_hi"] and pair["win_lo"] < pair["win_hi"]
    ar = doc["alpharank"]
    assert ar["pi"] == pytest.approx(cp.alpha_rank(want.table["margin"], want.ids)["pi"])
    assert sum(ar["pi"]) == pytest.approx(1.0)
    # the hostile snapshot met only main v0: α-Rank leaves it out and says so
    assert XSS + " v0" in ar["left_out_labels"]
    iv = cp.alpha_rank_interval(want, cp.alpha_rank(want.table["margin"], want.ids), 100)
    assert ar["pi_lo"] == pytest.approx(iv["pi_lo"]) and ar["top"] == pytest.approx(iv["top"])
    rated = {x["snapshot_id"]: x for x in doc["ratings"]}
    stored = db.latest_ratings(r)
    for sid, row in rated.items():
        assert row["mu_lo"] == pytest.approx(stored[sid]["mu"] - 2 * stored[sid]["sigma"])
        assert row["replay_elo_lo"] <= row["replay_elo_hi"]
    db.close()


def test_crossplay_view_of_a_run_without_episodes(shared):
    client, _, ids = shared
    doc = get(client, "/api/runs/{}/{}/crossplay".format(*ids["psro-kuhn"]))
    assert doc["pairs"] == [] and doc["ids"] == [] and doc["alpharank"]["pi"] == []
    # no episodes is not "too many": the page said "Elo replay: skipped, too many episodes"
    assert doc["elo_resamples"] == ELO_RESAMPLES


def test_crossplay_view_shows_new_ratings_and_matches_at_once(run_dir):
    """The heavy statistics are cached per match count; stored ratings written without new
    matches, and new matches, both show on the next request."""
    client = TestClient(create_app([run_dir]))
    runs = get(client, "/api/runs")["runs"]
    s, r = next((x["source"], x["id"]) for x in runs if x["name"] == "league")
    before = get(client, f"/api/runs/{s}/{r}/crossplay")
    sid = before["ids"][0]
    writer = LeagueDB(run_dir / "league.db")
    writer.add_ratings(r, 99, [(sid, 1234.0, 40.0, 1.5, 9)])
    writer.close()
    row = next(x for x in get(client, f"/api/runs/{s}/{r}/crossplay")["ratings"]
               if x["snapshot_id"] == sid)
    assert (row["elo"], row["mu_lo"], row["mu_hi"]) == (1234.0, 37.0, 43.0)
    add_hostile_matches(run_dir / "league.db")
    after = get(client, f"/api/runs/{s}/{r}/crossplay")
    assert after["episodes"] == before["episodes"] + 6 and len(after["ids"]) == 4


def test_an_address_this_machine_lacks_asks_for_another_host(tmp_path, capsys):
    """``--host 192.0.2.1`` (not this machine's) was told to pass another --port."""
    assert cli.main([str(tmp_path), "--host", "192.0.2.1", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("selfplay-dashboard: cannot listen on 192.0.2.1:0")
    assert "--host" in err and "--port" not in err
