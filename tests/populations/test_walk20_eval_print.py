"""``selfplay-eval`` prints each pair's win rate and margin under the ratings (walk 20): it
printed only Elo and mu, which rate the pairs one after another, so over a few pairs they
ordered two policies against their own win rate (0.50 over 10 pairs, margin +0.20 for the
one rated below); and ``matches`` there counted role-swapped pairs, as the dashboard's
``rated pairs`` does now."""

import sqlite3

from populations.crossplay import wilson
from tests.populations.eval_cli_run import run_eval
from tests.populations.test_eval_names import (
    KUHN,
    snapshots,  # noqa: F401 (a fixture)
)


def test_each_pair_is_printed_with_the_win_rate_and_margin_it_recorded(
        snapshots, tmp_path, capsys):  # noqa: F811
    code, out, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes",
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
    lo, hi = wilson(win * count, count)  # its 95 % interval (fix 26f)
    assert pair.split() == ["main_v0000", "vs", "exploiter_v0000:", "win", "rate",
                            f"{win:.2f}", "(95%", "Wilson", f"[{lo:.2f},", f"{hi:.2f}])",
                            "over", str(count),
                            "pairs,", "margin", f"{value:+.3f}", "per", "episode"], pair


def test_a_snapshot_with_another_action_count_is_one_line_before_the_db(tmp_path, capsys):
    """mpe2 simple_tag snapshots (5 moves) on vmas/simple_tag (9): the observation check
    passed, then a traceback 'The size of tensor a (9) must match the size of tensor b (5)'
    and a failed run row in the database."""
    import games
    from marl import registry

    spec = games.make("pettingzoo/mpe2.simple_tag_v3", max_cycles=25).spec
    paths = [str(registry.get("mappo").build(spec, seed=k).policy().save(
        tmp_path / f"m{k}" / "v0001.pt")) for k in (0, 1)]
    code, _, err = run_eval(["--game", "vmas/simple_tag", "--game-kwargs",
                          '{"num_adversaries": 3, "num_good_agents": 1, "max_steps": 25}',
                          "--db", str(tmp_path / "r.db"), "--episodes", "1", *paths], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("selfplay-eval: m0_v0001 (pettingzoo/mpe2.simple_tag_v3(max_"
                               "cycles=25)) was trained with 5 actions for adversary_0"), lines
    assert lines[0].endswith("gives 9"), lines
    assert not (tmp_path / "r.db").exists()
