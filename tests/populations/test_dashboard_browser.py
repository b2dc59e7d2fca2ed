"""League dashboard in a real headless Chromium (Debian's ``chromium``, driven by Playwright):
the page loads without console errors, the league table has one row per member, the
heatmap and rating charts render, a hostile member name shows as text, PSRO charts draw,
rows written while the page is open appear after the refresh interval, and the static
export opens from a file.

Skipped, with a message, where Chromium or Playwright is missing.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from populations.dashboard import BackgroundServer, DashboardData, create_app, export_html
from populations.db import LeagueDB
from tests.populations.test_dashboard import XSS, add_hostile_matches, build_league_db, copy_db

CHROMIUM = (os.environ.get("SELFPLAY_CHROMIUM") or shutil.which("chromium")
            or shutil.which("chromium-browser"))
if CHROMIUM is None:
    pytest.skip("headless Chromium not found: `apt-get install chromium` (Debian) or set "
                "SELFPLAY_CHROMIUM=/path/to/chromium to run the dashboard browser tests",
                allow_module_level=True)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="pip install 'selfplay[test]' (Playwright) to run the "
    "dashboard browser tests")
expect = sync_api.expect

# The machine has no network: keep Chromium from trying (each refused call is noise).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]
REFRESH_S = 1.0
WAIT_MS = 15_000  # longest wait for any one thing on the page


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Iterator[sync_api.BrowserContext]:
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"), executable_path=CHROMIUM,
            headless=True, args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000})
        ctx.set_default_timeout(WAIT_MS)
        yield ctx
        ctx.close()


@pytest.fixture(scope="module")
def league_dir(tmp_path_factory) -> Path:
    built = build_league_db(tmp_path_factory.getbasetemp() / "dashboard-league")
    d = tmp_path_factory.mktemp("browser-run")
    copy_db(built, d / "league.db")
    return d


@pytest.fixture(scope="module")
def server(league_dir) -> Iterator[BackgroundServer]:
    with BackgroundServer(create_app([league_dir], refresh_s=REFRESH_S)) as srv:
        yield srv


class Page:
    """A page that records console errors, uncaught exceptions and dialogs."""

    def __init__(self, context: sync_api.BrowserContext) -> None:
        self.page = context.new_page()
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("dialog", self._dialog)

    def _dialog(self, dialog: sync_api.Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def rows(self, table: str) -> int:
        return self.page.locator(f"#{table} tbody tr").count()

    def rendered(self, chart_id: str) -> None:
        self.page.wait_for_selector(f"#{chart_id}[data-rendered='1']")


@pytest.fixture
def page(context) -> Iterator[Page]:
    p = Page(context)
    yield p
    p.page.close()


def run_ids(league_dir: Path) -> dict[str, tuple[str, int]]:
    data = DashboardData([league_dir])
    return {r["name"]: (r["source"], r["id"]) for r in data.runs()["runs"]}


def test_league_page_renders_without_console_errors(page, server, league_dir):
    s, r = run_ids(league_dir)["league"]
    page.page.goto(f"{server.url}/#run={s}/{r}")
    for chart in ("payoff-chart", "elo-chart", "mu-chart", "learner-chart-0"):
        page.rendered(chart)
    db = LeagueDB(league_dir / "league.db", readonly=True)
    members, rated = len(db.members(r)), len(db.latest_ratings(r))
    db.close()
    assert page.rows("league-table") == members == 2
    for text in page.page.locator("#league-table td.win").all_inner_texts():  # rate [Wilson]
        assert re.match(r"^\d+\.\d% \[\d+\.\d%, \d+\.\d%\]$", text), text
    assert page.rows("runs-table") == 2
    assert page.page.locator("#payoff-chart g.hm image").count() == 1  # the heatmap itself
    # a payoff cell is a margin (twice the return in a zero-sum game), and says so
    assert "mean margin" in page.page.locator("#payoff-chart .cbtitle").text_content()
    assert "twice the row's return" in page.page.inner_text("#payoff-meaning")
    assert page.page.locator("#elo-chart .scatterlayer .trace").count() == rated == 4
    assert page.page.locator("#learner-charts .chart").count() >= 5
    assert page.page.is_hidden("#psro-section")  # a league run has no PSRO iterations
    assert page.page.is_hidden("#banner")
    # the status line changes once every part of the refresh is in, which can be after the
    # charts above drew (a loaded machine showed 'loading…' here): wait for it
    expect(page.page.locator("#status")).to_contain_text("live")
    page.page.select_option("#metric-select", "losses/pg_loss")
    page.rendered("metric-chart")
    expect(page.page.locator("body")).to_have_attribute(  # the page refreshed itself
        "data-refreshes", re.compile(r"^([2-9]|\d\d+)$"))
    assert page.errors == []


def test_hostile_member_name_shows_as_text(page, server, league_dir):
    s, r = run_ids(league_dir)["league"]
    page.page.goto(f"{server.url}/#run={s}/{r}")
    page.rendered("payoff-chart")
    names = page.page.locator("#league-table td.member").all_inner_texts()
    assert XSS in names
    ticks = page.page.locator("#payoff-chart .ytick text").all_text_contents()
    assert f"{XSS} v0" in ticks  # Plotly shows it literally, not as markup
    assert page.page.evaluate("document.scripts.length") == 2  # plotly.min.js, dashboard.js
    assert page.dialogs == [] and page.errors == []


def test_league_table_sorts_by_column(page, server, league_dir):
    s, r = run_ids(league_dir)["league"]
    page.page.goto(f"{server.url}/#run={s}/{r}")
    page.page.wait_for_selector("#league-table tbody tr")
    first = "#league-table tbody tr:first-child td.member"
    assert page.page.inner_text(first) == XSS  # Elo, highest first: 1100 beats main
    page.page.click("#league-table th[data-key='member']")
    assert page.page.get_attribute("#league-table th[data-key='member']",
                                   "aria-sort") == "ascending"
    assert page.page.inner_text(first) == XSS  # "<" sorts before "m"
    page.page.click("#league-table th[data-key='member']")
    assert page.page.inner_text(first) == "main"
    assert page.errors == []


def test_psro_run_shows_meta_strategy_and_nash_conv(page, server, league_dir):
    page.page.goto(f"{server.url}/")
    page.page.wait_for_selector("#runs-table tbody tr")
    s, r = run_ids(league_dir)["psro-kuhn"]
    page.page.click(f"#runs-table tr[data-run='{s}/{r}']")
    page.rendered("nashconv-chart")
    page.rendered("meta-chart-0")
    page.rendered("meta-chart-1")
    assert page.page.locator("#meta-chart-0 .barlayer .trace").count() == 3  # one per member
    assert page.rows("league-table") == 6
    assert page.errors == []


def test_rows_written_while_open_appear_after_the_refresh(page, tmp_path, league_dir):
    copy_db(league_dir / "league.db", tmp_path / "league.db")
    r = run_ids(tmp_path)["league"][1]
    with BackgroundServer(create_app([tmp_path], refresh_s=REFRESH_S)) as srv:
        page.page.goto(f"{srv.url}/#run={run_ids(tmp_path)['league'][0]}/{r}")
        page.page.wait_for_selector("#league-table tbody tr")
        assert page.rows("league-table") == 2
        writer = LeagueDB(tmp_path / "league.db")
        try:
            mid = writer.add_member(r, "late-joiner", "vdn", ["agent"])
            sid = writer.add_snapshot(mid, 0, "/nowhere", "vdn", "g", ["agent"])
            writer.add_ratings(r, 9, [(sid, 1200.0, 31.0, 3.0, 2)])
            # (string waits would need eval, which the page's CSP forbids: use expect)
            expect(page.page.locator("#league-table tbody tr")).to_have_count(
                3, timeout=int(5 * REFRESH_S * 1000))
            assert "late-joiner" in page.page.locator("#league-table td.member").all_inner_texts()
            expect(page.page.locator("#elo-chart .scatterlayer .trace")).to_have_count(5)
        finally:
            writer.close()
    assert page.errors == []


def test_missing_database_shows_a_message(page, tmp_path):
    with BackgroundServer(create_app([tmp_path / "not-started"], refresh_s=REFRESH_S)) as srv:
        page.page.goto(f"{srv.url}/")
        page.page.wait_for_selector("#source-errors li")
        text = page.page.inner_text("#source-errors")
        assert "league database not found" in text and "not-started" in text
        assert page.page.is_hidden("#run-section")
    assert page.errors == []


def test_a_finished_run_without_ratings_does_not_say_yet(page, tmp_path):
    """A population=none run rates nothing; its finished page said "No ratings yet." and
    "No learner metrics yet." as if more were coming."""
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("single", experiment="default", game="openspiel/kuhn_poker")
    db.set_run_status(run, "finished")
    db.close()
    with BackgroundServer(create_app([tmp_path], refresh_s=REFRESH_S)) as srv:
        page.page.goto(f"{srv.url}/")
        expect(page.page.locator("#elo-chart")).to_contain_text("No ratings in this run.")
        expect(page.page.locator("#payoff-chart")).to_contain_text(
            "No evaluated pairs in this run.")
        expect(page.page.locator("#learner-empty")).to_have_text(
            "No learner metrics in this run.")
    assert page.errors == []


def test_static_export_opens_without_the_server(page, tmp_path, league_dir, monkeypatch):
    """The exported page opens from a file, and says how many older snapshots the payoff
    table and cross-play left out (the bound on the snapshots shown, 1000, is lowered to 2
    here: the page draws the same)."""
    from populations.dashboard import queries

    monkeypatch.setattr(queries, "MAX_MATRIX_SNAPSHOTS", 2)
    monkeypatch.setattr(queries, "_CACHE", {})  # cross-play computed under that bound
    out = tmp_path / "report.html"
    export_html(DashboardData([league_dir]), out)
    s, r = run_ids(league_dir)["league"]
    page.page.goto(f"{out.as_uri()}#run={s}/{r}")
    page.rendered("payoff-chart")
    page.rendered("elo-chart")
    assert page.rows("league-table") == 2
    assert XSS in page.page.locator("#league-table td.member").all_inner_texts()
    assert "static export" in page.page.inner_text("#status")
    expect(page.page.locator("#payoff-note")).to_be_visible()
    assert page.page.inner_text("#payoff-note") == (
        "2 older snapshots left out of this table: it shows the newest 2.")
    assert "1 older snapshot left out of cross-play: it shows the newest 2." in (
        page.page.inner_text("#alpharank-note"))
    assert "mean margin per episode" in page.page.inner_text("#payoff-meaning")
    page.page.select_option("#metric-select", "adv/agent_adversary_0/adv_mean")  # embedded per key
    page.rendered("metric-chart")
    assert page.dialogs == [] and page.errors == []


def test_crossplay_intervals_and_alpharank_show(page, tmp_path, league_dir):
    copy_db(league_dir / "league.db", tmp_path / "league.db")
    add_hostile_matches(tmp_path / "league.db")
    s, r = run_ids(tmp_path)["league"]
    with BackgroundServer(create_app([tmp_path], refresh_s=REFRESH_S)) as srv:
        doc = DashboardData([tmp_path]).view(s, r, "crossplay")
        page.page.goto(f"{srv.url}/#run={s}/{r}")
        page.page.wait_for_selector("#crossplay-table tbody tr")
        assert page.rows("crossplay-table") == len(doc["pairs"]) == 4  # v0-v1-v2 and XSS-v0
        names = page.page.locator("#crossplay-table td.member").all_inner_texts()
        assert f"{XSS} v0" in names  # shown as text, never run
        interval = re.compile(r"^\d+\.\d% \[\d+\.\d%, \d+\.\d%\]$")
        for text in page.page.locator("#crossplay-table td.win").all_inner_texts():
            assert interval.match(text), text
        first = doc["pairs"][0]
        margin = page.page.locator(
            f"#crossplay-table tr[data-pair='{first['row']}/{first['col']}'] td.margin")
        assert margin.inner_text() == (f"{first['margin']:.3f} [{first['margin_lo']:.3f}, "
                                       f"{first['margin_hi']:.3f}]")
        assert page.rows("alpharank-table") == len(doc["ratings"]) == 4
        top = next(x for x in doc["ratings"] if x["alpharank_rank"] == 1)
        first_row = page.page.locator("#alpharank-table tbody tr").first
        assert first_row.locator("td.member").inner_text() == top["label"]
        assert first_row.locator("td.pi").inner_text() == (
            f"{top['alpharank_pi']:.3f} [{top['alpharank_pi_lo']:.3f}, "
            f"{top['alpharank_pi_hi']:.3f}]")
        assert re.match(r"^\d+\.\d%$", first_row.locator("td.top").inner_text())
        assert re.match(r"^\d+ \[\d+, \d+\]$", first_row.locator("td.elo").inner_text())
        note = page.page.inner_text("#alpharank-note")
        assert "OpenSpiel alpharank" in note and f"{XSS} v0" in note  # left out, as text
        assert "Wilson score" in note and "Wilson score" in page.page.inner_text(
            "#crossplay-card h3")
        assert page.page.evaluate("document.scripts.length") == 2
    assert page.dialogs == [] and page.errors == []


def test_each_member_shows_its_own_learner(page, tmp_path):
    """A league of MAPPO, IPPO and VDN members (a real one, trained a generation): each row's
    kind names its learner; IPPO's read MAPPO, its snapshots' policy kind. A kind from the
    file is text (a crafted one as well), never markup."""
    from tests.populations.test_member_kinds import mixed_league

    db = LeagueDB(mixed_league(tmp_path))
    try:
        run = db.run_id("league")
        mid = db.add_member(run, "crafted", XSS, ["player_0"])
        db.add_snapshot(mid, 0, "/nowhere/x.pt", XSS, "g", ["player_0"])
    finally:
        db.close()
    s, r = run_ids(tmp_path)["league"]
    with BackgroundServer(create_app([tmp_path], refresh_s=REFRESH_S)) as srv:
        page.page.goto(f"{srv.url}/#run={s}/{r}")
        expect(page.page.locator("#league-table tbody tr")).to_have_count(4)
        kinds = {}
        for row in page.page.locator("#league-table tbody tr").all():
            cells = row.locator("td")
            kinds[cells.nth(0).inner_text()] = (cells.nth(1).inner_text(),
                                                cells.nth(1).get_attribute("title"))
        assert kinds == {"mappo": ("MAPPO", "mappo"), "ippo": ("IPPO", "ippo"),
                         "vdn": ("VDN", "vdn"), "crafted": (XSS, XSS)}
        assert page.page.evaluate("document.scripts.length") == 2
    assert page.dialogs == [] and page.errors == []


@pytest.mark.parametrize("where", ["live", "export"])
def test_ratings_are_drawn_as_steps_held_to_the_runs_last_step(page, tmp_path, where):
    """A league writes a rating only where it changes (2c7f023): each line is a step line
    ("hv": the rating holds until the next row) drawn on to the run's last rating step, not
    stopping at its own last row (which read as the snapshot gone) nor sloping between rows
    (as if the rating drifted); the held end has no marker, no row being there."""
    from tests.populations.test_dashboard_step_ratings import LAST_STEP, ROWS, step_league

    step_league(tmp_path)
    (s, r), = run_ids(tmp_path).values()
    with BackgroundServer(create_app([tmp_path], refresh_s=REFRESH_S)) as srv:
        if where == "live":
            page.page.goto(f"{srv.url}/#run={s}/{r}")
        else:
            out = tmp_path / "report.html"
            export_html(DashboardData([tmp_path]), out)
            page.page.goto(f"{out.as_uri()}#run={s}/{r}")
        page.rendered("elo-chart")
        page.rendered("mu-chart")
        for chart, field in (("elo-chart", 1), ("mu-chart", 2)):
            traces = {t["name"]: t for t in page.page.evaluate(
                f"document.getElementById('{chart}').data.map((t) => ({{name: t.name, "
                "x: t.x, y: t.y, shape: t.line && t.line.shape, "
                "size: t.marker && t.marker.size}))")}
            assert set(traces) == set(ROWS), chart
            for label, rows in ROWS.items():
                t = traces[label]
                steps, values = [x[0] for x in rows], [x[field] for x in rows]
                assert t["shape"] == "hv", (chart, label)
                if steps[-1] < LAST_STEP:  # held on from its last row, with no marker there
                    assert t["x"] == [*steps, LAST_STEP] and t["y"] == [*values, values[-1]]
                    assert t["size"] == [6] * len(steps) + [0], (chart, label)
                else:
                    assert t["x"] == steps and t["y"] == values, (chart, label)
        assert page.page.is_hidden("#banner")  # every part there (an export: embedded)
    assert page.dialogs == [] and page.errors == []


def test_switching_back_to_a_run_shows_that_run_again(page, server, league_dir):
    # A -> B -> A: the second visit to A must draw A, though the page already holds A's
    # answers from the first visit (unchanged, finished) and B is what is on screen
    ids = run_ids(league_dir)
    (sa, ra), (sb, rb) = ids["league"], ids["psro-kuhn"]
    page.page.goto(f"{server.url}/#run={sa}/{ra}")
    page.page.wait_for_selector("#crossplay-table tbody tr")
    page.rendered("payoff-chart")
    # two more refreshes after the cross-play came: A is all fetched (and marked so)
    after = int(page.page.get_attribute("body", "data-refreshes") or 0) + 2
    expect(page.page.locator("body")).to_have_attribute(
        "data-refreshes", re.compile(rf"^(?!({'|'.join(map(str, range(after)))})$)\d+$"))
    page.page.click(f"#runs-table tr[data-run='{sb}/{rb}']")
    expect(page.page.locator("#run-title")).to_contain_text("psro-kuhn")
    expect(page.page.locator("#league-table tbody tr")).to_have_count(6)
    page.page.evaluate(f"location.hash = '#run={sa}/{ra}'")
    expect(page.page.locator("#run-title")).to_contain_text("league")
    expect(page.page.locator("#league-table tbody tr")).to_have_count(2)
    expect(page.page.locator("#league-table td.member").first).to_have_text(XSS)
    expect(page.page.locator("#payoff-chart .ytick text").filter(has_text=f"{XSS} v0")
           ).to_have_count(1)
    assert page.errors == []
