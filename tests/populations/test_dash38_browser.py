"""Dashboard page fixes from walk 38b, in a real headless Chromium (see
``test_dashboard_browser``): a hidden chart is not resized, names keep their own
direction, long names are cut in charts, a large cross-play table is bounded."""

from __future__ import annotations

import re
from pathlib import Path

from populations.dashboard import BackgroundServer, create_app
from tests.populations import test_dashboard_browser as tdb
from tests.populations.test_dash38_server import small_league, sweep
from tests.populations.test_dashboard import XSS
from tests.populations.test_dashboard_browser import REFRESH_S, Page, expect, run_ids

# the browser tests' fixtures: one Chromium, the built league and its server
context, league_dir, server, page = tdb.context, tdb.league_dir, tdb.server, tdb.page

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: reverses the text after it, to the paragraph's end


def open_run(page: Page, folder: Path) -> BackgroundServer:
    srv = BackgroundServer(create_app([folder], refresh_s=REFRESH_S)).start()
    page.page.goto(srv.url)
    page.page.wait_for_selector("#league-table tbody tr")
    return srv


def test_switching_runs_with_a_metric_shown_logs_no_error(page: Page, server, league_dir):
    # the metric chart is hidden when another run is picked: resizing it then rejected
    # with "Resize must be passed a displayed plot div element."
    ids = run_ids(league_dir)
    (sa, ra), (sb, rb) = ids["league"], ids["psro-kuhn"]
    page.page.goto(f"{server.url}/#run={sa}/{ra}")
    page.rendered("payoff-chart")
    page.page.select_option("#metric-select", "losses/pg_loss")
    page.rendered("metric-chart")
    page.page.click(f"#runs-table tr[data-run='{sb}/{rb}']")
    expect(page.page.locator("#run-title")).to_contain_text("psro-kuhn")
    expect(page.page.locator("#metric-chart")).to_be_hidden()
    page.page.wait_for_timeout(500)  # the observer's callback runs after layout
    assert page.errors == []


def test_a_right_to_left_override_in_a_name_stays_inside_the_name(page: Page, tmp_path):
    # U+202E in the run's name reversed the title's text after it ("started ...")
    folder = small_league(tmp_path / "rlo", [f"m{RLO}ab", "plain"], run_name=f"run{RLO}xyz")
    srv = open_run(page, folder)
    try:
        expect(page.page.locator("#run-title")).to_contain_text("started")
        # the status part is drawn right of the name, not pulled in front of it
        left, right = page.page.evaluate("""() => {
            const h = document.getElementById("run-title");
            const span = h.querySelector("span.muted");
            const r = document.createRange();
            r.setStartBefore(h.firstChild); r.setEndBefore(span);
            return [span.getBoundingClientRect().left, r.getBoundingClientRect().right];
        }""")
        assert left >= right - 1
        for sel in ("#league-table td.member", "#runs-table td", "#crossplay-table td.member"):
            iso = page.page.eval_on_selector_all(sel, """cells => cells.every(td =>
                getComputedStyle(td).unicodeBidi === "isolate"
                || [...td.children].some(c => c.tagName === "BDI"))""")
            assert iso, sel
        assert page.errors == []
    finally:
        srv.stop()


def test_a_large_cross_play_table_is_bounded_and_all_of_it_reachable(page: Page, tmp_path):
    # 200 members drew 14,270 rows (162k DOM nodes); the page shows a bounded number first
    members = [f"m{i:02d}" for i in range(16)]  # 120 pairs
    srv = open_run(page, small_league(tmp_path / "big", members))
    try:
        page.page.wait_for_selector("#crossplay-table tbody tr")
        shown = page.rows("crossplay-table")
        limit = page.page.evaluate("Number(document.getElementById('crossplay-more')"
                                   ".dataset.limit)")
        assert 0 < shown == limit < 120
        more = page.page.locator("#crossplay-more")
        expect(more).to_be_visible()
        expect(more).to_contain_text("120")
        more.click()
        expect(page.page.locator("#crossplay-table tbody tr")).to_have_count(120)
        expect(more).to_be_hidden()
        # the next refresh keeps them all shown
        after = int(page.page.get_attribute("body", "data-refreshes") or 0) + 1
        expect(page.page.locator("body")).to_have_attribute(
            "data-refreshes", re.compile(rf"^(?!({'|'.join(map(str, range(after)))})$)\d+$"),
            timeout=60_000)
        assert page.rows("crossplay-table") == 120
        assert page.errors == []
    finally:
        srv.stop()


def test_very_long_names_are_cut_in_charts_with_the_whole_name_on_hover(page: Page, tmp_path):
    long = "x" * 500
    srv = open_run(page, small_league(tmp_path / "long", [long, "short"]))
    try:
        page.rendered("payoff-chart")
        page.rendered("elo-chart")
        ticks = page.page.locator("#payoff-chart .ytick text").all_text_contents()
        assert ticks and max(map(len, ticks)) <= 90, ticks
        names = page.page.evaluate("""() => document.getElementById("elo-chart").data
            .map(t => t.name)""")
        assert max(map(len, names)) <= 90
        metas = page.page.evaluate("""() => document.getElementById("elo-chart").data
            .map(t => t.meta || t.name)""")
        assert f"{long} v0" in metas  # the legend's cut name is whole on hover
        hover = page.page.evaluate("""() => {
            const t = document.getElementById("payoff-chart").data[0];
            return JSON.stringify(t.customdata);}""")
        assert long in hover  # the whole name is still there, on hover
        assert page.errors == []
    finally:
        srv.stop()


def test_a_sweeps_jobs_are_told_apart_by_their_overrides(page: Page, tmp_path):
    base = sweep(tmp_path / "multirun", {"0": "- game=kuhn\n- seed=0\n",
                                         "1": f"- game=kuhn\n- seed={XSS}\n"})
    srv = BackgroundServer(create_app([base], refresh_s=REFRESH_S)).start()
    try:
        page.page.goto(srv.url)
        page.page.wait_for_selector("#runs-table tbody tr")
        names = page.page.locator("#runs-table tbody tr td:nth-child(2)").all_inner_texts()
        assert sorted(names) == ["league · seed=0", f"league · seed={XSS}"], names
        page.page.click("#runs-table tbody tr:has-text('seed=0')")
        expect(page.page.locator("#run-title")).to_contain_text("(seed=0)")
        assert page.dialogs == [] and page.errors == []
    finally:
        srv.stop()
