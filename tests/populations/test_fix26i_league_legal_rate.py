"""A league rated an LLM member whose evaluation moves were all fallbacks like any other
member (fix 26i): in ``experiment=mixed_league`` an untrained generate-mode team named no
legal action (training's ``llm/charts/legal_rate`` 0.0), yet its snapshots' ratings came
with no hint that its fallback, not the model, played their matches. Each new snapshot's
share of legal evaluation moves is now logged as ``eval_legal_rate/<member>``, with one
warning per member below 0.5: one point a generation per member, a curve (6dbec56 logged
``eval_legal_rate/<member>@v<version>``, one key per snapshot, a point each, which the
dashboard's line chart did not draw; that key is left to a rival with no rate yet, rfix33b)."""

import logging
import sqlite3

from populations.experiment import run_experiment
from tests.populations.test_llm_experiments import TINY_LLM, _experiment

LEAGUE = ["experiment=mixed_league", "population.generations=1",
          "population.frames_per_generation=64", "population.nash_conv=false", *TINY_LLM]
# generate mode, one token a move on tic-tac-toe: every action (x(1,2)) is six tokens of the
# tiny model's word-level tokenizer, so every output is invalid and the random fallback plays
# (a Kuhn action, Pass or Bet, is one token: an untrained model names one now and then)
INVALID = ["game=tictactoe", "llm.grpo.action.mode=generate",
           "llm.grpo.action.sampling.max_new_tokens=1"]


def _metrics(db_path):
    db = sqlite3.connect(db_path)
    try:
        return db.execute("SELECT key, step, value FROM metrics WHERE key LIKE "
                          "'%legal_rate%' ORDER BY key, step").fetchall()
    finally:
        db.close()


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "fallback moves" in r.getMessage()]


def test_an_untrained_generating_member_is_logged_at_0_and_warned_once(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="populations.league"):
        summary = run_experiment(_experiment([*LEAGUE, *INVALID]), tmp_path)
    rows = _metrics(summary.database)
    assert ("llm/charts/legal_rate", 72, 0.0) in rows  # training's: the premise
    # generation 0 (v0 vs v0) at step 0, generation 1 at the league's step (mappo's frames);
    # llm v0, a rival at generation 1, has its rate (generation 0's row): no llm@v0 row
    assert [r for r in rows if r[0].startswith("eval_legal_rate/")] == [
        ("eval_legal_rate/llm", 0, 0.0), ("eval_legal_rate/llm", 64, 0.0)]
    (warned,) = _warnings(caplog)  # both generations below 0.5: said once
    assert warned.startswith("league member 'llm' (snapshot v0) named a legal action in 0% "
                             "of its "), warned
    assert "its rating measures mostly the fallback moves" in warned
    assert "llm.grpo.action.fallback=random" in warned
    # the closing table says it beside the ratings it qualifies: each LLM snapshot's own
    # rate, "-" for the member that counts no moves
    assert _legal_column(summary.table) == {("llm", 0): 0.0, ("llm", 1): 0.0,
                                            ("mappo", 0): "-", ("mappo", 1): "-"}


def test_a_scoring_member_is_logged_at_1_and_not_warned(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="populations.league"):
        summary = run_experiment(_experiment(LEAGUE), tmp_path)
    assert [r for r in _metrics(summary.database) if r[0].startswith("eval_legal_rate/")] == [
        ("eval_legal_rate/llm", 0, 1.0), ("eval_legal_rate/llm", 64, 1.0)]
    assert not _warnings(caplog)
    assert _legal_column(summary.table) == {("llm", 0): 1.0, ("llm", 1): 1.0,
                                            ("mappo", 0): "-", ("mappo", 1): "-"}


def test_each_snapshot_row_shows_its_own_evaluations_rate(tmp_path):
    """The rate's step is the league's frame count, which names no snapshot: a row goes to
    the member's newest snapshot published before it was logged, so v0 and v1 of one LLM
    member show their own rates (0.25, 0.75), also after a resume published v1 again; a run
    that logged no rate (no LLM member) has no such column."""
    from populations.db import LeagueDB
    from populations.experiment import league_table

    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("league", experiment="league", game="openspiel/kuhn_poker")
    seats = ["player_0", "player_1"]
    ids = {name: db.add_member(run, name, kind, seats)
           for name, kind in (("llm", "llm_grpo"), ("mappo", "mappo"))}

    def publish(name, version):
        db.add_snapshot(ids[name], version, tmp_path / f"{name}{version}.pt", "x",
                        "openspiel/kuhn_poker", seats)

    for name in ids:
        publish(name, 0)
    db.log_metrics(run, 0, {"eval_legal_rate/llm": 0.25})  # generation 0's evaluation
    for name in ids:
        publish(name, 1)
    db.log_metrics(run, 64, {"eval_legal_rate/llm": 0.75})
    publish("llm", 1)  # a resume publishes it again (its first time is kept)
    assert _legal_column(league_table(db, run)) == {("llm", 0): 0.25, ("llm", 1): 0.75,
                                                    ("mappo", 0): "-", ("mappo", 1): "-"}
    alone = db.create_run("alone", experiment="league", game="openspiel/kuhn_poker")
    db.add_snapshot(db.add_member(alone, "main", "mappo", seats), 0, tmp_path / "main0.pt",
                    "mappo", "openspiel/kuhn_poker", seats)
    assert [list(r) for r in league_table(db, alone)] == [
        ["member", "version", "kind", "elo", "mu", "sigma", "pairs"]]
    db.close()


def _legal_column(table):
    return {(r["member"], r["version"]): r["eval_legal_rate"] for r in table}



def test_the_closing_table_explains_eval_legal_rate(capsys):
    """A single LLM run's table has an eval_legal_rate column (fix 26f) that no legend line
    explained, and a sweep summary put it after nash_conv, away from eval_return's."""
    from populations.sweep_summary import ORDER
    from tests.populations.test_walk21_cli import ROW, _closing

    out = _closing([{**ROW, "eval_return": 0.5, "eval_ci95": 0.25, "eval_legal_rate": 0.0}],
                   capsys)
    assert ("\neval_legal_rate: share of the LLM team's evaluation moves that named a legal "
            "action (the rest were its fallback's, also with on_invalid=end; eval_return "
            "measures those too)\n") in out, out
    assert ORDER.index("eval_legal_rate") == ORDER.index("eval_ci95") + 1
