"""Ray for the tests: one local instance that every test asking for ``ray_local`` shares,
and helpers for tests that start their own Ray cluster on this machine (loopback only).

A pytest plugin (``tests/conftest.py`` loads it)."""

import contextlib
import os
import signal
import socket
import time

import pytest

RAY_CPUS = 4
"""A league's two learner actors and its match workers (test_league_ray) fit."""


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance (``populations.runners.init_ray``: 127.0.0.1 only) for every
    test of the session that asks for it: starting one costs seconds, and the tests that
    share it leave no actors behind. It stops after the last test that asks for it."""
    from populations.runners import init_ray

    ray = init_ray(None, RAY_CPUS)
    yield ray
    ray.shutdown()


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop the shared instance once no later test of this session asks for it (an idle
    Ray instance keeps a few percent of a core busy)."""
    if "ray_local" not in getattr(item, "fixturenames", ()):
        return
    items = item.session.items
    later = items[items.index(item) + 1:] if item in items else []
    if not any("ray_local" in getattr(i, "fixturenames", ()) for i in later):
        import ray

        ray.shutdown()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill_session(sid: int) -> None:
    """End every process of session ``sid`` (a ``ray start`` a test made and the Ray daemons
    it left): by id -- ``ray stop`` would stop every Ray instance on the machine."""
    def members() -> list[int]:
        out = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                with contextlib.suppress(OSError):
                    if os.getsid(int(d)) == sid:
                        out.append(int(d))
        return out

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in members():
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 10
        while members() and time.monotonic() < deadline:
            time.sleep(0.2)
