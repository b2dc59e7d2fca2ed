"""One seed tree per run: distinct streams for distinct seats and jobs, no library call
moves the global torch / numpy random state, and the same seed gives the same numbers."""

import dataclasses

import numpy as np
import pytest
import torch

import games
from marl import registry
from marl.train import train
from populations.experiment import ExperimentConfig, GameConfig, random_seats, run_experiment
from populations.loggers import LoggerConfig
from populations.psro_run import match_seed
from populations.runners import MatchJob
from populations.seeds import BLOCK, RunSeeds, isolated_global_rng

ADVERSARY = "pettingzoo/mpe2.simple_adversary_v3"
SPREAD = "pettingzoo/mpe2.simple_spread_v3"
TINY = {"mappo": {"rollout_steps": 2, "epochs": 1, "minibatches": 1},
        "value": {"learning_starts": 4, "batch_size": 4}}


def _global_state():
    return torch.get_rng_state().clone(), np.random.get_state()


def _same(a, b) -> bool:
    return torch.equal(a[0], b[0]) and all(
        np.array_equal(x, y) for x, y in zip(a[1], b[1], strict=True))


def test_seed_tree_is_stable_and_named():
    s = RunSeeds(7)
    assert s.stream("learner", "main") == RunSeeds(7).stream("learner", "main")
    assert len({s.learner("main"), s.learner("exploiter"), s.opponent("agent_0"),
                s.opponent("agent_1"), s.game("train"), s.game("eval")}) == 6
    assert RunSeeds(8).learner("main") != s.learner("main")
    assert all(0 <= s.block("match", index=i) < 2**31 for i in range(4096))


def test_every_random_opponent_seat_gets_its_own_stream():
    """simple_adversary: the adversary learns, both good agents are random. With one seed
    for every seat they moved in lockstep (the same action in every copy and step)."""
    vg = games.VectorGame(ADVERSARY, 64, seed=0, max_cycles=5)
    spec = vg.spec
    others = random_seats(spec, ("adversary_0",), RunSeeds(0))
    assert sorted(others) == ["agent_0", "agent_1"]
    vs = vg.reset()
    acts = {a: p.act(a, vs) for a, p in others.items()}
    assert not np.array_equal(acts["agent_0"], acts["agent_1"])
    again = random_seats(spec, ("adversary_0",), RunSeeds(0))  # same seed: same draws
    np.testing.assert_array_equal(again["agent_0"].act("agent_0", vs), acts["agent_0"])


def test_psro_match_jobs_never_share_game_seeds():
    """A job seeds its copies ``seed, seed+1, ...``: with ``seed + iteration`` iteration 1's
    copy 0 replayed iteration 0's copy 1. Blocks of the run's match stream are disjoint."""
    num_envs = MatchJob("k", "g", {}, 1, 0).num_envs
    starts = [match_seed(0, it) for it in range(500)]
    used = [set(range(s, s + num_envs)) for s in starts]
    assert len(set().union(*used)) == num_envs * len(starts)
    assert min(np.diff(sorted(starts))) >= BLOCK
    assert match_seed(0, 3) == match_seed(0, 3) != match_seed(1, 3)


def _tiny_section(name: str):
    entry = registry.get(name)
    cfg = entry.default()
    kw = TINY["mappo"] if entry.section == "mappo" else TINY["value"]
    return dataclasses.replace(cfg, **kw)


@pytest.mark.parametrize("name", ["mappo", "ippo", "vdn", "qmix", "maddpg"])
def test_learners_leave_the_global_random_state_alone(name, tmp_path):
    """Building, acting, training, snapshotting, saving and resuming a learner: the caller's
    torch and numpy random states are untouched (MAPPO reseeded torch globally; value
    decomposition and MADDPG restored a saved global state on load)."""
    torch.manual_seed(123)
    np.random.seed(123)
    before = _global_state()
    entry = registry.get(name)
    vg = games.VectorGame(SPREAD, 2, seed=0, with_state=True, N=2, max_cycles=5)
    learner = entry.build(vg.spec, _tiny_section(name), seed=5)
    train(learner, vg, frames=16, progress=False)
    learner.policy()
    learner.save(tmp_path / "l.pt")
    entry.build(vg.spec, _tiny_section(name), seed=6).load(tmp_path / "l.pt")
    assert _same(before, _global_state())


@pytest.mark.parametrize("name", ["mappo", "vdn"])
def test_same_seed_same_numbers(name):
    def run(seed: int) -> list[torch.Tensor]:
        vg = games.VectorGame(SPREAD, 2, seed=0, with_state=True, N=2, max_cycles=5)
        learner = registry.get(name).build(vg.spec, _tiny_section(name), seed=seed)
        torch.manual_seed(seed + 1)  # whatever the global state is, it must not matter
        train(learner, vg, frames=16, progress=False)
        return [p.detach().clone() for p in learner.state_dict()[
            "actors" if name == "mappo" else "qnet"].values()]

    a, b, c = run(0), run(0), run(1)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(torch.equal(x, y) for x, y in zip(a, c, strict=True))


def test_isolated_global_rng_restores_the_callers_state():
    torch.manual_seed(1)
    np.random.seed(1)
    before = _global_state()
    with isolated_global_rng(42):
        first = torch.rand(2), np.random.rand(2)
    with isolated_global_rng(42):
        second = torch.rand(2), np.random.rand(2)
    assert torch.equal(first[0], second[0]) and np.array_equal(first[1], second[1])
    assert _same(before, _global_state())


def test_run_experiment_leaves_the_global_random_state_alone(tmp_path):
    cfg = ExperimentConfig(game=GameConfig("pettingzoo/mpe2.simple_spread_v3",
                                           {"N": 2, "max_cycles": 5}),
                           frames=8, num_envs=2, eval_episodes=1, progress=False,
                           mappo=_tiny_section("mappo"), logger=LoggerConfig(kind="none"))
    torch.manual_seed(9)
    np.random.seed(9)
    before = _global_state()
    run_experiment(cfg, tmp_path / "run")
    assert _same(before, _global_state())


def test_policies_sample_from_their_own_stream(tmp_path):
    """A frozen PPO snapshot acting leaves the global state alone, and a reseed replays."""
    vg = games.VectorGame(SPREAD, 8, seed=0, N=2, max_cycles=5)
    pol = registry.get("mappo").build(vg.spec, _tiny_section("mappo"), seed=0).policy()
    vs = vg.reset()
    before = _global_state()
    pol.reseed(4)
    a = pol.act("agent_0", vs)
    pol.reseed(4)
    np.testing.assert_array_equal(pol.act("agent_0", vs), a)
    assert _same(before, _global_state())


def test_a_cached_policy_plays_the_same_job_the_same_way(tmp_path):
    """The local runner caches loaded policies: a sampling snapshot's stream went on from job
    to job, so one job gave different returns the second time. (It was an epsilon-greedy
    VDN snapshot's; off-policy snapshots play their argmax in matches since walk 20, so a
    MAPPO one samples here.)"""
    from populations.runners import LocalRunner

    spec = games.make(SPREAD, N=2, max_cycles=5).spec
    path = registry.get("mappo").build(spec, seed=0).policy().save(tmp_path / "mappo.pt")
    job = MatchJob("k", SPREAD, {"agent_0": str(path), "agent_1": str(path)}, episodes=4,
                   seed=11, game_kwargs={"N": 2, "max_cycles": 5})
    first, second = LocalRunner().play([job, job])
    assert first.returns == second.returns


def test_learner_stream_from_another_device_kind_restarts_deterministically():
    """A CUDA generator's state (16 bytes) cannot be set on a CPU generator: a checkpoint
    taken on a GPU resumes on a CPU with a stream restarted from that state."""
    spec = games.make(SPREAD, N=2, max_cycles=5).spec
    state = registry.get("mappo").build(spec, _tiny_section("mappo"), seed=0).state_dict()
    state["gen"], state["gen_device"] = torch.arange(16, dtype=torch.uint8), "cuda"
    draws = []
    for _ in range(2):
        learner = registry.get("mappo").build(spec, _tiny_section("mappo"), seed=1)
        learner.load_state_dict(state)
        draws.append(torch.rand(4, generator=learner.gen))
    assert torch.equal(draws[0], draws[1])


def test_psro_oracle_seeds_are_distinct_streams():
    """Each (iteration, seat) best response gets its own child of the run's seed; with
    ``seed + 1000 * iteration + seat`` the seats' game copies overlapped, shifted by one."""
    from itertools import combinations

    from populations.psro import PSRO, ExactBestResponse, PSROConfig

    seen: list[int] = []

    class Recording(ExactBestResponse):
        def best_response(self, agent, opponents, seed):
            seen.append(seed)
            return super().best_response(agent, opponents, seed)

    psro = PSRO("openspiel/kuhn_poker", Recording("openspiel/kuhn_poker"), PSROConfig())
    for _ in range(3):
        psro.iteration()
    assert len(seen) == 6
    assert min(abs(a - b) for a, b in combinations(seen, 2)) >= 1024  # no shared game copies
