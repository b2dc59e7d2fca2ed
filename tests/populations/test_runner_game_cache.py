"""A runner keeps the games its match jobs played for its next jobs (``GameCache``): making
the game for every evaluation pair was 24 % of a Kuhn league's time at many snapshots. Each
job resets every copy with its own seeds, and a seeded reset replays its episode whatever
was played before (the game contract), so cached play returns exactly what fresh games do."""

import pickle

import pytest

import games
from games import vector
from marl import registry
from populations.runners import RANDOM, GameCache, LocalRunner, MatchJob, _MatchWorker, play_job

KUHN = "openspiel/kuhn_poker"
SPREAD = "pettingzoo/mpe2.simple_spread_v3"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Untrained snapshots that sample (MAPPO) and play greedily (VDN)."""
    root = tmp_path_factory.mktemp("cache")
    out = {}
    for game, kw in ((KUHN, {}), ("openspiel/leduc_poker", {}), (SPREAD, {"N": 2})):
        spec = games.make(game, **kw).spec
        for algo in ("mappo", "vdn"):
            pol = registry.get(algo).build(spec, seed=3).policy()
            out[game, algo] = str(pol.save(root / f"{spec.name.replace('/', '_')}-{algo}.pt"))
    return out


def _jobs(files) -> list[MatchJob]:
    """Games interleaved, with and without arguments, copies growing and shrinking, and one
    job played twice (the second time on copies the first left mid-episode or finished)."""
    jobs = []
    for i in range(3):
        for game, kw, episodes in ((KUHN, {}, 5), ("openspiel/leduc_poker", {}, 3),
                                   (SPREAD, {"N": 2, "max_cycles": 7}, 4),
                                   (SPREAD, {"N": 2, "max_cycles": 5}, 2), (KUHN, {}, 11)):
            spec = games.make(game, **kw).spec
            algos = ("mappo", "vdn") if i % 2 else ("vdn", "mappo")
            seats = {a: files[game, algo]
                     for a, algo in zip(spec.agent_ids, algos, strict=True)}
            jobs.append(MatchJob(f"{game}/{i}", game, seats, episodes, 100 + 7 * i, kw,
                                 num_envs=2 + i))
    return [*jobs, jobs[0]]


def test_cached_play_is_byte_identical_to_fresh_games(files):
    jobs = _jobs(files)
    fresh = [play_job(j) for j in jobs]  # every job makes its own games, as before
    runner = LocalRunner()
    try:
        cached = runner.play(jobs)
    finally:
        runner.close()
    assert _bytes(cached) == _bytes(fresh)
    assert cached[0] == cached[-1]  # the same job again, on copies that played since
    worker = _MatchWorker()  # a Ray actor's state, in this process
    assert _bytes([worker.play(j) for j in jobs]) == _bytes(fresh)


def _bytes(results) -> list[bytes]:
    """Each result's bytes (one pickle for all would differ where cached games share their
    agent id strings between results: pickle's memo, not the values)."""
    return [pickle.dumps(r) for r in results]


def test_a_runner_makes_each_game_copy_once(monkeypatch):
    made = []
    make = games.make

    def counting(name, **kwargs):
        made.append(name)
        return make(name, **kwargs)

    monkeypatch.setattr(games, "make", counting)
    monkeypatch.setattr(vector, "make", counting)
    jobs = [MatchJob(f"p{i}", KUHN, {"player_0": RANDOM, "player_1": RANDOM}, 4, i,
                     num_envs=2) for i in range(20)]
    LocalRunner().play(jobs)
    assert made == [KUHN, KUHN]  # the two copies every job steps
    made.clear()
    for j in jobs[:3]:
        play_job(j)  # without a cache: the spec's game and each copy, every job
    assert made == [KUHN] * 9


def test_the_cache_is_bounded_and_closes_what_leaves(monkeypatch):
    closed = []
    monkeypatch.setattr(games.Game, "close", lambda self: closed.append(self.spec.name))
    cache = GameCache(max_games=3)
    first = cache.take(KUHN, {}, 2)
    assert cache.take(KUHN, {}, 1) == first[:1]  # kept
    cache.take("openspiel/leduc_poker", {}, 2)  # 4 > 3: Kuhn's copies leave, closed
    assert closed == [KUHN, KUHN]
    assert cache.take(KUHN, {}, 1)[0] is not first[0]
    cache.close()
    assert sorted(closed) == sorted([KUHN] * 3 + ["openspiel/leduc_poker"] * 2)


def test_a_job_wider_than_the_cache_closes_its_copies(monkeypatch):
    # review of 195ffaf: a job of more copies than the cache keeps was dropped from it, but
    # play_job skipped vg.close() whenever a cache was given: its copies were never closed
    closed = []
    monkeypatch.setattr(games.Game, "close", lambda self: closed.append(self.spec.name))
    cache = GameCache(max_games=3)
    job = MatchJob("wide", KUHN, {"player_0": RANDOM, "player_1": RANDOM}, 5, 1, num_envs=5)
    play_job(job, game_cache=cache)
    assert not cache.keeps(KUHN, {}) and closed.count(KUHN) >= 5
    closed.clear()
    play_job(MatchJob("narrow", KUHN, job.seats, 2, 2, num_envs=2), game_cache=cache)
    assert cache.keeps(KUHN, {}) and closed == []  # kept for the next job, open


def test_ray_private_names_the_runner_patches_exist():
    # populations.runners starts Ray's servers in their own session and keeps a CLI's SIGTERM
    # handler through ray.init by patching these names; without them it quietly falls back to
    # Ray's own behaviour (a group SIGTERM reaching the servers): a Ray upgrade must say so
    from ray._private import services, utils

    assert callable(services.ConsolePopen) and callable(utils.set_sigterm_handler)
    assert callable(utils.detect_fate_sharing_support)
