"""MADDPG's straight-through Gumbel-softmax at a temperature other than 1 (mutation walk,
session 40: multiplying by the temperature survived, every test ran at T = 1): the forward
value is the one-hot of ``argmax(l + g)``, the soft sample ``softmax((l + g) / T)``, and the
gradient of ``y . w`` is the soft sample's, ``J^T w / T`` with ``J = diag(p) - p p^T``."""

import torch

from marl.maddpg import gumbel_softmax_st


def test_gumbel_softmax_st_at_half_temperature_matches_the_closed_form():
    T = 0.5
    logits = torch.randn(6, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    logits.requires_grad_(True)
    w = torch.randn(6, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    y = gumbel_softmax_st(logits, T, torch.Generator().manual_seed(7))
    u = torch.rand(logits.shape, generator=torch.Generator().manual_seed(7))  # the same draw
    g = -torch.log(-torch.log(u.clamp_(1e-10, 1.0 - 1e-7))).double()
    p = torch.softmax((logits.detach() + g) / T, -1)
    hard = torch.nn.functional.one_hot((logits.detach() + g).argmax(-1), 5).double()
    torch.testing.assert_close(y.detach(), hard)
    (grad,) = torch.autograd.grad((y * w).sum(), logits)
    for m in range(6):
        J = torch.diag(p[m]) - torch.outer(p[m], p[m])
        torch.testing.assert_close(grad[m], J.T @ w[m] / T)
