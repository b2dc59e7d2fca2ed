"""Matchmaking rule ``self_play`` in a league of several members: each member meets its
own latest snapshot (self-play), not the newest snapshot of whichever member the store
lists last. Before, ``population.members=[mappo,ippo]`` with ``population=self_play`` had
both members train against ippo's latest: mappo never played itself. A member with an
``opponents`` filter (a main exploiter) still meets the newest of those members."""

from __future__ import annotations

import numpy as np

import games
from marl.actor_critic import NetConfig
from marl.mappo import MAPPO, MAPPOConfig
from populations.league import League, LeagueConfig
from populations.matchmaking import MatchmakingConfig
from populations.members import MAPPOMember

KUHN = "openspiel/kuhn_poker"


def _league(tmp_path, exploiter=False):
    cfg = LeagueConfig(game=KUHN, game_kwargs={}, generations=1, frames_per_generation=16,
                       num_envs=4, eval_episodes=1,
                       matchmaking=MatchmakingConfig(rule="self_play"),
                       mappo=MAPPOConfig(net=NetConfig(share="role"), rollout_steps=4,
                                         epochs=1, minibatches=1))
    spec = games.make(KUHN).spec
    members = [MAPPOMember("first", MAPPO(spec, cfg.mappo, seed=0)),
               MAPPOMember("second", MAPPO(spec, cfg.mappo, seed=1))]
    if exploiter:
        members.append(MAPPOMember("exploiter", MAPPO(spec, cfg.mappo, seed=2),
                                   opponents=("first",), latest_only=True))
    return League(cfg, tmp_path, members=members)


def _drawn(league, member):
    opp, side = np.full(32, -1), np.zeros(32, dtype=np.int64)
    league.pick_opponents(member, np.arange(32), opp, side, always=True)
    return set(opp.tolist())


def test_each_member_of_a_self_play_league_meets_its_own_latest_snapshot(tmp_path):
    league = _league(tmp_path)
    try:
        league.run()
        for name in ("first", "second"):
            own_latest = league.store.snapshots(name)[-1]
            assert own_latest.version == 1
            assert _drawn(league, name) == {own_latest.id}, name
            member_of = {s.id: s.member for s in league.store.snapshots()}
            assert [member_of[i] for i in league.draw(name).ids] == [name] * 2  # v0, v1
    finally:
        league.close()


def test_a_member_with_an_opponents_filter_meets_the_newest_of_those(tmp_path):
    league = _league(tmp_path, exploiter=True)
    try:
        league.run()
        assert _drawn(league, "exploiter") == {league.store.snapshots("first")[-1].id}
        assert _drawn(league, "first") == {league.store.snapshots("first")[-1].id}
    finally:
        league.close()
