"""``runner.address`` (walk 19): an address where no Ray cluster answers, or of no accepted
form, is refused in one line within seconds, before ``ray.init``; and the Ray rollout
workers of ``runner.rollout_workers`` get the user's modules (``imports=``).

Before, ``runner.address=127.0.0.1:1`` waited forever in ``ray.init`` (a C++ warning every
30 s, deaf to Ctrl-C, SIGTERM exiting 15 with no message); ``runner.address=foo`` was Ray's
"Invalid address format: foo" and ``auto`` with no cluster Ray's "specify ... ``--address``
flag or RAY_ADDRESS", naming neither the key nor the forms it takes. And a Ray
``RolloutWorker`` made its game before it could know the modules of ``imports=``: a game of
the user's was unknown there (its actor died) once Ray had started before ``imports=``."""

import http.server
import subprocess
import sys
import textwrap
import threading

import pytest

import games
from games.registry import IMPORTS_ENV
from marl.mappo import MAPPO, MAPPOConfig
from populations.rollouts import RolloutCollector, RolloutSpec
from populations.runners import init_ray
from tests.ray_cluster import ROOT, free_port

FORMS = ("accepted: HOST:PORT of a running cluster's GCS (what `ray start --head` prints; "
         "port 6379 by default), auto when a cluster runs on this machine, ray://HOST:PORT "
         "for Ray Client, or leave it unset for a local instance")


def test_selfplay_train_with_an_address_where_nothing_listens_stops_in_one_line(tmp_path):
    """The brief's command line: one line naming the key and value, a non-zero exit. (The
    timeout only bounds a failure: the old code never returned.)"""
    address = f"127.0.0.1:{free_port()}"  # nothing listens there now
    proc = subprocess.run(
        [sys.executable, "-m", "populations.cli", "game=kuhn", "population=self_play",
         "runner=ray", f"runner.address={address}", "population.generations=1",
         "population.frames_per_generation=200", "progress=false", "logger=none",
         f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if address in ln]
    assert len(lines) == 1 and lines[0].startswith(
        f"selfplay-train: runner.address={address}: no Ray cluster answers there "
        "(connection refused"), proc.stderr[-2000:]
    assert lines[0].endswith(FORMS) and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "run").exists()  # a failed new run leaves no folder


def _no_cluster_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` finds no cluster (other Ray instances may run on a shared machine)."""
    from ray._private import services

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(services, "find_gcs_addresses", lambda: set())
    monkeypatch.setattr(services, "find_bootstrap_address", lambda temp_dir: None)


@pytest.mark.parametrize(("address", "why"), [
    ("127.0.0.1:dead", "no Ray cluster answers there (connection refused"),
    ("foo", "not an address of a Ray cluster"),
    ("auto", "no Ray cluster runs on this machine (none started with `ray start`, and "
             "RAY_ADDRESS is unset)"),
    ("http://127.0.0.1:8265", "that is the form of the dashboard's address (Ray Jobs), not "
                              "the cluster's"),
    ("ray://127.0.0.1:dead", "no Ray cluster answers there (connection refused)"),
    ("local", "not an address of a Ray cluster"),  # Ray's own word: a local instance on
])                                                 # the network; unset is ours (loopback)
def test_an_address_ray_cannot_join_is_one_line_before_ray_init(address, why, monkeypatch):
    """Each refused in one line naming ``runner.address``, the value and the accepted forms,
    before ``ray.init`` is called (it would wait forever at a dead port)."""
    import ray

    def reached(**kwargs):
        raise AssertionError(f"ray.init reached with {kwargs.get('address')!r}")

    _no_cluster_here(monkeypatch)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # the session's may be up
    monkeypatch.setattr(ray, "init", reached)
    address = address.replace("dead", str(free_port()))
    with pytest.raises(ValueError) as err:
        init_ray(address, 1)
    text = str(err.value)
    assert text.startswith(f"runner.address={address}: {why}"), text
    assert text.endswith(FORMS) and "\n" not in text, text


def test_a_port_that_is_not_a_ray_cluster_is_refused(monkeypatch):
    """Something listens, but answers no gRPC (an HTTP server, as the dashboard's 8265):
    ``ray.init`` waited forever there too."""
    from populations.runners import check_ray_address

    class Quiet(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(ValueError, match=r"^runner\.address=127\.0\.0\.1:\d+: no Ray "
                           r"cluster answers there \(something listens there but does not "
                           r"speak gRPC, as a Ray cluster's GCS does"):
            check_ray_address(address)
    finally:
        server.shutdown()
        server.server_close()


def test_a_grpc_server_that_is_not_a_ray_cluster_is_refused():
    """A gRPC server without the GCS's calls (another service, a proxy) is not joined."""
    from concurrent import futures

    import grpc

    from populations.runners import check_ray_address

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        for address, what in ((f"127.0.0.1:{port}", "a Ray cluster's GCS"),
                              (f"ray://127.0.0.1:{port}", "Ray Client's server")):
            with pytest.raises(ValueError) as err:
                check_ray_address(address)
            assert str(err.value).startswith(
                f"runner.address={address}: no Ray cluster answers there (a gRPC server "
                f"answers there, but not {what}"), str(err.value)
    finally:
        server.stop(None)


def test_a_running_cluster_passes_the_check(ray_local, monkeypatch):
    """The session's instance (loopback only), by its address, as ``localhost`` and as
    ``auto`` (RAY_ADDRESS names it): the address to join is the one that answered."""
    from populations.runners import check_ray_address

    gcs = ray_local._private.worker.global_worker.node.gcs_address
    port = gcs.rsplit(":", 1)[1]
    assert check_ray_address(gcs) == gcs
    assert check_ray_address(f"localhost:{port}") in (gcs, f"localhost:{port}")
    monkeypatch.setenv("RAY_ADDRESS", gcs)
    assert check_ray_address("auto") == gcs



def test_ray_address_in_the_environment_is_checked_and_joined(ray_local, monkeypatch):
    """``runner=ray`` with ``RAY_ADDRESS`` set (``ray job submit`` sets it) and no
    ``runner.address``: ``ray.init(num_cpus=...)`` joined RAY_ADDRESS and refused the CPU
    count ("When connecting to an existing cluster, num_cpus and num_gpus must not be
    provided", after the run folder was made). Now a dead one is one line naming
    RAY_ADDRESS, and a live one is joined without a CPU count."""
    import ray

    calls = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # the session's instance is up
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    dead = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv("RAY_ADDRESS", dead)
    with pytest.raises(ValueError) as err:
        init_ray(None, 2)
    assert str(err.value).startswith(f"RAY_ADDRESS={dead}: no Ray cluster answers there"), \
        str(err.value)
    assert calls == []
    gcs = ray_local._private.worker.global_worker.node.gcs_address
    monkeypatch.setenv("RAY_ADDRESS", gcs)
    init_ray(None, 2)
    assert len(calls) == 1 and calls[0]["address"] == gcs and "num_cpus" not in calls[0], calls


# ---------------------------------------------------------------- rollout workers on Ray
GAME = '''
import games
from games.matrix import MatrixGame


@games.register("w19/rollout_coordination")
class Coordination(MatrixGame):
    def __init__(self):
        super().__init__("w19/rollout_coordination", ((1.0, 0.0), (0.0, 1.0)), repeats=4)
'''


def test_ray_rollout_workers_import_the_users_game(tmp_path, monkeypatch, ray_local):
    """``runner.rollout_workers=2`` with ``runner=ray`` on a game of the user's (a module in
    a folder of its own, imported by ``imports=`` after Ray started: its workers inherit
    neither the variable nor the folder, as a cluster's would not)."""
    (tmp_path / "w19_rollout_game.py").write_text(textwrap.dedent(GAME))
    monkeypatch.setenv(IMPORTS_ENV, "w19_rollout_game")  # what imports= records
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("w19_rollout_game")  # the driver imported it
    spec = games.make("w19/rollout_coordination").spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=4), seed=0)
    collector = RolloutCollector(RolloutSpec(spec.name, learner.agents, seed=0), 2, "ray",
                                 num_envs=4)
    try:
        segments = collector.collect(learner.policy(), 4)
    finally:
        collector.close()
    assert [len(seen) for seen, _, _ in segments] == [5, 5]  # 4 steps past the start
    assert [seen[0].obs[spec.agent_ids[0]].shape[0] for seen, _, _ in segments] == [2, 2]


def test_a_module_missing_on_rollout_workers_is_one_line_naming_it(tmp_path, monkeypatch,
                                                                    ray_local):
    from populations.runners import WorkerImportError

    monkeypatch.setenv(IMPORTS_ENV, "w19_not_on_this_node")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    spec = games.make("openspiel/kuhn_poker").spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=2), seed=0)
    collector = RolloutCollector(RolloutSpec(spec.name, learner.agents, 1, seed=0), 1, "ray")
    try:
        with pytest.raises(WorkerImportError) as err:
            collector.collect(learner.policy(), 2)
    finally:
        collector.close()
    text = str(err.value)
    assert "'w19_not_on_this_node'" in text and "\n" not in text, text
