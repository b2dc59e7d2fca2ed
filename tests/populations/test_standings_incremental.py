"""Payoffs and ratings folded in incrementally (``evaluation.Standings``) equal a replay of
every recorded match from scratch (``evaluation.recompute``), to the bit, and a league
decodes each recorded match once instead of all of them every generation (walk 22a, F2:
1.0 s CPU per generation at 132 snapshots, O(N^2) per generation with eval_window=0)."""

import random
import sqlite3

import pytest

from populations.db import LeagueDB, MatchRow
from populations.evaluation import Standings, recompute, win_rates
from populations.league import League
from tests.populations.test_league import _kuhn

SEATS = ("player_0", "player_1")


def _snapshots(db, run, n):
    mid = db.add_member(run, "main", "mappo", ["player_0", "player_1"])
    return [db.add_snapshot(mid, v, f"/nowhere/{v}.pt", "mappo", "g", SEATS)
            for v in range(n)]


def _pair(key, a, b, ret_ab, ret_ba):
    """Both halves of one role-swapped episode pair: a on player_0, then b."""
    return [MatchRow(f"{key}/ab/e0000", "g", {"player_0": a, "player_1": b},
                     {"player_0": ret_ab, "player_1": -ret_ab}),
            MatchRow(f"{key}/ba/e0000", "g", {"player_0": b, "player_1": a},
                     {"player_0": ret_ba, "player_1": -ret_ba})]


def _generation(rng, g, ids, episodes=3):
    """Generation g's rows: snapshot ids[g] against every earlier one."""
    rows = []
    for b in ids[:g]:
        for e in range(episodes):
            ab, ba = (rng.choice([-2.0, -1.0, 0.0, 1.0, 0.3, 2.5]) for _ in range(2))
            rows += [MatchRow(f"g{g:04d}/{ids[g]}-{b}/{side}/e{e:04d}", "g", seats,
                              {"player_0": r, "player_1": -r})
                     for side, seats, r in (
                         ("ab", {"player_0": ids[g], "player_1": b}, ab),
                         ("ba", {"player_0": b, "player_1": ids[g]}, ba))]
    return rows


def _payoffs(db, run):
    return sorted((p["row_snapshot"], p["col_snapshot"], p["value"], p["win_rate"], p["count"])
                  for p in db.payoffs(run))


def _full(path, tmp_path, name):
    """The payoffs and newest ratings a replay from scratch writes, on a copy of ``path``."""
    copy = tmp_path / f"{name}.db"
    src, dst = sqlite3.connect(path), sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    dst.close()
    db = LeagueDB(copy)
    try:
        ratings = recompute(db, 1, step=10**6)
        return _payoffs(db, 1), ratings.state_dict()
    finally:
        db.close()


def _ratings_rows(db, run):
    return [tuple(r) for r in db.conn.execute(
        "SELECT snapshot_id, step, elo, mu, sigma, matches FROM ratings WHERE run_id = ? "
        "ORDER BY snapshot_id, step", (run,))]


def test_incremental_generations_equal_a_replay_from_scratch_and_read_each_match_once(
        tmp_path):
    rng = random.Random(3)
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("league")
    ids = _snapshots(db, run, 14)
    st = Standings(db, run)
    for g in range(1, len(ids)):
        db.add_matches(run, _generation(rng, g, ids))
        st.update(step=g)
        fresh = Standings(db, run)
        fresh._write = lambda *a: None  # a replay from scratch, writing nothing
        fresh.update(step=g)
        assert st.ratings.state_dict() == fresh.ratings.state_dict()  # to the bit
        assert st.cells == fresh.cells
    assert st.read == db.count_matches(run)  # each once (a replay per generation: 13x7x)
    payoffs, ratings = _full(tmp_path / "league.db", tmp_path, "full")
    assert _payoffs(db, run) == payoffs and st.ratings.state_dict() == ratings
    newest = {s: (r["elo"], r["mu"], r["sigma"], r["matches"])
              for s, r in db.latest_ratings(run).items()}
    assert newest == {s: (e, m, sg, n) for s, e, m, sg, n in st.ratings.table()}
    # each step wrote the ratings that changed (the new snapshot and those it met) only
    steps = db.conn.execute("SELECT step, COUNT(*) FROM ratings GROUP BY step").fetchall()
    assert [tuple(r) for r in steps] == [(g, g + 1) for g in range(1, len(ids))]
    db.close()


def test_a_resume_mid_way_replays_once_and_ends_with_the_same_tables(tmp_path):
    def league(path, resume_at=None):
        rng = random.Random(5)
        db = LeagueDB(path)
        run = db.create_run("league")
        ids = _snapshots(db, run, 10)
        st = Standings(db, run)
        for g in range(1, len(ids)):
            db.add_matches(run, _generation(rng, g, ids))
            if g == resume_at:  # a new process: its Standings reads the database once
                st = Standings(db, run)
            st.update(step=g)
            if g == resume_at:  # and, killed after writing, it is resumed again
                st = Standings(db, run)
                st.update(step=g)
        return db, run, st

    whole, run, _ = league(tmp_path / "whole.db")
    resumed, _, st = league(tmp_path / "resumed.db", resume_at=6)
    assert _payoffs(resumed, run) == _payoffs(whole, run)
    assert _ratings_rows(resumed, run) == _ratings_rows(whole, run)
    assert st.read == resumed.count_matches(run)  # the last process: one replay, then new
    whole.close()
    resumed.close()


def test_a_half_completed_late_or_a_deleted_match_replays_from_scratch(tmp_path):
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("league")
    a, b, c = _snapshots(db, run, 3)
    first, second = _pair("x/1-2", a, b, 1.0, 0.5)
    db.add_matches(run, [first, *_pair("x/1-3", a, c, -1.0, 2.0)])
    st = Standings(db, run)
    st.update(step=1)
    db.add_matches(run, [second, *_pair("x/2-3", b, c, 0.0, 0.0)])  # first's half, late
    st.update(step=2)  # its outcome goes before 1-3's in recorded order
    assert st.ratings.state_dict() == recompute(db, run, step=2).state_dict()
    db.delete_matches(run, "x/1-3/")  # as evaluate_pairs replays a pair recorded with a NaN
    db.add_matches(run, _pair("x/1-3", a, c, 2.0, -2.0))
    st.update(step=3)
    full = Standings(db, run)
    full.update(step=3)
    assert st.ratings.state_dict() == full.ratings.state_dict() and st.cells == full.cells
    assert st.cells[(a, c)] == [1, 4.0, 1.0]  # the replayed pair, once
    db.close()


def test_win_rates_read_one_row_of_the_payoffs(tmp_path, monkeypatch):
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("league")
    a, b, c = _snapshots(db, run, 3)
    db.set_payoffs(run, [(a, b, 1.0, 0.75, 4, False), (b, a, -1.0, 0.25, 4, False),
                         (c, a, 0.0, 0.5, 1, False)])
    monkeypatch.setattr(db, "payoffs", lambda run_id: pytest.fail("the whole table read"))
    assert win_rates(db, run, a, [b, c, a]) == [0.75, None, None]
    assert win_rates(db, run, b, [a]) == [0.25]
    db.close()


def test_a_league_decodes_each_recorded_match_once(tmp_path, monkeypatch):
    """Four generations of a one-member Kuhn league with eval_window=0: every match row is
    decoded once by the ratings (before: all of them again each generation)."""
    decoded = []
    real = LeagueDB._decode

    def counting(self, text, table, row, column, kind):
        if table == "matches" and column == "returns":
            decoded.append(row)
        return real(self, text, table, row, column, kind)

    monkeypatch.setattr(LeagueDB, "_decode", counting)
    league = League(_kuhn(generations=4, frames_per_generation=64, eval_episodes=1),
                    tmp_path / "run")
    try:
        league.run()
        recorded = league.db.count_matches(league.run_id)
        stored = _payoffs(league.db, league.run_id)
        newest = league.db.latest_ratings(league.run_id)
    finally:
        league.close()
    assert recorded == 2 * (1 + 2 + 3 + 4)  # generation g: g pairs of 2 episodes
    assert len(decoded) == recorded and len(set(decoded)) == recorded
    payoffs, ratings = _full(tmp_path / "run" / "league.db", tmp_path, "replayed")
    assert stored == payoffs  # what the league wrote generation by generation
    assert {s: (r["elo"], r["mu"], r["sigma"]) for s, r in newest.items()} == {
        s: (ratings["elo"][s], ratings["mu"][s], ratings["sigma"][s]) for s in ratings["elo"]}
