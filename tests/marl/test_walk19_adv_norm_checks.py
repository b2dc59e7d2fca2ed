"""A user's adv_norm that returns the wrong thing is named at once (walk 19).

Before, ``x[:-1]`` reached MAPPO and the LLM trainer as a shape traceback that did not name
the adv_norm, a scalar was broadcast (MAPPO trained with one constant advantage) and NaN from
finite returns was reported as the game's rewards or the learning rate.
"""

from __future__ import annotations

import pytest
import torch

import games
import marl.advantages as adv_mod
from marl.advantages import AdvantageKeys, normalize_advantages, register_adv_norm


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch):
    """Registrations of a test leave the module's registry as it was."""
    monkeypatch.setattr(adv_mod, "_REGISTRY", dict(adv_mod._REGISTRY))


def _register(name, fn, **kw):
    register_adv_norm(name, **kw)(fn)
    return name


@pytest.mark.parametrize(("fn", "got"), [
    (lambda x, *a: x[:-1], "shape (9,), dtype torch.float32"),
    (lambda x, *a: x.mean(), "shape (), dtype torch.float32"),  # was broadcast silently
    (lambda x, *a: x.long(), "shape (10,), dtype torch.int64"),
    (lambda x, *a: x.reshape(2, 5), "shape (2, 5), dtype torch.float32"),
])  # fmt: skip
def test_wrong_shape_or_dtype_is_one_line_naming_the_adv_norm(fn, got):
    name = _register("w19chk_bad", fn)
    with pytest.raises(ValueError) as err:
        normalize_advantages(name, torch.randn(2, 5))
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("adv_norm 'w19chk_bad' (")  # and where it is defined
    assert f"returned a tensor of {got}" in msg
    assert "expected shape (10,)" in msg and "floating" in msg


def test_not_a_tensor_is_named():
    name = _register("w19chk_list", lambda x, *a: x.tolist())
    with pytest.raises(ValueError, match=r"adv_norm 'w19chk_list' \(.*\) returned list; expected "
                                         r"a floating tensor of shape \(3,\)"):
        normalize_advantages(name, torch.zeros(3))


def test_nan_from_finite_values_is_the_adv_norms_fault():
    name = _register("w19chk_nan", lambda x, *a: x / (x - x))  # 0/0 on every sample
    with pytest.raises(ValueError) as err:
        normalize_advantages(name, torch.arange(4.0))
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("adv_norm 'w19chk_nan' (")
    assert "non-finite advantage (nan) at 4 of 4 samples whose values are finite" in msg
    assert "not the game's rewards" in msg


def test_what_the_mask_drops_and_non_finite_input_are_not_blamed_on_it():
    name = _register("w19chk_centered", lambda x, keys, m, *a: torch.where(m, x - 1.0, torch.nan))
    mask = torch.tensor([True, True, False])
    res = normalize_advantages(name, torch.tensor([1.0, 2.0, 3.0]), mask=mask)
    assert res.advantages.tolist() == [0.0, 1.0, 0.0]  # masked: 0, as for every adv_norm
    # NaN in the values themselves passes through: the caller's finite guard names its source
    ident = _register("w19chk_identity", lambda x, *a: x)
    out = normalize_advantages(ident, torch.tensor([1.0, torch.nan])).advantages
    assert torch.isnan(out[1])


def test_builtin_adv_norms_skip_the_finite_check(monkeypatch):
    # MAPPO's default call is benchmarked: no host sync is added for the built-in adv_norms
    calls = []
    real = adv_mod._check_finite
    monkeypatch.setattr(adv_mod, "_check_finite", lambda *a: calls.append(a[0].name) or real(*a))
    keys = AdvantageKeys(agent=torch.tensor([0, 1]))
    for name in ("global", "agent", "none"):
        normalize_advantages(name, torch.randn(4, 2), keys)
    assert calls == []
    normalize_advantages(_register("w19chk_ok", lambda x, *a: x * 2.0), torch.randn(3))
    assert calls == ["w19chk_ok"]


def test_mappo_with_a_scalar_returning_adv_norm_stops_naming_it():
    from marl.mappo import MAPPO, MAPPOConfig
    from marl.train import train

    name = _register("w19chk_scalar", lambda x, *a: (x - x.mean()).abs().mean())
    spec = games.make("openspiel/kuhn_poker").spec
    learner = MAPPO(spec, MAPPOConfig(adv_norm=name, rollout_steps=8, epochs=1, minibatches=1),
                    seed=0)  # fmt: skip
    vg = games.VectorGame("openspiel/kuhn_poker", 4, seed=0)
    with pytest.raises(ValueError, match=r"adv_norm 'w19chk_scalar' \(.*\) returned a tensor of "
                                         r"shape \(\), dtype torch.float32; expected shape"):
        train(learner, vg, frames=4 * 8 * 2, progress=False)
