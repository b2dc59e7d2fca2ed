"""A league's policy store keeps the opponents it loaded for one generation, not for the
whole run: ``PolicyStore._cache`` was a dict never emptied (walk 37c, M2: +0.7 MB a
generation). Trimmed between generations, a league plays and records what it did."""

from __future__ import annotations

import sqlite3

import games
from marl import registry
from populations.db import LeagueDB
from populations.league import League
from populations.matchmaking import MatchmakingConfig
from populations.store import PolicyStore, _same
from tests.populations.test_league import _kuhn


def test_a_store_keeps_its_most_recently_used_policies_once_trimmed(tmp_path):
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("league")
    store = PolicyStore(tmp_path / "snapshots", db, run)
    store.member("main", "mappo", ("player_0", "player_1"))
    spec = games.make("openspiel/kuhn_poker").spec
    ids = [store.publish("main", registry.get("mappo").build(spec, seed=s).policy()).id
           for s in range(5)]
    loaded = [store.load(i) for i in ids]
    assert len(store._cache) == 5  # a generation's draws stay loaded (their reseed holds)
    store.trim_loaded(2)
    assert list(store._cache) == ids[-2:]
    again = store.load(ids[0])  # loaded again from its file: the same weights
    assert again is not loaded[0]
    assert _same(again.payload(), loaded[0].payload())
    db.close()


def _records(run) -> tuple[list, list]:
    with sqlite3.connect(run / "league.db") as conn:
        return (conn.execute("SELECT key, seats, returns FROM matches ORDER BY key").fetchall(),
                conn.execute("SELECT step, key, value FROM metrics WHERE key NOT LIKE "
                             "'%time%' AND key NOT LIKE '%per_s%' AND key NOT LIKE '%sps%' "
                             "ORDER BY step, key").fetchall())


def test_a_league_that_drops_every_loaded_opponent_plays_as_one_that_keeps_them(tmp_path):
    """Fictitious self-play draws from every earlier snapshot; a store emptied after each
    generation loads them again, and the matches and metrics are those of one that kept
    them (each generation reseeds the opponents it draws)."""
    cfg = _kuhn(generations=3, matchmaking=MatchmakingConfig(rule="fsp"))
    kept = League(cfg, tmp_path / "kept")
    try:
        kept.run()
        assert len(kept.store._cache) >= 2  # it loaded opponents, under the bound
    finally:
        kept.close()
    dropped = League(cfg, tmp_path / "dropped")
    trim = dropped.store.trim_loaded
    dropped.store.trim_loaded = lambda keep=0: trim(0)  # type: ignore[method-assign]
    try:
        dropped.run()
    finally:
        dropped.close()
    assert _records(tmp_path / "kept") == _records(tmp_path / "dropped")
