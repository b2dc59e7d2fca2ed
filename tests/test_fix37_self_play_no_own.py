"""Matchmaking ``self_play`` in a league: a member with no snapshot of its own yet meets the
league's snapshots (session 37). Since each member draws only its own snapshots (67be6f2),
such a member's draw raised ``ValueError: no candidate opponents`` though the league had
snapshots (a member a resume adds has none of its own until it publishes). Played on a real
league's store and database: only the second member has published."""

from __future__ import annotations

import pytest

from tests.test_meta37_self_play_own import _league


def test_a_member_without_own_snapshots_meets_the_others(tmp_path):
    league = _league(tmp_path)
    try:
        second = league._member("second")
        row = league.store.publish("second", second.policy())
        draw = league.draw("first")
        assert draw.ids == (row.id,) and draw.probs == (1.0,)
        assert league.draw("second").ids == (row.id,)  # its own, as before
    finally:
        league.close()


def test_with_no_snapshot_at_all_it_is_still_refused(tmp_path):
    league = _league(tmp_path)
    try:
        with pytest.raises(ValueError, match="no candidate opponents"):
            league.draw("first")
    finally:
        league.close()
