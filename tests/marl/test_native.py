"""Tests of ``marl.native``, the C kernels behind ``marl.advantages`` on the CPU: the kernels
against the slow references and against their torch twins, the per-thread merge, the orders
they need (and the fallback when the input lacks it), and the build falling back to torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from marl import native
from marl.advantages import (
    AdvantageConfig,
    AdvantageKeys,
    RoleEMABaseline,
    advantage_diagnostics,
    normalize_advantages,
)
from marl.returns import _turn_returns
from tests.marl.test_advantages import SCHEMES, SETTINGS, layouts, needs, ref_scheme, to_torch

pytestmark = pytest.mark.skipif(not native.available(), reason="no C compiler for marl.native")
ROOT = Path(__file__).resolve().parents[2]


def _sorted_by_trajectory(lay):
    """The layout with samples stably sorted by trajectory: the order the kernels need."""
    if lay.get("trajectory") is None:
        return lay
    order = sorted(range(len(lay["values"])), key=lambda i: lay["trajectory"][i])
    return {k: (None if v is None else [v[i] for i in order]) for k, v in lay.items()}


@pytest.fixture
def taken(monkeypatch):
    """Counts calls of each native entry point that did not fall back (returned a result)."""
    counts = {"normalize": 0, "ema": 0, "turn_returns": 0, "player_turn": 0, "gather": 0}
    for name in counts:
        real = getattr(native, name)

        def wrap(*args, _real=real, _name=name, **kw):
            out = _real(*args, **kw)
            counts[_name] += out is not None
            return out

        monkeypatch.setattr(native, name, wrap)
    return counts


@pytest.mark.parametrize("scheme", SCHEMES)
@given(lay=layouts(), per_traj=st.booleans(), unbiased=st.booleans(), scale=st.booleans())
@SETTINGS
def test_kernels_match_reference_on_ordered_trajectories(scheme, lay, per_traj, unbiased, scale):
    """As ``test_scheme_matches_reference``, with samples sorted by trajectory so that the
    per-trajectory and turn-order kernels run too."""
    for k in needs(scheme) + ["trajectory"]:
        if lay[k] is None:
            lay[k] = [0] * len(lay["values"])
    if scheme == "joint_group" and lay["node"] is None and lay["group"] is None:
        lay["node"] = [0] * len(lay["values"])
    lay = _sorted_by_trajectory(lay)
    cfg = AdvantageConfig(float64=True, per_trajectory=per_traj, unbiased_std=unbiased,
                          scale=scale, player_turn_scale=scale, joint_group_scale=scale,
                          turn_gamma=0.9, role_ema_alpha=0.8, role_ema_init=0.25,
                          diagnostics=False)  # fmt: skip
    x, keys, mask, w = to_torch(lay)
    state, ref_state = RoleEMABaseline(), {}
    for _ in range(2):  # twice: role_ema continues from its state
        got = normalize_advantages(scheme, x, keys, mask, w, cfg, state=state).advantages
        expect = ref_scheme(scheme, lay, cfg, ref_state)
        torch.testing.assert_close(got, torch.tensor(expect, dtype=torch.float64), atol=1e-7,
                                   rtol=1e-7)  # fmt: skip


def _big_layout(n=6000, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    traj = torch.sort(torch.randint(0, 300, (n,), generator=gen)).values
    agent = torch.randint(0, 5, (n,), generator=gen)
    keys = AdvantageKeys(game=traj % 3, group=traj // 7, agent=agent, role=agent // 2,
                         trajectory=traj, node=traj // 4, turn=torch.arange(n))  # fmt: skip
    x = (torch.randn(n, generator=gen) * (agent + 1) + 10 * agent).to(dtype)
    x[keys.role == 2] = 1.5  # a constant key that every thread part sees
    mask = torch.rand(n, generator=gen) > 0.1
    w = torch.rand(n, generator=gen).to(dtype) * (torch.rand(n, generator=gen) > 0.2)
    return x, keys, mask, w


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("per_traj", [False, True])
@pytest.mark.parametrize("scheme", ["global", "agent", "role", "group_role", "player_turn",
                                    "role_ema", "joint_group"])  # fmt: skip
def test_thread_parts_merge_like_one_pass(monkeypatch, taken, scheme, per_traj, weighted, dtype):
    """Three parts with their own pilots and tables merge into the statistics of one pass:
    the slow reference's results."""
    monkeypatch.setattr(native, "_parts", lambda n: 3)
    x, keys, mask, w = _big_layout(dtype=dtype)
    w = w if weighted else None
    cfg = AdvantageConfig(per_trajectory=per_traj, diagnostics=False)
    got = normalize_advantages(scheme, x, keys, mask, w, cfg=cfg, state=RoleEMABaseline())
    lay = {k: getattr(keys, k).tolist() for k in keys.present()}
    lay.update(values=x.tolist(), mask=mask.tolist(), weights=None if w is None else w.tolist())
    expect = torch.tensor(ref_scheme(scheme, lay, cfg, {}), dtype=dtype)
    tol = 1e-9 if dtype == torch.float64 else 2e-4
    torch.testing.assert_close(got.advantages, expect, atol=tol, rtol=tol)
    fused = {"role_ema": "ema", "joint_group": "gather", "player_turn": "player_turn"}
    path = "normalize" if per_traj and scheme == "player_turn" else fused.get(scheme, "normalize")
    assert taken[path] > 0
    if scheme == "role":  # the constant role is exactly 0 however the parts split it
        assert bool((got.advantages[keys.role == 2] == 0).all())


def test_fallbacks_when_the_input_lacks_the_order(taken):
    x, keys, mask, _ = _big_layout()
    shuffled = torch.randperm(x.numel(), generator=torch.Generator().manual_seed(1))
    keys = AdvantageKeys(**{k: getattr(keys, k)[shuffled] for k in keys.present()})
    x, mask = x[shuffled], mask[shuffled]
    for scheme in ("agent", "role_ema", "player_turn"):
        cfg = AdvantageConfig(per_trajectory=scheme != "player_turn", diagnostics=False)
        got = normalize_advantages(scheme, x, keys, mask, cfg=cfg, state=RoleEMABaseline())
        with native.disabled():
            want = normalize_advantages(scheme, x, keys, mask, cfg=cfg, state=RoleEMABaseline())
        torch.testing.assert_close(got.advantages, want.advantages, atol=1e-10, rtol=1e-10)
    assert taken["ema"] == 0 and taken["turn_returns"] == 0  # per-trajectory / turn order
    key = native.radix([keys.agent])
    assert native.normalize(x.bfloat16(), key, mask, None, eps=1e-6, scale=True,
                            unbiased=False) is None  # fmt: skip
    assert native.normalize(x, key, mask, None, eps=1e-6, scale=True, unbiased=False,
                            trajectory=keys.trajectory) is None  # fmt: skip


def test_turn_returns_kernel_matches_torch_and_may_overwrite_its_input(taken):
    x, keys, mask, _ = _big_layout()
    cols = [keys.game, keys.trajectory]
    for gamma in (1.0, 0.9):
        want = None
        with native.disabled():
            want = _turn_returns(x, cols, keys.agent, keys.turn, gamma, mask)
        got = _turn_returns(x, cols, keys.agent, keys.turn, gamma, mask)
        torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10)
        tmp = x.clone()
        assert _turn_returns(tmp, cols, keys.agent, keys.turn, gamma, mask, inplace=True) is not x
        torch.testing.assert_close(tmp, want, atol=1e-10, rtol=1e-10)  # written in place
    assert taken["turn_returns"] == 4


def test_huge_id_ranges_go_through_dense_ids(taken):
    x, keys, mask, _ = _big_layout()
    big = AdvantageKeys(game=keys.game * 7 * 10**8, role=keys.role * 10**9, agent=keys.agent,
                        group=keys.group * 10**9, trajectory=keys.trajectory)  # fmt: skip
    for scheme in ("group_role", "role_ema"):
        got = normalize_advantages(scheme, x, big, mask, state=RoleEMABaseline()).advantages
        want = normalize_advantages(scheme, x, keys, mask, state=RoleEMABaseline()).advantages
        torch.testing.assert_close(got, want, atol=0, rtol=0)
    assert taken["normalize"] == 2 and taken["ema"] == 2


def _python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, **env}, timeout=300)  # fmt: skip


def test_build_goes_to_the_cache_and_a_missing_compiler_falls_back(tmp_path):
    code = (
        "import torch; from marl import native; from marl.advantages import *\n"
        "x = torch.randn(100); k = AdvantageKeys(agent=torch.arange(100) % 4)\n"
        "a = normalize_advantages('agent', x, k).advantages\n"
        "with native.disabled(): b = normalize_advantages('agent', x, k).advantages\n"
        "print(native.available(), bool(torch.allclose(a, b, atol=1e-6)))\n"
    )
    built = _python(code, SELFPLAY_CACHE=str(tmp_path / "ok"))
    assert built.stdout.split() == ["True", "True"], built.stderr
    assert len(list((tmp_path / "ok" / "selfplay").glob("native-*.so"))) == 1
    broken = _python(code, SELFPLAY_CACHE=str(tmp_path / "no"), CC="false")
    assert broken.stdout.split() == ["False", "True"], broken.stderr
    assert "native kernels off (false failed" in broken.stderr
    off = _python(code, SELFPLAY_CACHE=str(tmp_path / "off"), SELFPLAY_NATIVE="0")
    assert off.stdout.split() == ["False", "True"]
    assert not (tmp_path / "off").exists()  # nothing compiled


def test_parts_sorted_inside_but_not_across_fall_back(monkeypatch, taken):
    """Each thread part ascends on its own, the whole does not: per-trajectory statistics must
    notice at the seam and take the torch path."""
    monkeypatch.setattr(native, "_parts", lambda n: 2)
    x, keys, mask, _ = _big_layout()
    half = x.numel() // 2
    order = torch.cat([torch.arange(half, x.numel()), torch.arange(half)])
    keys = AdvantageKeys(**{k: getattr(keys, k)[order] for k in keys.present()})
    x, mask = x[order], mask[order]
    cfg = AdvantageConfig(per_trajectory=True, diagnostics=False)
    got = normalize_advantages("agent", x, keys, mask, cfg=cfg).advantages
    with native.disabled():
        want = normalize_advantages("agent", x, keys, mask, cfg=cfg).advantages
    torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10)
    assert taken["normalize"] == 0


@pytest.mark.parametrize("guess", [False, True])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_diagnostics_kernel_matches_torch(monkeypatch, masked, dtype, guess):
    """guess: key ranges guessed from 3 probes (padded tables, reruns on a miss)."""
    monkeypatch.setattr(native, "_parts", lambda n: 3)
    if guess:
        monkeypatch.setattr(native, "_GUESS_MIN", 1)
        monkeypatch.setattr(native, "_PROBES", 3)
        monkeypatch.setattr(native, "_PROBE_CACHE", {})
    x, keys, mask, _ = _big_layout(dtype=dtype)
    keys = AdvantageKeys(agent=keys.agent * 3 + 1, role=keys.role, trajectory=keys.trajectory)
    mask = mask if masked else None
    adv = normalize_advantages("agent", x, keys, mask, cfg=AdvantageConfig(diagnostics=False))
    got = advantage_diagnostics(x, adv.advantages, keys, mask)
    with native.disabled():  # the torch path in float64: exact to ~1e-12 here
        want = advantage_diagnostics(x.double(), adv.advantages.double(), keys, mask)
    assert sorted(got) == sorted(want)  # agents 1, 4, ..., 13 only: no rows for unused ids
    tol = 1e-9
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=tol, abs=tol), k


def _four_schemes(x, keys, mask, w) -> dict[str, torch.Tensor]:
    out = {}
    for s in ("agent", "player_turn", "role_ema", "joint_group"):
        for pt in (False, True):
            cfg = AdvantageConfig(per_trajectory=pt, diagnostics=False)
            res = normalize_advantages(s, x, keys, mask, w, cfg, RoleEMABaseline())
            out[f"{s}-{pt}"] = res.advantages
    return out


def test_kernels_without_openmp_run_parts_one_after_another(monkeypatch, tmp_path):
    """A compiler without OpenMP: the same kernels with parts in sequence give bit-identical
    results to the OpenMP build's parts on threads."""
    code = (
        "import torch; from marl import native\n"
        "from tests.marl.test_native import _big_layout, _four_schemes\n"
        "native._parts = lambda n: 3\n"
        f"torch.save(_four_schemes(*_big_layout()), {str(tmp_path / 'serial.pt')!r})\n"
        "print(native.available())\n"
    )
    env = {"SELFPLAY_CACHE": str(tmp_path), "SELFPLAY_NATIVE_OPENMP": "0"}
    res = _python(code, **env)
    assert res.stdout.split() == ["True"], res.stderr
    lib = next((tmp_path / "selfplay").glob("native-*.so"))
    assert b"GOMP_parallel" not in lib.read_bytes()  # no OpenMP in this build
    serial = torch.load(tmp_path / "serial.pt", weights_only=True)
    monkeypatch.setattr(native, "_parts", lambda n: 3)
    threaded = _four_schemes(*_big_layout())
    for name, want in serial.items():
        torch.testing.assert_close(threaded[name], want, atol=0, rtol=0, msg=name)


def test_nothing_is_remembered_across_calls():
    """Key columns over a numpy buffer change between calls without torch's version counter
    noticing; an earlier output passed back with another mask must still be masked."""
    buf = np.arange(600) % 4
    agent = torch.from_numpy(buf)
    x = torch.randn(600, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    first = normalize_advantages("agent", x, AdvantageKeys(agent=agent)).advantages
    buf += 10  # agents 10..13 now: the ranges of the first call would index out of bounds
    got = normalize_advantages("agent", x, AdvantageKeys(agent=agent)).advantages
    with native.disabled():
        want = normalize_advantages("agent", x, AdvantageKeys(agent=agent)).advantages
    torch.testing.assert_close(got, want)
    mask = torch.arange(600) % 3 > 0
    again = normalize_advantages("none", first, mask=mask).advantages
    assert bool((again[~mask] == 0).all()) and torch.equal(again[mask], first[mask])


@pytest.mark.parametrize("scheme", ["agent", "role", "group_role", "player_turn", "role_ema"])
@given(lay=layouts(), unbiased=st.booleans(), scale=st.booleans(), per_traj=st.booleans())
@SETTINGS
def test_guessed_key_ranges_match_reference(scheme, lay, unbiased, scale, per_traj):
    """Key ranges guessed at every size from 3 probes (the first and last samples and one
    more): most guesses miss a value, so the checked first pass and its rerun over exact
    ranges both run; results stay the reference's."""
    for k in needs(scheme) + ["trajectory"]:
        if lay[k] is None:
            lay[k] = [0] * len(lay["values"])
    lay = _sorted_by_trajectory(lay)
    cfg = AdvantageConfig(float64=True, unbiased_std=unbiased, scale=scale,
                          player_turn_scale=scale, turn_gamma=0.9, diagnostics=False,
                          per_trajectory=per_traj and scheme == "role_ema",
                          role_ema_alpha=0.8, role_ema_init=0.25)  # fmt: skip
    x, keys, mask, w = to_torch(lay)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(native, "_GUESS_MIN", 1)
        mp.setattr(native, "_PROBES", 3)
        mp.setattr(native, "_PROBE_CACHE", {})
        got = normalize_advantages(scheme, x, keys, mask, w, cfg,
                                   state=RoleEMABaseline()).advantages  # fmt: skip
    expect = ref_scheme(scheme, lay, cfg, {})
    torch.testing.assert_close(got, torch.tensor(expect, dtype=torch.float64), atol=1e-7,
                               rtol=1e-7)  # fmt: skip


@pytest.mark.parametrize("scheme", ["agent", "player_turn", "role_ema"])
def test_a_value_outside_the_guessed_ranges_reruns_over_exact_ones(monkeypatch, taken, scheme):
    """One agent id that no probe saw (and beyond the power-of-two slack): the checked pass
    notices, the key is rebuilt over exact ranges, and the output is the torch path's. With
    every value probed, nothing is rebuilt."""
    monkeypatch.setattr(native, "_GUESS_MIN", 1)
    rebuilt = []
    real = native.Radix.settle
    monkeypatch.setattr(native.Radix, "settle", lambda self, *a: rebuilt.append(self.guessed)
                        or real(self, *a))  # fmt: skip
    x, keys, mask, _ = _big_layout(dtype=torch.float32)
    for probes, rare in ((3, 40), (4096, 4)):
        monkeypatch.setattr(native, "_PROBES", probes)
        monkeypatch.setattr(native, "_PROBE_CACHE", {})
        rebuilt.clear()
        agent = keys.agent.clone()
        agent[2500] = rare  # the probes are 0, n - 1 and random positions
        k = AdvantageKeys(**{**keys.__dict__, "agent": agent, "role": agent // 2})
        cfg = AdvantageConfig(diagnostics=False)
        got = normalize_advantages(scheme, x, k, mask, cfg=cfg, state=RoleEMABaseline())
        with native.disabled():
            want = normalize_advantages(scheme, x, k, mask, cfg=cfg, state=RoleEMABaseline())
        torch.testing.assert_close(got.advantages, want.advantages, atol=2e-5, rtol=2e-5)
        assert rebuilt == ([True] if probes == 3 else []), (probes, rebuilt)
    path = {"agent": "normalize", "role_ema": "ema"}.get(scheme, scheme)
    assert taken[path] >= 2  # no torch path


@pytest.mark.parametrize("per_traj", [False, True])
def test_role_ema_with_guessed_ranges_still_rejects_bad_ids(monkeypatch, per_traj):
    """A negative game id that no probe saw: the pass misses it, and the exact ranges then
    checked raise the usual error."""
    monkeypatch.setattr(native, "_GUESS_MIN", 1)
    monkeypatch.setattr(native, "_PROBE_CACHE", {})
    x, keys, mask, _ = _big_layout(dtype=torch.float32)
    game = keys.game.clone()
    game[2500] = -1
    bad = AdvantageKeys(**{**keys.__dict__, "game": game})
    cfg = AdvantageConfig(per_trajectory=per_traj, diagnostics=False)
    with pytest.raises(ValueError, match=r"0 <= keys.game < 2147483648; got \[-1, 2\]"):
        normalize_advantages("role_ema", x, bad, mask, cfg=cfg, state=RoleEMABaseline())


def test_a_guessed_key_reaches_only_the_checked_kernel():
    x, keys, mask, _ = _big_layout()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(native, "_GUESS_MIN", 1)
        key = native.guess([keys.game, keys.agent])
    assert key.guessed and all(s & (s - 1) == 0 for s in key.span)  # powers of two
    with pytest.raises(RuntimeError, match="guessed key"):
        native.gather(torch.zeros(key.num, dtype=torch.float64), key, mask, x.numel())


def test_constant_player_returns_center_to_exact_zero(monkeypatch):
    """float32, unweighted: the last step only sums returns. Single-sample groups keep their
    rewards (mean 0, std 1), so each player's returns are one nonzero constant, whose mean must
    come back exactly: outputs exactly 0, as on the torch path (the constant-key rule)."""
    monkeypatch.setattr(native, "_parts", lambda n: 3)
    n = 3000
    i = torch.arange(n)
    keys = AdvantageKeys(group=i, agent=i % 3, trajectory=i, turn=torch.zeros(n, dtype=torch.long))
    x = torch.tensor([0.1, 0.7, 1.3])[i % 3]
    got = normalize_advantages("player_turn", x, keys).advantages
    with native.disabled():
        want = normalize_advantages("player_turn", x, keys).advantages
    assert bool((want == 0).all()) and bool((got == 0).all())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("scale", [False, True])
def test_player_turn_kernel_paths_match_reference(monkeypatch, taken, dtype, weighted, scale):
    """player_turn's backward pass sums returns only (float32, unweighted, centering) or keeps
    per-sample moments (weights, float64, scaling), with gamma < 1, on three thread parts:
    the reference's results either way."""
    monkeypatch.setattr(native, "_parts", lambda n: 3)
    x, keys, mask, w = _big_layout(dtype=dtype)
    w = w if weighted else None
    cfg = AdvantageConfig(player_turn_scale=scale, turn_gamma=0.9, diagnostics=False)
    got = normalize_advantages("player_turn", x, keys, mask, w, cfg=cfg).advantages
    lay = {k: getattr(keys, k).tolist() for k in keys.present()}
    lay.update(values=x.tolist(), mask=mask.tolist(), weights=None if w is None else w.tolist())
    expect = torch.tensor(ref_scheme("player_turn", lay, cfg, {}), dtype=dtype)
    tol = 1e-9 if dtype == torch.float64 else 2e-4
    torch.testing.assert_close(got, expect, atol=tol, rtol=tol)
    assert taken["player_turn"] == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_player_turn_with_more_players_than_16_bit_keys(monkeypatch, taken, dtype):
    """66,000 players: key 2 does not fit the 16-bit per-sample keys, so the last pass reads
    the players from their column (float32, whose ids the returns overwrote) or maps key-1 ids
    (float64); masked samples stay 0 either way."""
    monkeypatch.setattr(native, "_parts", lambda n: 3)
    n = 70_000
    i = torch.arange(n)
    gen = torch.Generator().manual_seed(5)
    keys = AdvantageKeys(agent=i % 66_000, trajectory=i // 100, turn=i % 100)
    x = torch.randn(n, generator=gen, dtype=torch.float64).to(dtype)
    mask = torch.rand(n, generator=gen) > 0.1
    cfg = AdvantageConfig(diagnostics=False)
    got = normalize_advantages("player_turn", x, keys, mask, cfg=cfg).advantages
    with native.disabled():
        want = normalize_advantages("player_turn", x, keys, mask, cfg=cfg).advantages
    tol = 1e-9 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(got, want, atol=tol, rtol=tol)
    assert bool((got[~mask] == 0).all()) and taken["player_turn"] == 1


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("scheme", ["agent", "group_role", "player_turn"])
@given(lay=layouts(), guess=st.booleans())
@SETTINGS
def test_every_moments_mode_matches_reference(scheme, mode, lay, guess):
    """The moments kernel's modes are picked from the first samples (interleaved keys, keys in
    runs, leading columns in runs) but must be right on any layout: each forced on random
    ones, with exact or guessed ranges."""
    for k in needs(scheme) + ["trajectory"]:
        if lay[k] is None:
            lay[k] = [0] * len(lay["values"])
    lay = _sorted_by_trajectory(lay)
    cfg = AdvantageConfig(float64=True, diagnostics=False)
    x, keys, mask, w = to_torch(lay)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(native.Radix, "runs", lambda self, lib: mode if len(self.cols) > 1 else 1)
        if guess:
            mp.setattr(native, "_GUESS_MIN", 1)
            mp.setattr(native, "_PROBES", 3)
            mp.setattr(native, "_PROBE_CACHE", {})
        got = normalize_advantages(scheme, x, keys, mask, w, cfg).advantages
    expect = ref_scheme(scheme, lay, cfg, {})
    torch.testing.assert_close(got, torch.tensor(expect, dtype=torch.float64), atol=1e-7,
                               rtol=1e-7)  # fmt: skip
