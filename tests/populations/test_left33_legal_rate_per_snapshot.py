"""Each LLM snapshot of a league gets its own evaluation legal rate (left33): in a league of
one LLM member, v0 has no pair at generation 0 and first plays v1 at generation 1, whose
rate was logged as ``eval_legal_rate/<member>`` and credited to the member's newest
snapshot, so v0's row read "not recorded". The rate is now logged per snapshot
(``eval_legal_rate/<member>@v<version>``); run folders with the per-member key still read."""

import sqlite3

from populations.experiment import run_experiment
from tests.populations.test_llm_experiments import TINY_LLM, _experiment

ALONE = ["experiment=kuhn_llm_selfplay", "population.generations=1",
         "population.nash_conv=false", *TINY_LLM]


def test_a_lone_llm_members_v0_gets_its_own_rate(tmp_path):
    summary = run_experiment(_experiment(ALONE), tmp_path)
    legal = {(r["member"], r["version"]): r["eval_legal_rate"] for r in summary.table}
    assert set(legal) == {("llm", 0), ("llm", 1)}
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in legal.values()), legal
    db = sqlite3.connect(summary.database)
    try:
        keys = {k for (k,) in db.execute(
            "SELECT key FROM metrics WHERE key LIKE 'eval_legal_rate/%'")}
    finally:
        db.close()
    assert keys == {"eval_legal_rate/llm@v0", "eval_legal_rate/llm@v1"}


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
