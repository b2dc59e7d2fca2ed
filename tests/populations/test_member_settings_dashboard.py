"""What each league member trained with is recorded and shown. Members of one league may
differ in settings (``population.members=[mappo, {name: gnn, algo: mappo, mappo: {...}}]``),
but ``league.db`` recorded each member's name, kind and roles only (``runs.config`` holds
the run's one ``mappo`` section, not each member's), and the dashboard showed no settings:
nothing said which MAPPO member was the GNN one. Now ``members.settings`` holds each
member's learner settings as plain JSON (read back as untrusted), the dashboard's league
table shows them (folded: what tells a member apart from the others of its kind) and the
run's configuration in a panel, all as text, in the server and the static export alike."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from starlette.testclient import TestClient

from populations.dashboard import (
    BackgroundServer,
    DashboardData,
    create_app,
    export_html,
    queries,
)
from populations.db import MIGRATIONS, LeagueDB
from tests.populations.test_dashboard import copy_db
from tests.populations.test_single_resume import _exp

GNN = "{name:gnn,algo:mappo,mappo:{net:{encoder:gnn,critic:gnn},lr:0.002}}"
LEAGUE = ["game=mpe_tag", "population=pfsp", "population.generations=1",
          "population.frames_per_generation=64", "num_envs=2", "eval_episodes=1",
          "mappo.rollout_steps=16", "mappo.epochs=1", "mappo.minibatches=1", "progress=false",
          "logger=none", f"population.members=[mappo,{GNN}]"]  # fmt: skip
IMG = "<img src=x onerror=alert(1)>"
HOSTILE = {f"<b>{IMG}</b>": IMG, "net": {"encoder": "<script>alert(2)</script>"}}
NESTED = "[" * 100_000  # deeper than the JSON parser's recursion limit


@pytest.fixture(scope="module")
def league_db(tmp_path_factory) -> Path:
    """A real league of an MLP and a GNN MAPPO member on MPE tag (a few seconds)."""
    from populations.experiment import run_experiment

    run = tmp_path_factory.mktemp("mlp-gnn")
    run_experiment(_exp(*LEAGUE), run)
    return run / "league.db"


@pytest.fixture
def run_dir(league_db, tmp_path) -> Path:
    copy_db(league_db, tmp_path / "run" / "league.db")
    return tmp_path / "run"


def _members(path: Path) -> dict[str, dict]:
    db = LeagueDB(path, readonly=True)
    try:
        return {m["name"]: m for m in db.members(db.run_id("league"))}
    finally:
        db.close()


# ---------------------------------------------------------------------------- league.db
def test_each_member_records_the_settings_it_trains_with(league_db):
    members = _members(league_db)
    assert set(members) == {"mappo", "gnn"}
    mlp, gnn = members["mappo"]["settings"], members["gnn"]["settings"]
    assert (gnn["net"]["encoder"], gnn["net"]["critic"], gnn["lr"]) == ("gnn", "gnn", 0.002)
    assert mlp["net"]["encoder"] == "mlp" and mlp["lr"] != 0.002
    assert mlp["rollout_steps"] == gnn["rollout_steps"] == 16  # the run's section beneath
    with sqlite3.connect(league_db) as conn:  # stored as plain JSON text
        stored = dict(conn.execute("SELECT name, settings FROM members").fetchall())
    conn.close()
    assert json.loads(stored["gnn"]) == gnn


def _v4_file(path: Path) -> None:
    """A league.db as selfplay wrote it before members had settings (schema version 4)."""
    conn = sqlite3.connect(path)
    conn.executescript("".join(MIGRATIONS[:4]) + "PRAGMA user_version = 4;")
    conn.execute("INSERT INTO runs (id, name, config, started_at, updated_at) "
                 "VALUES (1, 'league', '{}', 0, 0)")
    conn.execute("INSERT INTO members (run_id, name, kind, roles, created_at) "
                 "VALUES (1, 'main', 'mappo', '[\"player_0\"]', 0)")
    conn.commit()
    conn.close()


def test_a_database_from_before_settings_opens(tmp_path):
    _v4_file(tmp_path / "league.db")
    reader = LeagueDB(tmp_path / "league.db", readonly=True)  # the dashboard: not migrated
    assert [(m["name"], m["settings"]) for m in reader.members(1)] == [("main", None)]
    reader.close()
    db = LeagueDB(tmp_path / "league.db")  # a resumed run: the column is added
    try:
        assert db.members(1)[0]["settings"] is None
        assert db.set_member_settings(1, "main", {"lr": 0.01})
        assert not db.set_member_settings(1, "nobody", {"lr": 0.01})
        assert db.members(1)[0]["settings"] == {"lr": 0.01}
    finally:
        db.close()


@pytest.mark.parametrize("stored", ["not json", "[1, 2]", NESTED, 7])
def test_an_unreadable_settings_value_leaves_the_tables_readable(run_dir, stored):
    """A crafted or damaged settings value is reported beside its member: the league
    tables (the printed summary, the dashboard) read on."""
    from populations.experiment import league_table

    with sqlite3.connect(run_dir / "league.db") as conn:
        conn.execute("UPDATE members SET settings = ? WHERE name = 'gnn'", (stored,))
    conn.close()
    gnn = _members(run_dir / "league.db")["gnn"]
    assert gnn["settings"] is None
    why = gnn["settings_error"]
    assert "\n" not in why and len(why) < 300 and "column settings" in why, why
    db = LeagueDB(run_dir / "league.db", readonly=True)
    try:
        printed = {r["member"] for r in league_table(db, db.run_id("league"))}
    finally:
        db.close()
    assert printed == {"mappo", "gnn"}
    source, run = _ids(run_dir)
    rows = {r["member"]: r for r in TestClient(create_app([run_dir])).get(
        f"/api/runs/{source}/{run}/league").json()}
    assert rows["gnn"]["settings"] is None and rows["gnn"]["settings_error"] == why
    assert rows["mappo"]["settings"]["items"]  # the other member's still shown


def test_member_settings_are_plain_json():
    from llm_agents.settings import GRPOConfig, LLMConfig
    from llm_agents.team import Team
    from llm_agents.tiny import build_model, build_tokenizer
    from populations.members import LearnerMember, LLMMember, member_settings

    class Trainer:  # an LLM team's: its models and its GRPO settings
        cfg = GRPOConfig(group_size=4)
        tok = build_tokenizer(["bet pass"])
        team = Team.shared(build_model(tok), tok)

    llm = member_settings(LLMMember("team", Trainer(), iterations=1))
    assert llm["model"] == "GPT2LMHeadModel (built in code)"
    assert llm["grpo"]["group_size"] == 4 and isinstance(llm["grpo"]["action"], dict)
    built = LLMMember("team", Trainer(), 1, config=LLMConfig(model="org/some-model"))
    assert member_settings(built)["model"] == "org/some-model"  # the section it was built from

    class Own:  # a user's member: its own settings(), any values
        def settings(self):
            return {"hidden": (64, np.int64(64)), "eps": float("inf"), "where": Path("/x")}

    assert member_settings(Own()) == {"hidden": [64, 64], "eps": "inf", "where": "/x"}

    class Bare:  # a user's learner without a config
        def policy(self):
            raise AssertionError("not needed")

    assert member_settings(LearnerMember.__new__(LearnerMember)) is None  # no learner yet
    bare = LearnerMember.__new__(LearnerMember)
    bare.learner = Bare()
    assert member_settings(bare) is None
    json.dumps(llm, allow_nan=False)


# ---------------------------------------------------------------------------- dashboard
def _ids(run_dir: Path) -> tuple[str, int]:
    runs = DashboardData([run_dir]).runs()["runs"]
    return next((r["source"], r["id"]) for r in runs if r["name"] == "league")


def test_dashboard_serves_each_members_settings_and_the_runs_configuration(run_dir):
    source, run = _ids(run_dir)
    client = TestClient(create_app([run_dir]))
    rows = {r["member"]: r for r in client.get(f"/api/runs/{source}/{run}/league").json()}
    items = {m: {it["key"]: it["value"] for it in rows[m]["settings"]["items"]} for m in rows}
    assert items["gnn"]["net.encoder"] == "gnn" and items["mappo"]["net.encoder"] == "mlp"
    assert items["gnn"]["lr"] == "0.002" and items["gnn"]["net.hidden"] == "[64, 64]"
    # what tells the two MAPPO members apart, for the folded row
    assert {"net.encoder", "net.critic", "lr"} <= set(rows["gnn"]["settings_differ"])
    assert "rollout_steps" not in rows["gnn"]["settings_differ"]
    summary = client.get(f"/api/runs/{source}/{run}").json()
    conf = {it["key"]: it["value"] for it in summary["config_settings"]["items"]}
    assert (conf["game"], conf["generations"]) == ("pettingzoo/mpe2.simple_tag_v3", "1")
    assert conf["mappo.net.encoder"] == "mlp"  # the run's section: not the gnn member's


def _hostile(run_dir: Path) -> None:
    db = LeagueDB(run_dir / "league.db")
    try:
        assert db.set_member_settings(db.run_id("league"), "mappo", HOSTILE)
    finally:
        db.close()


def test_hostile_settings_are_served_as_data_and_exported_escaped(run_dir, tmp_path):
    _hostile(run_dir)
    source, run = _ids(run_dir)
    rows = {r["member"]: r for r in TestClient(create_app([run_dir])).get(
        f"/api/runs/{source}/{run}/league").json()}
    assert rows["mappo"]["settings"]["items"] == [
        {"key": f"<b>{IMG}</b>", "value": IMG},
        {"key": "net.encoder", "value": "<script>alert(2)</script>"}]
    out = tmp_path / "report.html"
    answers = export_html(DashboardData([run_dir]), out)
    league = {r["member"]: r for r in answers[f"api/runs/{source}/{run}/league"]}
    assert league["gnn"]["settings"] is not None and league["mappo"]["settings"]["items"]
    assert answers[f"api/runs/{source}/{run}"]["config_settings"]["items"]
    html = out.read_text(encoding="utf-8")
    assert "\\u003cimg src=x onerror=alert(1)\\u003e" in html and IMG not in html


def test_settings_rows_are_bounded(monkeypatch):
    monkeypatch.setattr(queries, "MAX_SETTINGS", 3)
    monkeypatch.setattr(queries, "MAX_SETTING_CHARS", 5)
    flat = queries.flat_settings({"a": {"b": 1, "c": "long text"}, "d": [1], "e": None})
    assert flat == {"items": [{"key": "a.b", "value": "1"},
                              {"key": "a.c", "value": "long … (9 characters)"},
                              {"key": "d", "value": "[1]"}], "left_out": 1}
    assert queries.flat_settings({}) == {"items": [], "left_out": 0}


# ---------------------------------------------------------------------------- the page
def test_the_page_shows_each_members_settings_as_text(run_dir, tmp_path_factory):
    """In headless Chromium: the GNN member's row says so while folded; unfolded, its
    settings and a hostile member's keys and values are text (no element, no dialog); an
    unfolded row stays so when the table is redrawn; the run's configuration unfolds."""
    from tests.populations.test_dashboard_browser import (
        CHROMIUM,
        CHROMIUM_ARGS,
        REFRESH_S,
        WAIT_MS,
        Page,
        sync_api,
    )

    _hostile(run_dir)
    source, run = _ids(run_dir)
    expect = sync_api.expect
    with sync_api.sync_playwright() as pw, BackgroundServer(
            create_app([run_dir], refresh_s=REFRESH_S)) as srv:
        ctx = pw.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"), executable_path=CHROMIUM,
            headless=True, args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000})
        ctx.set_default_timeout(WAIT_MS)
        try:
            page = Page(ctx)
            p = page.page
            p.goto(f"{srv.url}/#run={source}/{run}")
            gnn = p.locator("#league-table tbody tr", has=p.locator("td.member", has_text="gnn"))
            expect(gnn.locator("td.settings summary")).to_contain_text("net.encoder = gnn")
            gnn.locator("td.settings summary").click()
            keys = gnn.locator("dl.settings dt").all_inner_texts()
            values = gnn.locator("dl.settings dd").all_inner_texts()
            assert dict(zip(keys, values, strict=True))["net.encoder"] == "gnn"
            assert gnn.locator("dt.differs", has_text="net.encoder").count() == 1
            assert page.rows("league-table") == 2  # its rows stay one per member
            mappo = p.locator("#league-table tbody tr",
                              has=p.locator("td.member", has_text="mappo"))
            mappo.locator("td.settings summary").click()
            shown = mappo.locator("dl.settings > *").all_inner_texts()
            assert f"<b>{IMG}</b>" in shown and IMG in shown
            assert "<script>alert(2)</script>" in shown
            assert p.locator("#league-table img, #league-table b").count() == 0
            # a new rating redraws the table: what was unfolded stays unfolded
            writer = LeagueDB(run_dir / "league.db")
            try:
                sid = writer.snapshots(run, "gnn")[-1].id
                writer.add_ratings(run, 99, [(sid, 1234.0, 30.0, 2.0, 2)])
            finally:
                writer.close()
            expect(gnn.locator("td").nth(4)).to_have_text("1234")
            assert gnn.locator("details").get_attribute("open") is not None
            p.click("#run-config summary")
            conf = p.locator("#run-config dl.settings")
            expect(conf).to_contain_text("mappo.net.encoder")
            assert "game" in conf.locator("dt").all_inner_texts()
            assert p.evaluate("document.scripts.length") == 2
            assert page.dialogs == [] and page.errors == []
        finally:
            ctx.close()


def test_a_resumed_league_records_the_settings_its_members_lacked(league_db, run_dir):
    """A league recorded before settings were (its column empty) gets them on resume."""
    import shutil

    from populations.experiment import run_experiment

    with sqlite3.connect(run_dir / "league.db") as conn:
        conn.execute("UPDATE members SET settings = NULL")
    conn.close()
    for kept in ("checkpoints", "snapshots"):  # without its checkpoints a resume is refused
        shutil.copytree(league_db.parent / kept, run_dir / kept)
    run_experiment(_exp(*LEAGUE, "resume=true", "population.generations=2"), run_dir)
    members = _members(run_dir / "league.db")
    assert members["gnn"]["settings"]["net"]["encoder"] == "gnn"
    assert members["mappo"]["settings"]["net"]["encoder"] == "mlp"


def test_a_non_finite_setting_is_shown_as_its_value():
    """``mappo.max_grad_norm=inf`` (no clipping: a setting) was shown as "(nested too deep to
    show)": the encoder refused NaN and infinity (review)."""
    from populations.dashboard.queries import _setting_text

    assert [_setting_text(v) for v in (float("inf"), float("nan"), [1, float("-inf")])] == [
        "Infinity", "NaN", "[1, -Infinity]"]
