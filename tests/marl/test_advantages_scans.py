"""Tests of the flat-sample scans behind ``marl.advantages``: grouping by key (counting sort vs
``torch.sort`` vs Python), segmented suffix sums, the per-key EMA of ``role_ema`` (closed form
per row vs a sequential loop, long sequences), and the fast paths the schemes take for the usual
layout (turns in order, contiguous trajectories, per-trajectory pairs from key columns) against
their general paths and the slow references of ``test_advantages.py``.
"""

from __future__ import annotations

import functools

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import marl.advantages as adv_mod
import marl.returns as ret_mod
from marl.advantages import AdvantageConfig, AdvantageKeys, RoleEMABaseline, normalize_advantages
from marl.returns import (
    _discounted_suffix,
    _ema_room,
    _keyed_ema,
    _segment_starts,
    _sort_by_key,
    _suffix_sums,
)
from tests.marl.test_advantages import (  # noqa: F401 - backend: both CPU paths, autouse
    SCHEMES,
    SETTINGS,
    backend,
    ref_scheme,
    ref_turn_returns,
    to_torch,
)


def seq_ema(x, code, num, alpha, init):
    """Sequential reference: baselines before each update, final baselines, counts."""
    b, before, count = list(init), [], [0] * num
    for xi, k in zip(x, code, strict=True):
        if k == num:
            before.append(None)
            continue
        before.append(b[k])
        b[k] = alpha * b[k] + (1 - alpha) * xi
        count[k] += 1
    return before, b, count


@pytest.fixture(params=[True, False], ids=["counting", "torch-sort"])
def counting(request, monkeypatch):
    """Run a test once with the CPU counting sort and once with the ``torch.sort`` path."""
    fn = functools.partial(_sort_by_key, counting=request.param)
    monkeypatch.setattr(ret_mod, "_sort_by_key", fn)
    return request.param


# ----------------------------------------------------------------------------- grouping


@given(codes=st.lists(st.integers(0, 5), max_size=60), counting=st.booleans())
@SETTINGS
def test_sort_by_key_is_a_stable_sort(codes, counting):
    n = len(codes)
    values = torch.arange(n, dtype=torch.float64) * 0.5 - 3
    srt = _sort_by_key(torch.tensor(codes, dtype=torch.long), 6, values, counting=counting)
    order = sorted(range(n), key=lambda i: codes[i])  # Python's sort is stable
    assert srt.perm.tolist() == order
    assert srt.values.tolist() == values[order].tolist()
    assert srt.start.tolist() == [sum(c < k for c in codes) for k in range(7)]


@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=12),
       gamma=st.sampled_from([0.0, 0.5, 0.9]), seed=st.integers(0, 2**16))  # fmt: skip
@SETTINGS
def test_segment_suffix_sums_match_loop(lengths, gamma, seed):
    m = sum(lengths)
    xs = torch.randn(m, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    start = torch.tensor([0] + lengths).cumsum(0)
    first, expect1, expect_g = [], [], []
    for k, length in enumerate(lengths):
        seg = xs[int(start[k]) : int(start[k]) + length].tolist()
        first += [int(start[k])] * length
        g1, g = [], 0.0
        for v in reversed(seg):
            g = v + gamma * g
            g1.append(g)
        expect_g += g1[::-1]
        expect1 += [sum(seg[i:]) for i in range(length)]
    assert _segment_starts(start, m).tolist() == first
    torch.testing.assert_close(_suffix_sums(xs, start), torch.tensor(expect1, dtype=torch.float64))
    torch.testing.assert_close(
        _discounted_suffix(xs, start, gamma), torch.tensor(expect_g, dtype=torch.float64)
    )


# ----------------------------------------------------------------------------- per-key EMA


@given(codes=st.lists(st.integers(0, 3), max_size=80),
       alpha=st.sampled_from([0.0, 1e-120, 0.3, 0.8, 0.95, 1.0]), room=st.booleans(),
       seed=st.integers(0, 2**16))  # fmt: skip
@SETTINGS
def test_keyed_ema_matches_sequential_loop(codes, alpha, room, seed):
    num, n = 3, len(codes)  # code 3: samples that update nothing
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=gen, dtype=torch.float64) * 2
    init = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    spare = _ema_room(alpha, n, num) if room else 0
    for counting in (True, False):
        code = torch.empty(n + spare, dtype=torch.long)[:n].copy_(torch.tensor(codes).long())
        fn = functools.partial(_sort_by_key, counting=counting)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(ret_mod, "_sort_by_key", fn)
            res = _keyed_ema(x, code, num, alpha, init)
        before, final, count = seq_ema(x.tolist(), codes, num, alpha, init.tolist())
        live = [i for i in range(n) if codes[i] != num]
        torch.testing.assert_close(res.before[live], torch.tensor([before[i] for i in live],
                                   dtype=torch.float64), atol=1e-10, rtol=1e-10)  # fmt: skip
        torch.testing.assert_close(res.final, torch.tensor(final, dtype=torch.float64),
                                   atol=1e-10, rtol=1e-10)  # fmt: skip
        assert res.count.tolist() == count


@pytest.mark.parametrize("alpha", [0.5, 0.95, 0.999, 0.99999])
def test_keyed_ema_long_sequences_keep_precision(alpha):
    # ~100k updates per key: hundreds of rows chained, alpha**j far below float64's range
    n, num = 300_000, 3
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(n, generator=gen, dtype=torch.float64) * 3 + 1
    code = torch.randint(0, num, (n,), generator=gen)
    init = torch.tensor([10.0, -10.0, 0.0], dtype=torch.float64)
    res = _keyed_ema(x.float(), code, num, alpha, init)  # float32 values, float64 scan
    before, final, _ = seq_ema(x.float().double().tolist(), code.tolist(), num, alpha,
                               init.tolist())  # fmt: skip
    torch.testing.assert_close(res.before, torch.tensor(before, dtype=torch.float32))
    torch.testing.assert_close(res.final, torch.tensor(final, dtype=torch.float64), atol=1e-9,
                               rtol=1e-12)  # fmt: skip


def test_role_ema_long_batch_matches_loop_and_continues():
    n = 200_000
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(n, generator=gen, dtype=torch.float64)
    game, role = torch.randint(0, 2, (n,), generator=gen), torch.randint(0, 4, (n,), generator=gen)
    mask = torch.rand(n, generator=gen) > 0.1
    cfg = AdvantageConfig(role_ema_alpha=0.999, role_ema_init=1.0, float64=True, diagnostics=False)
    state, ref = RoleEMABaseline(), {}
    lay = {"values": x.tolist(), "game": game.tolist(), "role": role.tolist(),
           "trajectory": None, "mask": mask.tolist(), "weights": None}  # fmt: skip
    for _ in range(2):
        got = normalize_advantages("role_ema", x, AdvantageKeys(game=game, role=role), mask,
                                   cfg=cfg, state=state).advantages  # fmt: skip
        expect = ref_scheme("role_ema", lay, cfg, ref)
        torch.testing.assert_close(got, torch.tensor(expect, dtype=torch.float64), atol=1e-9,
                                   rtol=1e-9)  # fmt: skip
    for (g, r), b in ref.items():
        assert state.get(g, r) == pytest.approx(b, abs=1e-9)


def test_role_ema_huge_ids_match_small_ids():
    gen = torch.Generator().manual_seed(5)
    n = 500
    x = torch.randn(n, generator=gen)
    game, role = torch.randint(0, 3, (n,), generator=gen), torch.randint(0, 2, (n,), generator=gen)
    big_game, big_role = game * 700_000_000, role * 2_000_000_000  # spans far beyond N
    cfg = AdvantageConfig(role_ema_alpha=0.9)
    s_small, s_big = RoleEMABaseline(), RoleEMABaseline()
    a = normalize_advantages("role_ema", x, AdvantageKeys(game=game, role=role), cfg=cfg,
                             state=s_small).advantages  # fmt: skip
    b = normalize_advantages("role_ema", x, AdvantageKeys(game=big_game, role=big_role),
                             cfg=cfg, state=s_big).advantages  # fmt: skip
    torch.testing.assert_close(a, b, atol=0, rtol=0)
    for g in range(3):
        for r in range(2):
            assert s_small.get(g, r) == s_big.get(g * 700_000_000, r * 2_000_000_000)


# ----------------------------------------------------------------------------- scheme paths


def collection_layout(n_traj, agents, turns, seed, wide=False):
    """Trajectory-major samples, turns in order, agents taking turns (the usual layout)."""
    gen = torch.Generator().manual_seed(seed)
    traj = torch.arange(n_traj).repeat_interleave(turns)
    turn = torch.arange(turns).repeat(n_traj)
    group = traj // 2
    lay = {
        "values": (torch.randn(traj.numel(), generator=gen) * 2).tolist(),
        "mask": (torch.rand(traj.numel(), generator=gen) > 0.15).tolist(),
        "weights": None,
        "game": (group % 2).tolist(),
        "group": (group * (100_003 if wide else 1)).tolist(),
        "agent": (turn % agents).tolist(),
        "role": (turn % agents // 2).tolist(),
        "trajectory": traj.tolist(),
        "node": None,
        "turn": turn.tolist(),
    }
    return lay


@pytest.mark.parametrize("scheme", ["player_turn", "joint_group", "agent", "group_role"])
@pytest.mark.parametrize("per_traj", [False, True])
@pytest.mark.parametrize("wide", [False, True])
def test_collection_layout_matches_reference_and_shuffled(scheme, per_traj, wide, counting):
    # in collection order the schemes take their fast paths (turns in order, contiguous
    # trajectories, pairs from key columns); a shuffle sends them down the general ones
    lay = collection_layout(n_traj=12, agents=3, turns=7, seed=6, wide=wide)
    cfg = AdvantageConfig(float64=True, per_trajectory=per_traj, turn_gamma=0.9,
                          diagnostics=False)  # fmt: skip
    x, keys, mask, _ = to_torch(lay)
    got = normalize_advantages(scheme, x, keys, mask, cfg=cfg).advantages
    expect = torch.tensor(ref_scheme(scheme, lay, cfg), dtype=torch.float64)
    torch.testing.assert_close(got, expect, atol=1e-9, rtol=1e-9)
    perm = torch.randperm(x.numel(), generator=torch.Generator().manual_seed(7))
    shuffled = AdvantageKeys(**{k: getattr(keys, k)[perm] for k in keys.present()})
    got_s = normalize_advantages(scheme, x[perm], shuffled, mask[perm], cfg=cfg).advantages
    torch.testing.assert_close(got_s, got[perm], atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("gamma", [1.0, 0.7])
def test_turn_returns_in_order_and_general_paths_agree(gamma, counting):
    lay = collection_layout(n_traj=9, agents=2, turns=11, seed=8)
    x, keys, mask, _ = to_torch(lay)
    expect = ref_turn_returns(lay["values"], lay["trajectory"], lay["agent"], lay["turn"],
                              lay["mask"], gamma)  # fmt: skip
    assert ret_mod._in_turn_order(keys.trajectory, keys.turn)
    got = adv_mod.turn_returns(x, keys.trajectory, keys.agent, keys.turn, gamma=gamma, mask=mask)
    torch.testing.assert_close(got, torch.tensor(expect, dtype=torch.float64))
    rev = torch.arange(x.numel() - 1, -1, -1)  # turns now run backwards: the general path
    assert not ret_mod._in_turn_order(keys.trajectory[rev], keys.turn[rev])
    got_r = adv_mod.turn_returns(x[rev], keys.trajectory[rev], keys.agent[rev], keys.turn[rev],
                                 gamma=gamma, mask=mask[rev])  # fmt: skip
    torch.testing.assert_close(got_r, got[rev])


def test_in_turn_order_needs_contiguous_trajectories():
    t = torch.tensor([0, 0, 1, 1, 0])
    assert not ret_mod._in_turn_order(t, torch.tensor([0, 1, 0, 1, 2]))  # trajectory 0 twice
    assert ret_mod._in_turn_order(torch.tensor([5, 5, 2, 2]), torch.tensor([0, 0, 3, 4]))
    assert not ret_mod._in_turn_order(torch.tensor([5, 5, 2]), torch.tensor([1, 0, 0]))


@given(lay=st.data())
@SETTINGS
def test_per_trajectory_pairs_from_columns_match_key_pairs(lay):
    # wide columns constant or varying inside trajectories: every pairing path of _pairs_of
    draw = lay.draw
    n = draw(st.integers(1, 40))
    traj = torch.tensor(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)))
    agent = torch.tensor(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    const = traj * 999_983 if draw(st.booleans()) else traj // 2 * 1_000_003
    vary = torch.tensor(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))) * 77_777
    cols = [const, agent] if draw(st.booleans()) else [const, vary, agent]
    pairs = adv_mod._pairs_of(traj, cols)
    ref = adv_mod._pairs(traj, adv_mod.dense_key(*cols))
    key_of = {}
    for i in range(n):  # the same partition into pairs, and the same key partition
        a = (int(pairs.key.ids[i]), int(ref.key.ids[i]))
        assert key_of.setdefault(("pair", a[0]), a[1]) == a[1]
        b = (int(pairs.up[pairs.key.ids[i]]), int(ref.up[ref.key.ids[i]]))
        assert key_of.setdefault(("key", b[0]), b[1]) == b[1]
    assert len({k for k in key_of if k[0] == "pair"}) == len(set(ref.key.ids.tolist()))


def test_segment_stats_per_trajectory_with_wide_key_ids():
    # key ids far apart inside one trajectory: the pairs come from dense_key, not an offset
    gen = torch.Generator().manual_seed(9)
    n = 60
    x = torch.randn(n, generator=gen, dtype=torch.float64)
    traj = torch.randint(0, 4, (n,), generator=gen)
    small = torch.randint(0, 3, (n,), generator=gen)
    wide = adv_mod.SegmentKey(small * 400_000, 800_001)
    narrow = adv_mod.SegmentKey(small, 3)
    a = adv_mod.segment_stats(x, wide, trajectory=traj, per_trajectory=True)
    b = adv_mod.segment_stats(x, narrow, trajectory=traj, per_trajectory=True)
    used = small.unique()
    for f in ("mean", "std", "count", "weight", "constant"):
        torch.testing.assert_close(getattr(a, f)[used * 400_000], getattr(b, f)[used])
    with pytest.raises(ValueError, match="keys.trajectory"):
        adv_mod.segment_stats(x, narrow, per_trajectory=True)


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@needs_cuda
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("per_traj", [False, True])
def test_collection_layout_on_cuda_matches_cpu(scheme, per_traj):
    # on the GPU the same fast paths run with torch.sort instead of the counting sort
    lay = collection_layout(n_traj=40, agents=4, turns=25, seed=10, wide=per_traj)
    cfg = AdvantageConfig(float64=True, per_trajectory=per_traj, turn_gamma=0.9, diagnostics=False)
    x, keys, mask, _ = to_torch(lay)
    cpu = normalize_advantages(scheme, x, keys, mask, cfg=cfg, state=RoleEMABaseline())
    xc, kc, mc, _ = to_torch(lay, device="cuda")
    got = normalize_advantages(scheme, xc, kc, mc, cfg=cfg, state=RoleEMABaseline())
    torch.testing.assert_close(got.advantages.cpu(), cpu.advantages, atol=1e-9, rtol=1e-9)


@needs_cuda
def test_keyed_ema_on_cuda_matches_cpu():
    n, num = 200_000, 5
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(n, generator=gen)
    code = torch.randint(0, num + 1, (n,), generator=gen)
    init = torch.linspace(-1, 1, num, dtype=torch.float64)
    cpu = _keyed_ema(x, code.clone(), num, 0.97, init)
    got = _keyed_ema(x.cuda(), code.cuda(), num, 0.97, init.cuda())
    live = code < num
    torch.testing.assert_close(got.before.cpu()[live], cpu.before[live])
    torch.testing.assert_close(got.final.cpu(), cpu.final, atol=1e-9, rtol=1e-12)
