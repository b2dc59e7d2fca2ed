"""Three lines walk34a found misleading (fix34a L2, L3, L4).

L2: a NaN said "training stopped before it changed any weight" at frame 1472 of a run that had
updated at frame 800: only the batch holding the NaN changed no weight.
L3: ``selfplay-train imports=[gridtag] game=gridtag`` (the preset syntax for a registered game)
said only Hydra's "Could not find 'game/gridtag'" and the presets.
L4: ``mappo.net.critic=state`` on a game without a global state said "(ippo and mappo play it
with mappo.* at its defaults); algos that play it: ['ippo', ...]": ippo named twice (it plays
it as set, its preset keeps a local critic) and the list seemed to leave mappo out.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import games
from tests.populations.user_modules import refused_line as _refused
from tests.populations.user_modules import unregister_games, user_module

# ---------------------------------------------------------------------------- L2: NaN


def test_a_nan_says_the_batch_holding_it_changed_no_weight():
    from marl.guards import FiniteGuard, NonFiniteError

    guard = FiniteGuard("gridtag", ("chaser_0", "runner_1"))
    with pytest.raises(NonFiniteError) as err:
        guard.data(step=1472, per_agent={"reward": np.array([[0.0, np.nan]])})
    assert str(err.value) == (
        "non-finite reward (nan) in game 'gridtag', agent 'runner_1', at frame 1472: training "
        "stopped before the batch holding it changed any weight; the game returned it (check "
        "the game's rewards and observations)")
    with pytest.raises(NonFiniteError, match=r"at frame 1600: training stopped before the batch "
                                             r"holding it changed any weight; check the game"):
        guard.scalar(step=1600, quantity="loss", value=torch.tensor(float("inf")))


# -------------------------------------------------------------------- L3: game=<registered>
MODULE = "fix34a_tagmod"


@pytest.fixture
def tagmod(tmp_path, monkeypatch):
    """A user's module registering ``fix34a_tag``, importable from ``tmp_path`` (the working
    directory), taken out of the registry after."""
    source = ("import games\n\n\n@games.register('fix34a_tag')\ndef tag():\n"
              "    raise NotImplementedError\n")
    with user_module(tmp_path, monkeypatch, MODULE, source, unregister_games("fix34a_tag")):
        yield


def test_a_registered_game_given_as_a_preset_is_told_game_name(tagmod, tmp_path, monkeypatch,
                                                               capsys):
    line = _refused([f"imports=[{MODULE}]", "game=fix34a_tag"], monkeypatch, capsys)
    assert line.startswith("selfplay-train: In 'config': Could not find 'game/fix34a_tag'; "
                           "Available options in 'game': climbing, kuhn, "), line
    assert line.endswith("; fix34a_tag is a game registered by fix34a_tagmod, not a preset: "
                         "game.name=fix34a_tag plays it"), line
    assert not (tmp_path / "outputs").exists() and not (tmp_path / "runs").exists()


def test_any_other_unknown_preset_says_how_games_are_named(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    line = _refused(["game=fix34a_nothing"], monkeypatch, capsys)
    assert line.startswith("selfplay-train: In 'config': Could not find 'game/fix34a_nothing'; "
                           "Available options in 'game': climbing, kuhn, "), line
    # not game.name=fix34a_nothing, which names no game either (rfix34b)
    assert line.endswith("; game= picks one of these presets; any other game is named by "
                         "game.name=NAME: a game registered by @games.register in a module "
                         "given by imports=[...], or openspiel/..., pettingzoo/..., vmas/..."
                         ), line


# ------------------------------------------------------ L4: the section's note and the list


def test_the_note_names_the_algo_at_its_defaults_and_the_list_the_others():
    from marl.configs import MAPPOConfig, NetConfig
    from marl.registry import IncompatibleError, check_compatible

    kuhn = games.make("openspiel/kuhn_poker").spec  # no global state
    with pytest.raises(IncompatibleError) as err:
        check_compatible("mappo", kuhn, MAPPOConfig(net=NetConfig(critic="state")))
    msg = str(err.value)
    head, _, listed = msg.partition("; algos that play it: ")
    assert head == ("algo=mappo cannot play openspiel/kuhn_poker: net.critic='state' needs a "
                    "global state and it has none; use mappo.net.critic=auto (or concat)"), msg
    as_set, _, defaults = listed.partition(", and ")
    assert as_set.startswith("['ippo', "), msg  # ippo plays it as set: listed, once
    assert "'mappo'" not in as_set, msg
    assert defaults == (  # the same list
        "['mappo'] with mappo.net.critic='auto', its default (set to 'state')"), msg
    # both refused as set (a gnn): both after the list, at the section's defaults
    gnn = MAPPOConfig(net=NetConfig(encoder="gnn", critic="gnn"))
    with pytest.raises(IncompatibleError, match=r"use encoder=mlp; algos that play it: \['.*'\]"
                                                r", and \['ippo', 'mappo'\] with "
                                                r"mappo\.net\.encoder='mlp' and "
                                                r"mappo\.net\.critic='auto', their defaults "
                                                r"\(set to 'gnn' and 'gnn'\)$"):
        check_compatible("mappo", kuhn, gnn)
