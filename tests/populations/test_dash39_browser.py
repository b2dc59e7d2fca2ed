"""A large league's page in a real headless Chromium (dash39, after walk 38b: drawing 200
rating series and a 200 x 200 heatmap took most of a warm visit): the rating charts draw
the series of the highest Elo first and the heatmap its newest snapshots, each with a
control that draws all of them; the page asks the server for the cross-play rows it
draws; a large run's cross-play computed in the background says so, and shows when ready.
See ``test_dashboard_browser`` for the fixtures."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from populations.dashboard import BackgroundServer, create_app, queries
from tests.populations import test_dashboard_browser as tdb
from tests.populations.test_dash38_server import small_league
from tests.populations.test_dashboard_browser import REFRESH_S, Page, expect

context, page = tdb.context, tdb.page  # one Chromium for the module, a fresh page per test

MEMBERS = 45  # more than the page draws of either chart (20 series, 40 snapshots)


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    # small_league rates member i at Elo 1000 + i: the highest are the last ones
    return small_league(tmp_path_factory.mktemp("dash39") / "big",
                        [f"m{i:02d}" for i in range(MEMBERS)])


WAIT_MS = 90_000  # a wait, not a bound: Plotly's script alone took 15 s on a loaded machine
WAIT = {"timeout": WAIT_MS}


def _open(page: Page, folder: Path) -> BackgroundServer:
    srv = BackgroundServer(create_app([folder], refresh_s=REFRESH_S)).start()
    page.page.set_default_timeout(WAIT_MS)
    page.page.goto(srv.url, wait_until="commit")
    page.page.wait_for_selector("#league-table tbody tr")
    return srv


def _names(page: Page, chart: str) -> list[str]:
    return page.page.evaluate(f"""() => document.getElementById("{chart}").data
        .map(t => t.name)""")


def test_the_rating_charts_draw_the_highest_elo_and_show_all_draws_every_series(
        page: Page, big):
    srv = _open(page, big)
    try:
        page.rendered("elo-chart")
        page.rendered("mu-chart")
        top = [f"m{i:02d} v0" for i in range(MEMBERS - 20, MEMBERS)]
        assert sorted(_names(page, "elo-chart")) == sorted(_names(page, "mu-chart")) == top
        expect(page.page.locator("#elo-chart .scatterlayer .trace")).to_have_count(20, **WAIT)
        more = page.page.locator("#ratings-more")
        expect(more).to_contain_text(f"show all {MEMBERS} series", **WAIT)
        expect(page.page.locator("#ratings-shown")).to_contain_text("highest Elo", **WAIT)
        more.click()
        expect(page.page.locator("#elo-chart .scatterlayer .trace")).to_have_count(MEMBERS, **WAIT)
        expect(page.page.locator("#mu-chart .scatterlayer .trace")).to_have_count(MEMBERS, **WAIT)
        expect(more).to_be_hidden(**WAIT)
        assert page.page.inner_text("#ratings-shown") == ""
        assert page.errors == []
    finally:
        srv.stop()


def test_the_heatmap_draws_the_newest_snapshots_and_show_all_draws_every_one(
        page: Page, big):
    srv = _open(page, big)
    try:
        page.rendered("payoff-chart")
        x = page.page.evaluate("document.getElementById('payoff-chart').data[0].x")
        assert x == [f"m{i:02d} v0" for i in range(MEMBERS - 40, MEMBERS)]
        hover = page.page.evaluate(
            "document.getElementById('payoff-chart').data[0].customdata[0][1]")
        assert hover == f"m{MEMBERS - 40:02d} v0 vs m{MEMBERS - 39:02d} v0"  # cells follow
        more = page.page.locator("#payoff-more")
        expect(more).to_contain_text(f"show all {MEMBERS} snapshots", **WAIT)
        more.click()
        expect(more).to_be_hidden(**WAIT)
        x = page.page.evaluate("document.getElementById('payoff-chart').data[0].x")
        assert len(x) == MEMBERS
        assert page.errors == []
    finally:
        srv.stop()


def test_the_page_asks_the_server_for_the_cross_play_rows_it_draws(page: Page, big):
    sizes: list[tuple[str, int]] = []
    page.page.on("response", lambda r: "/crossplay" in r.url and r.status == 200
                 and sizes.append((r.url, len(r.json()["pairs"]["row"]))))
    srv = _open(page, big)
    try:
        page.page.wait_for_selector("#crossplay-table tbody tr")
        pairs = MEMBERS * (MEMBERS - 1) // 2
        assert sizes and all(u.endswith("&rows=100") and n == 100 for u, n in sizes), sizes
        assert page.rows("crossplay-table") == 100
        with page.page.expect_response(lambda r: "/crossplay" in r.url
                                       and not r.url.endswith("&rows=100"), **WAIT) as whole:
            page.page.click("#crossplay-more")
        expect(page.page.locator("#crossplay-table tbody tr")).to_have_count(pairs, **WAIT)
        assert whole.value.status == 200 and len(whole.value.json()["pairs"]["row"]) == pairs
        assert page.errors == []
    finally:
        srv.stop()


def test_a_large_runs_cross_play_says_it_is_computing_then_shows(
        page: Page, tmp_path, monkeypatch):
    folder = small_league(tmp_path / "run", [f"m{i}" for i in range(6)])  # 15 episodes
    monkeypatch.setattr(queries, "_CACHE", {})
    monkeypatch.setattr(queries, "CROSSPLAY_INLINE_EPISODES", 10)
    gate = threading.Event()
    real = queries.compute_crossplay
    monkeypatch.setattr(queries, "compute_crossplay",
                        lambda db, run_id: gate.wait(60) and real(db, run_id))
    try:
        srv = _open(page, folder)
        try:
            empty = page.page.locator("#crossplay-empty")
            expect(empty).to_contain_text("Computing cross-play over 15 recorded episodes", **WAIT)
            page.rendered("elo-chart")  # the rest of the page did not wait
            assert page.rows("league-table") == 6 and page.rows("crossplay-table") == 0
            gate.set()
            expect(page.page.locator("#crossplay-table tbody tr")).to_have_count(15, **WAIT)
            expect(empty).to_be_hidden(**WAIT)
            assert page.rows("alpharank-table") == 6
            assert page.errors == []
        finally:
            srv.stop()
    finally:
        gate.set()
        queries.CROSSPLAY_CACHE.wait(60)


def test_the_tables_do_not_wait_for_plotlys_script(page: Page, big):
    # Plotly's 3.5 MB script came first and took seconds to read: nothing was asked for
    # (nor any table drawn) before it was. Hold it back: the tables still come.
    held = []
    page.page.route("**/static/plotly.min.js", lambda route: held.append(route))
    srv = BackgroundServer(create_app([big], refresh_s=REFRESH_S)).start()
    page.page.set_default_timeout(WAIT_MS)
    try:
        page.page.goto(srv.url, wait_until="commit")
        expect(page.page.locator("#league-table tbody tr")).to_have_count(MEMBERS, **WAIT)
        expect(page.page.locator("#crossplay-table tbody tr")).to_have_count(100, **WAIT)
        assert held and page.page.evaluate("typeof Plotly") == "undefined"
        assert page.page.get_attribute("#elo-chart", "data-rendered") is None
        held[0].continue_()
        page.rendered("elo-chart")
        page.rendered("payoff-chart")
        assert page.errors == []
    finally:
        for r in held[1:]:
            r.continue_()
        srv.stop()
