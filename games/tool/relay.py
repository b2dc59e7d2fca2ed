"""``tool/relay``: split inputs, a message and a calculator.

The team must compute ``A op B``. The **scout** holds ``A``; the **solver** holds ``B`` and
knows ``op``. The scout acts once and sends a number (``send 7``); then the solver has
``solver_turns`` turns, each either a calculator call on the numbers it knows
(``calc 7 + 3``: operands are its own ``B`` and the number it was sent, any of ``ops``) or an
answer. Only numbers the calculator produced can be answered (``answer 10``), so the
answer has to come from the tool. The calculator allows ``max_calls`` calls; further calls
and divisions by zero return an error line instead of a result. A correct answer pays 1
to both agents, a wrong answer or running out of turns 0.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from games.core import GameError
from games.registry import register
from games.tool.base import MAX_TURNS, ToolTask, check_at_most, one_hot
from games.tool.tools import Calculator, format_number

OPS = "+-*/"
OP_NAMES = {"+": "plus", "-": "minus", "*": "times", "/": "divided by"}
MAX_VALUE = 100
"""Largest ``max_value``: the action table holds ``(max_value + 1)**2`` calculator calls per
operator (40,804 texts at 100 with ``+-*/``; 10**8 would never finish building)."""


def _apply_op(x: int, op: str, y: int) -> Fraction | int | None:
    """Exact value of ``x op y`` (None for a division by zero)."""
    if op == "/":
        return None if y == 0 else Fraction(x, y)
    return {"+": x + y, "-": x - y, "*": x * y}[op]


@register("tool/relay")
class RelayTask(ToolTask):
    """Scout and solver compute ``A op B`` through a message and a calculator.

    Example::

        >>> import games
        >>> g = games.make("tool/relay", max_value=3, ops="+")
        >>> ts = g.reset(seed=0)
        >>> g.legal_action_texts("scout_0")
        ['send 0', 'send 1', 'send 2', 'send 3']

    Args:
        max_value: inputs are integers in ``[0, max_value]``; at most :data:`MAX_VALUE`.
        ops: operators the task may ask for and the calculator offers, from ``+-*/``.
        max_calls: calculator calls per episode.
        solver_turns: turns of the solver (calls plus the answer); at most
            :data:`~games.tool.base.MAX_TURNS`.
    """

    def __init__(self, max_value: int = 9, ops: str = "+-*", max_calls: int = 2,
                 solver_turns: int = 3) -> None:
        if max_value < 1 or solver_turns < 2 or max_calls < 1:
            raise GameError(f"tool/relay needs max_value >= 1, solver_turns >= 2, max_calls "
                            f">= 1; got {max_value}, {solver_turns}, {max_calls}")
        check_at_most("tool/relay", max_value=(max_value, 1, MAX_VALUE),
                      solver_turns=(solver_turns, 2, MAX_TURNS))
        if not ops or set(ops) - set(OPS) or len(set(ops)) != len(ops):
            raise GameError(f"tool/relay: ops={ops!r}; expected distinct characters of {OPS!r}")
        self.max_value, self.ops = max_value, ops
        self.max_calls, self.solver_turns = max_calls, solver_turns
        values = range(max_value + 1)
        answers = sorted({int(r) for x in values for y in values for op in ops
                          if (r := _apply_op(x, op, y)) is not None and r == int(r)})
        self.answers = answers
        actions = [f"send {v}" for v in values]
        actions += [f"calc {x} {op} {y}" for op in ops for x in values for y in values]
        actions += [f"answer {v}" for v in answers]
        width = 2 + 2 * (max_value + 1) + len(ops) + len(answers) + 2
        super().__init__("tool/relay", [("scout_0", "scout"), ("solver_0", "solver")], actions,
                         width, max_steps=1 + solver_turns)
        self.calc = Calculator(max_calls)

    # ------------------------------------------------------------------- episode
    def _new_task(self, rng: np.random.Generator) -> None:
        self.op = self.ops[int(rng.integers(len(self.ops)))]
        pairs = [(a, b) for a in range(self.max_value + 1) for b in range(self.max_value + 1)
                 if (r := _apply_op(a, self.op, b)) is not None and r == int(r)]
        self.a, self.b = pairs[int(rng.integers(len(pairs)))]
        self.goal = int(_apply_op(self.a, self.op, self.b))
        self.message: int | None = None
        self.log: list[str] = []
        self.results: list[int] = []  # integer calculator results, in order
        self.turns_used = 0
        self.calc.reset()

    def acting_agents(self) -> tuple[str, ...]:
        if self.done:
            return ()
        return ("scout_0",) if self.message is None else ("solver_0",)

    def _known(self) -> list[int]:
        return sorted({self.b, self.message}) if self.message is not None else [self.b]

    def _legal_texts(self, agent: str) -> list[str]:
        if agent == "scout_0":
            return [f"send {v}" for v in range(self.max_value + 1)]
        known = self._known()
        calls = [f"calc {x} {op} {y}" for op in self.ops for x in known for y in known]
        return calls + [f"answer {v}" for v in self.results]

    def _apply(self, agent: str, text: str) -> None:
        verb, *args = text.split()
        if verb == "send":
            self.message = int(args[0])
            return
        self.turns_used += 1
        if verb == "calc":
            expression = " ".join(args)
            res = self.calc.call(expression)
            self.log.append(res.text)
            value = res.value if res.ok else None  # the calculator's own result
            if value is not None and value == int(value) and int(value) not in self.results:
                self.results.append(int(value))
        else:  # answer
            self.done, self.success = True, int(args[0]) == self.goal
        if self.turns_used >= self.solver_turns:
            self.done = True

    # --------------------------------------------------------------- observations
    def text_observation(self, agent: str) -> str:
        if agent == "scout_0":
            return (f"You are the scout. You hold A = {self.a}. The solver needs A to "
                    f"compute its answer.")
        said = f"A = {self.message}" if self.message is not None else "nothing yet"
        calls = " ; ".join(self.log) if self.log else "none"
        return (f"You are the solver. Compute A {self.op} B. You hold B = {self.b}. "
                f"Scout says: {said}. Calculator: {calls}. Calls left: {self.calc.calls_left}. "
                f"Turns left: {self.solver_turns - self.turns_used}.")

    def observe(self, agent: str) -> np.ndarray:
        M = self.max_value + 1
        solver = agent == "solver_0"
        own = self.b if solver else self.a
        op = self.ops.index(self.op) if solver else None
        results = np.zeros(len(self.answers), np.float32)
        if solver:
            for r in self.results:
                results[self.answers.index(r)] = 1.0
        left = [self.calc.calls_left / self.max_calls,
                (self.solver_turns - self.turns_used) / self.solver_turns]
        return np.concatenate([
            one_hot(2, int(solver)), one_hot(M, own), one_hot(M, self.message),
            one_hot(len(self.ops), op), results, np.asarray(left, np.float32),
        ])

    def describe(self) -> str:
        """The hidden instance, for logs: ``A op B = goal``."""
        return f"{self.a} {self.op} {self.b} = {format_number(self.goal)}"
