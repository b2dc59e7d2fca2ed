"""Ray for the tests: one local instance that every test asking for ``ray_local`` shares,
one two-node cluster joined by address (``loopback_cluster``), and helpers for tests that
start their own Ray cluster on this machine (loopback only).

A pytest plugin (``tests/conftest.py`` loads it). The tests that share an instance run one
after another, and it stops after the last of them."""

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

RAY_CPUS = 4
"""A league's two learner actors and its match workers (test_league_ray) fit."""

ROOT = Path(__file__).resolve().parents[1]
SHARED = ("ray_local", "loopback_cluster")
"""The fixtures whose instance the tests asking for it share (their tests run together)."""
_stop: dict[str, Callable[[], None]] = {}  # fixture -> stops its instance (once started)


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance (``populations.runners.init_ray``: 127.0.0.1 only) for every
    test of the session that asks for it: starting one costs seconds, and the tests that
    share it leave no actors behind. It stops after the last test that asks for it."""
    from populations.runners import init_ray

    ray = init_ray(None, RAY_CPUS)
    _stop["ray_local"] = ray.shutdown
    yield ray
    ray.shutdown()


@pytest.fixture(autouse=True)
def _ray_handles_let_go(request):
    """After a test on ``ray_local``: collect the actor handles it left in reference cycles
    (a trainer and its rollout collector hold each other), so Ray ends those actors and the
    next test's actors get their CPUs (they waited for them for good)."""
    yield
    if "ray_local" in request.fixturenames:
        import gc

        gc.collect()


@dataclass(frozen=True)
class LoopbackCluster:
    """A running cluster: its address and the environment (auth token) to join it with."""

    address: str
    env: dict[str, str]


@pytest.fixture(scope="session")
def loopback_cluster() -> Iterator[LoopbackCluster]:
    """A head and a second node (2 CPUs each) started with ``ray start`` on this machine
    through ``tests/populations/loopback_ray.py`` (they listen on 127.0.0.1 only), with the
    cluster's own auth token, for the tests that join a cluster by address (a driver in a
    fresh process, since Ray reads its auth settings once per process). Each ``ray start``
    costs ~7 s of CPU and 10-20 s on a loaded 2-core machine, so the tests share it."""
    port = free_port()
    temp = tempfile.mkdtemp(prefix="sp-ray-")  # short: Ray's socket paths must fit 107 bytes
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    start = [sys.executable, str(ROOT / "tests" / "populations" / "loopback_ray.py"), "start",
             "--node-ip-address=127.0.0.1", "--num-cpus=2", "--disable-usage-stats"]
    sessions: list[int] = []

    def stop() -> None:
        while sessions:
            kill_session(sessions.pop())
        shutil.rmtree(temp, ignore_errors=True)

    _stop["loopback_cluster"] = stop
    try:
        for extra in (["--head", f"--port={port}", "--include-dashboard=false",
                       f"--temp-dir={temp}"], [f"--address=127.0.0.1:{port}"]):
            proc = subprocess.Popen([*start, *extra], env=env, start_new_session=True,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            sessions.append(proc.pid)
            _, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err.decode()[-2000:]
        yield LoopbackCluster(f"127.0.0.1:{port}", env)
    finally:
        stop()


@pytest.hookimpl(hookwrapper=True)  # after every other plugin's ordering (tests.lanes)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> Iterator[None]:
    """Run the tests that share ``ray_local`` (or ``loopback_cluster``) one after another,
    where the first of them stood (the others keep their order): the instance then lives
    only while they run. Spread over their modules, ``ray_local`` idled through every test
    between them (in the second lane: test_cli, most of test_league and the tests that
    start their own clusters), ~5 % of a core for its daemons and idle workers."""
    yield
    for name in SHARED:
        users = [i for i in items if name in getattr(i, "fixturenames", ())]
        if len(users) < 2:
            continue
        first = items.index(users[0])
        ids = {id(i) for i in users}
        rest = [i for i in items if id(i) not in ids]
        items[:] = rest[:first] + users + rest[first:]


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop a shared instance once no later test of this session asks for it (an idle
    Ray instance keeps a few percent of a core busy)."""
    names = [n for n in SHARED if n in getattr(item, "fixturenames", ())]
    if not names:
        return
    items = item.session.items
    later = items[items.index(item) + 1:] if item in items else []
    for name in names:
        if name in _stop and not any(name in getattr(i, "fixturenames", ()) for i in later):
            _stop.pop(name)()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill_session(sid: int) -> None:
    """End every process of session ``sid`` (a ``ray start`` a test made and the Ray daemons
    it left): by id -- ``ray stop`` would stop every Ray instance on the machine."""
    def members() -> list[int]:  # alive: a zombie waits for its parent (init), not us
        out = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                with contextlib.suppress(OSError):
                    if os.getsid(int(d)) == sid and Path(
                            f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                        out.append(int(d))
        return out

    # SIGTERM ends the Python daemons at once; gcs_server, raylet, the autoscaler monitor
    # and the runtime-env agent of a ``ray start`` outlive it (10 s and more, seen on Ray
    # 2.60), so SIGKILL follows after a second, not after a 10 s wait on every cluster
    for sig, wait_s in ((signal.SIGTERM, 1), (signal.SIGKILL, 10)):
        for pid in members():
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while members() and time.monotonic() < deadline:
            time.sleep(0.1)
