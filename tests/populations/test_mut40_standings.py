"""The payoff table's mirror entry (mut40: ``(b, a)`` given a's win rate instead of ``1 -``
it passed every test): from recorded role-swapped pairs, ``win_rate[a, b] + win_rate[b, a]
== 1`` and ``value[a, b] == -value[b, a]``, both equal to a count by hand, through
:func:`recompute` and an incremental :class:`Standings`."""

import pytest

from populations.db import LeagueDB, MatchRow
from populations.evaluation import Standings, recompute, win_rates

SEATS = ("player_0", "player_1")


def _pair(key, a, b, ret_ab, ret_ba):
    """Both halves of one role-swapped pair (general-sum: player_1 gets a fixed 0.25)."""
    return [MatchRow(f"{key}/ab/e0000", "g", {"player_0": a, "player_1": b},
                     {"player_0": ret_ab, "player_1": 0.25}),
            MatchRow(f"{key}/ba/e0000", "g", {"player_0": b, "player_1": a},
                     {"player_0": ret_ba, "player_1": 0.25})]


# (a on player_0 first, b, a's return as player_0, b's return as player_0)
PAIRS = [(1, 2, 1.0, 0.0), (1, 2, 0.0, 1.0), (1, 2, 0.25, 0.25), (1, 2, 2.0, -1.0),
         (2, 3, 1.0, -1.0), (3, 2, 0.5, 0.0), (1, 3, -1.0, 1.0)]


def _by_hand():
    """(a, b) -> (mean margin per episode, win rate with draws 1/2, pairs), both ways."""
    cells: dict = {}
    for a, b, ab, ba in PAIRS:
        tot_a, tot_b = ab + 0.25, 0.25 + ba  # a plays both seats once, as does b
        score = 0.5 if tot_a == tot_b else float(tot_a > tot_b)
        for cell, m, s in (((a, b), (tot_a - tot_b) / 2, score),
                           ((b, a), (tot_b - tot_a) / 2, 1.0 - score)):
            n, ms, ss = cells.get(cell, (0, 0.0, 0.0))
            cells[cell] = (n + 1, ms + m, ss + s)
    return {c: (ms / n, ss / n, n) for c, (n, ms, ss) in cells.items()}


def _table(db, run):
    return {(p["row_snapshot"], p["col_snapshot"]): (p["value"], p["win_rate"], p["count"])
            for p in db.payoffs(run)}


@pytest.mark.parametrize("incremental", [False, True])
def test_mirror_entries_are_the_complement(tmp_path, incremental):
    db = LeagueDB(tmp_path / "league.db")
    try:
        run = db.create_run("league")
        mid = db.add_member(run, "main", "mappo", list(SEATS))
        ids = [db.add_snapshot(mid, v, f"/nowhere/{v}.pt", "mappo", "g", SEATS)
               for v in range(3)]
        assert ids == [1, 2, 3]
        rows = [r for i, p in enumerate(PAIRS) for r in _pair(f"p{i}/{p[0]}-{p[1]}", *p)]
        if incremental:
            st = Standings(db, run)
            for k in range(0, len(rows), 4):  # two pairs at a time
                db.add_matches(run, rows[k:k + 4])
                st.update(step=k)
        else:
            db.add_matches(run, rows)
            recompute(db, run, step=0)
        table = _table(db, run)
        expected = _by_hand()
        assert set(table) == set(expected)
        for cell, (value, rate, n) in expected.items():
            assert table[cell] == pytest.approx((value, rate, n), abs=1e-12), cell
        for (a, b), (value, rate, n) in table.items():
            assert rate + table[(b, a)][1] == pytest.approx(1.0, abs=1e-12)
            assert value == pytest.approx(-table[(b, a)][0], abs=1e-12)
            assert n == table[(b, a)][2]
        # 1 against 2: a win, a loss, a draw and a win; 2 against 1 the rest
        assert win_rates(db, run, 1, [2, 3]) == [pytest.approx(0.625), 0.0]
        assert win_rates(db, run, 2, [1]) == [pytest.approx(0.375)]
    finally:
        db.close()
