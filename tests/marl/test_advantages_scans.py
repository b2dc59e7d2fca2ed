"""Tests of the flat-sample scans behind ``marl.advantages``: the recursive-doubling
``linear_scan`` (vs a sequential loop, long runs,
early stops), ``role_ema`` on long batches and huge ids, and the schemes on the usual layout
(trajectory-major, turns in order) against the slow references and against a shuffle; on
CUDA, the same inputs against the CPU.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.overrides import TorchFunctionMode

from marl.advantages import AdvantageConfig, AdvantageKeys, RoleEMABaseline, normalize_advantages
from marl.returns import SegmentKey, dense_key, linear_scan, run_positions, turn_returns
from tests.marl.test_advantages import (
    SCHEMES,
    SETTINGS,
    ref_scheme,
    ref_turn_returns,
    to_torch,
)

# ----------------------------------------------------------------------------- grouping, scans


@pytest.mark.parametrize("lanes", [1, 4, 256])
def test_segment_sums_spread_over_lanes_match_plain_sums(lanes):
    # CUDA spreads a few hot segments over lanes; the same arithmetic, forced here on the CPU
    gen = torch.Generator().manual_seed(2)
    ids = torch.randint(0, 5, (1000,), generator=gen)
    x = torch.randn(1000, generator=gen, dtype=torch.float64)
    key = SegmentKey(ids, 6)
    key.__dict__["lanes"] = lanes
    expect = torch.zeros(6, dtype=torch.float64).index_add_(0, ids, x)
    torch.testing.assert_close(key.sum(x), expect)
    assert SegmentKey(ids, 6).lanes == SegmentKey(ids, 6, side_by_side=True).lanes == 1  # CPU


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_lanes_spread_hot_and_side_by_side_keys_only():
    """Few segments (role) and a key whose segments' samples adjoin (joint actions) spread
    over lanes on CUDA; many interleaved segments (agent of 64k) do not; the sums agree."""
    ids = torch.arange(100_000, device="cuda") // 25  # 4,000 segments of 25 adjacent samples
    x = torch.randn(100_000, device="cuda", dtype=torch.float64)
    side, plain = SegmentKey(ids, 4000, side_by_side=True), SegmentKey(ids, 4000)
    assert side.lanes == 16 and plain.lanes == 1 and SegmentKey(ids % 32, 32).lanes == 128
    torch.testing.assert_close(side.sum(x), plain.sum(x))


@given(lengths=st.lists(st.integers(1, 40), min_size=1, max_size=8),
       coef=st.sampled_from([0.0, 1e-120, 0.3, 0.9, 1.0, -0.7]), seed=st.integers(0, 2**16))
@SETTINGS
def test_linear_scan_matches_loop(lengths, coef, seed):
    gen = torch.Generator().manual_seed(seed)
    n = sum(lengths)
    b = torch.randn(n, generator=gen, dtype=torch.float64)
    starts = set(torch.tensor([0] + lengths[:-1]).cumsum(0).tolist())
    start = torch.tensor([i in starts for i in range(n)])
    y, expect = 0.0, []
    for i in range(n):
        y = b[i].item() + (0.0 if i in starts else coef * y)
        expect.append(y)
    for max_pos in (None, n - 1):  # steps up to the longest run (read), or up to log2(N)
        got = linear_scan(b, run_positions(start), coef, max_pos=max_pos)
        torch.testing.assert_close(got, torch.tensor(expect, dtype=torch.float64), atol=1e-12,
                                   rtol=1e-12)  # fmt: skip


@pytest.mark.parametrize("gamma", [1.0, 0.9, 0.0])
def test_turn_returns_of_long_runs_match_loop(gamma):
    # 3 agents over 2 trajectories of 3000 turns: runs of 1000 own turns
    n = 6000
    gen = torch.Generator().manual_seed(1)
    r = torch.randn(n, generator=gen, dtype=torch.float64)
    traj, agent = torch.arange(n) // 3000, torch.arange(n) % 3
    got = turn_returns(r, traj, agent, gamma=gamma)
    expect = ref_turn_returns(r.tolist(), traj.tolist(), agent.tolist(), list(range(n)),
                              [True] * n, gamma)  # fmt: skip
    torch.testing.assert_close(got, torch.tensor(expect, dtype=torch.float64), atol=1e-9,
                               rtol=1e-9)  # fmt: skip
    with_game = turn_returns(r, traj, agent, gamma=gamma, game=traj * 0)  # game column too
    torch.testing.assert_close(with_game, got)


# ----------------------------------------------------------------------------- role_ema

@pytest.mark.parametrize("alpha", [0.5, 0.95, 0.999, 0.99999])
def test_role_ema_long_sequences_keep_precision(alpha):
    # ~100k updates per key: the doubling scan runs 17 steps, alpha**j far below float64's range
    n = 300_000
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(n, generator=gen, dtype=torch.float64) * 3 + 1
    role = torch.randint(0, 3, (n,), generator=gen)
    cfg = AdvantageConfig(role_ema_alpha=alpha, role_ema_init=10.0, diagnostics="none")
    state = RoleEMABaseline()
    got = normalize_advantages("role_ema", x.float(), AdvantageKeys(role=role), cfg=cfg,
                               state=state).advantages  # fmt: skip
    b, before = [10.0] * 3, []
    for xi, ri in zip(x.float().double().tolist(), role.tolist(), strict=True):
        before.append(xi - b[ri])
        b[ri] = alpha * b[ri] + (1 - alpha) * xi
    torch.testing.assert_close(got, torch.tensor(before, dtype=torch.float32))
    for ri in range(3):
        assert state.get(0, ri) == pytest.approx(b[ri], abs=1e-9, rel=1e-12)


def test_role_ema_long_batch_matches_loop_and_continues():
    n = 200_000
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(n, generator=gen, dtype=torch.float64)
    game, role = torch.randint(0, 2, (n,), generator=gen), torch.randint(0, 4, (n,), generator=gen)
    mask = torch.rand(n, generator=gen) > 0.1
    cfg = AdvantageConfig(role_ema_alpha=0.999, role_ema_init=1.0, float64=True, diagnostics="none")
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


@pytest.mark.parametrize("wide", [0, 1, 2])
def test_dense_key_of_64_bit_hashed_ids_ranks_the_tuples(wide):
    # a column spanning most of int64 (hashed trajectory ids): c - min wrapped and the radix
    # multiplier overflowed (OverflowError, or ids out of tuple order)
    gen = torch.Generator().manual_seed(wide)
    n = 300
    cols = [torch.randint(0, 3, (n,), generator=gen) for _ in range(3)]
    hashed = torch.randint(-(2**63), 2**63 - 1, (20,), generator=gen)
    hashed[:2] = torch.tensor([-(2**63), 2**63 - 1])
    cols[wide] = hashed[torch.randint(0, 20, (n,), generator=gen)]
    key = dense_key(*cols)
    tuples = list(zip(*(c.tolist() for c in cols), strict=True))
    rank = {t: i for i, t in enumerate(sorted(set(tuples)))}
    dense = torch.unique(key.ids, return_inverse=True)[1]  # ids may leave gaps; order may not
    assert dense.tolist() == [rank[t] for t in tuples]
    assert int(key.ids.max()) < key.num


def test_player_turn_with_hashed_trajectory_ids_matches_small_ids():
    gen = torch.Generator().manual_seed(3)
    n = 400
    traj = torch.randint(0, 30, (n,), generator=gen)
    agent, turn = torch.randint(0, 2, (n,), generator=gen), torch.randint(0, 6, (n,), generator=gen)
    hashed = torch.randint(-(2**63), 2**63 - 1, (30,), generator=gen)
    x = torch.randn(n, dtype=torch.float64, generator=gen)
    game = traj % 2  # the trajectory column follows the game's in the key
    out = [normalize_advantages("player_turn", x, AdvantageKeys(
        game=game, trajectory=t, agent=agent, turn=turn)).advantages for t in (traj, hashed[traj])]
    torch.testing.assert_close(out[0], out[1], atol=1e-12, rtol=0)  # sums in another order


def test_role_ema_per_trajectory_updates_in_trajectory_id_order():
    # one (game, role); trajectories 2, 0, 1 in batch order, updates in id order 0, 1, 2:
    # traj 0 (mean of 2 and 8 = 5) meets 0 -> b 2.5, traj 1 (6) meets 2.5 -> 4.25,
    # traj 2 (4) meets 4.25 -> 4.125; the weight-0 sample of traj 1 meets its unit's 2.5,
    # the one of traj 3 (no weight at all: no update) the baseline before the batch, 0
    x = torch.tensor([4.0, 2.0, 6.0, 8.0, 100.0, 7.0], dtype=torch.float64)
    traj = torch.tensor([2, 0, 1, 0, 1, 3])
    w = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    keys = AdvantageKeys(role=torch.zeros(6, dtype=torch.long), trajectory=traj)
    cfg = AdvantageConfig(role_ema_alpha=0.5, per_trajectory=True, diagnostics="none")
    state = RoleEMABaseline()
    got = normalize_advantages("role_ema", x, keys, weights=w, cfg=cfg, state=state).advantages
    assert got.tolist() == [4 - 4.25, 2.0, 6 - 2.5, 8.0, 100 - 2.5, 7.0]
    assert state.get(0, 0) == 4.125
    # per sample: batch order, each sample meets the baseline the one before left
    cfg = AdvantageConfig(role_ema_alpha=0.5, diagnostics="none")
    got = normalize_advantages("role_ema", x[:4], AdvantageKeys(role=torch.zeros(4).long()),
                               cfg=cfg, state=RoleEMABaseline()).advantages  # fmt: skip
    assert got.tolist() == [4.0, 2 - 2.0, 6 - 2.0, 8 - 4.0]


@pytest.mark.parametrize("per_traj", [False, True])
def test_role_ema_reads_the_host_once_per_call(per_traj, monkeypatch):
    # counted on the CPU: each call that makes the host wait for a GPU (item, bool, int,
    # tolist, unique, nonzero, a boolean index) -- role_ema reads its one tolist()
    syncs = []

    def counted(owner, name):
        real = getattr(owner, name)
        monkeypatch.setattr(owner, name, lambda *a, **k: syncs.append(name) or real(*a, **k))

    for name in ("item", "tolist", "__bool__", "__int__", "__float__", "__index__", "nonzero",
                 "unique", "unique_consecutive", "masked_select", "numpy", "cpu"):  # fmt: skip
        counted(torch.Tensor, name)
    for name in ("unique", "unique_consecutive", "nonzero", "masked_select"):
        counted(torch, name)
    getitem = torch.Tensor.__getitem__

    def bool_index(t, idx):
        idx_ = idx if isinstance(idx, tuple) else (idx,)
        if any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in idx_):
            syncs.append("boolean index")
        return getitem(t, idx)

    monkeypatch.setattr(torch.Tensor, "__getitem__", bool_index)
    gen = torch.Generator().manual_seed(6)
    n = 300
    keys = AdvantageKeys(game=torch.randint(0, 2, (n,), generator=gen), role=torch.arange(n) % 3,
                         trajectory=torch.randint(0, 40, (n,), generator=gen))  # fmt: skip
    cfg = AdvantageConfig(role_ema_alpha=0.9, per_trajectory=per_traj, diagnostics="none")
    state = RoleEMABaseline()
    for mask in (None, torch.rand(n, generator=gen) > 0.2, None):  # new pairs, then known ones
        syncs.clear()
        normalize_advantages("role_ema", torch.randn(n, generator=gen), keys, mask, cfg=cfg,
                             state=state)  # fmt: skip
        assert syncs == ["tolist"]


class DeviceWaits(TorchFunctionMode):
    """Records the calls that make the host wait for a GPU, seen on the CPU as well: reads of a
    value (``item``, ``int()``...), data-dependent sizes (``nonzero``, ``unique``,
    ``masked_select``) and indexing by a bool or a 0-dim tensor. ``tolist()`` is left out: the
    one read of each ``dense_key`` (its ranges) and of ``role_ema`` are by design."""

    WAITS = {"item", "__int__", "__float__", "__bool__", "__index__", "nonzero", "masked_select",
             "unique", "unique_consecutive", "repeat_interleave", "cpu", "numpy"}  # fmt: skip

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        idx = args[1] if name in ("__getitem__", "__setitem__") else ()
        idx = idx if isinstance(idx, tuple) else (idx,)
        if name in self.WAITS or any(isinstance(i, torch.Tensor) and (i.dtype == torch.bool
                                     or i.dim() == 0) for i in idx):  # fmt: skip
            self.ops.append(name)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("scheme", [s for s in SCHEMES if s != "none"])
@pytest.mark.parametrize("per_traj", [False, True])
def test_grouped_schemes_make_the_device_wait_on_nothing(scheme, per_traj):
    # no item(), nonzero or boolean index in any adv_norm with a mask and weights (global's
    # masked one-liner without weights reads the mask's size: masked_select), nor in
    # turn_returns; was: global's pilot sample, turn_returns' run totals and longest run
    gen = torch.Generator().manual_seed(8)
    n = 400
    keys = AdvantageKeys(game=torch.randint(0, 2, (n,), generator=gen),
                         group=torch.randint(0, 20, (n,), generator=gen),
                         agent=torch.arange(n) % 3, role=torch.arange(n) % 3 // 2,
                         trajectory=torch.randint(0, 40, (n,), generator=gen),
                         turn=torch.arange(n) // 3)  # fmt: skip
    x, mask, w = torch.randn(n, generator=gen), torch.rand(n, generator=gen) > 0.1, torch.rand(n)
    state = RoleEMABaseline()
    for gamma in (1.0, 0.9):  # turn returns by suffix sums, by a scan
        cfg = AdvantageConfig(per_trajectory=per_traj, turn_gamma=gamma, diagnostics="none")
        with DeviceWaits() as waits:
            for m, ww in ((mask, w), (None, None)):
                normalize_advantages(scheme, x, keys, m, ww, cfg, state=state)
            turn_returns(x, keys.trajectory, keys.agent, keys.turn, gamma=gamma, mask=mask)
        assert waits.ops == []
    with DeviceWaits() as waits:
        normalize_advantages("global", x, keys, mask, cfg=AdvantageConfig(diagnostics="none"))
    assert waits.ops == ["masked_select"]


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
def test_collection_layout_matches_reference_and_shuffled(scheme, per_traj, wide):
    # the usual layout and a shuffle of it give the same advantages, sample by sample
    lay = collection_layout(n_traj=12, agents=3, turns=7, seed=6, wide=wide)
    cfg = AdvantageConfig(float64=True, per_trajectory=per_traj, turn_gamma=0.9,
                          diagnostics="none")  # fmt: skip
    x, keys, mask, _ = to_torch(lay)
    got = normalize_advantages(scheme, x, keys, mask, cfg=cfg).advantages
    expect = torch.tensor(ref_scheme(scheme, lay, cfg), dtype=torch.float64)
    torch.testing.assert_close(got, expect, atol=1e-9, rtol=1e-9)
    perm = torch.randperm(x.numel(), generator=torch.Generator().manual_seed(7))
    shuffled = AdvantageKeys(**{k: getattr(keys, k)[perm] for k in keys.present()})
    got_s = normalize_advantages(scheme, x[perm], shuffled, mask[perm], cfg=cfg).advantages
    torch.testing.assert_close(got_s, got[perm], atol=1e-9, rtol=1e-9)


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@needs_cuda
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("per_traj", [False, True])
def test_collection_layout_on_cuda_matches_cpu(scheme, per_traj):
    # the same plain-torch code on both devices
    lay = collection_layout(n_traj=40, agents=4, turns=25, seed=10, wide=per_traj)
    cfg = AdvantageConfig(float64=True, per_trajectory=per_traj, turn_gamma=0.9, diagnostics="none")
    x, keys, mask, _ = to_torch(lay)
    cpu = normalize_advantages(scheme, x, keys, mask, cfg=cfg, state=RoleEMABaseline())
    xc, kc, mc, _ = to_torch(lay, device="cuda")
    got = normalize_advantages(scheme, xc, kc, mc, cfg=cfg, state=RoleEMABaseline())
    torch.testing.assert_close(got.advantages.cpu(), cpu.advantages, atol=1e-9, rtol=1e-9)


@needs_cuda
def test_role_ema_and_turn_returns_on_cuda_match_cpu():
    n = 200_000
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(n, generator=gen)
    role, traj = torch.randint(0, 5, (n,), generator=gen), torch.arange(n) // 1000
    cfg = AdvantageConfig(role_ema_alpha=0.97, diagnostics="none")
    s_cpu, s_gpu = RoleEMABaseline(), RoleEMABaseline()
    cpu = normalize_advantages("role_ema", x, AdvantageKeys(role=role), cfg=cfg, state=s_cpu)
    got = normalize_advantages("role_ema", x.cuda(), AdvantageKeys(role=role.cuda()), cfg=cfg,
                               state=s_gpu)  # fmt: skip
    torch.testing.assert_close(got.advantages.cpu(), cpu.advantages)
    torch.testing.assert_close(s_gpu.values.cpu(), s_cpu.values, atol=1e-9, rtol=1e-12)
    for gamma in (1.0, 0.9):
        a = turn_returns(x, traj, role, gamma=gamma)
        b = turn_returns(x.cuda(), traj.cuda(), role.cuda(), gamma=gamma)
        torch.testing.assert_close(b.cpu(), a)


def test_turn_returns_order_float_turns_as_given():
    """``turn`` orders a trajectory's turns; float turns (times, say) keep their order: the
    one-sort path reads integer turns and must not truncate 0.05, 0.15, ... to 0."""
    gen = torch.Generator().manual_seed(5)
    n = 200
    traj = torch.randint(0, 6, (n,), generator=gen)
    agent = torch.randint(0, 3, (n,), generator=gen)
    rank = torch.randperm(n, generator=gen)  # distinct turn ranks, in shuffled sample order
    r = torch.randn(n, generator=gen, dtype=torch.float64)
    for gamma in (1.0, 0.8):
        want = turn_returns(r, traj, agent, rank, gamma=gamma)
        got = turn_returns(r, traj, agent, rank.double() * 0.1 + 0.05, gamma=gamma)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
