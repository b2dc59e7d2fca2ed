"""``TabularPolicy``: action probabilities looked up by information-state text.

The policy kind of exact best responses, PSRO members and meta-mixtures on small
OpenSpiel games. Each seat has its own table ``{text observation: probabilities [N]}``;
the key is what the game shows the agent as text (``VecStep.text[agent][b]``), which for
imperfect-information OpenSpiel games is the information-state string, so a table built
by exact solvers plays unchanged in a ``VectorGame(..., with_text=True)``.

An information state missing from the table (never reached when the table was built)
is played uniformly over the legal actions. Saved as plain values (strings and a float64
tensor per seat), so ``torch.load(weights_only=True)`` reads it back.

Shape legend: ``B`` copies, ``N`` discrete actions, ``S`` table rows.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from games import GameSpec, VecStep
from marl.core import Policy, PolicyMeta, register_policy

log = logging.getLogger(__name__)


@register_policy("tabular")
class TabularPolicy(Policy):
    """Per-seat tables ``{information-state text: probabilities [N]}`` (see module doc)."""

    def __init__(
        self, meta: PolicyMeta, tables: Mapping[str, Mapping[str, np.ndarray]], seed: int = 0
    ) -> None:
        unknown = set(tables) - set(meta.agents)
        if unknown:
            raise ValueError(f"tables for {sorted(unknown)}, but meta.agents={meta.agents}")
        self.meta = meta
        self.tables: dict[str, dict[str, np.ndarray]] = {}
        for agent, table in tables.items():
            n = meta.action_space(agent).n
            keys = list(table)
            try:
                probs = np.asarray([table[k] for k in keys], np.float64).reshape(len(keys), n)
            except ValueError:
                raise ValueError(f"{agent}: every table row must have {n} probabilities") from None
            bad = ~np.isfinite(probs).all(1) | (probs < 0).any(1)
            if bad.any():
                raise ValueError(f"{agent} {keys[int(np.argmax(bad))]!r}: probabilities must be "
                                 "finite and >= 0")
            mass = probs.sum(1, keepdims=True)
            probs = np.where(mass > 0, probs / np.where(mass > 0, mass, 1.0), 1.0 / n)
            self.tables[agent] = dict(zip(keys, probs, strict=True))
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.misses = 0  # acting rows whose text was not in the table

    def reseed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    @classmethod
    def from_tables(
        cls, spec: GameSpec, tables: Mapping[str, Mapping[str, np.ndarray]], seed: int = 0,
        **meta_kw: Any,
    ) -> TabularPolicy:
        """A policy for the seats ``tables`` has, on the game ``spec``."""
        meta = PolicyMeta.from_spec("tabular", spec, tuple(tables), inputs=("text",), **meta_kw)
        return cls(meta, tables, seed)

    def _table(self, agent: str) -> dict[str, np.ndarray]:
        if agent not in self.tables:
            raise ValueError(f"tabular policy has tables for {list(self.tables)}, not {agent!r}")
        return self.tables[agent]

    def action_probs(self, agent: str, vs: VecStep) -> np.ndarray:
        """``[B, N]`` table rows; uniform over legal actions where the text is unknown, and
        all mass on action 0 in copies where ``agent`` does not act."""
        table = self._table(agent)
        if vs.text is None:
            raise ValueError(
                "tabular policies read text observations; build the VectorGame with "
                "with_text=True"
            )
        legal = vs.legal[agent]  # [B, N]
        out = legal / np.maximum(legal.sum(1, keepdims=True), 1)
        out[~legal.any(1), 0] = 1.0
        missed = 0
        for b, text in enumerate(vs.text[agent]):
            row = table.get(text)
            if row is not None:
                out[b] = row
            elif vs.acting[agent][b]:
                missed += 1
        if missed:
            if not self.misses:
                log.warning("tabular policy: %d %s texts not in its table; playing uniformly",
                            missed, agent)
            self.misses += missed
        return out

    def act(self, agent: str, vs: VecStep, greedy: bool = False) -> np.ndarray:
        probs = self.action_probs(agent, vs)  # [B, N]
        if greedy:
            return probs.argmax(1)
        cdf = probs.cumsum(1)
        u = self.rng.random((probs.shape[0], 1)) * cdf[:, -1:]
        return np.minimum((cdf <= u).sum(1), probs.shape[1] - 1).astype(np.int64)

    def payload(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "tables": {
                agent: {
                    "keys": list(table),
                    "probs": torch.from_numpy(
                        np.stack(list(table.values())) if table
                        else np.zeros((0, self.meta.action_space(agent).n))
                    ),
                }
                for agent, table in self.tables.items()
            },
        }

    @classmethod
    def from_payload(cls, meta: PolicyMeta, payload: dict[str, Any]) -> TabularPolicy:
        tables = {
            agent: dict(zip(t["keys"], t["probs"].numpy(), strict=True))
            for agent, t in payload["tables"].items()
        }
        return cls(meta, tables, int(payload.get("seed", 0)))
