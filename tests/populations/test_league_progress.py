"""A league generation says when each member has trained: mixed_algo_league's first
generation (four members) ran 173 s without a line of output."""

import logging

from populations.league import League, LeagueConfig


def test_each_member_training_is_logged(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="populations.league")
    cfg = LeagueConfig(game="openspiel/kuhn_poker", game_kwargs={}, generations=1,
                       frames_per_generation=64, num_envs=4, eval_episodes=1)
    league = League(cfg, tmp_path)
    league.run()
    names = [m.name for m in league.members]
    league.close()
    lines = [r.getMessage() for r in caplog.records if " trained " in r.getMessage()]
    assert [line.split(" trained")[0] for line in lines] == [
        f"generation 1: {name}" for name in names]
