"""Child processes for tests: :func:`run` through the zygote, and several started ahead.

:func:`run` is :func:`subprocess.run` (same arguments, same :class:`subprocess.CompletedProcess`
or exceptions) for a test whose property does not depend on a fresh interpreter: a command of
``sys.executable`` (``-c``, ``-m``, a script) or one of our console scripts starts as a fork of
this pytest process's zygote (:mod:`tests.forkserver`), which has already imported torch,
numpy and Hydra, and saves each such child about 2 CPU seconds. Anything the zygote cannot
reproduce (another program or interpreter option, keyword arguments such as
``start_new_session``, an environment that differs in what Python or a preloaded module reads
at import) runs as a real process, as does everything with ``SELFPLAY_TEST_FORKSERVER=0``.
Tests of what a child imports, of signals and process groups, and of the console scripts'
own wiring keep :func:`subprocess.run`.

A CLI test spends its seconds in a child process (Python, torch, Hydra) while pytest sleeps,
so on a 2-core machine one core idles. :class:`Ahead` starts a parametrized test's commands
when its first case asks, in the cases' order, ``workers`` at a time; each case then takes
its own finished :class:`subprocess.CompletedProcess` and asserts on it as it would have on a
:func:`run` of its own (same command, folder and environment).
"""

import atexit
import locale
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Hashable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from tests import forkserver

WORKERS = min(2, os.cpu_count() or 1)

_zygote = forkserver.Zygote()
_zygote_lock = threading.Lock()
atexit.register(_zygote.stop)


def _request(args, cwd, env) -> dict | None:
    """The zygote's request for ``args``, or None when only a real process is faithful."""
    if os.environ.get(forkserver.ENV_OFF, "1") == "0" or isinstance(args, (str, bytes)):
        return None
    args = [os.fspath(a) for a in args]
    if not args or any(isinstance(a, bytes) for a in args):
        return None
    env = dict(os.environ if env is None else env)
    cwd = os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()
    program = args[0]
    if program == sys.executable:
        if len(args) < 2:
            return None
        if args[1] in ("-c", "-m"):
            if len(args) < 3:
                return None
            kind, target, rest = args[1][1], args[2], args[3:]
        elif args[1].startswith("-"):
            return None  # interpreter options
        else:
            kind, target, rest = "script", os.path.join(cwd, args[1]), args[2:]
            argv0 = args[1]
            if not os.path.isfile(target):
                return None  # python's own "can't open file" message
    else:
        found = program if os.sep in program else shutil.which(program, path=env.get("PATH"))
        if found is None:
            return None
        found = os.path.join(cwd, found)
        if not _our_script(found):
            return None
        kind, target, rest, argv0 = "script", found, args[1:], found
    if forkserver.startup_env(env) != forkserver.startup_env(os.environ):
        return None  # the zygote is (re)started with this process's environment
    path0 = {"c": cwd, "m": cwd}.get(kind) or os.path.dirname(os.path.realpath(target))
    entries = [path0, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    if any(_shadows(os.path.join(cwd, p)) for p in entries):
        return None
    if kind == "script":
        target = argv0  # sys.argv[0] as given; opened relative to the child's folder
    return {"kind": kind, "target": target, "rest": rest, "cwd": cwd, "env": env,
            "orig_argv": [sys.executable, *args[1:]] if program == sys.executable
            else [sys.executable, *args]}


def _our_script(path: str) -> bool:
    """A console script of this environment (``#!`` this interpreter)."""
    try:
        with open(path, "rb") as f:
            return f.readline().rstrip(b"\r\n") == b"#!" + os.fsencode(sys.executable)
    except OSError:
        return False


def _shadows(folder: str) -> bool:
    """Whether ``folder`` holds a module named like a preloaded one (the child would import
    that one, the zygote has the real one)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    tops = {m.split(".")[0] for m in forkserver.PRELOAD}
    return any(n in tops or n.removesuffix(".py") in tops for n in names)


_SUPPORTED = {"stdin", "input", "stdout", "stderr", "capture_output", "text", "timeout",
              "check", "cwd", "env", "encoding", "errors", "universal_newlines"}


def run(args, **kw) -> subprocess.CompletedProcess:
    """:func:`subprocess.run`, through the zygote where that is faithful."""
    request = None
    if set(kw) <= _SUPPORTED:
        request = _request(args, kw.get("cwd"), kw.get("env"))
    if request is None:
        return subprocess.run(args, **kw)
    result = _run_forked(args, request, **{k: v for k, v in kw.items() if k not in ("cwd", "env")})
    return subprocess.run(args, **kw) if result is None else result


def _fd(spec, default: int, opened: list[int], pipes: dict, name: str, write: bool) -> int:
    if spec is None:
        return default
    if spec == subprocess.DEVNULL:
        fd = os.open(os.devnull, os.O_RDWR)
        opened.append(fd)
        return fd
    if spec == subprocess.PIPE:
        r, w = os.pipe()
        opened.append(w if write else r)
        pipes[name] = r if write else w
        return w if write else r
    return spec if isinstance(spec, int) else spec.fileno()


def _run_forked(args, request, *, stdin=None, input=None, stdout=None, stderr=None,
                capture_output=False, text=None, timeout=None, check=False, encoding=None,
                errors=None, universal_newlines=None):
    if input is not None:
        if stdin is not None:
            raise ValueError("stdin and input arguments may not both be used.")
        stdin = subprocess.PIPE
    if capture_output:
        if stdout is not None or stderr is not None:
            raise ValueError("stdout and stderr arguments may not be used "
                             "with capture_output.")
        stdout = stderr = subprocess.PIPE
    opened: list[int] = []  # the child's ends, closed here once it has them
    pipes: dict[str, int] = {}  # our ends
    try:
        fd0 = _fd(stdin, 0, opened, pipes, "stdin", write=False)
        fd1 = _fd(stdout, 1, opened, pipes, "stdout", write=True)
        fd2 = fd1 if stderr == subprocess.STDOUT else _fd(stderr, 2, opened, pipes, "stderr",
                                                            write=True)
        with _zygote_lock:
            child = _zygote.spawn(request, (fd0, fd1, fd2))
    finally:
        for fd in opened:
            os.close(fd)
    if child is None:
        for fd in pipes.values():
            os.close(fd)
        return None
    text_mode = bool(text or universal_newlines or encoding or errors)
    if text_mode and input is not None and isinstance(input, str):
        input = input.encode(encoding or locale.getpreferredencoding(False), errors or "strict")
    out: dict[str, list[bytes]] = {}
    threads = []
    for name in ("stdout", "stderr"):
        if name in pipes:
            out[name] = []
            threads.append(threading.Thread(target=_read, args=(pipes[name], out[name]),
                                            daemon=True))
    if "stdin" in pipes:
        threads.append(threading.Thread(target=_write, args=(pipes["stdin"], input or b""),
                                        daemon=True))
    for t in threads:
        t.start()
    try:
        returncode = child.wait(timeout)
    except TimeoutError:
        child.kill()
        child.wait()
        raise subprocess.TimeoutExpired(args, timeout, *_texts(out, text_mode, encoding,
                                                                errors)) from None
    except BaseException:  # KeyboardInterrupt in pytest: the child ends with it
        child.kill()
        raise
    for t in threads:
        t.join()
    output, err = _texts(out, text_mode, encoding, errors)
    if check and returncode:
        raise subprocess.CalledProcessError(returncode, args, output, err)
    return subprocess.CompletedProcess(args, returncode, output, err)


def _read(fd: int, chunks: list[bytes]) -> None:
    try:
        while data := os.read(fd, 1 << 16):
            chunks.append(data)
    finally:
        os.close(fd)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)


def _texts(out, text_mode, encoding, errors):
    def one(name):
        if name not in out:
            return None
        data = b"".join(out[name])
        if not text_mode:
            return data
        decoded = data.decode(encoding or locale.getpreferredencoding(False), errors or "strict")
        return decoded.replace("\r\n", "\n").replace("\r", "\n")
    return one("stdout"), one("stderr")


class Ahead:
    """``jobs``: key -> keyword arguments of :func:`run` (``args``, ``cwd``, ...);
    ``real``: every job as a real process (:func:`subprocess.run`)."""

    def __init__(self, jobs: Mapping[Hashable, dict[str, Any]], workers: int = WORKERS,
                 real: bool = False) -> None:
        self.jobs = {key: dict(kw) for key, kw in jobs.items()}
        self.pool = ThreadPoolExecutor(max_workers=workers)
        start = subprocess.run if real else run
        self.futures: dict[Hashable, Future] = {
            key: self.pool.submit(start, **{"capture_output": True, "text": True,
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


def run_together(*jobs: dict[str, Any], workers: int = WORKERS, real: bool = False
                 ) -> list[subprocess.CompletedProcess]:
    """Several independent :func:`run` keyword sets, ``workers`` at a time, in order."""
    ahead = Ahead(dict(enumerate(jobs)), workers, real)
    try:
        return [ahead.result(i) for i in range(len(jobs))]
    finally:
        ahead.close()
