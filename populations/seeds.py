"""One seed tree per run: every random stream of an experiment gets its seed here.

A run's ``seed`` is the root of a ``numpy.random.SeedSequence`` tree; each stream is the
child named by its path (``learner/<member>``, ``game/train``, ``opponent/<seat>``,
``match/psro/<iteration>``, ``oracle/<iteration>/<seat>``...), so streams are independent
of each other and of the order they are asked for, and the same seed and config give the
same numbers. Nothing here (or in a learner) touches the global torch / numpy random state;
:func:`isolated_global_rng` runs code that still draws from it (frozen opponents' sampling)
on a seeded copy and puts the caller's state back afterwards.

Game copies of a ``VectorGame`` seeded ``s`` use ``s, s+1, ..., s+B-1``: :meth:`RunSeeds.block`
hands out seeds whose blocks of ``span`` never overlap between keys of one stream.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch

from marl.core import derive_seed

LEARNER, GAME, OPPONENT, MATCH, ORACLE, GLOBAL = (
    "learner", "game", "opponent", "match", "oracle", "global")
BLOCK = 1 << 16  # seeds per block: more game copies than any job steps together


class RunSeeds:
    """The seed tree of one run (root ``seed``); every method returns a 31-bit int seed."""

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)

    def stream(self, *path: str | int) -> int:
        """The seed of the stream at ``path`` (names and non-negative ints)."""
        return derive_seed(self.seed, *path)

    def learner(self, member: str) -> int:
        return self.stream(LEARNER, member)

    def game(self, purpose: str) -> int:
        """Game copies for ``purpose`` (``train``, ``eval``...), a block of :data:`BLOCK`."""
        return self.block(GAME, purpose, index=0)

    def opponent(self, seat: str) -> int:
        """The random (or scripted) opponent in ``seat``: one stream per seat."""
        return self.stream(OPPONENT, seat)

    def block(self, *path: str | int, index: int) -> int:
        """Seed of block ``index`` of the stream at ``path``: blocks of one stream never
        overlap (``[s, s + BLOCK)`` for distinct ``index``), so jobs seeding game copies
        ``s, s+1, ...`` from consecutive indices never replay each other's episodes."""
        if index < 0:
            raise ValueError(f"block index {index} is negative")
        base = self.stream(*path) % (2**31 - 2**28)  # room for 2**12 blocks above any base
        return base + (index % 2**12) * BLOCK


@contextlib.contextmanager
def isolated_global_rng(seed: int) -> Iterator[None]:
    """Run the block with the global torch (CPU and CUDA) and numpy random states seeded
    from ``seed``, and restore the caller's states afterwards (even on an exception)."""
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    np_state = np.random.get_state()
    try:
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(seed)
            np.random.seed(seed % 2**32)
            yield
    finally:
        np.random.set_state(np_state)
