"""review39a M4 in a real headless Chromium: a large run's background cross-play that
fails says why on the page, as text, instead of "Computing ..." forever. See
``test_dashboard_browser`` for the fixtures."""

from __future__ import annotations

from populations.dashboard import queries
from tests.populations import test_dashboard_browser as tdb
from tests.populations.test_dash38_server import small_league
from tests.populations.test_dash39_browser import WAIT, _open
from tests.populations.test_dashboard_browser import Page, expect

context, page = tdb.context, tdb.page  # one Chromium for the module, a fresh page per test


def test_a_failed_background_cross_play_is_said_as_text(page: Page, tmp_path, monkeypatch):
    folder = small_league(tmp_path / "run", [f"m{i}" for i in range(6)])  # 15 episodes
    monkeypatch.setattr(queries, "_CACHE", {})
    monkeypatch.setattr(queries, "CROSSPLAY_INLINE_EPISODES", 10)

    def boom(db, run_id):
        raise ValueError("<b>corrupt</b> row")

    monkeypatch.setattr(queries, "compute_crossplay", boom)
    srv = _open(page, folder)
    try:
        empty = page.page.locator("#crossplay-empty")
        expect(empty).to_contain_text(
            "cross-play computation failed: ValueError: <b>corrupt</b> row. It is tried "
            "again when the run records new episodes.", **WAIT)
        assert page.page.locator("#crossplay-empty b").count() == 0  # text, not markup
        assert page.page.get_attribute("#crossplay-card", "data-pending") == ""
    finally:
        srv.stop()
        queries.CROSSPLAY_CACHE.wait(60)
