"""The dashboard page on long leagues, in headless Chromium (as
``test_dashboard_browser``): a slow cross-play does not hold up the rest of the page, a
stale cross-play says it is updating, and a finished run is not asked for again until its
database changes."""

from __future__ import annotations

import re
import threading

import pytest

from populations.dashboard import BackgroundServer, create_app, queries
from populations.db import LeagueDB
from tests.populations.test_dashboard import add_hostile_matches, build_league_db, copy_db
from tests.populations.test_dashboard_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    REFRESH_S,
    WAIT_MS,
    Page,
    run_ids,
    sync_api,
)

expect = sync_api.expect


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"), executable_path=CHROMIUM,
            headless=True, args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000})
        ctx.set_default_timeout(WAIT_MS)
        yield ctx
        ctx.close()


@pytest.fixture
def page(browser):
    p = Page(browser)
    yield p
    p.page.close()


@pytest.fixture
def run_dir(tmp_path_factory, tmp_path):
    built = build_league_db(tmp_path_factory.getbasetemp() / "dashboard-league")
    copy_db(built, tmp_path / "league.db")
    return tmp_path


@pytest.fixture
def gate(monkeypatch):
    """Cross-play computations wait until the event is set."""
    monkeypatch.setattr(queries, "_CACHE", {})
    event = threading.Event()
    real = queries.compute_crossplay

    def gated(db, run_id):
        assert event.wait(60), "test gate never opened"
        return real(db, run_id)

    monkeypatch.setattr(queries, "compute_crossplay", gated)
    yield event
    event.set()
    queries.CROSSPLAY_CACHE.wait(60)


def test_a_slow_crossplay_does_not_hold_up_the_page(page, run_dir, gate, monkeypatch):
    monkeypatch.setattr(queries, "CROSSPLAY_INLINE_CPU_S", 0.0)  # recomputes: background
    monkeypatch.setattr(queries, "CROSSPLAY_IDLE_FACTOR", 0.0)
    s, r = run_ids(run_dir)["league"]
    with BackgroundServer(create_app([run_dir], refresh_s=REFRESH_S)) as srv:
        page.page.goto(f"{srv.url}/#run={s}/{r}")
        # cross-play is still computing: the rest draws and the page says it is live
        page.rendered("payoff-chart")
        page.rendered("elo-chart")
        expect(page.page.locator("#status")).to_contain_text("live")
        expect(page.page.locator("body")).to_have_attribute(
            "data-refreshes", re.compile(r"^([2-9]|\d\d+)$"))
        assert page.rows("crossplay-table") == 0
        gate.set()
        expect(page.page.locator("#crossplay-table tbody tr")).to_have_count(3)
        # new episodes: the last table stays up, said to be updating, until the new one is in
        gate.clear()
        add_hostile_matches(run_dir / "league.db")
        expect(page.page.locator("#alpharank-note")).to_contain_text("Updating")
        assert page.rows("crossplay-table") == 3
        gate.set()
        expect(page.page.locator("#crossplay-table tbody tr")).to_have_count(4)
        expect(page.page.locator("#alpharank-note")).not_to_contain_text("Updating")
    assert page.errors == []


def test_a_finished_run_is_asked_again_only_when_its_database_changes(page, run_dir):
    s, r = run_ids(run_dir)["league"]
    db = LeagueDB(run_dir / "league.db", readonly=True)
    assert db.run_status(r) != "running"
    db.close()
    asked: list[str] = []
    page.page.on("request", lambda req: asked.append(req.url))
    league = f"/api/runs/{s}/{r}/league"
    with BackgroundServer(create_app([run_dir], refresh_s=REFRESH_S)) as srv:
        page.page.goto(f"{srv.url}/#run={s}/{r}")
        page.page.wait_for_selector("#crossplay-table tbody tr")
        refreshes = page.page.locator("body")

        def after(n: int) -> None:
            expect(refreshes).to_have_attribute(
                "data-refreshes", re.compile("^(" + "|".join(map(str, range(n, n + 50))) + ")$"))

        after(3)
        before = sum(u.endswith(league) for u in asked)
        done = int(refreshes.get_attribute("data-refreshes"))
        after(done + 3)  # three more refreshes: the runs list only
        assert sum(u.endswith(league) for u in asked) == before >= 1
        assert sum(u.endswith("/api/runs") for u in asked) >= done + 3
        writer = LeagueDB(run_dir / "league.db")  # a write: asked again, and drawn
        try:
            mid = writer.add_member(r, "late-joiner", "vdn", ["agent"])
            writer.add_snapshot(mid, 0, "/nowhere", "vdn", "g", ["agent"])
        finally:
            writer.close()
        expect(page.page.locator("#league-table tbody tr")).to_have_count(3)
        assert sum(u.endswith(league) for u in asked) > before
    assert page.errors == []
