"""The dashboard's sweep section in a real headless Chromium (walk 39b L4): a folder holding
a sweep shows one row per setting with its figures pooled over seeds, as
``python -m populations.sweep_summary`` prints them, every value as text. See
``test_dashboard_browser`` for the fixtures and ``test_dash39b_sweeps`` for the sweep."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from populations.dashboard import BackgroundServer, create_app
from tests.populations import test_dashboard_browser as tdb
from tests.populations.test_dash38_server import small_league
from tests.populations.test_dash39b_sweeps import expected_groups, real_sweep
from tests.populations.test_dashboard_browser import REFRESH_S, Page, expect

context, page = tdb.context, tdb.page  # one Chromium for the module, a fresh page per test

WAIT_MS = 90_000  # a wait, not a bound: Plotly's script alone took 15 s on a loaded machine
WAIT = {"timeout": WAIT_MS}
XSS = '<img src=x onerror="document.title=\'pwned\'">'


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    return real_sweep(tmp_path_factory)


def _open(page: Page, folder: Path) -> BackgroundServer:
    srv = BackgroundServer(create_app([folder], refresh_s=REFRESH_S)).start()
    page.page.set_default_timeout(WAIT_MS)
    page.page.goto(srv.url, wait_until="commit")
    page.page.wait_for_selector("#runs-table tbody tr[data-run]")
    return srv


def _cells(page: Page) -> list[list[str]]:
    return page.page.evaluate("""() => [...document.querySelectorAll(
        "#sweeps-body table tbody tr")].map(tr => [...tr.cells].map(td => td.textContent))""")


def test_the_sweep_section_shows_each_setting_pooled_over_seeds(page: Page, swept):
    srv = _open(page, swept.parent)
    try:
        expect(page.page.locator("#sweeps-section")).to_be_visible(**WAIT)
        expect(page.page.locator("#sweeps-body tbody tr")).to_have_count(2, **WAIT)
        _, groups = expected_groups(swept)
        want = [[g.setting["algo"], "2", *(f"{m:.3f} ± {s:.3f}" for m, s, _ in
                                            (g.stats[c] for c in ("final_return", "eval_return")))]
                for g in groups]
        assert _cells(page) == want
        heads = page.page.locator("#sweeps-body thead th").all_inner_texts()
        assert heads == ["algo", "n", "final_return", "eval_return"]
        title = page.page.inner_text("#sweeps-body h3")
        assert str(swept) in title and "4 jobs (4 finished)" in title and "pooling seed" in title
        assert page.errors == []
    finally:
        srv.stop()


def test_a_setting_is_shown_as_text(page: Page, swept, tmp_path):
    copy = tmp_path / "sw"
    shutil.copytree(swept, copy)
    for job in copy.glob("[01]_algo=mappo*"):  # what a crafted overrides.yaml may say
        f = job / ".hydra" / "overrides.yaml"
        lines = yaml.safe_load(f.read_text())
        f.write_text(yaml.safe_dump([f"algo={XSS}" if x == "algo=mappo" else x for x in lines]))
    srv = _open(page, copy)
    try:
        expect(page.page.locator("#sweeps-body tbody tr")).to_have_count(2, **WAIT)
        assert [r[0] for r in _cells(page)] == [XSS, "ippo"]
        assert page.page.locator("#sweeps-body img").count() == 0
        assert page.page.title() != "pwned" and page.errors == []
    finally:
        srv.stop()


def test_runs_without_a_sweep_show_no_sweep_section(page: Page, tmp_path):
    srv = _open(page, small_league(tmp_path / "run", ["x", "y"]))
    try:
        # an attribute wait, not wait_for_function: a string predicate is evaluated with eval,
        # which the dashboard's Content-Security-Policy (script-src 'self') refuses
        expect(page.page.locator("body")).to_have_attribute(
            "data-refreshes", re.compile(r"^[1-9][0-9]*$"), **WAIT)
        assert page.page.locator("#sweeps-section").is_hidden()
        assert page.errors == []
    finally:
        srv.stop()
