"""Cooperative tool tasks: the game contract, PettingZoo export, safe tools, and the rules
(a scripted team always succeeds, a wrong answer pays nothing, tool errors are observations)."""

import warnings
from fractions import Fraction

import numpy as np
import pytest
from pettingzoo.test import api_test

import games
from games.tool import Calculator, KeyValueTable, ToolError, safe_eval
from games.tool.lookup import ELEMENTS
from games.tool.tools import MAX_BITS, MAX_MAGNITUDE, format_number

TASKS = [
    ("tool/relay", {}),
    ("tool/relay", {"max_value": 4, "ops": "+-*/", "max_calls": 1}),
    ("tool/lookup", {}),
    ("tool/lookup", {"num_keys": 16, "max_lookups": 1, "max_turns": 7}),
]
DICT_OBS_WARNINGS = ("Observation is not a NumPy array", "Observation space for each agent")


@pytest.mark.parametrize(("name", "kwargs"), TASKS)
def test_tool_tasks_pass_check_game(name, kwargs):
    report = games.check_game(games.make(name, **kwargs), episodes=40)
    assert report.episodes == 40
    spec = games.make(name, **kwargs).spec
    assert len(spec.roles) == 2 and spec.teams == ("team",) and not spec.zero_sum


@pytest.mark.parametrize(("name", "kwargs"), TASKS)
def test_tool_tasks_export_to_pettingzoo(name, kwargs):
    env = games.to_pettingzoo(games.make(name, **kwargs))
    assert isinstance(env, games.export.GameAECEnv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api_test(env, num_cycles=300)
    assert not {str(w.message) for w in caught if not str(w.message).startswith(DICT_OBS_WARNINGS)}


def test_tool_tasks_are_registered():
    assert {"tool/relay", "tool/lookup"} <= set(games.registered())
    with pytest.raises(games.GameError, match="ops"):
        games.make("tool/relay", ops="^")
    with pytest.raises(games.GameError, match="accepted"):
        games.make("tool/lookup", nope=1)


def test_safe_eval_computes_and_refuses():
    assert safe_eval("7 * 3 - 2") == 19
    assert safe_eval("-(4 + 2) // 4") == -2
    assert safe_eval("2 ** 10") == 1024
    assert float(safe_eval("7 / 2")) == 3.5
    assert safe_eval("6 / 3") == 2 and isinstance(safe_eval("6 / 3"), int)
    for bad, msg in [("__import__('os')", "unsupported"), ("x + 1", "unsupported"),
                     ("1 / 0", "division by zero"), ("2 ** 1000", "exponent"),
                     ("9 ** 9 ** 9", "exponent|too large"), ("1 +", "cannot parse"),
                     ("[1, 2]", "unsupported"), ("'a' * 3", "unsupported")]:
        with pytest.raises(ToolError, match=msg):
            safe_eval(bad)


def test_tools_return_errors_as_text_and_enforce_call_limits():
    calc = Calculator(max_calls=2)
    assert calc.call("3 + 4").text == "3 + 4 = 7"
    err = calc.call("4 / 0")
    assert not err.ok and "division by zero" in err.text
    limit = calc.call("1 + 1")
    assert not limit.ok and "call limit reached (2)" in limit.text
    table = KeyValueTable({"neon": 10}, max_calls=1)
    assert table.call("argon").text == "error: no entry 'argon'"
    assert "limit" in table.call("neon").text


def _play(game, seed, choose):
    ts = game.reset(seed)
    while not ts.done:
        agent = ts.acting[0]
        ts = game.step({agent: game.parse_action(agent, choose(game, agent))})
    return ts


def _relay_expert(game, agent):
    if agent == "scout_0":
        return f"send {game.a}"
    if game.results:
        return f"answer {game.results[-1]}"
    return f"calc {game.message} {game.op} {game.b}"


def test_relay_expert_team_always_succeeds_and_a_wrong_answer_pays_nothing():
    game = games.make("tool/relay", max_value=6, ops="+-*/")
    for seed in range(30):
        ts = _play(game, seed, _relay_expert)
        assert ts.info["success"] and ts.rewards == {"scout_0": 1.0, "solver_0": 1.0}

    def liar(g, agent):  # relays a wrong number
        return f"send {(g.a + 1) % 7}" if agent == "scout_0" else _relay_expert(g, agent)

    for seed in range(10):
        ts = _play(game, seed, liar)
        assert not ts.info["success"] and ts.rewards["solver_0"] == 0.0


def test_relay_tool_errors_and_limits_show_up_in_the_solvers_observation():
    game = games.make("tool/relay", max_value=3, ops="/", max_calls=1, solver_turns=3)
    game.reset(0)
    game.step({"scout_0": game.parse_action("scout_0", "send 0")})
    assert game.b != 0  # division tasks never divide by zero themselves
    game.step({"solver_0": game.parse_action("solver_0", f"calc {game.b} / 0")})
    assert "division by zero" in game.text_observation("solver_0")
    game.step({"solver_0": game.parse_action("solver_0", f"calc 0 / {game.b}")})
    assert "call limit reached (1)" in game.text_observation("solver_0")
    assert "answer" not in " ".join(game.legal_action_texts("solver_0"))  # no result to answer


def _lookup_expert(game, agent):
    if agent == "composer_0":
        return f"answer {game.told[-1]}" if game.told else f"ask {game.question}"
    if game.found:
        return f"tell {game.found[-1]}"
    return f"lookup {game.asked[-1]}"


def test_lookup_expert_team_always_succeeds():
    game = games.make("tool/lookup", num_keys=12)
    for seed in range(30):
        ts = _play(game, seed, _lookup_expert)
        assert ts.info["success"] and ts.rewards["querier_0"] == 1.0
    assert game.table.table == {k: ELEMENTS[k] for k in list(ELEMENTS)[:12]}


def test_observations_hide_what_a_role_must_not_see():
    relay = games.make("tool/relay", max_value=9)
    relay.reset(3)
    assert f"A = {relay.a}" in relay.text_observation("scout_0")
    assert f"B = {relay.b}" not in relay.text_observation("scout_0")
    lookup = games.make("tool/lookup")
    lookup.reset(3)
    assert lookup.question in lookup.text_observation("composer_0")
    assert lookup.question not in lookup.text_observation("querier_0")
    assert np.all(np.isfinite(lookup.observe("querier_0")))


def test_random_play_success_rates_leave_room_to_learn():
    rng = np.random.default_rng(0)
    for name, kwargs in [("tool/relay", {"max_value": 2, "ops": "+"}), ("tool/lookup", {})]:
        game = games.make(name, **kwargs)
        wins = [_play(game, s, lambda g, a: rng.choice(g.legal_action_texts(a))).info["success"]
                for s in range(300)]
        assert 0.0 < np.mean(wins) < 0.5


@pytest.mark.parametrize("expression, value", [
    ("2**-1", Fraction(1, 2)),  # was 0: int ** negative int gave a float, printed as int
    ("2 ** -3 * 8", 1),
    ("(-2) ** -3", Fraction(-1, 8)),
    ("0.1 + 0.2", Fraction(3, 10)),  # decimal literals are exact decimals
    ("0.1 ** 64", Fraction(1, 10**64)),
    ("(1/3) ** 64", Fraction(1, 3**64)),
    ("1e-300 ** 2", Fraction(1, 10**600)),
    ("1e18", 10**18),
    ("7 // 0.5", 14),
    ("7 % 2.5", 2),
    ("0 ** 0", 1),
])
def test_safe_eval_is_exact(expression, value):
    out = safe_eval(expression)
    assert out == value and type(out) is type(value)


@pytest.mark.parametrize("expression, message", [
    ("1e309", "number too large"),  # parses as inf; raised OverflowError
    ("0**-1", "division by zero"),  # raised ZeroDivisionError
    ("0.0 ** -2", "division by zero"),
    ("(((0.1**64)**64)**64)**64", "too precise"),  # exact fractions grew for > 20 s
    ("(0.1**64)**64", "too precise"),
    ("((1/3)**64)**64", "too precise"),
    ("2 ** 64", "too large"),
    ("0.5 ** -64", "too large"),
    ("2 ** 0.5", "exponent 0.5 not allowed"),
    ("1e308 * 10", "too large"),
    ("1\x00", "cannot parse"),
    ("1j", "unsupported"),
    ("True + 1", "unsupported"),
])
def test_safe_eval_refuses_with_tool_errors(expression, message):
    with pytest.raises(ToolError, match=message):
        safe_eval(expression)
    result = Calculator(max_calls=1).call(expression)
    assert not result.ok and message.split()[0] in result.text


def test_tiny_results_print_below_float_range():
    assert Calculator(max_calls=1).call("1e-300 ** 2").text == "1e-300 ** 2 = 1e-600"
    assert format_number(Fraction(1, 2)) == "0.5"


def test_random_expressions_give_a_value_or_a_tool_error():
    """Every text gives a value or a ToolError: nothing else escapes the calculator."""
    rng = np.random.default_rng(0)
    atoms = ["0", "1", "2", "7", "0.1", "1e309", "1e-300", "64", "-1", "0.0", "3.5", "10"]
    ops = ["+", "-", "*", "/", "//", "%", "**", "**-"]
    ok = 0
    for _ in range(3000):
        expr = str(rng.choice(atoms))
        for _ in range(int(rng.integers(1, 6))):
            expr = f"{expr} {rng.choice(ops)} {rng.choice(atoms)}"
            if rng.random() < 0.4:
                expr = f"({expr})"
        try:
            value = safe_eval(expr)
        except ToolError:
            continue
        ok += 1
        assert type(value) in (int, Fraction) and abs(value) <= MAX_MAGNITUDE
        assert max(Fraction(value).numerator.bit_length(),
                   Fraction(value).denominator.bit_length()) <= MAX_BITS
    assert ok > 500  # most are fine; the rest were refused with ToolError
