"""Moving a preset to another game names every setting the game refuses in one line, and the
list of algos that play it names the section's own algos too (walk40a M3).

Before: ``selfplay-train experiment=main game.name=openspiel/clobber`` refused
``net.critic='state'`` alone; with ``mappo.net.critic=auto`` it refused the gnn encoder next.
The line said "(ippo and mappo play it with mappo.* at its defaults); algos that play it:
['llm_grpo', 'qmix', 'vdn']": a list that seemed to leave them out."""

from __future__ import annotations

import pytest

import games
from marl.configs import MAPPOConfig, NetConfig
from marl.registry import IncompatibleError, check_compatible

CLOBBER = games.make("openspiel/clobber").spec  # no global state, no entity graphs


def test_a_state_critic_and_a_gnn_encoder_are_refused_together():
    main = MAPPOConfig(net=NetConfig(encoder="gnn", critic="state"))  # experiment=main's
    with pytest.raises(IncompatibleError) as err:
        check_compatible("mappo", CLOBBER, main)
    assert str(err.value) == (
        "algo=mappo cannot play openspiel/clobber: net.critic='state' needs a global state "
        "and a gnn encoder or critic needs entity graphs, and it has neither; use "
        "mappo.net.critic=auto (or concat) and encoder=mlp; algos that play it: ['llm_grpo', "
        "'qmix', 'vdn'], and ['ippo', 'mappo'] with mappo.net.encoder='mlp' and "
        "mappo.net.critic='auto', their defaults (set to 'gnn' and 'state')")
    # both fixes applied: it plays
    check_compatible("mappo", CLOBBER, MAPPOConfig(net=NetConfig(encoder="mlp", critic="auto")))


def test_one_refused_setting_keeps_its_own_clause():
    with pytest.raises(IncompatibleError) as err:
        check_compatible("mappo", CLOBBER, MAPPOConfig(net=NetConfig(critic="state")))
    assert str(err.value) == (
        "algo=mappo cannot play openspiel/clobber: net.critic='state' needs a global state "
        "and it has none; use mappo.net.critic=auto (or concat); algos that play it: ['ippo', "
        "'llm_grpo', 'qmix', 'vdn'], and ['mappo'] with mappo.net.critic='auto', its default "
        "(set to 'state')")
