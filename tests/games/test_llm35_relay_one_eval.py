"""``tool/relay`` takes a calculator call's result from the calculator (walk35b item 5): it
evaluated the expression a second time with ``safe_eval`` after ``Calculator.call`` had
returned it. The spy counts the real evaluations (each still runs)."""

from __future__ import annotations

import games
import games.tool.relay as relay
import games.tool.tools as tools


def test_a_calculator_call_is_evaluated_once(monkeypatch):
    calls: list[str] = []
    real = tools.safe_eval

    def counted(expression):
        calls.append(expression)
        return real(expression)

    monkeypatch.setattr(tools, "safe_eval", counted)
    if hasattr(relay, "safe_eval"):
        monkeypatch.setattr(relay, "safe_eval", counted)
    g = games.make("tool/relay", max_value=3, ops="+")
    g.reset(seed=0)
    g.step({"scout_0": g.actions.index(f"send {g.a}")})
    g.step({"solver_0": g.actions.index(f"calc {min(g.a, g.b)} + {max(g.a, g.b)}")})
    assert calls == [f"{min(g.a, g.b)} + {max(g.a, g.b)}"]
    assert g.results == [g.a + g.b]  # the result is still answerable
    assert g.legal_action_texts("solver_0")[-1] == f"answer {g.a + g.b}"
