"""Standings notices a replayed pair whose rows took the ids of the rows deleted for it.

``matches.id`` is SQLite's rowid without AUTOINCREMENT: deleting the highest rows and
inserting again hands out the same ids, so "as many rows up to the last id read as were read"
still holds though rows read were deleted. ``evaluate_pairs`` does exactly that when the pair
it replays (one an earlier version recorded with a NaN) is the newest (review 22, R3)."""

import json
import time

from populations.db import LeagueDB
from populations.evaluation import Standings
from tests.populations.test_standings_incremental import _full, _pair, _payoffs, _snapshots


def _record_nan_pair(db, run, key, a, b):
    """A pair as an earlier version recorded it: NaN returns (add_matches refuses those)."""
    nan = float("nan")
    with db.conn:
        for m in _pair(key, a, b, nan, nan):
            db.conn.execute(
                "INSERT INTO matches (run_id, key, game, seats, returns, seed, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run, m.key, m.game, json.dumps(m.seats), json.dumps(m.returns), m.seed,
                 time.time()))


def _check_equals_a_replay(db, run, st, tmp_path):
    payoffs, ratings = _full(tmp_path / "league.db", tmp_path, "replay")
    assert _payoffs(db, run) == payoffs
    assert st.ratings.state_dict() == ratings
    fresh = Standings(db, run)
    fresh.update(step=10)
    assert st.cells == fresh.cells


def test_a_replayed_nan_pair_on_the_newest_rows_is_folded_in(tmp_path):
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("league")
    a, b, c = _snapshots(db, run, 3)
    db.add_matches(run, _pair("g1/2-1", b, a, 1.0, 1.0))
    _record_nan_pair(db, run, "g2/3-1", c, a)  # the newest rows
    st = Standings(db, run)
    st.update(step=2)
    ids = [r[0] for r in db.conn.execute("SELECT id FROM matches ORDER BY id")]
    db.delete_matches(run, "g2/3-1/")  # evaluate_pairs replays it
    db.add_matches(run, _pair("g2/3-1", c, a, 2.0, 2.0))
    assert [r[0] for r in db.conn.execute("SELECT id FROM matches ORDER BY id")] == ids
    st.update(step=3)
    assert st.cells[(c, a)] == [1, 0.0, 0.5]  # the replayed pair, once (a draw)
    _check_equals_a_replay(db, run, st, tmp_path)
    db.close()


def test_a_deleted_last_row_refilled_below_it_is_noticed(tmp_path):
    # ids 1-2, (3-4 deleted before reading), 5-6: deleting 5-6 and recording them again
    # gives them ids 3-4, and the count up to 6 is 4 again, though row 6 is gone
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("league")
    a, b, c = _snapshots(db, run, 3)
    db.add_matches(run, [*_pair("p/1", a, b, 1.0, -1.0), *_pair("p/2", a, c, 1.0, 1.0)])
    _record_nan_pair(db, run, "p/3", b, c)
    db.delete_matches(run, "p/2/")
    st = Standings(db, run)
    st.update(step=1)
    db.delete_matches(run, "p/3/")
    db.add_matches(run, _pair("p/3", b, c, 3.0, 3.0))
    assert [r[0] for r in db.conn.execute("SELECT id FROM matches ORDER BY id")] == [1, 2, 3, 4]
    st.update(step=2)
    assert st.cells[(b, c)] == [1, 0.0, 0.5]
    _check_equals_a_replay(db, run, st, tmp_path)
    db.close()
