"""marl.optim.Adam against torch.optim.Adam: bitwise the same parameters and state over many
steps (per-tensor and foreach paths, float32 and float64, several shapes and settings), the
same state_dict format, checkpoints moving between the two both ways, and no torch._dynamo
import (the reason it exists)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from marl.optim import Adam

ROOT = Path(__file__).resolve().parents[2]
SHAPES = [(7,), (4, 5), (2, 3, 4), (), (1, 16)]
SETTINGS = [dict(lr=1e-3), dict(lr=3e-4, eps=1e-5), dict(lr=2.5e-4, eps=1e-6),
            dict(lr=0.05, betas=(0.8, 0.99))]


def _params(dtype: torch.dtype, device: str = "cpu", seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g, dtype=dtype).to(device).requires_grad_()
            for s in SHAPES]


def _clone(params: list[torch.Tensor]) -> list[torch.Tensor]:
    return [p.detach().clone().requires_grad_() for p in params]


def _set_grads(pairs: list[list[torch.Tensor]], step: int, g: torch.Generator) -> None:
    """The same random gradient on each copy of a parameter; every 5th step the second
    parameter has none (torch skips it, its state starts later)."""
    for i, ps in enumerate(zip(*pairs, strict=True)):
        grad = None if (i == 1 and step % 5 == 0) else \
            torch.randn(ps[0].shape, generator=g, dtype=ps[0].dtype) * 10 ** (i % 3 - 1)
        for p in ps:
            p.grad = None if grad is None else grad.to(p.device)


def _run(a, b, pa, pb, steps: int, seed: int = 1) -> None:
    g = torch.Generator().manual_seed(seed)
    for t in range(steps):
        _set_grads([pa, pb], t, g)
        a.step()
        b.step()
        a.zero_grad(set_to_none=True)
        b.zero_grad(set_to_none=True)


def _same_state(ours: dict, theirs: dict) -> None:
    assert list(ours["state"]) == list(theirs["state"])
    for k, st in theirs["state"].items():
        assert list(ours["state"][k]) == list(st)
        for key, v in st.items():
            mine = ours["state"][k][key]
            assert mine.dtype == v.dtype and mine.device == v.device, (k, key)
            assert torch.equal(mine, v), (k, key)
    assert ours["param_groups"] == theirs["param_groups"]
    for mine, their in zip(ours["param_groups"], theirs["param_groups"], strict=True):
        assert list(mine) == list(their)  # the same keys in the same order
        assert {k: type(v) for k, v in mine.items()} == {k: type(v) for k, v in their.items()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("foreach", [None, False, True])
@pytest.mark.parametrize("setting", range(len(SETTINGS)))
def test_steps_bitwise_as_torch_adam(dtype, foreach, setting):
    kw = SETTINGS[setting]
    theirs_p = _params(dtype)
    ours_p = _clone(theirs_p)
    theirs = torch.optim.Adam(theirs_p, foreach=foreach, **kw)
    ours = Adam(ours_p, foreach=foreach, **kw)
    _run(ours, theirs, ours_p, theirs_p, 60)
    for a, b in zip(ours_p, theirs_p, strict=True):
        assert torch.equal(a, b)
    _same_state(ours.state_dict(), theirs.state_dict())
    assert not torch.equal(theirs_p[0], _params(dtype)[0])  # it did move


def test_param_groups_and_lr_changes_as_torch():
    theirs_p = _params(torch.float32)
    ours_p = _clone(theirs_p)
    theirs = torch.optim.Adam(theirs_p, lr=1e-2, eps=1e-5, foreach=True)
    ours = Adam(ours_p, lr=1e-2, eps=1e-5, foreach=True)
    assert [list(g) for g in ours.param_groups] == [list(g) for g in theirs.param_groups]
    g = torch.Generator().manual_seed(3)
    for t in range(20):  # a decaying lr written into the groups, as MAPPO does
        for opt in (ours, theirs):
            opt.param_groups[0]["lr"] = 1e-2 * (1 - t / 20)
        _set_grads([ours_p, theirs_p], t, g)
        ours.step()
        theirs.step()
    assert all(torch.equal(a, b) for a, b in zip(ours_p, theirs_p, strict=True))
    assert [p for grp in ours.param_groups for p in grp["params"]] == ours_p


def test_two_groups_and_dict_params_as_torch():
    theirs_p = _params(torch.float64)
    ours_p = _clone(theirs_p)

    def groups(ps):
        return [{"params": ps[:2], "lr": 0.01}, {"params": ps[2:]}]
    theirs = torch.optim.Adam(groups(theirs_p), lr=1e-3)
    ours = Adam(groups(ours_p), lr=1e-3)
    _run(ours, theirs, ours_p, theirs_p, 15)
    assert all(torch.equal(a, b) for a, b in zip(ours_p, theirs_p, strict=True))
    _same_state(ours.state_dict(), theirs.state_dict())


def _through_file(sd: dict) -> dict:
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


@pytest.mark.parametrize("foreach", [None, True])
@pytest.mark.parametrize("direction", ["torch_to_ours", "ours_to_torch"])
def test_checkpoint_moves_between_torch_and_ours_and_continues_bitwise(direction, foreach):
    kw = dict(lr=3e-4, eps=1e-5, foreach=foreach)
    make_first, make_second = (torch.optim.Adam, Adam) if direction == "torch_to_ours" \
        else (Adam, torch.optim.Adam)
    ref_p = _params(torch.float32)
    ref = torch.optim.Adam(ref_p, **kw)  # torch all the way: the numbers to meet
    first_p = _clone(ref_p)
    first = make_first(first_p, **kw)
    _run(first, ref, first_p, ref_p, 12, seed=5)
    saved = _through_file(first.state_dict())
    second_p = [p.detach().clone().requires_grad_() for p in first_p]
    second = make_second(second_p, **kw)
    second.load_state_dict(saved)
    _run(second, ref, second_p, ref_p, 12, seed=6)
    assert all(torch.equal(a, b) for a, b in zip(second_p, ref_p, strict=True))
    _same_state(second.state_dict() if isinstance(second, Adam) else ref.state_dict(),
                ref.state_dict())
    if isinstance(second, Adam):
        assert second.state_dict()["state"][0]["step"].dtype == torch.float32


def test_loads_a_state_whose_step_is_a_number_as_torch_does():
    theirs_p = _params(torch.float32)
    ours_p = _clone(theirs_p)
    theirs, ours = torch.optim.Adam(theirs_p), Adam(ours_p)
    _run(ours, theirs, ours_p, theirs_p, 3)
    sd = _through_file(theirs.state_dict())  # a copy: state_dict() shares the moments
    for st in sd["state"].values():
        st["step"] = int(st["step"])
    for g in sd["param_groups"]:  # a checkpoint of an older torch: fewer group keys
        del g["decoupled_weight_decay"], g["differentiable"]
    theirs.load_state_dict(_through_file(sd))
    ours.load_state_dict(_through_file(sd))
    _run(ours, theirs, ours_p, theirs_p, 5)
    assert all(torch.equal(a, b) for a, b in zip(ours_p, theirs_p, strict=True))
    _same_state(ours.state_dict(), theirs.state_dict())


def test_zero_grad_keeps_zeros_unless_set_to_none():
    ps = _params(torch.float32)
    opt = Adam(ps)
    for p in ps:
        p.grad = torch.ones_like(p)
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in ps)
    opt.zero_grad()
    assert all(p.grad is None for p in ps)


def test_step_hooks_run_and_can_be_removed():
    ps = _params(torch.float32)
    opt, calls = Adam(ps), []
    handle = opt.register_step_post_hook(lambda o, a, k: calls.append(o))
    opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.step()
    handle.remove()
    opt.step()
    assert calls == ["pre", opt, "pre"]


@pytest.mark.parametrize("kw", [dict(weight_decay=0.1), dict(amsgrad=True),
                                dict(maximize=True), dict(fused=True),
                                dict(decoupled_weight_decay=True), dict(lr=float("nan")),
                                dict(betas=(0.9, 1.0))])
def test_refuses_settings_it_does_not_implement(kw):
    with pytest.raises(ValueError, match="Adam"):
        Adam(_params(torch.float32), **kw)


@pytest.mark.parametrize("change", [dict(weight_decay=0.01), dict(amsgrad=True),
                                    dict(foreach="yes")])
def test_load_refuses_a_group_setting_it_does_not_implement(change):
    theirs = torch.optim.Adam(_params(torch.float32))
    sd = theirs.state_dict()
    sd["param_groups"][0].update(change)
    ours = Adam(_params(torch.float32))
    before = ours.state_dict()
    with pytest.raises(ValueError, match="Adam"):
        ours.load_state_dict(sd)
    assert ours.state_dict()["param_groups"] == before["param_groups"]


def test_building_and_stepping_it_does_not_import_torch_dynamo():
    code = ("import sys, torch\nfrom marl.optim import Adam\n"
            "m = torch.nn.Linear(3, 3)\nopt = Adam(m.parameters(), foreach=True)\n"
            "m(torch.randn(2, 3)).sum().backward()\nopt.step()\nopt.zero_grad()\n"
            "opt.load_state_dict(opt.state_dict())\n"
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["False"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
@pytest.mark.parametrize("foreach", [None, False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cuda_steps_and_checkpoints_bitwise_as_torch_adam(foreach, dtype):
    theirs_p = _params(dtype, "cuda")
    ours_p = _clone(theirs_p)
    theirs = torch.optim.Adam(theirs_p, lr=3e-4, eps=1e-5, foreach=foreach)
    ours = Adam(ours_p, lr=3e-4, eps=1e-5, foreach=foreach)
    _run(ours, theirs, ours_p, theirs_p, 40)
    assert all(torch.equal(a, b) for a, b in zip(ours_p, theirs_p, strict=True))
    _same_state(ours.state_dict(), theirs.state_dict())
    again_p = _clone(ours_p)
    again = Adam(again_p, lr=3e-4, eps=1e-5, foreach=foreach)
    again.load_state_dict(_through_file(theirs.state_dict()))
    _run(again, theirs, again_p, theirs_p, 10, seed=9)
    assert all(torch.equal(a, b) for a, b in zip(again_p, theirs_p, strict=True))
    assert all(st["exp_avg"].is_cuda and st["step"].is_cpu for st in again.state.values())


def test_state_checks_refuse_a_crafted_state_for_ours_as_for_torchs():
    from marl.state_checks import load_optimizer_state
    ps = _params(torch.float32)
    ours = Adam(ps, lr=1e-3)
    for p in ps:
        p.grad = torch.ones_like(p)
    ours.step()
    good = _through_file(ours.state_dict())
    crafted = _through_file(ours.state_dict())
    del crafted["state"][0]["exp_avg_sq"]  # torch's load takes it; the next step fails
    with pytest.raises(ValueError, match=r"state\[0\] holds \['exp_avg', 'step'\]; accepted"):
        load_optimizer_state(Adam(_clone(ps), lr=1e-3), crafted, "opt")
    again = Adam(_clone(ps), lr=1e-3)
    load_optimizer_state(again, good, "opt")
    _same_state(again.state_dict(), ours.state_dict())
