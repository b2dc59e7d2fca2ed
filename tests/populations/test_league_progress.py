"""A league generation says when each member has trained: mixed_algo_league's first
generation (four members) ran 173 s without a line of output."""

import logging

import pytest

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


def test_nash_conv_is_of_the_game_with_its_kwargs(tmp_path, caplog):
    """It was computed on the game's default parameters: leduc_poker(suit_isomorphism=True)
    has 24 observation features, the default 30, and the snapshots failed there."""
    from populations.db import LeagueDB

    cfg = LeagueConfig(game="openspiel/leduc_poker", game_kwargs={"suit_isomorphism": True},
                       generations=1, frames_per_generation=64, num_envs=4, eval_episodes=1,
                       nash_conv=True)
    league = League(cfg, tmp_path)
    league.run()
    league.close()
    db = LeagueDB(tmp_path / "league.db", readonly=True)
    values = [v for _, key, v in db.metric_rows(1) if key.startswith("nash_conv/")]
    db.close()
    assert len(values) == 2 * len(league.members)  # generations 0 and 1
    assert all(0 <= v < 20 for v in values)


def test_a_game_too_large_for_nash_conv_is_refused_before_training(tmp_path):
    cfg = LeagueConfig(game="openspiel/nim", game_kwargs={}, generations=1,
                       frames_per_generation=64, num_envs=4, eval_episodes=1, nash_conv=True)
    with pytest.raises(ValueError) as err:
        League(cfg, tmp_path)
    msg = str(err.value)
    assert msg.startswith("nash_conv=True (population.nash_conv): openspiel/nim has more than")
    assert "psro" not in msg
    assert "exploit.every" in msg and "\n" not in msg
