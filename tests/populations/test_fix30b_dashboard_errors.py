"""The dashboard's answer to an unexpected failure: status 500 with one generic line; the
exception's text (which may hold file paths or row values) goes to the server's log only.
A database that cannot be read keeps its own one-line message."""

from __future__ import annotations

import logging

import httpx

from populations.dashboard import BackgroundServer, DashboardData, create_app
from populations.dashboard import data as dashboard_data
from populations.dashboard.app import INTERNAL_ERROR
from populations.db import LeagueDB

SECRET = "/home/alice/private/token=s3cr3t"


def _run_folder(tmp_path):
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("r", game="openspiel/kuhn_poker", config={"seed": 0})
    db.close()
    return run


def test_an_unexpected_failure_answers_a_generic_500_and_logs_the_detail(
        tmp_path, monkeypatch, caplog):
    """on_error answered ``internal error: KeyError: '<the exception's text>'`` to the
    browser, without the security headers (Starlette's outermost middleware sent it), and
    re-raised: uvicorn logged the traceback a second time and closed the connection, so
    the next request on it could fail with "connection reset". No reading of a real
    database reaches it (every database failure is a SourceError), so a view is made to
    fail the way a bug in a query would."""
    run = _run_folder(tmp_path)

    def broken(db, run, max_points, compact):
        raise KeyError(SECRET)

    monkeypatch.setitem(dashboard_data.RUN_VIEWS, "league", broken)
    source = DashboardData([tmp_path]).runs()["runs"][0]["source"]
    with caplog.at_level(logging.ERROR), \
            BackgroundServer(create_app([tmp_path])) as server, \
            httpx.Client(base_url=server.url, timeout=10) as http:
        res = http.get(f"/api/runs/{source}/{run}/league")
        ok = http.get(f"/api/runs/{source}/{run}/ratings")  # the server goes on serving
    assert res.status_code == 500
    assert res.json() == {"error": INTERNAL_ERROR}
    assert "s3cr3t" not in res.text and "KeyError" not in res.text
    assert "content-security-policy" in res.headers
    assert ok.status_code == 200, ok.text
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.name for r in logged] == ["populations.dashboard.app"], \
        [r.getMessage() for r in logged]  # once, not again by uvicorn
    assert SECRET in logged[0].getMessage() and "KeyError" in logged[0].getMessage()
    assert logged[0].exc_info  # with its traceback


def test_a_database_that_cannot_be_read_keeps_its_own_message(tmp_path):
    """SourceError answers are unchanged: the status and the one line naming the file."""
    (tmp_path / "league.db").write_text("not a database")
    with BackgroundServer(create_app([tmp_path])) as server, \
            httpx.Client(base_url=server.url, timeout=10) as http:
        source = http.get("/api/runs").json()["errors"][0]["source"]
        res = http.get(f"/api/runs/{source}/1/league")
    assert res.status_code == 503
    assert str(tmp_path / "league.db") in res.json()["error"]
    assert "\n" not in res.json()["error"]
