"""Checks of untrusted state read from a file (a policy file, a learner's or a run's
checkpoint) that ``weights_only`` loading and shape checks let pass, each a one-line
``ValueError`` naming the bad value and what is accepted, raised before the state is used:

* :func:`nonfinite_tensor`: NaN or inf in a floating tensor (a policy with NaN weights
  samples from a NaN distribution: torch's ``probability tensor contains either inf, nan``
  mid-match);
* :func:`load_optimizer_state`: an optimizer state whose hyperparameters are not finite
  numbers (``lr='x'``: a ``TypeError`` mid-update) or whose state tensors do not fit their
  parameters (torch's ``Optimizer.load_state_dict`` accepts both);
* :func:`short_repr`: a value shown in a message, bounded however large or deeply nested
  it is (``f"{x!r:.80}"`` builds the whole repr first: a ``RecursionError`` on 20,000
  nested lists).
"""

from __future__ import annotations

import math
import numbers
import reprlib
from collections.abc import Iterator
from typing import Any

import torch

from marl.optim import Adam

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 60, 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4


def short_repr(x: Any, limit: int = 80) -> str:
    """``repr(x)`` of at most ``limit`` characters (``...`` where cut), built without
    walking more than a few levels and items of ``x``."""
    text = _REPR.repr(x)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _tensors(tree: Any, where: str = "", depth: int = 0) -> Iterator[tuple[str, torch.Tensor]]:
    """``(path, tensor)`` for each tensor in nested dicts, lists and tuples (a path such as
    ``actors['0.head.0.weight']``), depth first in their order."""
    if isinstance(tree, torch.Tensor):
        yield where, tree
    elif depth < 64 and isinstance(tree, dict):
        for k, v in tree.items():
            yield from _tensors(v, f"{where}[{short_repr(k, 60)}]" if where or not isinstance(
                k, str) else k, depth + 1)
    elif depth < 64 and isinstance(tree, list | tuple):
        for i, v in enumerate(tree):
            yield from _tensors(v, f"{where}[{i}]", depth + 1)


def _all_finite(t: torch.Tensor) -> bool:
    """Whether every value of a floating or complex ``t`` is finite. A sum holding NaN or inf
    means some value is not (or the sum overflowed: then each value is looked at); a finite
    sum means none is. The sum reads ``t`` once, without the ``isfinite`` mask's copy: 0.09 s
    of 100M float32 values where ``isfinite(t).all()`` took 3.0 s (2 loaded CPU cores)."""
    return bool(torch.isfinite(t.sum())) or bool(torch.isfinite(t).all())


UNREADABLE_ACCEPTED = "accepted: tensors with values, floating (16 to 64 bits), integer or bool"
"""What :func:`nonfinite_tensor` accepts in place of a tensor it cannot read, as
:func:`marl.core.check_tensors` words it for a file's."""


def _unreadable(t: torch.Tensor) -> str | None:
    """``meta`` or the dtype (``float8_e4m3fn``) of a tensor whose values the finiteness check
    cannot read (no values; a dtype outside :data:`marl.core.LOADED_DTYPES`, such as float8,
    which torch's sum has no kernel for), or None. Complex dtypes are left to their own
    refusal."""
    from marl.core import LOADED_DTYPES  # here: marl.core imports this module

    if t.is_meta:
        return "meta"
    if t.dtype not in LOADED_DTYPES and not t.is_complex():
        return str(t.dtype).removeprefix("torch.")
    return None


def nonfinite_tensor(tree: Any) -> str | None:
    """Where a tensor in ``tree`` holds NaN or inf (``"NaN in actors['0.head.0.weight']"``)
    or complex numbers (``"complex64 values in ..."``: loading them into real weights drops
    the imaginary part, with torch's warning), or None when every one is finite and real.
    A tensor whose values cannot be read (a meta or float8 tensor in a state given in memory:
    a file's are refused before, by :func:`marl.core.check_tensors`) is named as such
    (``"a meta tensor in actors['w'] (accepted: ...)"``), where reading it raised torch's
    traceback."""
    for where, t in _tensors(tree):
        kind = _unreadable(t)
        if kind is not None:
            return f"a {kind} tensor in {where or 'its tensor'} ({UNREADABLE_ACCEPTED})"
        if t.is_complex():
            return f"{str(t.dtype).removeprefix('torch.')} values in {where or 'its tensor'}"
        if t.is_floating_point() and not _all_finite(t):
            what = "NaN" if bool(torch.isnan(t).any()) else "inf"
            return f"{what} in {where or 'its tensor'}"
    return None


def refuse_nonfinite(tree: Any, what: str) -> None:
    """Raise a one-line ``ValueError`` when :func:`nonfinite_tensor` finds NaN or inf in
    ``tree``, or a tensor it cannot read (``what``: what it is, such as "learner state")."""
    bad = nonfinite_tensor(tree)
    if bad is not None:
        raise ValueError(f"{what} holds {bad}; its tensors must be finite real numbers")


def _real(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def _hyper_ok(saved: Any, now: Any) -> tuple[bool, str]:
    """Whether a saved param_group value may replace ``now`` (the optimizer's own), and what
    is accepted: numbers finite and >= 0 (every hyperparameter of torch's optimizers is,
    as their constructors check), ``betas`` each in [0, 1), flags as the optimizer has them
    (``amsgrad``, ``maximize``, ``capturable`` change what its state and step need)."""
    if isinstance(now, torch.Tensor):  # a tensor lr: one finite number
        now = now.item() if now.numel() == 1 else None
    if isinstance(saved, torch.Tensor) and saved.numel() == 1 and not saved.is_complex():
        saved = saved.item()
    if _real(now):
        return _real(saved) and saved >= 0, "a finite number >= 0"
    if isinstance(now, tuple | list) and all(_real(v) for v in now):
        return (isinstance(saved, tuple | list) and len(saved) == len(now)
                and all(_real(v) and 0 <= v < 1 for v in saved),
                f"{len(now)} numbers in [0, 1)")
    return saved == now and type(saved) is type(now), repr(now)


def _group_error(i: int, saved: Any, now: dict[str, Any]) -> str | None:
    if not isinstance(saved, dict) or not isinstance(saved.get("params"), list) \
            or not all(type(p) is int for p in saved["params"]):
        return f"param_groups[{i}] is {short_repr(saved)}; accepted: a dict with 'params'"
    if len(saved["params"]) != len(now["params"]):
        return (f"param_groups[{i}] has {len(saved['params'])} parameters; the optimizer has "
                f"{len(now['params'])}")
    for key in sorted(set(saved) & set(now) - {"params", "foreach"}):
        ok, accepted = _hyper_ok(saved[key], now[key])
        if not ok:
            return (f"param_groups[{i}][{key!r}] is {short_repr(saved[key])}; accepted: "
                    f"{accepted}")
    if saved.get("foreach", None) not in (None, True, False):  # how it ran, any of these
        return f"param_groups[{i}]['foreach'] is {short_repr(saved['foreach'])}"
    return None


def _adam_keys(group: dict[str, Any]) -> set[str]:
    return {"step", "exp_avg", "exp_avg_sq", *(["max_exp_avg_sq"] if group["amsgrad"] else [])}


def _state_error(opt: torch.optim.Optimizer | Adam, state: Any, ids: list[int]) -> str | None:
    """What is wrong with a saved ``state`` (param id -> its state) for ``opt``'s parameters
    (``ids``: the saved ids of them, in order), or None."""
    if not isinstance(state, dict):
        return f"state is {short_repr(state)}; accepted: a dict of parameter id -> its state"
    params = {pid: (p, g) for pid, (p, g) in zip(
        ids, ((p, g) for g in opt.param_groups for p in g["params"]), strict=True)}
    for pid, st in state.items():
        if pid not in params:
            return f"state holds parameter {short_repr(pid)}; the optimizer has ids {ids[:8]}"
        p, group = params[pid]
        if not isinstance(st, dict) or not all(isinstance(k, str) for k in st):
            return f"state[{pid}] is {short_repr(st)}; accepted: a dict of its tensors"
        want = _adam_keys(group) if isinstance(opt, torch.optim.Adam | Adam) else None
        if want is not None and st and set(st) != want:
            return f"state[{pid}] holds {sorted(st)}; accepted: {sorted(want)} (or nothing)"
        for key, v in st.items():
            at = f"state[{pid}][{key!r}]"
            if key == "step":
                n = v.item() if isinstance(v, torch.Tensor) and v.numel() == 1 \
                    and not v.is_complex() else v
                if not (_real(n) and n >= 0):
                    return f"{at} is {short_repr(v)}; accepted: a finite count >= 0"
            elif v is None:
                continue  # SGD's momentum_buffer before the first step
            elif not isinstance(v, torch.Tensor) or not v.is_floating_point():
                return f"{at} is {short_repr(v)}; accepted: a floating tensor"
            elif v.shape != p.shape:
                return f"{at} has shape {list(v.shape)}; its parameter has {list(p.shape)}"
            elif not _all_finite(v):
                return f"{at} holds {'NaN' if bool(torch.isnan(v).any()) else 'inf'}"
    return None


def optimizer_state_error(opt: torch.optim.Optimizer | Adam, saved: Any) -> str | None:
    """Why ``saved`` (an ``Optimizer.state_dict()`` read from a file) cannot be loaded into
    ``opt``, or None: its groups must match ``opt``'s (as many, each with as many
    parameters), their hyperparameters must be finite numbers >= 0 and their flags ``opt``'s,
    and each parameter's state must hold finite tensors of the parameter's shape (and, for
    Adam, exactly its step and moments)."""
    if not isinstance(saved, dict) or not isinstance(saved.get("param_groups"), list):
        return f"it is {short_repr(saved)}; accepted: an optimizer state_dict"
    now = opt.state_dict()["param_groups"]
    if len(saved["param_groups"]) != len(now):
        return f"it has {len(saved['param_groups'])} param_groups; the optimizer has {len(now)}"
    for i, (g, mine) in enumerate(zip(saved["param_groups"], now, strict=True)):
        why = _group_error(i, g, mine)
        if why is not None:
            return why
    ids = [pid for g in saved["param_groups"] for pid in g["params"]]
    if len(set(ids)) != len(ids):
        return "its param_groups name a parameter twice"
    return _state_error(opt, saved.get("state", {}), ids)


def load_optimizer_state(opt: torch.optim.Optimizer | Adam, saved: Any, name: str) -> None:
    """``opt.load_state_dict(saved)`` after :func:`optimizer_state_error` found nothing.

    Raises:
        ValueError: one line naming the optimizer (``name``), the bad field and what is
            accepted.
    """
    why = optimizer_state_error(opt, saved)
    if why is not None:
        raise ValueError(f"optimizer state {name!r}: {why}")
    opt.load_state_dict(saved)
