"""``selfplay-eval`` prints each pair's win rate and margin under the ratings (walk 20): it
printed only Elo and mu, which rate the pairs one after another, so over a few pairs they
ordered two policies against their own win rate (0.50 over 10 pairs, margin +0.20 for the
one rated below); and ``matches`` there counted role-swapped pairs, as the dashboard's
``rated pairs`` does now."""

import sqlite3

from tests.populations.test_eval_names import (
    KUHN,
    _eval,
    snapshots,  # noqa: F401 (a fixture)
)


def test_each_pair_is_printed_with_the_win_rate_and_margin_it_recorded(
        snapshots, tmp_path, capsys):  # noqa: F811
    code, out, err = _eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes",
                            "6", *snapshots], capsys)
    assert code == 0, err
    lines = out.splitlines()
    ratings = [ln for ln in lines if "  elo " in ln]
    assert len(ratings) == 2 and all(ln.endswith("pairs 6") for ln in ratings), out
    (pair,) = [ln for ln in lines if " vs " in ln]
    with sqlite3.connect(tmp_path / "r.db") as conn:
        win, value, count = conn.execute(
            "SELECT p.win_rate, p.value, p.count FROM payoffs p JOIN snapshots s ON "
            "p.row_snapshot = s.id JOIN members m ON s.member_id = m.id WHERE m.name = "
            "'main_v0000'").fetchone()
    assert pair.split() == ["main_v0000", "vs", "exploiter_v0000:", "win", "rate",
                            f"{win:.2f}", "over", str(count), "pairs,", "margin",
                            f"{value:+.3f}", "per", "episode"], pair
