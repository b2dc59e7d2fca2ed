"""A learner curve of one point was drawn as a line (``mode: "lines"``), which draws nothing:
a one-generation league of one LLM member logs its legal rate once (v1's
``eval_legal_rate/llm`` and v0's ``eval_legal_rate/llm@v0``, one curve, rfix33b), and any
metric logged once showed an empty chart with its name in the legend. Such a curve is a
marker now; longer ones stay lines."""

from __future__ import annotations

from populations.dashboard import BackgroundServer, create_app
from populations.db import LeagueDB
from tests.populations.test_dashboard_browser import (  # noqa: F401 - fixtures
    context,
    page,
    run_ids,
)


def test_a_curve_of_one_point_is_drawn_as_a_marker(page, tmp_path):  # noqa: F811
    db = LeagueDB(tmp_path / "league.db")
    try:
        run = db.create_run("league", experiment="league", game="openspiel/kuhn_poker")
        db.log_metrics(run, 0, {"llm/charts/legal_rate": 0.5})
        db.log_metrics(run, 64, {"llm/charts/legal_rate": 0.75, "eval_legal_rate/llm": 1.0,
                                 "eval_legal_rate/llm@v0": 0.5})
    finally:
        db.close()
    (s, r), = run_ids(tmp_path).values()
    with BackgroundServer(create_app([tmp_path], refresh_s=1.0)) as srv:
        page.page.goto(f"{srv.url}/#run={s}/{r}")
        page.rendered("learner-chart-0")
        traces = {t["name"]: t for t in page.page.evaluate(
            "document.getElementById('learner-chart-0').data.map((t) => ({name: t.name, "
            "mode: t.mode, x: t.x, y: t.y}))")}
    assert traces == {
        "eval_legal_rate/llm": {"name": "eval_legal_rate/llm", "mode": "markers", "x": [64],
                                "y": [0.75]},
        "llm/charts/legal_rate": {"name": "llm/charts/legal_rate", "mode": "lines",
                                  "x": [0, 64], "y": [0.5, 0.75]}}
    assert page.dialogs == [] and page.errors == []
