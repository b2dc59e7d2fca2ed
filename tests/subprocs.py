"""Independent subprocesses started ahead, two at a time, for tests that only wait on them.

A CLI test spends its seconds in a child process (Python, torch, Hydra) while pytest sleeps,
so on a 2-core machine one core idles. :class:`Ahead` starts a parametrized test's commands
when its first case asks, in the cases' order, ``workers`` at a time; each case then takes
its own finished :class:`subprocess.CompletedProcess` and asserts on it as it would have on a
``subprocess.run`` of its own (same command, folder and environment).
"""

import os
import subprocess
from collections.abc import Hashable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

WORKERS = min(2, os.cpu_count() or 1)


class Ahead:
    """``jobs``: key -> keyword arguments of :func:`subprocess.run` (``args``, ``cwd``, ...)."""

    def __init__(self, jobs: Mapping[Hashable, dict[str, Any]], workers: int = WORKERS) -> None:
        self.jobs = {key: dict(kw) for key, kw in jobs.items()}
        self.pool = ThreadPoolExecutor(max_workers=workers)
        self.futures: dict[Hashable, Future] = {
            key: self.pool.submit(subprocess.run, **{"capture_output": True, "text": True,
                                                     "timeout": 600, **kw})
            for key, kw in jobs.items()}

    def result(self, key: Hashable) -> subprocess.CompletedProcess:
        return self.futures[key].result()

    def close(self) -> None:
        for f in self.futures.values():
            f.cancel()  # the ones not started yet (a run stopped early, -x)
        self.pool.shutdown(wait=True)


def wanted(request, fixture: str, key_of) -> list:
    """The job keys that this session's tests of ``request``'s module will ask ``fixture``
    for, in run order (``key_of(item)``): a run of a few selected cases starts only theirs."""
    keys = [key_of(item) for item in request.session.items
            if fixture in getattr(item, "fixturenames", ()) and item.module is request.module]
    return list(dict.fromkeys(keys))


def run_together(*jobs: dict[str, Any], workers: int = WORKERS
                 ) -> list[subprocess.CompletedProcess]:
    """Several independent ``subprocess.run`` keyword sets, ``workers`` at a time, in order."""
    ahead = Ahead(dict(enumerate(jobs)), workers)
    try:
        return [ahead.result(i) for i in range(len(jobs))]
    finally:
        ahead.close()
