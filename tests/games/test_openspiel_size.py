"""Tree sizes of OpenSpiel games without walking their views (``games.openspiel``)."""

import pyspiel
import pytest

from games.openspiel import count_histories, estimate_histories


def test_count_matches_known_sizes_and_stops_past_the_limit():
    kuhn = pyspiel.load_game("kuhn_poker")
    assert count_histories(kuhn, 10**6) == 58  # 1 deal, 6 deals of 2 cards, 51 below
    assert count_histories(kuhn, 10) == 11  # more than 10
    assert count_histories(pyspiel.load_game("tic_tac_toe"), 10**5) == 10**5 + 1


def test_estimate_is_exact_on_a_uniform_tree_and_close_on_others():
    # every node of a turn-based matrix game has the same branching: Knuth's estimate is exact
    brps = pyspiel.load_game_as_turn_based("matrix_brps")
    assert estimate_histories(brps, probes=4).histories == 13  # 1 + 3 + 9
    leduc = pyspiel.load_game("leduc_poker")
    est = estimate_histories(leduc)
    assert est.histories == pytest.approx(count_histories(leduc, 10**6), rel=0.3)
    assert est == estimate_histories(leduc)  # seeded: the same answer every time
    assert est.longest >= 4
