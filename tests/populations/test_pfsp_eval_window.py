"""PFSP with ``eval_window=k`` weighs every candidate by measured win rates (walk 22a, F6):
the learner's latest snapshot meets only the last k in evaluation, so against older ones
the win rate of the member's newest snapshot that met them counts, not a default 0.5 that
flattened PFSP into uniform FSP (96.7 % of its mass at 118 snapshots, eval_window=2)."""

import numpy as np

from populations.db import LeagueDB
from populations.evaluation import pfsp_win_rates, win_rates
from populations.league import League
from populations.matchmaking import MatchmakingConfig, opponent_distribution
from tests.populations.test_league import _kuhn

SEATS = ("player_0", "player_1")


def _estimates(payoffs, own, snaps):
    """By hand: the latest's win rate; else the newest own snapshot's that met the
    candidate, published after it or in its generation; else None."""
    latest = own[-1]
    out = []
    for o in snaps:
        if (latest.id, o.id) in payoffs:
            out.append(payoffs[(latest.id, o.id)])
            continue
        met = [r for r in own if r.id != o.id and (r.id > o.id or r.version == o.version)
               and (r.id, o.id) in payoffs]
        out.append(payoffs[(met[-1].id, o.id)] if met else None)
    return out


def _league(tmp_path, eval_window, generations):
    cfg = _kuhn(generations=generations, frames_per_generation=512, eval_episodes=4,
                eval_window=eval_window,
                matchmaking=MatchmakingConfig(rule="pfsp", weighting="hard"))
    return League(cfg, tmp_path / f"w{eval_window}")


def test_pfsp_with_an_eval_window_follows_measured_win_rates(tmp_path):
    league = _league(tmp_path, eval_window=2, generations=6)
    try:
        league.run()
        draw = league.draw("main")
        snaps = league.store.snapshots()
        payoffs = {(p["row_snapshot"], p["col_snapshot"]): p["win_rate"]
                   for p in league.db.payoffs(league.run_id)}
    finally:
        league.close()
    assert [s.id for s in snaps] == list(draw.ids)
    latest = snaps[-1]
    want = _estimates(payoffs, snaps, snaps)
    assert [w is None for w in want] == [s.id == latest.id for s in snaps]  # itself alone
    direct = [(latest.id, s.id) in payoffs for s in snaps]
    assert sum(direct) == 2  # the window: the rest are the newest evidence, not 0.5
    assert any(w != 0.5 for w, d in zip(want, direct, strict=True) if w is not None and not d)
    np.testing.assert_allclose(draw.probs, opponent_distribution(want, MatchmakingConfig()))


def test_without_a_window_pfsp_reads_the_latest_snapshots_own_win_rates(tmp_path):
    league = _league(tmp_path, eval_window=0, generations=3)
    try:
        league.run()
        draw = league.draw("main")
        snaps = league.store.snapshots()
        direct = win_rates(league.db, league.run_id, snaps[-1].id, [s.id for s in snaps])
    finally:
        league.close()
    assert direct[:-1] == [w for w in direct[:-1] if w is not None]  # all evaluated
    np.testing.assert_allclose(draw.probs, opponent_distribution(direct, MatchmakingConfig()))


def test_the_rule_on_a_table_by_hand(tmp_path):
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("league")
    main = db.add_member(run, "main", "mappo", SEATS)
    other = db.add_member(run, "exploiter", "mappo", SEATS)
    ids = {}
    for v in range(4):  # published main v, then exploiter v, each generation
        ids[("m", v)] = db.add_snapshot(main, v, f"/x/m{v}.pt", "mappo", "g", SEATS)
        ids[("e", v)] = db.add_snapshot(other, v, f"/x/e{v}.pt", "mappo", "g", SEATS)
    m, e = (lambda v: ids[("m", v)]), (lambda v: ids[("e", v)])
    db.set_payoffs(run, [
        (m(3), m(2), 0.0, 0.6, 1, False),  # the latest met m2 (its window)
        (m(2), m(0), 0.0, 0.9, 1, False),  # m0: newest evidence m2, not m1
        (m(1), m(0), 0.0, 0.7, 1, False),
        (m(1), e(1), 0.0, 0.2, 1, False),  # e1: m1 of its generation, published before it
        (m(0), m(1), 0.0, 0.1, 1, False),  # older than m1: not evidence about it
        (m(2), m(3), 0.0, 0.3, 1, False),  # older than the latest: not evidence about it
    ])
    snaps = db.snapshots(run)
    own = [s for s in snaps if s.member == "main"]
    got = pfsp_win_rates(db, run, own, snaps)
    by = {(s.member[0], s.version): w for s, w in zip(snaps, got, strict=True)}
    assert by == {("m", 0): 0.9, ("e", 0): None, ("m", 1): None, ("e", 1): 0.2,
                  ("m", 2): 0.6, ("e", 2): None, ("m", 3): None, ("e", 3): None}
    db.close()
