"""PSRO's initial uniform member holds its player's seats only, also where there is no game
tree (sampled payoffs without exact NashConv): it held every seat of the game, so
``selfplay-eval`` refused a run's members as seatings (``psro-player_0-0`` held player_1
too) while the exact tools' member held its own seat."""

from __future__ import annotations

import math

from marl.core import load_policy
from populations.eval_seatings import seating_sides
from populations.psro import PSRO, ExactBestResponse, PSROConfig, RLOracle, RLOracleConfig

KUHN = "openspiel/kuhn_poker"


def test_without_a_tree_each_initial_member_holds_its_own_seat(tmp_path):
    psro = PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(
        payoffs="sampled", nash_conv=False, episodes_per_entry=8, num_envs=8))
    assert psro.tree is None
    held = {}
    for agent in psro.players:
        (member,) = psro.members[agent]
        assert member.policy.meta.kind == "random"
        assert member.policy.meta.agents == (agent,)
        member.policy.save(tmp_path / f"{agent}.pt")  # a run's psro-<player>-0 file
        held[agent] = load_policy(tmp_path / f"{agent}.pt").meta.agents
    sides = seating_sides(psro.spec, held)
    assert sides is not None and [s.seats for s in sides] == [("player_0",), ("player_1",)]
    psro.run(1)  # an iteration with sampled payoffs plays them against the best responses
    assert all(math.isfinite(v) for v in psro.payoffs.ravel())


def test_a_team_players_initial_member_holds_the_teams_seats():
    game, kw = "openspiel/kuhn_poker(players=3)", {"teams": [["player_0", "player_2"],
                                                             ["player_1"]]}
    oracle = RLOracle(game, RLOracleConfig(frames=12, num_envs=2), game_kwargs=kw)
    psro = PSRO(game, oracle, PSROConfig(payoffs="sampled", episodes_per_entry=4,
                                         meta_solver="uniform"), game_kwargs=kw)
    assert psro.seats_of == {"team_0": ("player_0", "player_2"), "team_1": ("player_1",)}
    for player, (member,) in psro.members.items():
        assert member.policy.meta.agents == psro.seats_of[player]
