"""``agent_gae`` (next acting steps found at once, only the advantage recursion loops over time)
equals, bit for bit, the plain time loop it replaced: one step at a time, every quantity
carried from the agent's next acting step."""

from __future__ import annotations

import pytest
import torch

from marl.advantages import agent_gae

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))]  # fmt: skip


def loop_agent_gae(rewards, values, acting, end, terminated, final_values, gamma, lam):
    """The reference: one reverse pass over time carrying next value, advantage and whether
    the agent acts again, as ``agent_gae`` computed them before."""
    adv = torch.zeros_like(values)
    complete = torch.zeros_like(acting)
    next_v = next_adv = torch.zeros_like(values[0])
    has_next = torch.zeros_like(acting[0])
    for t in range(values.shape[0] - 1, -1, -1):
        act, e = acting[t], end[t]
        boot = torch.where(e, torch.where(terminated[t], 0.0, final_values[t]), next_v)
        delta = torch.where(e | has_next, rewards[t] + gamma * boot - values[t], 0.0)
        a_t = delta + gamma * lam * torch.where(e, 0.0, next_adv)
        adv[t] = torch.where(act, a_t, 0.0)
        complete[t] = act & (e | has_next)
        next_v = torch.where(act, values[t], next_v)
        next_adv = torch.where(act, a_t, next_adv)
        has_next = has_next | act
    return adv, complete


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal dtype, shape and bits (NaN where NaN, the sign of zeros)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if not a.is_floating_point():
        return torch.equal(a, b)
    return (torch.equal(a.isnan(), b.isnan()) and torch.equal(a.signbit(), b.signbit())
            and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0)))  # fmt: skip


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_agent_gae_equals_the_time_loop_bit_for_bit(device, dtype):
    cases = 0
    for seed, (T, B, A) in enumerate([(1, 1, 1), (2, 3, 2), (9, 4, 3), (26, 32, 3), (40, 5, 4)]):
        for p_act in (1.0, 0.6, 0.2, 0.0):
            g = torch.Generator().manual_seed(seed)
            acting = torch.rand(T, B, A, generator=g) < p_act
            end = acting & (torch.rand(T, B, A, generator=g) < 0.25)
            end |= torch.rand(T, B, A, generator=g) < 0.05  # ends on non-acting steps too
            term = end & (torch.rand(T, B, A, generator=g) < 0.5)
            r, v, fv = ((torch.randn(T, B, A, generator=g) * 3).to(dtype) for _ in range(3))
            r[0, 0, 0], v[-1, -1, -1], fv[0, -1, 0] = float("inf"), float("nan"), -0.0
            args = [x.to(device) for x in (r, v, acting, end, term, fv)]
            for gamma, lam in [(0.99, 0.95), (0.9, 1.0), (1.0, 0.0), (0.0, 0.5)]:
                got = agent_gae(*args, gamma=gamma, lam=lam)
                want = loop_agent_gae(*args, gamma, lam)
                assert same(got[0], want[0]) and same(got[1], want[1]), (T, p_act, gamma, lam)
                cases += 1
    assert cases == 80
