"""Names other modules use are public in the module that owns them (tidy35): approximate
exploitability plays an off-policy snapshot through PSRO's one ``GreedyPolicy`` (it had its
own copy, whose action probabilities were the wrapped policy's sampling ones, not the argmax
it plays), and the game registry answers which factory a name holds without its private
table being read."""

from __future__ import annotations

import dataclasses

import numpy as np

import games
from games.registry import registered_factory
from marl.train import RandomPolicy
from populations import approx_exploit, psro, psro_mixtures
from populations import exploitability as ex

KUHN = "openspiel/kuhn_poker"


def test_one_greedy_policy_plays_psro_members_and_approx_exploitability_seats():
    assert approx_exploit.GreedyPolicy is psro_mixtures.GreedyPolicy is psro.GreedyPolicy
    spec = games.make(KUHN).spec
    eps_greedy = RandomPolicy(spec, seed=0)
    eps_greedy.meta = dataclasses.replace(eps_greedy.meta, kind="vdn")  # an off-policy kind
    seat = approx_exploit.seat_policies(spec, eps_greedy, 0, greedy=None)["player_0"]
    assert isinstance(seat, psro.GreedyPolicy)
    # its probabilities are those of what it plays: the argmax, one-hot
    tree = ex.game_tree(KUHN)
    tab = ex.tabular_policy(tree, {"player_0": ex.uniform_matrix(tree, "player_0")})
    vs = games.VectorGame(KUHN, 8, seed=0, with_text=True).reset()
    greedy = approx_exploit.GreedyPolicy(tab)
    probs = greedy.action_probs("player_0", vs)  # [B, N]
    acts = np.asarray(greedy.act("player_0", vs))  # [B]
    assert (probs.sum(1) == 1).all() and (probs[np.arange(len(acts)), acts] == 1).all()


def test_the_registry_names_a_registered_factory_and_none_for_an_adapter():
    from games.tool import relay  # registers tool/relay

    assert registered_factory("tool/relay") is relay.RelayTask
    assert registered_factory(KUHN) is None and registered_factory("no_such_game") is None
