"""Guards that stop training when a NaN or infinity reaches a learner.

One NaN reward turns every weight NaN after one update, and the run goes on silently.
Every learner therefore checks what it stores (rewards, observations, states, where the
rollout or replay is written) and what it is about to apply (loss, gradient norm, before
``optimizer.step()``), and raises :class:`NonFiniteError` naming the game, the agent, the
frame (or the unit the learner counts in, :attr:`FiniteGuard.unit`) and the quantity, before
the batch holding it changes any weight.

The checks are vectorized: one ``isfinite(...).all()`` per array and batch (one device
sync for a group of tensors), never a loop over samples; locating the bad agent and
value runs only once something is wrong.

Example::

    guard = FiniteGuard("openspiel/kuhn_poker", ("player_0", "player_1"))
    guard.data(step=128, per_agent={"reward": rewards_BA})  # [B, A]: agents on dim 1
    guard.scalar(step=128, quantity="loss", value=loss)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

Array = np.ndarray | torch.Tensor


class NonFiniteError(ValueError):
    """A NaN or infinity reached a learner; training stopped before the batch holding it
    changed any weight (the updates of earlier batches stand)."""


def _all_finite(values: Sequence[Array]) -> bool:
    """True when every element of every array is finite (one sync for all device tensors;
    CPU tensors are checked through numpy, several times faster for small batches)."""
    tensors = []
    for v in values:
        if isinstance(v, torch.Tensor):
            if not v.is_floating_point():
                continue
            if v.device.type != "cpu":
                tensors.append(v)
                continue
            v = v.detach().numpy()
        if v.dtype.kind in "fc" and not np.isfinite(v).all():
            return False
    if not tensors:
        return True
    if len(tensors) == 1:
        return bool(torch.isfinite(tensors[0]).all())
    return bool(torch.stack([torch.isfinite(t).all() for t in tensors]).all())


def _as_numpy(values: Array) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        return values.detach().float().cpu().numpy()
    return np.asarray(values, dtype=np.float64)


def _first_bad(values: Array, agent_dim: int | None) -> tuple[float, int | None]:
    """The first non-finite value and, with ``agent_dim``, the index along it."""
    arr = _as_numpy(values)
    bad = ~np.isfinite(arr)
    idx = np.argwhere(bad)[0]
    agent = None if agent_dim is None or arr.ndim <= agent_dim else int(idx[agent_dim])
    return float(arr[tuple(idx)]), agent


@dataclass(frozen=True)
class FiniteGuard:
    """Checks for one learner: ``game`` is the game's name, ``agents`` the seats it trains
    (in the order of the learner's agent axis), ``unit`` what the ``step`` the learner passes
    counts (``frame``: copies x steps of the game, what marl's learners count;
    ``iteration`` for a trainer that counts its updates)."""

    game: str
    agents: tuple[str, ...]
    # what the message says: earlier batches did update (a NaN at frame 1472 after an update
    # at 800), the one holding the NaN did not
    stopped: str = "training stopped before the batch holding it changed any weight"
    unit: str = "frame"

    def _fail(self, quantity: str, value: float, agent: str, step: int, hint: str) -> None:
        raise NonFiniteError(
            f"non-finite {quantity} ({value}) in game {self.game!r}, {agent}, "
            f"at {self.unit} {step}: {self.stopped}; {hint}")

    def _who(self, index: int | None) -> str:
        if index is not None and 0 <= index < len(self.agents):
            return f"agent {self.agents[index]!r}"
        return "agents " + ", ".join(repr(a) for a in self.agents)

    def data(self, step: int, per_agent: Mapping[str, Array | None] | None = None,
             shared: Mapping[str, Array | None] | None = None, agent_dim: int = 1) -> None:
        """Check what a game returned before it is stored.

        Args:
            step: the learner's count in :attr:`unit` (a frame count by default), for the
                message.
            per_agent: quantity name → array with the learner's agents on ``agent_dim``
                (e.g. rewards ``[B, A]``, observations ``[B, A, O]``).
            shared: quantity name → array without an agent axis (a global state ``[B, S]``).
            None values are skipped.
        """
        per_agent = {k: v for k, v in (per_agent or {}).items() if v is not None}
        shared = {k: v for k, v in (shared or {}).items() if v is not None}
        if _all_finite([*per_agent.values(), *shared.values()]):
            return
        hint = "the game returned it (check the game's rewards and observations)"
        for name, values in [*per_agent.items(), *shared.items()]:
            if not _all_finite([values]):
                value, index = _first_bad(values, agent_dim if name in per_agent else None)
                self._fail(name, value, self._who(index), step, hint)

    def scalar(self, step: int, quantity: str, value: torch.Tensor | float,
               agents: Sequence[str] | None = None) -> None:
        """Check a loss or gradient norm before ``optimizer.step()`` (``step``: the learner's
        count in :attr:`unit`; ``agents``: whose loss it is; default all the learner's
        agents)."""
        v = float(value.detach() if isinstance(value, torch.Tensor) else value)
        if np.isfinite(v):
            return
        who = (f"agent {agents[0]!r}" if agents is not None and len(agents) == 1 else
               "agents " + ", ".join(repr(a) for a in (agents or self.agents)))
        self._fail(quantity, v, who, step,
                   "check the game's rewards and their scale, the learning rate and "
                   "max_grad_norm")
