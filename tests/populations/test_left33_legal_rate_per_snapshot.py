"""Each LLM snapshot of a league gets its own evaluation legal rate (left33): in a league of
one LLM member, v0 has no pair at generation 0 and first plays v1 at generation 1, whose
rate was logged as ``eval_legal_rate/<member>`` and credited to the member's newest
snapshot, so v0's row read "not recorded". v0, a rival with no rate yet, now logs its own
(``eval_legal_rate/<member>@v<version>``), beside v1's ``eval_legal_rate/<member>``, the
member's curve (rfix33b: 6dbec56 logged every snapshot's rate under its own key, one point
each, which the dashboard's line chart did not draw)."""

import logging
import sqlite3

import pytest

from populations.experiment import run_experiment
from tests.populations.test_llm_experiments import TINY_LLM, _experiment

ALONE = ["experiment=kuhn_llm_selfplay", "population.generations=1",
         "population.nash_conv=false", *TINY_LLM]


def test_a_lone_llm_members_v0_gets_its_own_rate(tmp_path, caplog):
    with caplog.at_level(logging.INFO):
        summary = run_experiment(_experiment(ALONE), tmp_path)
    # what a tiny team's build spends its time on is said once, in the member line (the
    # build's own line, 232a5d4, said it again)
    said = [r.getMessage() for r in caplog.records]
    assert sum("builds its vocabulary" in line for line in said) == 1, said
    legal = {(r["member"], r["version"]): r["eval_legal_rate"] for r in summary.table}
    assert set(legal) == {("llm", 0), ("llm", 1)}
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in legal.values()), legal
    db = sqlite3.connect(summary.database)
    try:
        rows = db.execute("SELECT key, step, value FROM metrics WHERE key LIKE "
                          "'eval_legal_rate/%' ORDER BY key").fetchall()
    finally:
        db.close()
    # both at generation 1's step: v1's on the member's curve, v0's (its first pair) its own
    assert [(k, s) for k, s, _ in rows] == [("eval_legal_rate/llm", rows[0][1]),
                                            ("eval_legal_rate/llm@v0", rows[0][1])]
    assert [v for _, _, v in rows] == pytest.approx([legal[("llm", 1)], legal[("llm", 0)]],
                                                    abs=5e-4)  # the table's: rounded


def test_per_snapshot_and_older_per_member_rows_read_back(tmp_path):
    """A snapshot's own key names it whenever it was logged; an older run's per-member key
    still goes to the member's newest snapshot published before the row."""
    from populations.db import LeagueDB
    from populations.experiment import league_table

    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("league", experiment="league", game="openspiel/kuhn_poker")
    seats = ["player_0", "player_1"]
    ids = {name: db.add_member(run, name, "llm_grpo", seats) for name in ("llm", "old")}
    for version in (0, 1):
        for name in ids:
            db.add_snapshot(ids[name], version, tmp_path / f"{name}{version}.pt", "x",
                            "openspiel/kuhn_poker", seats)
    db.log_metrics(run, 64, {"eval_legal_rate/llm@v1": 0.75, "eval_legal_rate/llm@v0": 0.5,
                             "eval_legal_rate/old": 0.25})
    legal = {(r["member"], r["version"]): r["eval_legal_rate"] for r in league_table(db, run)}
    assert legal == {("llm", 0): 0.5, ("llm", 1): 0.75, ("old", 0): None, ("old", 1): 0.25}
    db.close()
