"""Dashboard page fixes from walk 38b, in a real headless Chromium (see
``test_dashboard_browser``): a hidden chart is not resized, names keep their own
direction, long names are cut in charts, a large cross-play table is bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.populations.test_dashboard_browser import (  # noqa: F401  (pytest fixtures)
    Page, context, expect, league_dir, page, run_ids, server)


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
