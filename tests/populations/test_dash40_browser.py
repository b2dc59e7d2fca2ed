"""The dashboard's sweep section in a real headless Chromium (session 40): a sweep whose
jobs Hydra nested a folder deeper by a ``/`` in their swept value
(``game.name=openspiel/kuhn_poker,openspiel/leduc_poker``) shows one row per game, pooled
over seeds, each value as text (a crafted nested job's value too). Before, the section
stayed hidden. See ``test_dash40_sweeps`` for the sweep."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.populations import test_dashboard_browser as tdb
from tests.populations.test_dash39b_browser import WAIT, XSS, _cells, _open
from tests.populations.test_dash40_sweeps import nested_sweep
from tests.populations.test_dashboard_browser import Page, expect

context, page = tdb.context, tdb.page  # one Chromium for the module, a fresh page per test


@pytest.fixture(scope="module")
def nested(tmp_path_factory) -> Path:
    return nested_sweep(tmp_path_factory)


def test_a_nested_sweep_shows_one_row_per_value_with_a_slash(page: Page, nested):
    srv = _open(page, nested.parent.parent)
    try:
        expect(page.page.locator("#sweeps-body tbody tr")).to_have_count(2, **WAIT)
        rows = _cells(page)
        assert [r[:2] for r in rows] == [["openspiel/kuhn_poker", "2"],
                                         ["openspiel/leduc_poker", "2"]]
        assert all(" ± " in c for r in rows for c in r[2:])
        heads = page.page.locator("#sweeps-body thead th").all_inner_texts()
        assert heads == ["game.name", "n", "final_return", "eval_return"]
        title = page.page.inner_text("#sweeps-body h3")
        assert str(nested) in title and "4 jobs (4 finished)" in title
        assert page.errors == []
    finally:
        srv.stop()


def test_a_nested_jobs_value_is_shown_as_text(page: Page, nested, tmp_path):
    copy = tmp_path / "sw"
    shutil.copytree(nested, copy)
    (copy / "multirun.yaml").touch()
    for f in copy.glob("*/*kuhn_poker*/.hydra/overrides.yaml"):  # a crafted overrides.yaml
        lines = yaml.safe_load(f.read_text())
        f.write_text(yaml.safe_dump([f"game.name=openspiel/{XSS}" if x.startswith("game.name=")
                                     else x for x in lines]))
    srv = _open(page, copy)
    try:
        expect(page.page.locator("#sweeps-body tbody tr")).to_have_count(2, **WAIT)
        assert [r[0] for r in _cells(page)] == [f"openspiel/{XSS}", "openspiel/leduc_poker"]
        assert page.page.locator("#sweeps-body img").count() == 0
        assert page.page.title() != "pwned" and page.errors == []
    finally:
        srv.stop()
