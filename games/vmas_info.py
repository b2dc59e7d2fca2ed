"""The scenario's info of the copies of a VMAS batch whose episode ended (``VecStep.info``),
read to the host only when looked at: :class:`EndedInfo`, made by ``games.vmas.VmasBatch``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch


class EndedInfo(Mapping[int, Mapping[str, Any]]):
    """``{b: {"agents": {agent: {key: value}}}}``: the scenario's info of each copy ``b`` in
    ``idx`` (``[k]`` int64, the copies whose episode ended), as :class:`VecStep.info` holds it.
    The ``[B, ...]`` tensors are sliced on the device when made (no host sync: a reset or the
    next step cannot change them) and read to the host on first look, all copies at once,
    so a step whose info nobody reads (training) pays k-row slices only."""

    def __init__(self, ids: Sequence[str], idx: torch.Tensor, info: Sequence[Mapping[str, Any]],
                 num_envs: int) -> None:
        self._ids, self._idx, self._host = tuple(ids), idx, None
        # per agent, key -> (its k rows, True) or (a value shared by every copy, False)
        self._rows = [{k: (v.index_select(0, idx), True) if _per_copy(v, num_envs) else (v, False)
                       for k, v in own.items()} for own in info]  # fmt: skip

    def _read(self) -> dict[int, dict[str, Any]]:
        if self._host is None:
            rows = [{k: (_plain(v), rowed) for k, (v, rowed) in own.items()}
                    for own in self._rows]
            self._host = {b: {"agents": {a: {k: v[i] if rowed else v
                                             for k, (v, rowed) in own.items()}
                                         for a, own in zip(self._ids, rows, strict=False)}}
                          for i, b in enumerate(self._idx.tolist())}  # fmt: skip
        return self._host

    def __getitem__(self, b: int) -> Mapping[str, Any]:
        return self._read()[b]

    def __iter__(self) -> Iterator[int]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._idx)  # its shape: no host sync

    def __reduce__(self) -> tuple:
        return dict, (self._read(),)  # pickled (a Ray worker's VecStep) as a plain host dict


def _plain(value: Any) -> Any:
    """A tensor as Python numbers (lists of them), anything else as it is."""
    return value.cpu().tolist() if isinstance(value, torch.Tensor) else value


def _per_copy(value: Any, num_envs: int) -> bool:
    """Whether an info ``value`` holds one row per copy (``[B, ...]``)."""
    return isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == num_envs
