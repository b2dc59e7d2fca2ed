"""A runner keeps its most recently used policies loaded, not every policy file it ever
played: a league adds a snapshot per member every generation, and the dicts that cached them
were never emptied (walk 37c, M2: +0.7 MB a generation). Bounded, the results are those of
fresh loads."""

from __future__ import annotations

import pickle
import shutil

import pytest

import games
from marl import registry
from populations.lru import EVERY_RIVAL_CACHE, POLICY_CACHE, LRUCache, policy_cache_size
from populations.runners import LocalRunner, MatchJob, _MatchWorker, make_runner, play_job

KUHN = "openspiel/kuhn_poker"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Nine snapshot files: three MAPPO policies of their own weights, each under three
    names (a runner caches by file)."""
    root = tmp_path_factory.mktemp("lru")
    spec = games.make(KUHN).spec
    out = []
    for seed in range(3):
        first = registry.get("mappo").build(spec, seed=seed).policy().save(root / f"p{seed}.pt")
        out.append(str(first))
        for copy in range(2):
            out.append(str(shutil.copy(first, root / f"p{seed}_{copy}.pt")))
    return out


def _round_robin(files) -> list[MatchJob]:
    """Every file against the next two, twice around: more files than the cache holds."""
    jobs = []
    for lap in range(2):
        for i, a in enumerate(files):
            for b in (files[(i + 1) % len(files)], files[(i + 2) % len(files)]):
                jobs.append(MatchJob(f"{lap}/{i}/{b}", KUHN, {"player_0": a, "player_1": b},
                                     3, 17 * i + lap, num_envs=2))
    return jobs


def test_the_policies_a_runner_keeps_are_bounded_and_play_as_fresh_loads(files):
    """Before: LocalRunner took no bound and its dict held every file (9 here, one per
    snapshot of a league's every generation)."""
    jobs = _round_robin(files)
    fresh = [pickle.dumps(play_job(j)) for j in jobs]  # each job loads its own policies
    runner = LocalRunner(max_policies=4)
    try:
        sizes = []
        for job in jobs:
            [result] = runner.play([job])
            assert pickle.dumps(result) == fresh[len(sizes)], job.key
            sizes.append(len(runner._cache))
    finally:
        runner.close()
    assert max(sizes) == 4, sizes
    assert set(runner._cache) <= set(files)
    worker = _MatchWorker(max_policies=3)  # a Ray actor's state, in this process
    assert [pickle.dumps(worker.play(j)) for j in jobs] == fresh
    assert len(worker.cache) == 3


def test_a_runner_made_by_name_keeps_a_bounded_cache():
    """Before: ``make_runner('local')`` cached in a plain dict, never emptied."""
    runner = make_runner("local")
    try:
        assert isinstance(runner._cache, LRUCache) and runner._cache.maxsize == POLICY_CACHE
    finally:
        runner.close()
    runner = make_runner("local", max_policies=7)
    assert runner._cache.maxsize == 7
    runner.close()


def test_the_least_recently_used_entry_leaves_first():
    cache: LRUCache[str, int] = LRUCache(2)
    cache["a"], cache["b"] = 1, 2
    assert "a" in cache and list(cache) == ["a", "b"]  # a look with `in` is no use
    assert cache["a"] == 1  # a read is: b is now the oldest
    cache["c"] = 3
    assert dict(cache) == {"a": 1, "c": 3}
    del cache["a"]
    assert len(cache) == 1
    with pytest.raises(ValueError, match="maxsize=0"):
        LRUCache(0)


def test_a_league_cache_covers_its_evaluation_window():
    """A generation's rivals (eval_window of them) and its and the last generation's new
    snapshots stay loaded: none is loaded twice in a generation; with eval_window=0 every
    snapshot, up to EVERY_RIVAL_CACHE."""
    assert policy_cache_size(members=2, eval_window=10, generations=1000) == POLICY_CACHE
    assert policy_cache_size(members=4, eval_window=100, generations=1000) == 108
    assert policy_cache_size(members=2, eval_window=0, generations=20) == POLICY_CACHE
    assert policy_cache_size(members=2, eval_window=0, generations=100) == 204
    assert policy_cache_size(members=2, eval_window=0, generations=1000) == EVERY_RIVAL_CACHE


def test_an_unbounded_cache_is_trimmed_to_its_newest():
    cache: LRUCache[int, int] = LRUCache(None)
    for k in range(300):
        cache[k] = k
    assert len(cache) == 300
    cache[5]  # noqa: B018 - a use
    cache.trim(3)
    assert list(cache) == [298, 299, 5]
