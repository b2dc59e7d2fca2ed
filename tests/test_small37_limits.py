"""The switch is said when it lets a value past its limit, not when a text is built (small37):
with SELFPLAY_GAME_LIMITS=off, a refusal below a lower limit (``num_cards=0``: "accepted: an
integer >= 1") logged "game size limits lifted" though nothing was built past a limit, and a
process that later built a game past one then said nothing more.

Every case runs in one child process with the switch on; each starts as a fresh process would
(``games.limits._said`` reset) and reports whether the line was logged."""

from __future__ import annotations

import json
import os
import sys

import pytest

from games.limits import ENV, LIFTED_LINE
from tests import subprocs

CHILD = r"""
import json, logging, sys
import games
from games import limits

said = []
logging.getLogger(limits.__name__).addHandler(type("H", (logging.Handler,), {
    "emit": lambda self, record: said.append(record.getMessage())})())
results = {}
for case, (name, kwargs) in json.loads(sys.argv[1]).items():
    limits._said = False  # each case as its own process
    said.clear()
    try:
        games.make(name, **kwargs)
        outcome = "built"
    except games.GameError as err:
        outcome = f"refused: {err}"
    results[case] = {"outcome": outcome, "said": said.count(limits.LIFTED_LINE)}
print("RESULTS " + json.dumps(results))
"""

# case -> (game, kwargs, built past a limit: the line is said once)
CASES = {
    "goofspiel num_cards=0 (refused, its range)": ("openspiel/goofspiel", {"num_cards": 0}, False),
    "vmas n_agents=0 (refused, its range)": ("vmas/simple_spread", {"n_agents": 0}, False),
    "goofspiel num_cards=13 (within)": ("openspiel/goofspiel", {"num_cards": 13}, False),
    "goofspiel num_cards=131 (past its limit)": ("openspiel/goofspiel", {"num_cards": 131}, True),
    "mpe N=0 (refused, its range)": ("pettingzoo/mpe2.simple_spread_v3", {"N": 0}, False),
    "nim pile_sizes 1;3;5;7 (within)": ("openspiel/nim", {"pile_sizes": "1;3;5;7"}, False),
    "tool/relay default (within)": ("tool/relay", {}, False),
}


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    cases = {case: (name, kwargs) for case, (name, kwargs, _) in CASES.items()}
    res = subprocs.run([sys.executable, "-c", CHILD, json.dumps(cases)], capture_output=True,
                       text=True, timeout=300, env={**os.environ, ENV: "off"})
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULTS ")]
    assert res.returncode == 0 and lines, res.stdout[-2000:] + res.stderr[-2000:]
    return json.loads(lines[-1].removeprefix("RESULTS "))


@pytest.mark.parametrize("case", list(CASES))
def test_the_switch_is_said_only_where_it_lets_a_value_past_its_limit(results, case):
    past = CASES[case][2]
    res = results[case]
    assert res["outcome"].startswith("built" if past or "within" in case else "refused"), res
    assert res["said"] == (1 if past else 0), (LIFTED_LINE, res)


def test_a_refusals_range_with_the_switch_on_has_no_upper_limit(results):
    assert results["goofspiel num_cards=0 (refused, its range)"]["outcome"] == (
        "refused: bad parameter for openspiel/goofspiel: num_cards=0; accepted: an integer >= 1")
