"""Hostile LLM output through the parse a rollout makes (``game_parser``: the game's own
``parse_action``, then ``match_action``), and exact literals in the tool calculator.

The tag search is checked by what it is handed, not by a clock: the lazy
``<action>(.*?)</action>`` pattern scans from every opening tag to the first closing tag after
it, or, where there is none, to the end of what it searches -- 20,000 unclosed tags in 160 KB of
output were 1.6 billion characters of vain scanning, ~40 s per parse.
"""

import random
import re
import tracemalloc
from fractions import Fraction

import pytest

import games
import games.action_text
import games.core
import llm_agents.actions
from games import InvalidAction
from games.tool import Calculator, ToolError, safe_eval
from games.tool.tools import MAX_BITS
from llm_agents.actions import game_parser, match_action

_OPEN = re.compile(r"<action>", re.IGNORECASE)
_CLOSE = re.compile(r"</action>", re.IGNORECASE)


def _vain_scan(text: str, pos: int, endpos: int) -> int:
    """Characters the lazy tag pattern scans in vain over ``text[pos:endpos]``: from each
    opening tag with no closing tag after it, to the end of the window."""
    window = text[pos:endpos]
    closes = [m.start() for m in _CLOSE.finditer(window)]
    last_close = closes[-1] if closes else -1
    return sum(len(window) - m.end() for m in _OPEN.finditer(window) if m.start() > last_close)


class _Watched:
    """A tag pattern that refuses (before scanning) a window the search would scan in vain."""

    def __init__(self, pattern: re.Pattern) -> None:
        self.pattern, self.windows = pattern, 0

    def _guard(self, text: str, pos: int = 0, endpos: int | None = None) -> None:
        self.windows += 1
        end = len(text) if endpos is None else min(endpos, len(text))
        vain = _vain_scan(text, pos, end)
        assert vain <= len(text), f"the tag search would scan {vain:,} characters in vain"

    def findall(self, text, *args):
        self._guard(text, *args)
        return self.pattern.findall(text, *args)

    def finditer(self, text, *args):
        self._guard(text, *args)
        return self.pattern.finditer(text, *args)

    def search(self, text, *args):
        self._guard(text, *args)
        return self.pattern.search(text, *args)

    def __getattr__(self, name):  # flags, pattern, ...
        return getattr(self.pattern, name)


@pytest.fixture
def watched(monkeypatch):
    """Every ``<action>...</action>`` pattern the parse can reach, watched."""
    watched = []
    for module in (games.action_text, llm_agents.actions):
        for name, value in list(vars(module).items()):
            if isinstance(value, re.Pattern) and value.pattern == r"<action>(.*?)</action>":
                watched.append(_Watched(value))
                monkeypatch.setattr(module, name, watched[-1])
    assert watched
    return watched


HOSTILE = [
    ("<action>" * 20_000, None),
    ("<ACTION>" * 20_000 + "</action>", None),  # one tag: every opening tag up to the close
    ("<action>" * 20_000 + "</action><action>{0}</action>" + "<action>" * 20_000, 0),
    ("<action>{0}</action>" + "<Action>" * 20_000, 0),
]


@pytest.mark.parametrize("name", ["tool/relay", "tool/lookup", "openspiel/kuhn_poker"])
@pytest.mark.parametrize(("text", "want"), HOSTILE)
def test_unclosed_tags_are_not_scanned_in_vain(watched, name, text, want):
    """Both parses a rollout makes: before, ``Game.parse_action`` searched the whole text (the
    fix of ``match_action`` alone never ran: game_parser asks the game first)."""
    game = games.make(name)
    game.reset(seed=0)
    agent = game.acting_agents()[0]
    ids = list(game.legal_actions(agent))
    legal = [game.action_text(agent, a) for a in ids]
    text = text.format(legal[0])
    assert game_parser(game, agent, ids, legal)(text) == want
    if want is None:
        with pytest.raises(InvalidAction):
            game.parse_action(agent, text)
    else:
        assert game.parse_action(agent, text) == ids[want]
    assert match_action(text, legal) == want
    assert sum(w.windows for w in watched) >= 2


def test_one_tag_search_serves_both_parses():
    """``match_action`` and ``Game.parse_action`` read the tag with one helper, so they cannot
    drift apart again."""
    assert not any(isinstance(v, re.Pattern) and "action" in v.pattern
                   for v in vars(llm_agents.actions).values())


def test_the_tag_read_is_findall_s_last():
    """The bounded search reads the same tag as ``findall`` over the whole text did: the last
    one, each opening tag paired with the first closing tag after it."""
    tag = re.compile(r"<action>(.*?)</action>", re.IGNORECASE | re.DOTALL)
    rng = random.Random(24)
    parts = ["<action>", "</action>", "<ACTION>", "</Action>", "Bet", "Pass", " ", "\n", "<act",
             "</act", "ion>"]
    for _ in range(3000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 12)))
        found = tag.findall(text)
        assert games.core.last_action_tag(text) == (found[-1] if found else None), text
        said = "".join((found[-1] if found else text).lower().split())
        assert games.action_text._action_candidate(text) == said, text


# --------------------------------------------------------------- calculator literals
@pytest.mark.parametrize(("expression", "value"), [
    ("9007199254740993.0", 9007199254740993),  # was 9007199254740992 (through a float)
    ("0.1000000000000000000001", Fraction(10**21 + 1, 10**22)),  # was 1/10
    ("1e-400", Fraction(1, 10**400)),  # was 0
    ("1e-400 * 1e400", "too large"),
    ("1_000.000_000_000_000_000_1", Fraction(10**19 + 1, 10**16)),  # 1000 + 1e-16
    ("0.5e1", 5),
    ("1.e2", 100),
    (".25", Fraction(1, 4)),
    ("0e999999999", 0),
    ("0.0", 0),
    ("1e18", 10**18),
    ("1.0e18", 10**18),
])
def test_decimal_literals_are_exact(expression, value):
    if isinstance(value, str):
        with pytest.raises(ToolError, match=value):
            safe_eval(expression)
        return
    out = safe_eval(expression)
    assert out == value and type(out) is type(value)


def test_a_literal_below_float_range_prints():
    assert Calculator(max_calls=1).call("1e-400").text == "1e-400 = 1e-400"


@pytest.mark.parametrize(("expression", "message"), [
    ("1e999999999", "number too large"),
    ("1e" + "9" * 190, "number too large"),
    ("1" * 100 + ".0", "too large"),
    ("1.000000000000000001e18", "too large"),
    ("1e-999999999", "too precise"),
    ("1e-" + "9" * 190, "too precise"),
    (f"1e-{MAX_BITS}", "too precise"),
])
@pytest.mark.timeout(60)  # a hang guard only: building 10**999999999 takes minutes
def test_huge_exponents_are_refused_by_their_bound(expression, message):
    """Refused from the literal's digits, never by building the number: the evaluation
    allocates no big integer (10**999999999 is 415 MB; ``1e`` and 190 nines cannot be built)."""
    tracemalloc.start()
    try:
        with pytest.raises(ToolError, match=message):
            safe_eval(expression)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, f"{expression[:30]!r}: {peak:,} bytes allocated"
