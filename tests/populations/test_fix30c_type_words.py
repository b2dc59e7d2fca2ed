"""A value of the wrong type on ``selfplay-train``'s command line is refused naming what the
setting accepts (fix 30c), not in OmegaConf's words: ``game.kwargs=5`` said ``Error merging
override ...; Cannot assign int to Dict[str, Any]`` (without ``bad config:``);
``population.members=mappo`` said ``str is not a ListConfig, list or tuple`` and
``mappo.lr=fast`` ``could not be converted to Float``, though the rule is known
(``mappo.lr=-1`` says it): :func:`populations.override_types.expected_of` words what such a
setting takes, by the section's own rule."""

import pytest
from omegaconf import OmegaConf

from llm_agents.settings import registry_checks_later
from populations.config_checks import section_schemas, writable
from populations.override_types import expected_of
from tests.populations.test_walk19_experiment import _refused


@pytest.mark.parametrize("value", ["5", "[1]", "abc"])
def test_game_kwargs_not_a_mapping_names_what_is_accepted(value, tmp_path, monkeypatch,
                                                          capsys):
    got = _refused(["game=mpe_spread", f"game.kwargs={value}", "progress=false"], monkeypatch,
                   tmp_path, capsys)
    assert got == (f"bad config: game.kwargs={value}; expected a mapping of the game's "
                   "arguments such as game.kwargs={N:3} (one argument: game.kwargs.N=3)"), got


def _section(path):
    cls, defaults = section_schemas()[path]
    node = writable(OmegaConf.structured(cls))
    for name, default in defaults.items():
        node[name] = default
    return node


@pytest.mark.parametrize(("path", "sub", "value", "expected"), [
    ("mappo", "lr", "fast", "expected a finite number > 0"),  # its rule, as mappo.lr=-1's
    ("llm", "grpo.lr", "x", "expected a finite number > 0"),  # a nested section's
    ("mappo", "epochs", "abc", "expected an integer in [1, 10000] (passes over each batch)"),
    ("population", "iterations", "abc", "expected an integer >= 1"),
    ("population", "members", "mappo", "expected a list such as population.members=[mappo]"),
    ("mappo", "net.hidden", "abc", "expected a list such as mappo.net.hidden=[64,64]"),
    ("population", "members", {"a": 1}, "expected a list such as population.members=[...]"),
    ("mappo", "optim", 3, None),  # a text setting: OmegaConf's words stay
])
def test_expected_of_words_the_settings_own_rule(path, sub, value, expected):
    assert expected_of(_section(path), path, sub, value, registry_checks_later) == expected
@pytest.mark.parametrize(("argv", "line"), [
    (["population=pfsp", "population.members=mappo"],
     "bad config: population.members=mappo; expected a list such as "
     "population.members=[mappo]"),
    (["mappo.lr=fast"], "bad config: mappo.lr=fast; expected a finite number > 0"),
    (["population=psro", "population.iterations=abc"],
     "bad config: population.iterations=abc; expected an integer >= 1"),
])
def test_a_mistyped_section_value_names_what_is_accepted(argv, line, tmp_path, monkeypatch,
                                                         capsys):
    got = _refused([*argv, "progress=false"], monkeypatch, tmp_path, capsys)
    assert got == line, got
