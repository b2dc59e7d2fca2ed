"""Match runners: a local Ray instance listens on 127.0.0.1 only; a Ray match worker killed
mid-evaluation is replaced and the results are those of an undisturbed run, with bounded
retries; match play and evaluation stop with a clear error on a game whose episode never
ends. The session's Ray instance (``ray_local``, tests/ray_cluster.py) serves them."""

import os
import signal
import threading
import time

import psutil
import pytest

import games
from games.matrix import CLIMBING, MatrixGame
from marl.train import EpisodeTooLongError, RandomPolicy, evaluate
from populations.runners import (
    RANDOM,
    LocalRunner,
    MatchJob,
    RayRunner,
    RunnerError,
)

SPREAD = "pettingzoo/mpe2.simple_spread_v3"
SPREAD_KW = {"N": 2, "max_cycles": 25}


def _jobs(n=4, episodes=32):
    spec = games.make(SPREAD, **SPREAD_KW).spec
    return [MatchJob(f"j{i}", SPREAD, {a: RANDOM for a in spec.agent_ids}, episodes, 100 + i,
                     SPREAD_KW) for i in range(n)]


def test_local_ray_listens_on_loopback_only(ray_local):
    node = ray_local._private.worker.global_worker.node
    assert node.node_ip_address == "127.0.0.1"
    assert node.gcs_address.startswith("127.0.0.1:")
    runner = RayRunner(num_workers=1)  # a worker process too
    try:
        runner.play(_jobs(1, 2))
        listening = [(p.name(), c.laddr.ip)
                     for p in psutil.Process().children(recursive=True)
                     for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    finally:
        runner.close()
    assert any(name == "gcs_server" for name, _ in listening)  # the servers were all seen
    exposed = [(n, ip) for n, ip in listening if ip not in ("127.0.0.1", "::ffff:127.0.0.1")]
    assert not exposed, f"Ray servers listening beyond loopback: {exposed}"


def _kill_mid_job(runner, jobs):
    """Play ``jobs`` in a thread and SIGKILL worker 0's process once it is busy playing
    (its CPU time grows); returns what ``play`` returned or raised."""
    pid = runner._ray.get(runner.workers[0].pid.remote())
    proc = psutil.Process(pid)
    idle_cpu = sum(proc.cpu_times()[:2])
    out: list = []

    def play():
        try:
            out.append(runner.play(jobs))
        except Exception as err:  # noqa: BLE001 - handed to the test
            out.append(err)

    thread = threading.Thread(target=play)
    thread.start()
    while sum(proc.cpu_times()[:2]) < idle_cpu + 0.05:
        assert thread.is_alive(), "the jobs finished before the worker could be killed"
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    thread.join()
    return out[0]


def test_a_killed_match_worker_is_replaced_and_results_are_identical(ray_local):
    jobs = _jobs()
    local = LocalRunner().play(jobs)
    runner = RayRunner(num_workers=2)
    try:
        remote = _kill_mid_job(runner, jobs)
        assert runner.retries == 1
    finally:
        runner.close()
    assert [r.key for r in remote] == [j.key for j in jobs]
    assert [r.returns for r in remote] == [r.returns for r in local]


def test_retries_are_bounded(ray_local):
    runner = RayRunner(num_workers=1, max_retries=0)
    try:
        err = _kill_mid_job(runner, _jobs(2))
    finally:
        runner.close()
    assert isinstance(err, RunnerError)
    assert "\n" not in str(err) and "Ray worker died 1 times (max_retries=0)" in str(err)


# --------------------------------------------------------------- never-ending episodes
@games.register("runners/endless_climbing")
class EndlessClimbing(MatrixGame):
    """Claims ``max_steps=3`` but never ends an episode. After 200 steps it raises, so that
    a runner without a cap fails this test instead of hanging."""

    def __init__(self) -> None:
        super().__init__("runners/endless_climbing", CLIMBING, repeats=3)
        self.steps = 0

    def _step(self, actions):
        tr = super()._step(actions)
        self.t, self.steps = min(self.t, 2), self.steps + 1
        if self.steps > 200:
            raise RuntimeError("the runner kept playing an endless episode")
        return tr.__class__(tr.rewards, {a: False for a in tr.terminated}, tr.truncated)


def test_match_play_and_evaluation_stop_on_a_never_ending_episode():
    name = "runners/endless_climbing"
    spec = games.make(name).spec
    job = MatchJob("pair/ab", name, {a: RANDOM for a in spec.agent_ids}, 2, 0, num_envs=2)
    with pytest.raises(EpisodeTooLongError, match=r"game 'runners/endless_climbing': an episode "
                       r"ran 3 steps without ending in match pair/ab, but spec.max_steps=3"):
        LocalRunner().play([job])
    vg = games.VectorGame(name, 2)
    with pytest.raises(EpisodeTooLongError, match="in evaluation, but spec.max_steps=3"):
        evaluate(vg, {a: RandomPolicy(spec) for a in spec.agent_ids}, episodes=2)
