"""Resetting some copies of a VMAS batch in one call (:meth:`games.vmas._Sim.reset_at`).

VMAS resets one copy at a time (``reset_at(i)``) or all of them (``reset()``). To reset the
copies that ended in one call, the batch resets all copies and puts the others back: every
tensor reachable from the scenario with a leading copy dimension is saved before and its
kept copies restored after (:func:`batch_slots`, :func:`restore_others`); every other value
of a VMAS object (one for all copies: a goal landmark, a count) must come out of the reset
unchanged (:func:`changed`), or the scenario is reset one copy at a time from then on
(:data:`RESET_ONE_BY_ONE` lists the scenarios known to need it).

Some scenarios draw part of a layout once for all copies when all are reset
(``reset_world_at(None)``): passage's gap and which agent starts where are one
``torch.randperm`` for the batch. Their copies' episodes would not be independent draws (an
evaluation's interval too narrow, a training batch of one layout), so those scenarios
(:func:`draws_shared`) reset up to :data:`RESET_GROUPS` copies one by one, each its own
draw, and more in that many groups, each group a reset of all copies that keeps only its
copies (:func:`shared_in_batch` finds such draws).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from games.core import GameError

# scenarios whose reset state is not all tensors with a leading copy dimension reachable
# from the scenario (their one-call reset would touch copies that did not end)
RESET_ONE_BY_ONE = frozenset({
    "vmas/football",  # (its scripted red players' state)
    "vmas/het_mass",  # a full reset draws new masses for all copies
    "vmas/road_traffic",  # a buffer of recorded initial states, indexed per reset
    "vmas/sampling",  # one reset of all copies loops over its grid in Python
    "vmas/simple_reference",  # a full reset draws one goal landmark for all copies
})


# values shared by all copies that every reset (of one copy too) draws again and nothing
# else reads: a reset of all copies may change them (changed_keys ignores them)
REDRAWN_BOOKKEEPING = {
    "vmas/ball_passage": frozenset({"passages_to_place", "neighbour"}),  # spawn_passage_map
}


# scenarios whose reset of all copies draws part of the layout once for the whole batch
# (VMAS 1.5.2; tests/games/test_vmas41_shared_draws.py checks the list against the scenarios)
DRAWS_SHARED = frozenset({
    "vmas/asym_joint",  # which agent starts at which end: one randperm
    "vmas/ball_passage",  # where the gaps are: one randperm of the passage blocks
    "vmas/ball_trajectory",  # which agent starts on which side of the ball: one randperm
    "vmas/give_way",  # the agents' start noise: one draw of dim_p for all copies
    "vmas/joint_passage",  # which agent starts at which end of the joint: one randperm
    "vmas/passage",  # the gap and which agent (and goal) takes which slot: randperms
    "vmas/wind_flocking",  # which agent starts on which side: one randperm
})


# how many groups of copies a scenario that draws part of the layout once for all copies
# (DRAWS_SHARED) resets more copies than this in (games.vmas._Sim._reset_each): each group a
# reset of all copies keeping only that group's, the others put back. Up to this many copies
# (an evaluation's batch of 32) are reset one by one, each its own draw; a larger batch has
# this many draws of what is drawn once for all (passage's gap), each copy its own of the
# rest. Measured (bench/vmas41_reset.py, one CPU thread, passage at 1,024 copies): a group
# costs ~5 ms (a reset of all copies and the put-back), 16 groups 0.07 s, 32 0.16 s, 64
# 0.27 s, against 2.4 s one by one; 32 is ~1-4 % of a 100-step episode (passage, give_way,
# joint_passage, ball_passage at 256 and 1,024 copies).
RESET_GROUPS = 32


def draws_shared(where: str, kwargs: dict[str, Any]) -> bool:
    """Whether a reset of all copies of ``where`` with scenario ``kwargs`` draws part of
    the layout once for every copy (:data:`DRAWS_SHARED`; football only when it shuffles
    the players of its formations, ball_passage not with its fixed passage)."""
    if where == "vmas/football":
        return bool(kwargs.get("spawn_in_formation", False)
                    and kwargs.get("randomise_formation_indices", False))
    if where == "vmas/ball_passage" and kwargs.get("fixed_passage", False):
        return False
    return where in DRAWS_SHARED


def shared_in_batch(batch: torch.Tensor, single: torch.Tensor, band: float = 0.1
                    ) -> list[tuple[int, int]]:
    """Draws one for all copies: ``batch`` and ``single`` are ``[B, F]`` layouts (entity
    positions) after a reset of all copies and after resetting each copy on its own. A
    feature ``(f, f)`` one value in every copy of ``batch`` that varies in ``single``, or an
    order ``(f, g)`` (``f < g``) the same in every copy of ``batch`` that holds in between
    ``band`` and ``1 - band`` of ``single``'s copies (a shuffle drawn once: which agent
    starts left). Copies drawn independently show neither but with a chance of about
    ``(1 - band) ** B`` an order."""
    out = []
    same = (batch == batch[:1]).all(0)
    varies = ~(single == single[:1]).all(0)
    out += [(int(f), int(f)) for f in (same & varies).nonzero().flatten()]
    lt_b = batch[:, :, None] < batch[:, None, :]
    lt_s = (single[:, :, None] < single[:, None, :]).float().mean(0)
    fixed = lt_b.all(0) | (~lt_b).all(0)
    mixed = (lt_s > band) & (lt_s < 1 - band)
    both = torch.triu(fixed & mixed & ~(same[:, None] | same[None, :]), diagonal=1)
    out += [(int(f), int(g)) for f, g in both.nonzero().tolist()]
    return out


_PLAIN = (bool, int, float, complex, str, bytes, type(None))


@dataclass(frozen=True)
class _Held:
    """A tensor of all copies and a copy of its values before a reset."""

    tensor: torch.Tensor
    values: torch.Tensor


def batch_slots(scenario: Any, num_envs: int
                 ) -> tuple[list[tuple[Any, Any, torch.Tensor]], list[tuple[Any, Any, Any]]]:
    """What a reset of all copies may change, reachable from ``scenario`` through VMAS
    objects (world, entities, states, actions, sensors, the scenario's own attributes),
    lists, tuples and dicts: (container, key, tensor) of every tensor with a leading
    dimension of ``num_envs`` (per copy), and (container, key, value) of every other value
    of a VMAS object's attributes (one for all copies: a goal landmark, a count)."""
    seen: set[int] = set()
    slots: list[tuple[Any, Any, torch.Tensor]] = []
    shared: list[tuple[Any, Any, Any]] = []
    stack: list[Any] = [scenario]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        attrs = False
        if isinstance(obj, dict):
            items = obj.items()
        elif isinstance(obj, (list, tuple)):
            items = enumerate(obj)
        elif hasattr(obj, "__dict__") and is_vmas_object(obj):
            items, obj, attrs = vars(obj).items(), vars(obj), True
        else:
            continue
        for key, value in items:
            if isinstance(value, torch.Tensor):
                if value.dim() and value.shape[0] == num_envs:
                    slots.append((obj, key, value))
                elif attrs:  # a tensor of all copies (a colour): its values are kept too
                    shared.append((obj, key, _Held(value, value.clone())))
                continue
            if attrs:
                shared.append((obj, key, value))
            if isinstance(value, (dict, list, tuple)) or hasattr(value, "__dict__"):
                stack.append(value)
    return slots, shared


def changed_keys(shared: list[tuple[Any, Any, Any]]) -> list[str]:
    """Keys whose value is now another object (plain values: another value; tensors of all
    copies: other values, compared on their device with one read for all of them)."""
    out, held = [], []
    for container, key, old in shared:
        now = container.get(key, changed_keys)
        if isinstance(old, _Held):
            b = old.values
            if isinstance(now, torch.Tensor) and now.shape == b.shape and now.dtype == b.dtype:
                held.append((key, (now == b) | (now.isnan() & b.isnan()) if b.is_floating_point()
                             else now == b))
                continue
            same = False
        else:
            same = now is old or (isinstance(old, _PLAIN) and type(now) is type(old)
                                  and now == old)
        if not same:
            out.append(str(key))
    if held and not bool(torch.stack([eq.all() for _, eq in held]).all()):  # one GPU wait
        out += [str(key) for key, eq in held if not bool(eq.all())]
    return out


def put_back(shared: list[tuple[Any, Any, Any]]) -> None:
    """Every value of ``shared`` as it was before the reset (tensors' values too)."""
    for container, key, old in shared:
        if isinstance(old, _Held):
            old.tensor.copy_(old.values)
            container[key] = old.tensor
        else:
            container[key] = old


def is_vmas_object(obj: Any) -> bool:
    """VMAS's classes, and scenarios (VMAS loads their modules under the name '')."""
    module = type(obj).__module__ or ""
    return module in ("", "__main__") or module.startswith("vmas.")


def restore_others(slots: list[tuple[Any, Any, torch.Tensor]], saved: list[torch.Tensor],
                    keep: torch.Tensor, where: str) -> None:
    """Put the ``keep`` copies of every slot back to ``saved`` (after a reset of all
    copies), in place: other references to a slot's tensor see the same values."""
    for (container, key, _), old in zip(slots, saved, strict=True):
        now = container[key]
        if (not isinstance(now, torch.Tensor) or now.shape != old.shape
                or now.dtype != old.dtype):
            raise GameError(f"{where}: its reset changed {key!r} from a {tuple(old.shape)} "
                            f"tensor to {type(now).__name__}; resetting its copies one by "
                            "one is needed (add it to games.vmas_reset.RESET_ONE_BY_ONE)")
        mixed = torch.where(keep.view(-1, *([1] * (old.dim() - 1))), old, now)
        if 0 in now.stride() and now.numel() > 1:  # expanded: one value seen by every copy
            container[key] = mixed  # (a tuple's expanded tensors would raise here)
        else:
            now.copy_(mixed)
