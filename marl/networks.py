"""Small building blocks shared by the learners: MLPs, seat one-hots, masked distributions.

Shape legend: ``B`` batch (copies × steps), ``A`` agents, ``O`` observation width,
``N`` discrete actions.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch import nn
from torch.autograd.function import once_differentiable

NEG_INF = -1e9  # logit of an illegal action (finite, so all-illegal rows stay NaN-free)

_WEIGHTS_TO_LOAD: contextvars.ContextVar[torch.device | None] = contextvars.ContextVar(
    "weights_to_load", default=None)
"""Inside :func:`weights_to_load`: the default device when it was entered (where the loaded
weights go); None outside."""


@contextlib.contextmanager
def weights_to_load() -> Iterator[None]:
    """Modules built inside skip their orthogonal initialisation: every weight is about to be
    overwritten by a state dict (``marl.core.build_checked`` loads it). Why: the QR
    decompositions were most of a snapshot's load time (a policy-cache miss in a league).
    The flag is a context variable, so a learner built meanwhile in another thread (or after
    the block) initialises exactly as ever. It keeps the default device of its entry, where
    :func:`config_tensor` makes its tensors when a dry run moves the default to meta."""
    token = _WEIGHTS_TO_LOAD.set(torch.get_default_device())
    try:
        yield
    finally:
        _WEIGHTS_TO_LOAD.reset(token)


def orthogonal_(weight: torch.Tensor, gain: float = 1.0) -> torch.Tensor:
    """``nn.init.orthogonal_(weight, gain)``, or ``weight`` untouched inside
    :func:`weights_to_load` (no random numbers drawn)."""
    return weight if _WEIGHTS_TO_LOAD.get() is not None else nn.init.orthogonal_(weight, gain)


def config_tensor(value: Any, dtype: torch.dtype) -> torch.Tensor:
    """``torch.tensor(value, dtype=dtype)``: a tensor a module computes from its configuration
    and keeps out of its state dict (a non-persistent buffer). Built while a snapshot loads
    (:func:`weights_to_load`) on the meta device, it is made on the device the weights load
    to (the default device where :func:`weights_to_load` was entered) instead, so that
    ``marl.core.build_checked`` can keep that dry run's module (its values are real; the
    weights come from the file) rather than build it a second time, its tensors on one
    device (under ``with torch.device("cuda")`` the bounds were made on the CPU)."""
    loading = _WEIGHTS_TO_LOAD.get()
    meta = loading is not None and torch.get_default_device().type == "meta"
    return torch.tensor(value, dtype=dtype, device=loading if meta else None)


class _SigmoidTanh(torch.autograd.Function):
    """tanh as ``2 * sigmoid(2x) - 1`` forward, torch's own ``tanh_backward`` backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = torch.sigmoid(x * 2).mul_(2).sub_(1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_y: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad_y, y)  # grad * (1 - y²), as torch.tanh's


class FastTanh(nn.Module):
    """``nn.Tanh`` computed as ``2 * sigmoid(2x) - 1`` on CPU, torch.tanh elsewhere.

    Why: this torch's CPU ``tanh`` kernel is ~7-9x slower than its ``sigmoid`` (0.36 ms vs
    0.04 ms on ``[2400, 64]`` float32, one thread) and tanh was ~23 % of a MAPPO update.
    Same function: at most ~2e-7 absolute error against torch.tanh (the float rounding of
    ``sigmoid`` near 0.5, so tiny ``|x|`` lose their relative precision, not their
    absolute one), exactly ±1 at large ``|x|``, ±inf → ±1, NaN → NaN; the gradient is
    ``grad * (1 - y²)`` as torch's (first-order only). No parameters: state dicts are
    those of ``nn.Tanh``.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type != "cpu":  # CUDA's tanh is as fast as its sigmoid
            return torch.tanh(x)
        if x.requires_grad and torch.is_grad_enabled():
            return _SigmoidTanh.apply(x)
        return torch.sigmoid(x * 2).mul_(2).sub_(1)


def mlp(
    in_dim: int,
    hidden: Sequence[int],
    out_dim: int,
    activation: type[nn.Module] = nn.Tanh,
    out_gain: float = 1.0,
    orthogonal: bool = True,
) -> nn.Sequential:
    """``in_dim → hidden... → out_dim`` with orthogonal init (PPO practice: hidden layers
    gain √2, the out layer ``out_gain``, zero biases); ``orthogonal=False``: nn.Linear's
    own init (TorchRL's and so BenchMARL's MLPs)."""
    layers: list[nn.Module] = []
    dims = [in_dim, *hidden]
    for d_in, d_out in zip(dims[:-1], dims[1:], strict=True):
        layers += [_ortho(nn.Linear(d_in, d_out), 2**0.5, orthogonal), activation()]
    layers.append(_ortho(nn.Linear(dims[-1], out_dim), out_gain, orthogonal))
    return nn.Sequential(*layers)


def _ortho(layer: nn.Linear, gain: float, orthogonal: bool = True) -> nn.Linear:
    if orthogonal:
        orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
    return layer


def masked_logits(logits_BN: torch.Tensor, legal_BN: torch.Tensor | None) -> torch.Tensor:
    """Illegal actions get a logit of ``NEG_INF`` (rows with no legal action are left as is)."""
    if legal_BN is None:
        return logits_BN
    legal_BN = legal_BN.bool()
    any_legal_B = legal_BN.any(-1, keepdim=True)
    return torch.where(legal_BN | ~any_legal_B, logits_BN, torch.full_like(logits_BN, NEG_INF))


def one_hot_seats(index_B: torch.Tensor, num: int) -> torch.Tensor:
    """``[B] → [B, num]`` float one-hot of seat (agent or role) indices."""
    return nn.functional.one_hot(index_B.long(), num).float()


class RunningMeanStd(nn.Module):
    """Running mean/variance (parallel Welford), saved with the module's state_dict.

    Used for value normalization (PopArt-free variant used by MAPPO, Yu et al. 2022).
    """

    def __init__(self, shape: Sequence[int] = (), eps: float = 1e-4) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(eps, dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        x = x.detach().to(torch.float64).reshape(-1, *self.mean.shape)
        if x.shape[0] == 0:
            return
        b_mean, b_var, b_count = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta = b_mean - self.mean
        total = self.count + b_count
        self.mean += delta * b_count / total
        m2 = self.var * self.count + b_var * b_count + delta**2 * self.count * b_count / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + 1e-8)).to(x.dtype)

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x * torch.sqrt(self.var + 1e-8) + self.mean).to(x.dtype)
