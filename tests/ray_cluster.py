"""Helpers for tests that start their own Ray cluster on this machine (loopback only)."""

import contextlib
import os
import signal
import socket
import time


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
