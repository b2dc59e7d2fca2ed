"""Adam (Kingma & Ba, 2015, https://arxiv.org/abs/1412.6980) in plain torch ops, bitwise
the same as ``torch.optim.Adam`` for the settings our learners use, without its import cost.

Why: every ``torch.optim.Optimizer`` imports ``torch._dynamo`` when it is built (its
``add_param_group`` and ``zero_grad`` are wrapped by ``torch._disable_dynamo``, which
imports it on first call): about 1.2 s CPU of a training process's ~5 s start on a 2-core
machine, paid by every ``selfplay-train``, learner actor and CLI child process.

What is the same as torch's (2.13 and 2.14, whose ``torch/optim/adam.py`` differ in type
annotations only): the update, op for op as its ``_single_tensor_adam`` and
``_multi_tensor_adam`` (``foreach``; with ``foreach=None`` used on CUDA only, as torch
picks it), so parameters and moments are bitwise torch's; ``param_groups`` (a list
of dicts: ``"params"``, ``"lr"``, ...); ``zero_grad``; ``step``; step post/pre hooks; and
``state_dict``/``load_state_dict`` in torch's format (group keys, ``"step"`` a float32
tensor, parameters as int ids), so checkpoints move between the two either way.

What is not: ``weight_decay``, ``amsgrad``, ``maximize``, ``capturable``,
``differentiable``, ``fused``, ``decoupled_weight_decay`` and tensor hyperparameters:
refused (``ValueError``) when built or loaded, never silently ignored.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

# torch.optim.Adam's param_group keys and defaults, in the order its groups hold them
_DEFAULTS: dict[str, Any] = {
    "lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0, "amsgrad": False,
    "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
    "fused": None, "decoupled_weight_decay": False,
}
# settings this Adam does not implement: each must hold the value shown (or one equal)
_OFF: dict[str, tuple[Any, ...]] = {
    "weight_decay": (0,), "amsgrad": (False,), "maximize": (False,), "capturable": (False,),
    "differentiable": (False,), "fused": (None, False), "decoupled_weight_decay": (False,),
}
_FOREACH_TYPES = (torch.Tensor, torch.nn.Parameter)


def _scalar_dtype() -> torch.dtype:
    """The dtype of ``state["step"]``: torch's ``_get_scalar_dtype()``."""
    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32


def _check_group(group: dict[str, Any]) -> None:
    """Refuse a group whose settings this Adam does not implement (one line)."""
    for key, allowed in _OFF.items():
        value = group.get(key, allowed[0])
        if isinstance(value, torch.Tensor) or value not in allowed:
            raise ValueError(f"Adam {key}={value!r}: marl.optim.Adam supports only "
                             f"{key}={allowed[0]!r}")
    lr, eps, betas = group["lr"], group["eps"], group["betas"]
    if not (isinstance(lr, numbers.Real) and isinstance(eps, numbers.Real)
            and lr >= 0 and eps >= 0 and math.isfinite(lr) and math.isfinite(eps)):
        raise ValueError(f"Adam lr={lr!r}, eps={eps!r}: each must be a finite number >= 0")
    if not (isinstance(betas, tuple | list) and len(betas) == 2
            and all(isinstance(b, numbers.Real) and 0 <= b < 1 for b in betas)):
        raise ValueError(f"Adam betas={betas!r}: accepted: 2 numbers in [0, 1)")
    if group["foreach"] not in (None, True, False):
        raise ValueError(f"Adam foreach={group['foreach']!r}: accepted: None, True, False")


def _use_foreach(group: dict[str, Any], params: list[torch.Tensor]) -> bool:
    """torch's choice: ``foreach`` as given, else foreach when every parameter is a plain
    tensor on a device with foreach kernels (CUDA), else the per-tensor loop."""
    if group["foreach"] is not None:
        return bool(group["foreach"])
    devices = ("cuda", "xpu", "mtia", torch._C._get_privateuse1_backend_name())
    return all(type(p) in _FOREACH_TYPES and p.device.type in devices for p in params)


class Adam:
    """``torch.optim.Adam(params, lr, betas, eps, foreach=...)`` without ``torch._dynamo``.

    Args:
        params: tensors to optimize, or dicts with ``"params"`` and per-group settings.
        lr, betas, eps, foreach: as torch's. Other torch keywords are accepted only at
            the value that turns them off (see the module docstring).

    Attributes:
        param_groups: list of dicts, ``"params"`` and the settings (torch's keys).
        state: flat parameter index (over all groups, in order) -> ``{"step",
            "exp_avg", "exp_avg_sq"}``; the index is the id :meth:`state_dict` writes.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        self.defaults: dict[str, Any] = {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
            "capturable": capturable, "differentiable": differentiable, "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        if isinstance(params, torch.Tensor):
            raise TypeError("Adam params: an iterable of tensors or dicts, not a tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[int, dict[str, torch.Tensor]] = {}
        self._step_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._step_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        seen: set[torch.Tensor] = set()
        for g in groups:
            ps = [g["params"]] if isinstance(g["params"], torch.Tensor) else list(g["params"])
            if not all(isinstance(p, torch.Tensor) and (p.is_leaf or p.retains_grad)
                       for p in ps):
                raise ValueError("Adam params: leaf tensors only")
            if seen & set(ps):
                raise ValueError("some parameters appear in more than one parameter group")
            seen |= set(ps)
            group = {"params": ps, **{k: g.get(k, v) for k, v in self.defaults.items()}}
            group["betas"] = tuple(group["betas"])
            _check_group(group)
            self.param_groups.append(group)

    def _flat(self) -> list[tuple[int, torch.Tensor, dict[str, Any]]]:
        """``(index, parameter, its group)`` over all groups in order."""
        return [(i, p, g) for i, (p, g) in enumerate(
            (p, g) for g in self.param_groups for p in g["params"])]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop (``set_to_none``) or zero every parameter's gradient, as torch's does."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adam step of every parameter that has a gradient (torch's ops and order)."""
        for hook in list(self._step_pre_hooks.values()):
            hook(self, (), {})
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        index = 0
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is not None:
                    if p.grad.is_sparse:
                        raise RuntimeError("Adam does not support sparse gradients")
                    st = self.state.get(index)
                    if not st:  # lazy, as torch: the step on the CPU, moments like p
                        st = self.state[index] = {
                            "step": torch.tensor(0.0, dtype=_scalar_dtype(), device="cpu"),
                            "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                            "exp_avg_sq": torch.zeros_like(
                                p, memory_format=torch.preserve_format)}
                    params.append(p)
                    grads.append(p.grad)
                    exp_avgs.append(st["exp_avg"])
                    exp_avg_sqs.append(st["exp_avg_sq"])
                    steps.append(st["step"])
                index += 1
            if not params:
                continue
            update = _foreach_adam if _use_foreach(group, params) else _single_tensor_adam
            beta1, beta2 = group["betas"]
            update(params, grads, exp_avgs, exp_avg_sqs, steps, lr=group["lr"], beta1=beta1,
                   beta2=beta2, eps=group["eps"])
        for hook in list(self._step_post_hooks.values()):
            hook(self, (), {})
        return loss

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` before each :meth:`step`, as torch's."""
        handle = RemovableHandle(self._step_pre_hooks)
        self._step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after each :meth:`step`, as torch's."""
        handle = RemovableHandle(self._step_post_hooks)
        self._step_post_hooks[handle.id] = hook
        return handle

    def state_dict(self) -> dict[str, Any]:
        """``{"state": {id: {"step", "exp_avg", "exp_avg_sq"}}, "param_groups": [...]}``,
        torch's format: each group's settings then ``"params"`` (int ids, counted over the
        groups in order); the state's tensors are the optimizer's own, as torch's."""
        groups, start = [], 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = list(range(start, start + len(g["params"])))
            start += len(g["params"])
            groups.append(packed)
        return {"state": {i: st for i, st in self.state.items()}, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load torch's (or our) :meth:`state_dict`: ids map to this optimizer's parameters
        in order, moments move to their parameter's dtype and device, ``"step"`` stays as
        saved (a number becomes a tensor, as torch's ``Adam.__setstate__``).

        Raises:
            ValueError: groups or parameters do not match, an id is unknown, or a group
                holds a setting this Adam does not implement.
        """
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(s["params"]) != len(g["params"])
               for s, g in zip(saved_groups, self.param_groups, strict=True)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = {pid: i for i, pid in enumerate(pid for s in saved_groups for pid in s["params"])}
        flat = self._flat()
        groups = []
        for s, g in zip(saved_groups, self.param_groups, strict=True):
            s["params"] = g["params"]
            for key, default in _DEFAULTS.items():  # torch's Adam.__setstate__ defaults
                s.setdefault(key, default)
            s["betas"] = tuple(s["betas"])
            _check_group(s)
            groups.append(s)
        state: dict[int, dict[str, torch.Tensor]] = {}
        for pid, st in state_dict["state"].items():
            if pid not in id_map:
                raise ValueError(f"loaded state dict holds parameter {pid!r}; the optimizer's "
                                 f"ids are {list(id_map)[:8]}")
            i = id_map[pid]
            p = flat[i][1]
            new = {}
            for key, v in st.items():
                if key == "step":
                    new[key] = v if isinstance(v, torch.Tensor) else torch.tensor(
                        float(v), dtype=_scalar_dtype())
                elif isinstance(v, torch.Tensor):
                    new[key] = v.to(dtype=p.dtype, device=p.device) \
                        if p.is_floating_point() else v.to(device=p.device)
                else:
                    new[key] = v
            state[i] = new
        self.param_groups, self.state = groups, state


def _single_tensor_adam(params: list[torch.Tensor], grads: list[torch.Tensor],
                        exp_avgs: list[torch.Tensor], exp_avg_sqs: list[torch.Tensor],
                        steps: list[torch.Tensor], *, lr: float, beta1: float, beta2: float,
                        eps: float) -> None:
    """torch's ``_single_tensor_adam`` (not capturable, no weight decay, not amsgrad)."""
    for param, grad, exp_avg, exp_avg_sq, step_t in zip(
            params, grads, exp_avgs, exp_avg_sqs, steps, strict=True):
        step_t += 1
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = step_t.item()
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)


def _foreach_adam(params: list[torch.Tensor], grads: list[torch.Tensor],
                  exp_avgs: list[torch.Tensor], exp_avg_sqs: list[torch.Tensor],
                  steps: list[torch.Tensor], *, lr: float, beta1: float, beta2: float,
                  eps: float) -> None:
    """torch's ``_multi_tensor_adam`` (not capturable, no weight decay, not amsgrad): one
    foreach op per (device, dtype) group of parameters."""
    by_kind: dict[tuple[torch.device, torch.dtype], list[int]] = {}
    for i, p in enumerate(params):
        by_kind.setdefault((p.device, p.dtype), []).append(i)
    for idx in by_kind.values():
        d_params = [params[i] for i in idx]
        d_grads = [grads[i] for i in idx]
        d_exp_avgs = [exp_avgs[i] for i in idx]
        d_exp_avg_sqs = [exp_avg_sqs[i] for i in idx]
        d_steps = [steps[i] for i in idx]
        if d_steps[0].is_cpu:
            torch._foreach_add_(d_steps, torch.tensor(1.0, device="cpu"), alpha=1.0)
        else:
            torch._foreach_add_(d_steps, 1)
        torch._foreach_lerp_(d_exp_avgs, d_grads, 1 - beta1)
        torch._foreach_mul_(d_exp_avg_sqs, beta2)
        torch._foreach_addcmul_(d_exp_avg_sqs, d_grads, d_grads, 1 - beta2)
        bias_correction1 = [1 - beta1 ** s.item() for s in d_steps]
        bias_correction2 = [1 - beta2 ** s.item() for s in d_steps]
        step_size = [(lr / bc) * -1 for bc in bias_correction1]
        bias_correction2_sqrt = [bc**0.5 for bc in bias_correction2]
        exp_avg_sq_sqrt = torch._foreach_sqrt(d_exp_avg_sqs)
        torch._foreach_div_(exp_avg_sq_sqrt, bias_correction2_sqrt)
        torch._foreach_add_(exp_avg_sq_sqrt, eps)
        torch._foreach_addcdiv_(d_params, d_exp_avgs, exp_avg_sq_sqrt, step_size)
