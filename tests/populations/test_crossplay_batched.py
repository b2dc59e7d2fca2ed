"""The batched pair bootstraps (``crossplay.pairs_stats``) and ``Episodes.pairs`` against
their one-pair-at-a-time definitions: the same bits at every episode count and chunk size,
the RNG draws pinned, and no block of every pair's resample indices held at once."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from populations import crossplay as cp


def _margins(counts: list[int], seed: int = 0) -> dict[tuple[int, int], np.ndarray]:
    rng = np.random.default_rng(seed)
    return {(k, k + 1 + k % 3): rng.normal(size=n) if k % 2 else
            rng.integers(-2, 3, size=n).astype(float) for k, n in enumerate(counts)}


@pytest.mark.parametrize("chunk", [1 << 22, 50, 7])  # one block per pair, several, one row
@pytest.mark.parametrize("resamples", [1, 200])
def test_batched_pairs_equal_pair_stats_at_every_episode_count(chunk, resamples,
                                                               monkeypatch):
    # episode counts mixed in one call: 25 needs 50 entries of room at CHUNK=50, more than
    # the 30 of the largest pair's single row
    monkeypatch.setattr(cp, "CHUNK", chunk)
    margins = _margins([1, 2, 2, 3, 8, 9, 16, 16, 17, 25, 30, 64, 2, 16])
    got = cp.pairs_stats(margins, 4, resamples, cp.CONFIDENCE, cp.TOL)
    assert got.keys() == margins.keys()
    for ab, m in margins.items():
        want = cp.pair_stats(m, cp.pair_rng(4, *ab), resamples=resamples)
        assert want.keys() == got[ab].keys()
        for key, value in want.items():
            assert np.array_equal(np.asarray(value), np.asarray(got[ab][key])), (ab, key)
        # and pair_stats is still the plain definition: mean of margin at the drawn indices
        idx = cp.bootstrap_indices(len(m), resamples, cp.pair_rng(4, *ab))
        assert np.array_equal(want["margin_boot"], m[idx].mean(axis=1))


def test_bootstrap_draws_are_pinned():
    """Each pair's resamples come from ``default_rng([seed, a, b])``'s ``integers`` in
    :func:`bootstrap_chunks`' blocks: these are the resample sums (× n, integer margins,
    so exact in any order) the module gave before the batched path was rewritten."""
    a = np.array([3] * 7 + [4] * 3)
    b = np.array([8] * 7 + [9] * 3)
    m = np.array([2.0, -1.0, 0.0, 1.0, -2.0, 1.0, 1.0, 1.0, -1.0, 0.0])
    t = cp.crossplay(cp.Episodes(a, b, m), resamples=40, seed=7)
    assert t.ids == [3, 4, 8, 9]
    sums = {ab: (boot * t.n[ab[0]][ab[1]]).round().astype(int).tolist()
            for ab, boot in t.margin_boot.items()}
    assert sums == {
        (0, 2): [-4, 4, -2, -5, 1, 6, 5, 6, 4, 0, 3, -1, 0, 2, -2, 8, 0, 4, -1, 5, 1, -5, -4,
                 2, 5, 11, 5, 3, 6, 5, 2, 1, 0, 1, -1, 2, -5, 1, 6, 8],
        (1, 3): [0, 1, 2, 0, 0, -1, -1, 0, -1, 0, -1, 1, 0, 1, 1, -1, 1, 1, -2, 2, 2, 0, 0,
                 2, 1, -1, 0, -1, 1, 2, 0, 0, -1, -2, -2, 0, 0, -2, 0, 2]}


def test_batched_pairs_hold_one_pairs_draws_not_every_pairs():
    """68d084f stacked every pair's (resamples, n) index array into one block before
    gathering (up to CHUNK entries, 32 MB, and take_along_axis's temporaries): slower
    than a loop over pairs. Now the memory at peak is the resample means returned plus a
    few of one pair's blocks (and np.quantile's copy of those means)."""
    resamples, n, count = 1000, 16, 200
    margins = _margins([n] * count)
    tracemalloc.start()
    try:
        cp.pairs_stats(margins, 0, resamples, cp.CONFIDENCE, cp.TOL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    means = count * resamples * 8  # the (pairs, resamples) float64 it returns
    one_pair = resamples * n * 8  # one pair's int64 indices, or its gathered margins
    assert peak < 2 * means + 6 * one_pair, (peak, means, one_pair)


def _pairs_reference(e: cp.Episodes) -> dict[tuple[int, int], np.ndarray]:
    """One mask per pair over every episode (what ``pairs`` did before, in O(pairs × T))."""
    out = {}
    for a, b in sorted(set(zip(e.a.tolist(), e.b.tolist(), strict=True))):
        out[(a, b)] = e.margin[(e.a == a) & (e.b == b)]
    return out


def test_pairs_split_episodes_by_pair_in_recorded_order():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 6, 500)
    b = a + 1 + rng.integers(0, 4, 500)
    e = cp.Episodes(a, b, rng.normal(size=500))
    got, want = e.pairs(), _pairs_reference(e)
    assert list(got) == list(want)
    for ab in want:
        assert np.array_equal(got[ab], want[ab]), ab
        assert all(isinstance(x, int) for x in ab)
    one = cp.Episodes(np.array([2]), np.array([5]), np.array([-0.5]))
    assert {k: v.tolist() for k, v in one.pairs().items()} == {(2, 5): [-0.5]}
    assert cp.Episodes(np.array([], dtype=np.int64), np.array([], dtype=np.int64),
                       np.array([])).pairs() == {}
