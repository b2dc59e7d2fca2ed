"""``Game.parse_action`` and ``llm_agents``' ``match_action`` accept the same texts
(walk35b item 3): parse_action collapsed whitespace while match_action removed it, so
``calc 3+3`` was refused by the game's parser and taken by the LLM's. Both compare
:func:`games.core.action_key` (case and all whitespace ignored) when no text matches with
case kept (be0373d: :func:`games.core.action_matches`); under action_key no two action texts of a
shipped game are the same."""

from __future__ import annotations

import numpy as np
import pytest

import games
from games.core import action_key
from llm_agents.actions import match_action


def _solver_turn(a: int = 3, b: int = 3) -> games.Game:
    g = games.make("tool/relay", max_value=9, ops="+-*")
    g.reset(seed=0)
    g.a, g.b = a, b
    g.step({"scout_0": g.actions.index(f"send {a}")})
    return g


@pytest.mark.parametrize("text", [
    "calc 3+3", "CALC 3 +3", "calc 3 + 3", "<action>calc3 + 3</action>", " calc\t3 +\n3 ",
])
def test_parse_action_and_match_action_take_the_same_texts(text):
    g = _solver_turn()
    legal = g.legal_action_texts("solver_0")
    at = match_action(text, legal)
    assert at is not None and legal[at] == "calc 3 + 3"
    assert g.parse_action("solver_0", text) == g.legal_actions("solver_0")[at]


@pytest.mark.parametrize("text", ["calc 3 + 4", "calc 3 ++ 3", "answer 6", "calc"])
def test_both_refuse_the_same_texts(text):
    g = _solver_turn()
    assert match_action(text, g.legal_action_texts("solver_0")) is None
    with pytest.raises(games.InvalidAction):
        g.parse_action("solver_0", text)


def test_the_registered_games_action_tables_have_distinct_keys():
    """Every text of the largest tool tasks (all of the table, not only what is legal at
    once) and of the matrix games."""
    for spec, kwargs in [("tool/relay", {"max_value": 100, "ops": "+-*/"}),
                         ("tool/lookup", {"num_keys": 16})]:
        texts = games.make(spec, **kwargs).actions
        assert len({action_key(t) for t in texts}) == len(texts), spec
    for spec in ("matrix/climbing", "matrix/penalty"):
        g = games.make(spec)
        g.reset(seed=0)
        for agent in g.acting_agents():
            texts = g.legal_action_texts(agent)
            assert len({action_key(t) for t in texts}) == len(texts), spec


@pytest.mark.parametrize("spec", ["openspiel/kuhn_poker", "openspiel/leduc_poker",
                                  "openspiel/tic_tac_toe", "openspiel/matrix_rps"])
def test_the_preset_openspiel_games_legal_texts_have_distinct_keys(spec):
    g, rng = games.make(spec), np.random.default_rng(0)
    for episode in range(5):
        g.reset(seed=episode)
        while acting := g.acting_agents():
            actions = {}
            for agent in acting:
                texts = g.legal_action_texts(agent)
                assert len({action_key(t) for t in texts}) == len(texts), texts
                actions[agent] = int(rng.choice(list(g.legal_actions(agent))))
            g.step(actions)
