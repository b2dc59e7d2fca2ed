"""Mutation walk mut41b over games/tool: behaviours of the cooperative tool tasks and their
safe calculator that no test pinned, each found by a mutation that survived every existing
test (named in each test's docstring)."""

from fractions import Fraction

import pytest

import games
from games.tool.tools import MAX_EXPRESSION_CHARS, ToolError, safe_eval


def test_only_the_acting_agent_has_legal_actions():
    """The scout sends first: the solver has no legal action yet, then only the solver has
    (mutation: every agent of a running task had legal actions)."""
    g = games.make("tool/relay", max_value=3, ops="+")
    ts = g.reset(0)
    assert ts.acting == ("scout_0",) and g.legal_actions("solver_0") == []
    g.step({"scout_0": g.parse_action("scout_0", f"send {g.a}")})
    assert g.legal_actions("scout_0") == [] and g.legal_actions("solver_0")
    lookup = games.make("tool/lookup")
    lookup.reset(0)
    assert lookup.legal_actions("querier_0") == []


def test_success_is_reported_on_the_last_transition_only():
    """(mutation: every transition carried ``success``, False until the answer)."""
    g = games.make("tool/relay", max_value=3, ops="+")
    g.reset(0)
    ts = g.step({"scout_0": g.parse_action("scout_0", f"send {g.a}")})
    assert not ts.done and "success" not in ts.info
    ts = g.step({"solver_0": g.parse_action("solver_0", f"calc {g.a} + {g.b}")})
    assert not ts.done and "success" not in ts.info
    ts = g.step({"solver_0": g.parse_action("solver_0", f"answer {g.a + g.b}")})
    assert ts.done and ts.info == {"success": True}


def test_the_expression_length_bound_is_exact():
    """(mutation: one character more than ``MAX_EXPRESSION_CHARS`` was accepted)."""
    assert MAX_EXPRESSION_CHARS == 200
    assert safe_eval("0" * 200) == 0
    with pytest.raises(ToolError, match="longer than 200 characters"):
        safe_eval("0" * 201)


def test_negative_exponents_are_bounded_as_positive_ones_are():
    """(mutation: only exponents above +64 were refused; 2 ** -100 was computed)."""
    assert safe_eval("2 ** -64") == Fraction(1, 2**64)
    with pytest.raises(ToolError, match="exponent -65 not allowed"):
        safe_eval("2 ** -65")


def test_the_composer_sees_neither_the_lookups_nor_a_value_it_was_not_told():
    """The composer's observation hides what the querier found, and it can answer only a
    value the querier told it (mutations: the found values showed in the composer's
    observation; every value was answerable from the start)."""
    g = games.make("tool/lookup", num_keys=4)
    g.reset(0)
    assert all(t.startswith("ask ") for t in g.legal_action_texts("composer_0"))
    g.step({"composer_0": g.parse_action("composer_0", f"ask {g.question}")})
    g.step({"querier_0": g.parse_action("querier_0", f"lookup {g.question}")})
    K, found = 4, slice(2 + 2 * 4, 2 + 3 * 4)
    assert g.observe("querier_0")[found].sum() == 1.0
    assert g.observe("composer_0")[found].sum() == 0.0 and len(g.keys) == K
    assert all(t.startswith("ask ") for t in g.legal_action_texts("composer_0"))
    g.step({"composer_0": g.parse_action("composer_0", f"ask {g.question}")})
    g.step({"querier_0": g.parse_action("querier_0", f"tell {g.found[0]}")})
    assert [t for t in g.legal_action_texts("composer_0") if t.startswith("answer")] == [
        f"answer {g.found[0]}"]


def test_an_error_repeats_at_most_shown_chars_of_the_callers_text():
    """(mutation: the cut kept SHOWN_CHARS characters and then added "...")."""
    from games.tool.tools import SHOWN_CHARS, shown

    assert len(shown("x" * 500)) == SHOWN_CHARS and shown("x" * 500).endswith("...")
    assert shown("x" * (SHOWN_CHARS - 2)) == repr("x" * (SHOWN_CHARS - 2))


def test_modulo_is_the_remainder():
    """(mutation: ``%`` computed ``//``; the pinned ``7 % 2.5`` is 2 either way)."""
    assert safe_eval("7 % 3") == 1 and safe_eval("-7 % 3") == 2
    assert safe_eval("7.5 % 2") == Fraction(3, 2)
