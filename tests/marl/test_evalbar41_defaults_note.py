"""The note after a refused learner's list of algos that play the game named its section's own
algos "with mappo.* at its defaults" when the user had set mappo.* (``encoder=gnn`` on a game
without graphs): it read as if the run's mappo settings were the defaults (walk41b L3). It
names the settings that stop them and what they were set to; one that plays as set
(``gnn_hidden``, ``lr``) is left out."""

import pytest

import games
from marl.configs import MAPPOConfig, NetConfig
from marl.registry import IncompatibleError, check_compatible

KUHN = games.make("openspiel/kuhn_poker").spec


def _note(config):
    with pytest.raises(IncompatibleError) as err:
        check_compatible("mappo", KUHN, config)
    return str(err.value).split("; algos that play it: ")[1].partition(", and ")[2]


def test_the_note_names_the_settings_that_stop_the_section_and_their_values():
    gnn = MAPPOConfig(lr=3e-4, net=NetConfig(encoder="gnn", critic="gnn", gnn_hidden=32))
    assert _note(gnn) == ("['ippo', 'mappo'] with mappo.net.encoder='mlp' and "
                          "mappo.net.critic='auto', their defaults (set to 'gnn' and 'gnn')")


def test_one_setting_is_its_default():
    state = MAPPOConfig(net=NetConfig(critic="state", recurrent=True))
    assert _note(state) == "['mappo'] with mappo.net.critic='auto', its default (set to 'state')"
