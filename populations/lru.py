"""A mapping that keeps its most recently used entries: the loaded policies of a runner and of
a policy store, which a league adds to every generation (one per member), were dicts never
emptied (walk 37c: +0.7 MB a generation, ~0.3 MB a policy)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, MutableMapping
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")

POLICY_CACHE = 64
"""Policies a runner keeps loaded by default (a league passes :func:`policy_cache_size`), and
a league's policy store keeps between generations."""
EVERY_RIVAL_CACHE = 256
"""The most policies a league's runner keeps with ``population.eval_window=0``: past this many
snapshots each generation loads its older rivals again (selfplay-train warns a long league
with ``eval_window=0`` at its start)."""


def policy_cache_size(members: int, eval_window: int, generations: int) -> int:
    """Loaded policies that cover a league generation's evaluation without loading one twice:
    the ``eval_window`` rivals, this generation's new snapshots and the last's (``members``
    each), at least :data:`POLICY_CACHE`. With ``eval_window=0`` (every earlier snapshot) the
    run's every snapshot, :data:`EVERY_RIVAL_CACHE` at most."""
    if eval_window:
        return max(POLICY_CACHE, eval_window + 2 * members)
    return max(POLICY_CACHE, min(members * (generations + 2), EVERY_RIVAL_CACHE))


class LRUCache(MutableMapping[K, V]):
    """At most ``maxsize`` entries (None: any number, until :meth:`trim`): reading or writing
    one makes it the newest; adding one past ``maxsize`` drops the least recently used.
    ``key in cache`` does not count as a use."""

    def __init__(self, maxsize: int | None = POLICY_CACHE) -> None:
        if maxsize is not None and (isinstance(maxsize, bool) or not isinstance(maxsize, int)
                                    or maxsize < 1):
            raise ValueError(f"LRUCache maxsize={maxsize!r}; expected an integer >= 1 (or "
                             "None: no bound, trim() keeps it small)")
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()

    def __getitem__(self, key: K) -> V:
        value = self._data[key]
        self._data.move_to_end(key)
        return value

    def __setitem__(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        if self.maxsize is not None:
            self.trim(self.maxsize)

    def trim(self, keep: int) -> None:
        """Drop all but the ``keep`` most recently used entries (``maxsize`` stays)."""
        while len(self._data) > max(0, keep):
            self._data.popitem(last=False)

    def __delitem__(self, key: K) -> None:
        del self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)
