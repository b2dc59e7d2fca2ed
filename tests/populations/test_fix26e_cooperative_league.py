"""A league on a cooperative tool task: ``experiment=tool_team_llm population=self_play``
was refused with the hint to group its seats in two teams, and following it
(``game.kwargs.teams=[[scout_0],[solver_0]]``) trained a league whose every match gave both
teams the same reward (every win rate 0.5, ratings meaningless), without a word. A game
whose every seat gets one shared reward declares ``cooperative = True`` (the tool tasks), and
a league refuses it, with teams or without, in one line saying what to do instead, before
its database is made."""

from __future__ import annotations

import pytest

import games
from populations.league import League, LeagueConfig, cooperative_refusal

RELAY_TEAMS = {"teams": [["scout_0"], ["solver_0"]]}


@pytest.mark.parametrize("kwargs", [RELAY_TEAMS, {}])
def test_a_league_refuses_a_cooperative_game_before_its_database(tmp_path, kwargs):
    cfg = LeagueConfig(game="tool/relay", game_kwargs=kwargs, generations=1,
                       frames_per_generation=64, num_envs=2, eval_episodes=1)
    with pytest.raises(ValueError) as err:
        League(cfg, tmp_path / "run")
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith("a self-play league plays sides against each other; tool/relay")
    assert "is cooperative (every seat gets one shared reward" in text
    assert text.endswith("train its team alone (population=none)")
    assert "groups its seats" not in text  # no teams hint
    assert not (tmp_path / "run" / "league.db").exists()


def test_every_seat_of_a_tool_task_gets_the_same_reward():
    """What ``cooperative`` declares, checked on every registered tool task's random play."""
    import numpy as np

    tools = [n for n in games.registered() if n.startswith("tool/")]
    assert tools
    for name in tools:
        game = games.make(name)
        assert cooperative_refusal(game) is not None
        rng = np.random.default_rng(0)
        for episode in range(3):
            game.reset(seed=episode)
            done = False
            while not done:
                acts = {a: int(rng.choice(game.legal_actions(a))) for a in game.acting_agents()}
                t = game.step(acts)
                assert len(set(t.rewards.values())) == 1, (name, t.rewards)
                done = all(t.terminated.values()) or all(t.truncated.values())
        game.close()


def test_a_competitive_game_is_not_refused():
    game = games.make("openspiel/kuhn_poker")
    assert cooperative_refusal(game) is None
    game.close()
