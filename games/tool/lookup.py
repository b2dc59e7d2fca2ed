"""``tool/lookup``: one role reads a bundled key-value table, the other composes the answer.

The **composer** is asked for the value of one key of a table (atomic numbers of the first
elements, bundled below) but cannot read the table; the **querier** can call the table tool
(``lookup neon``) but does not see the question. They alternate turns, composer first, for
at most ``max_turns`` turns in all. The composer may ``ask <key>`` (a message to the
querier) or ``answer <value>`` with a value the querier told it; the querier may
``lookup <key>`` (at most ``max_lookups`` calls; later calls return an error line) or
``tell <value>`` a value it looked up. A correct answer pays 1 to both, anything else 0.
"""

from __future__ import annotations

import numpy as np

from games.core import GameError
from games.registry import register
from games.tool.base import MAX_TURNS, ToolTask, check_at_most, one_hot
from games.tool.tools import KeyValueTable

ELEMENTS: dict[str, int] = {
    "hydrogen": 1, "helium": 2, "lithium": 3, "beryllium": 4, "boron": 5, "carbon": 6,
    "nitrogen": 7, "oxygen": 8, "fluorine": 9, "neon": 10, "sodium": 11, "magnesium": 12,
    "aluminium": 13, "silicon": 14, "phosphorus": 15, "sulfur": 16,
}
"""The bundled table: element name -> atomic number."""


@register("tool/lookup")
class LookupTask(ToolTask):
    """Composer and querier answer a question about a table only the querier can read.

    Example::

        >>> import games
        >>> g = games.make("tool/lookup", num_keys=4)
        >>> ts = g.reset(seed=0)
        >>> g.legal_action_texts("composer_0")
        ['ask hydrogen', 'ask helium', 'ask lithium', 'ask beryllium']

    Args:
        num_keys: the first ``num_keys`` entries of :data:`ELEMENTS` form the table.
        max_lookups: table calls per episode.
        max_turns: turns of both agents together; at most :data:`~games.tool.base.MAX_TURNS`.
    """

    def __init__(self, num_keys: int = 8, max_lookups: int = 2, max_turns: int = 6) -> None:
        if not 2 <= num_keys <= len(ELEMENTS) or max_lookups < 1 or max_turns < 5:
            raise GameError(f"tool/lookup needs 2 <= num_keys <= {len(ELEMENTS)}, max_lookups "
                            f">= 1, max_turns >= 5; got {num_keys}, {max_lookups}, {max_turns}")
        check_at_most("tool/lookup", max_turns=(max_turns, 5, MAX_TURNS))
        self.keys = list(ELEMENTS)[:num_keys]
        self.values = [ELEMENTS[k] for k in self.keys]
        self.max_turns = max_turns
        actions = [f"ask {k}" for k in self.keys] + [f"lookup {k}" for k in self.keys]
        actions += [f"tell {v}" for v in self.values] + [f"answer {v}" for v in self.values]
        K = num_keys
        super().__init__("tool/lookup", [("composer_0", "composer"), ("querier_0", "querier")],
                         actions, obs_width=2 + 4 * K + 2, max_steps=max_turns)
        self.table = KeyValueTable({k: ELEMENTS[k] for k in self.keys}, max_lookups)

    # ------------------------------------------------------------------- episode
    def _new_task(self, rng: np.random.Generator) -> None:
        self.question = self.keys[int(rng.integers(len(self.keys)))]
        self.turn = 0
        self.asked: list[str] = []
        self.told: list[int] = []
        self.found: list[int] = []
        self.log: list[str] = []
        self.table.reset()

    def acting_agents(self) -> tuple[str, ...]:
        if self.done:
            return ()
        return ("composer_0",) if self.turn % 2 == 0 else ("querier_0",)

    def _legal_texts(self, agent: str) -> list[str]:
        if agent == "composer_0":
            return [f"ask {k}" for k in self.keys] + [f"answer {v}" for v in self.told]
        return [f"lookup {k}" for k in self.keys] + [f"tell {v}" for v in self.found]

    def _apply(self, agent: str, text: str) -> None:
        verb, arg = text.split()
        if verb == "ask":
            self.asked.append(arg)
        elif verb == "lookup":
            res = self.table.call(arg)
            self.log.append(res.text)
            if res.ok and res.value not in self.found:
                self.found.append(int(res.value))
        elif verb == "tell":
            if int(arg) not in self.told:
                self.told.append(int(arg))
        else:  # answer
            self.done, self.success = True, int(arg) == ELEMENTS[self.question]
        self.turn += 1
        if self.turn >= self.max_turns:
            self.done = True

    # --------------------------------------------------------------- observations
    def text_observation(self, agent: str) -> str:
        left = f"Turns left: {self.max_turns - self.turn}."
        if agent == "composer_0":
            told = " ; ".join(str(v) for v in self.told) or "nothing yet"
            return (f"You are the composer. Question: what is the number of {self.question}? "
                    f"Only the querier can read the table. Querier says: {told}. {left}")
        asked = " ; ".join(self.asked) or "nothing yet"
        lookups = " ; ".join(self.log) or "none"
        return (f"You are the querier. You can look up the table. Composer asks: {asked}. "
                f"Lookups: {lookups}. Lookups left: {self.table.calls_left}. {left}")

    def observe(self, agent: str) -> np.ndarray:
        K = len(self.keys)
        composer = agent == "composer_0"
        asked, found, told = (np.zeros(K, np.float32) for _ in range(3))
        for k in self.asked:
            asked[self.keys.index(k)] = 1.0
        for v in self.found:
            found[self.values.index(v)] = 1.0
        for v in self.told:
            told[self.values.index(v)] = 1.0
        question = one_hot(K, self.keys.index(self.question) if composer else None)
        if composer:
            found[:] = 0.0  # the composer sees neither the table nor the lookups
        else:
            told[:] = 0.0
        extra = [self.turn / self.max_turns, self.table.calls_left / self.table.max_calls]
        return np.concatenate([one_hot(2, int(not composer)), question, asked, found, told,
                               np.asarray(extra, np.float32)])
