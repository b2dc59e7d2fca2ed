"""A matchmaking rule of an installed package: its ``selfplay.matchmaking_rules`` entry point
is loaded when a command line starts (``populations.cli_common.PLUGIN_GROUPS``) and the first time
an unknown rule is named, as the meta-solvers' (``selfplay.meta_solvers``) and loggers'
(``selfplay.loggers``) groups are; an unknown rule's message says so.

The package is installed for real: a ``.dist-info`` folder with its ``entry_points.txt`` on
``sys.path``, as ``pip install`` writes it (``test_cli``'s entry-point tests), so
``importlib.metadata`` finds it. Before: rules came through ``imports=`` only; the rule below
was ``matchmaking rule 'w24_first' unknown``."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from populations import matchmaking as mm
from populations.matchmaking import MatchmakingConfig, opponent_distribution
from tests.populations.test_walk18_cli_more import _train

GROUP = "selfplay.matchmaking_rules"
MODULE = "w24_rules"
SOURCE = '''
import numpy as np

from populations.matchmaking import register_rule

CALLS = []


@register_rule("w24_first")
def first(win_rates, cfg):
    CALLS.append(len(win_rates))
    w = np.zeros(len(win_rates))
    w[0] = 1.0
    return w
'''


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The package ``w24rules`` installed in ``tmp_path/site`` (on ``sys.path``), no group
    loaded yet in this process; its rule taken out of the registry after."""
    from games import registry

    site = tmp_path / "site"
    info = site / "w24rules-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: w24rules\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nfirst = {MODULE}\n")
    (site / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(registry, "_loaded_groups", set())
    try:
        yield site
    finally:
        sys.modules.pop(MODULE, None)
        mm.RULES.pop("w24_first", None)


def test_the_group_is_named_as_the_others():
    from populations.cli_common import PLUGIN_GROUPS

    assert mm.ENTRY_POINTS == GROUP
    assert GROUP in PLUGIN_GROUPS
    assert all(g.startswith("selfplay.") and g.endswith("s") for g in PLUGIN_GROUPS)


def test_an_unknown_rule_loads_the_installed_packages_rules(installed):
    assert "w24_first" not in mm.RULES
    assert MatchmakingConfig(rule="w24_first").rule == "w24_first"
    got = opponent_distribution([0.2, 0.9, None], MatchmakingConfig(rule="w24_first"))
    np.testing.assert_array_equal(got, [1.0, 0.0, 0.0])


def test_a_command_line_loads_the_group_at_start(installed):
    from populations.cli_common import load_plugins

    load_plugins()
    assert "w24_first" in mm.RULES


def test_an_unknown_rule_names_the_entry_point_group():
    with pytest.raises(ValueError) as err:
        MatchmakingConfig(rule="w24_nowhere")
    assert str(err.value).endswith(
        "a rule of your own is registered by @register_rule (populations.matchmaking) when "
        "its module is imported (selfplay-train imports=[module]) or by an installed "
        "package's selfplay.matchmaking_rules entry point")


def test_selfplay_train_plays_by_the_installed_rule(installed, tmp_path, monkeypatch):
    """No ``imports=``: the league draws its opponents by the package's rule."""
    _train(["game=kuhn", "population=fsp", "population.matchmaking.rule=w24_first",
            "population.generations=2", "population.frames_per_generation=32", "num_envs=4",
            "eval_episodes=1", "mappo.rollout_steps=4", "mappo.epochs=1", "mappo.minibatches=1",
            "progress=false", "logger=none", f"hydra.run.dir={tmp_path / 'run'}"],
           monkeypatch, tmp_path)
    assert sys.modules[MODULE].CALLS  # asked for the second generation's opponents
