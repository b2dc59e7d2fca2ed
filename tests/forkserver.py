"""A fork server ("zygote") for the test suite's Python child processes.

A test that runs ``selfplay-train`` or ``python -m populations.league`` in a child process
spends about 2 CPU seconds of a 2-core CI machine's time on starting Python and importing
torch, numpy, scipy and Hydra before our code runs. The zygote pays that once per pytest
process: it is a fresh ``sys.executable`` (not a fork of pytest, whose torch has run ops and
started thread pools) that imports only those third-party modules (:data:`PRELOAD`), runs
no torch op, starts no Python thread, and then forks one child per request. A child becomes
the requested process before running anything of ours: it changes to the request's folder,
takes its environment, rebuilds ``sys.path`` as the interpreter would have from the command
and ``PYTHONPATH``, takes its standard streams on fds 0/1/2 (new ``sys.std*`` objects with a
non-tty child's buffering), sets ``sys.argv``, and runs the console script, ``-m`` module,
``-c`` code or script in a fresh ``__main__``. It ends as Py_FinalizeEx would (threads
joined, atexit handlers run, streams flushed), but without tearing the preloaded modules
down (:func:`_finish`); an uncaught exception prints its traceback and exits 1, an uncaught
KeyboardInterrupt ends it by SIGINT, as in ``python``.

Our packages (``games``, ``marl``, ``populations``, ``llm_agents``, ``configs``) are never
imported by the zygote, so each child imports them under its own ``PYTHONPATH``, folder and
environment. What a preloaded module reads when it is imported (``OMP_*``, ``MKL_*``,
``PYTHON*``, locale, ...) is the zygote's: :func:`tests.subprocs.run` sends a command here only
when those agree (:func:`servable`) and starts a real process otherwise.

Protocol: the client connects to the zygote's listening Unix socket (one connection per
child), sends a pickled request with the child's fds 0/1/2 attached (``SCM_RIGHTS``), reads
the child's pid, and later its return code (``-N`` for death by signal N, as
:mod:`subprocess`). The zygote exits when its stdin (a pipe from pytest) closes.

Run as a script, this module is the zygote; imported (``tests.forkserver``), it is the
client (:class:`Zygote`).
"""

import contextlib
import os
import pickle
import select
import signal
import socket
import struct
import sys

# The heavy third-party modules a selfplay-train run imports (measured with -X importtime:
# torch ~1.7 s, numpy ~0.4 s, scipy.special ~0.1 s, hydra/omegaconf/yaml ~0.1 s of 2.0 s).
PRELOAD = ("torch", "numpy", "scipy.special", "hydra", "hydra.utils", "omegaconf", "yaml")
OURS = ("games", "marl", "populations", "llm_agents", "configs")

# Environment variables read when an interpreter starts or a preloaded module is imported:
# a child whose value differs from the zygote's cannot be served faithfully.
STARTUP_ENV = ("OMP_", "MKL_", "KMP_", "GOMP_", "OPENBLAS_", "GOTO", "BLIS_", "CUDA_", "TORCH",
               "PYTORCH_", "NUMPY_", "NPY_", "SCIPY_", "PYTHON", "LD_", "LC_", "LANG",
               "MALLOC_", "TMPDIR", "NVIDIA_", "KINETO", "CUBLAS", "CUDNN")
ENV_OFF = "SELFPLAY_TEST_FORKSERVER"
# where the zygote appends its own and its children's CPU seconds at exit (measurements)
ENV_RUSAGE = "SELFPLAY_TEST_FORKSERVER_RUSAGE"

_HEAD = struct.Struct("!I")
_NUM = struct.Struct("!q")


def startup_env(env) -> dict:
    """The part of ``env`` that the zygote's interpreter and preloaded modules read at start
    (``PYTHONPATH`` excepted: a child rebuilds ``sys.path`` from its own)."""
    return {k: v for k, v in env.items()
            if k.startswith(STARTUP_ENV) and k != "PYTHONPATH"}


# ---------------------------------------------------------------------------------------
# The zygote (this file run as a script)
# ---------------------------------------------------------------------------------------

def _recv_request(conn: socket.socket) -> tuple[dict, list[int]]:
    conn.settimeout(30)
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < _HEAD.size:
        data += conn.recv(1 << 16)
    size = _HEAD.unpack_from(data)[0]
    data = data[_HEAD.size:]
    while len(data) < size:
        more = conn.recv(1 << 16)
        if not more:
            raise EOFError("request cut short")
        data += more
    conn.settimeout(None)
    return pickle.loads(data), fds


def _status(wait_status: int) -> int:
    if os.WIFSIGNALED(wait_status):
        return -os.WTERMSIG(wait_status)
    return os.waitstatus_to_exitcode(wait_status)


class _Server:
    def __init__(self, listen_fd: int) -> None:
        self.listener = socket.socket(fileno=listen_fd)
        self.children: dict[int, socket.socket] = {}
        self.cpu = [0.0, 0.0, 0]  # children's user and system seconds, how many
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(wake_w, False)
        self.wake_w = wake_w
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wake_w)

    def serve(self):
        """Requests until stdin closes (returns None); in a forked child, its request."""
        while True:
            ready, _, _ = select.select(
                [0, self.listener, self.wake_r, *self.children.values()], [], [])
            if 0 in ready and not os.read(0, 4096):
                return None
            if self.wake_r in ready:
                try:
                    while os.read(self.wake_r, 4096):
                        pass
                except BlockingIOError:
                    pass
            self._reap()
            for conn in [c for c in ready if c in self.children.values()]:
                # the client went away before its child ended (pytest stopped, a thread
                # gave up): the child goes too
                if not conn.recv(1, socket.MSG_PEEK):
                    pid = next(p for p, c in self.children.items() if c is conn)
                    _kill(pid)
            if self.listener in ready:
                request = self._start()
                if request is not None:
                    return request

    def _start(self):
        conn, _ = self.listener.accept()
        try:
            request, fds = _recv_request(conn)
        except (OSError, EOFError, pickle.UnpicklingError):
            conn.close()
            return None
        pid = os.fork()
        if pid == 0:
            self._become_child(conn, fds)
            return request
        for fd in fds:
            os.close(fd)
        self.children[pid] = conn
        try:
            conn.sendall(_NUM.pack(pid))
        except OSError:
            _kill(pid)
        return None

    def _become_child(self, conn: socket.socket, fds: list[int]) -> None:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for c in [self.listener, conn, *self.children.values()]:
            c.close()
        for fd in (self.wake_r, self.wake_w):
            os.close(fd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)  # dup2 leaves fds 0-2 inheritable
        for fd in set(fds):
            if fd > 2:
                os.close(fd)

    def _reap(self) -> None:
        while self.children:
            try:
                pid, wait_status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.cpu[0] += usage.ru_utime
            self.cpu[1] += usage.ru_stime
            self.cpu[2] += 1
            conn = self.children.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(_NUM.pack(_status(wait_status)))
                conn.close()

    def shutdown(self) -> None:
        for pid in list(self.children):
            _kill(pid)
        for pid in list(self.children):
            try:
                _, _, usage = os.wait4(pid, 0)
                self.cpu[0] += usage.ru_utime
                self.cpu[1] += usage.ru_stime
                self.cpu[2] += 1
            except ChildProcessError:
                pass
        path = os.environ.get(ENV_RUSAGE)
        if path:
            import resource

            own = resource.getrusage(resource.RUSAGE_SELF)
            with open(path, "a") as f:
                f.write(f"{os.getpid()} zygote {own.ru_utime:.2f} {own.ru_stime:.2f} "
                        f"children {self.cpu[0]:.2f} {self.cpu[1]:.2f} {self.cpu[2]}\n")


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _std_streams() -> None:
    """New ``sys.stdin/stdout/stderr`` on fds 0/1/2, made as Python makes a child's: stdout
    block-buffered unless a tty, stderr line-buffered, both write-through under ``-u`` or
    ``PYTHONUNBUFFERED``; encodings and error handlers from the locale. The zygote's own
    streams (started with this environment, none of them a tty) say which."""
    import io

    unbuffered = sys.stdout.write_through

    def stream(fd: int, like):
        try:
            tty = os.isatty(fd)
            raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
        except OSError:  # a closed fd: Python's own std stream is None then
            return None
        if fd == 0:
            return io.TextIOWrapper(io.BufferedReader(raw), encoding=like.encoding,
                                    errors=like.errors, line_buffering=tty,
                                    write_through=unbuffered)
        buffer = raw if unbuffered else io.BufferedWriter(raw)
        return io.TextIOWrapper(buffer, encoding=like.encoding, errors=like.errors,
                                line_buffering=not unbuffered and (tty or fd == 2),
                                write_through=unbuffered)

    sys.stdin, sys.stdout, sys.stderr = (stream(fd, like) for fd, like in enumerate(
        (sys.__stdin__, sys.__stdout__, sys.__stderr__)))
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def _sys_path(request: dict, base: list[str]) -> list[str]:
    """``sys.path`` as ``python`` builds it: the script's folder ('' for -c, the working
    folder for -m), then ``PYTHONPATH``'s entries, then the interpreter's own."""
    kind, target = request["kind"], request["target"]
    if kind == "c":
        first = ""
    elif kind == "m":
        first = os.getcwd()
    else:
        first = os.path.dirname(os.path.realpath(target))
    extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    return [first, *extra, *base]


def _run_child(request: dict, base: list[str]) -> int | None:
    """Becomes the requested process and runs it: its exit status, or None when it ended by
    an uncaught KeyboardInterrupt (printed as the interpreter prints it)."""
    import importlib
    import runpy
    import types

    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[:] = _sys_path(request, base)
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    _std_streams()
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed()  # a real process's global RandomState is seeded from the OS
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    kind, target, rest = request["kind"], request["target"], request["rest"]
    sys.orig_argv = list(request["orig_argv"])
    try:
        if kind == "m":
            sys.argv = ["-m", *rest]  # sys.argv[0] becomes the module's file once found
            runpy._run_module_as_main(target, alter_argv=True)
        else:
            if kind == "c":
                sys.argv = ["-c", *rest]
                source, filename = target, "<string>"
            else:
                sys.argv = [target, *rest]
                with open(target, "rb") as f:
                    source, filename = f.read(), target
                main.__file__ = target
            main.__dict__.update(__builtins__=__builtins__, __spec__=None)
            code = compile(source, filename, "exec", dont_inherit=True)
            exec(code, main.__dict__)
    except SystemExit as stop:
        return _exit_status(stop)
    except BaseException as error:  # printed as the interpreter prints it, without our frames
        tb = error.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        sys.excepthook(type(error), error.with_traceback(tb), tb)
        return None if isinstance(error, KeyboardInterrupt) else 1
    return 0


def _exit_status(stop: SystemExit) -> int:
    """What ``python`` exits with for an uncaught ``SystemExit`` (its message on stderr)."""
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code & 0xFF
    with contextlib.suppress(Exception):
        print(stop.code, file=sys.stderr)
    return 1


def _finish(status: int | None) -> None:
    """Ends the child as Py_FinalizeEx would, without tearing the preloaded modules down.

    In order: wait for non-daemon threads, run the atexit handlers, flush the standard
    streams (and, as a teardown's deallocations would, every other open buffered file), then
    exit. Tearing torch's modules down cost a child 0.2 CPU s (dict and dispatch-table
    deallocations, pages copied from the zygote) for nothing a test can see."""
    import atexit
    import gc
    import io
    import threading

    with contextlib.suppress(KeyboardInterrupt):
        threading._shutdown()
    atexit._run_exitfuncs()
    gc.collect()  # finalizers of the program's unreachable objects run, as at teardown
    for obj in gc.get_objects():  # the frozen (preloaded) objects are not in it
        if isinstance(obj, io.BufferedWriter | io.BufferedRandom | io.TextIOWrapper):
            with contextlib.suppress(Exception):
                if not obj.closed:
                    obj.flush()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except Exception:
            if status == 0 or status is None:
                status = 120  # as Python: the output could not be written
    if status is None:  # an uncaught KeyboardInterrupt: the process ends by SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        status = 130
    os._exit(status)


def _zygote(listen_fd: int) -> None:
    import gc
    import importlib
    import threading

    base = sys.path[1:]  # the interpreter's own entries (started with no PYTHONPATH)
    # The preloaded modules' objects go to the collector's permanent generation (as the gc
    # docs advise before fork): a child's collections, and its interpreter's teardown
    # (0.7 of 0.9 s at exit after importing torch), no longer walk, and copy, them.
    gc.disable()
    for name in PRELOAD:
        importlib.import_module(name)
    gc.freeze()
    assert threading.active_count() == 1, "the zygote must not start Python threads"
    assert not [m for m in sys.modules if m.split(".")[0] in OURS], "ours preloaded"
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # pytest's Ctrl-C: it ends when pytest does
    server = _Server(listen_fd)
    request = server.serve()
    if request is None:
        server.shutdown()
        return
    del server
    gc.enable()
    _finish(_run_child(request, base))


# ---------------------------------------------------------------------------------------
# The client (imported as tests.forkserver)
# ---------------------------------------------------------------------------------------

class Zygote:
    """One pytest process's zygote, started by the first :meth:`spawn`."""

    def __init__(self) -> None:
        self.process = None
        self.address = None
        self.env: dict[str, str] = {}
        self.broken = False
        self.retired: list = []

    def start(self) -> None:
        import subprocess

        self.address = f"\0selfplay-zygote-{os.getpid()}-{os.urandom(6).hex()}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.address)
        listener.listen(64)
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        try:
            self.process = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), str(listener.fileno())],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=self.env,
                cwd=os.path.dirname(os.path.abspath(__file__)), pass_fds=[listener.fileno()])
        finally:
            listener.close()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def spawn(self, request: dict, fds: tuple[int, int, int]) -> "Child | None":
        """Starts a child for ``request`` on ``fds`` (its 0, 1, 2); None when the zygote
        cannot (it died or never started: the caller starts a real process instead)."""
        if self.broken:
            return None
        if self.process is not None and startup_env(self.env) != startup_env(os.environ):
            # started while a test had changed this process's environment (monkeypatch): a new
            # one; the old one serves the children it started until pytest ends
            self.retired.append(self.process)
            self.process = None
        if self.process is None:
            self.start()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.address)
            data = pickle.dumps(request)
            socket.send_fds(conn, [_HEAD.pack(len(data))], list(fds))
            conn.sendall(data)
            pid = _NUM.unpack(_recv_exact(conn, _NUM.size))[0]
        except (OSError, EOFError):
            conn.close()
            self.broken = True
            return None
        return Child(pid, conn)

    def stop(self) -> None:
        for process in [*self.retired, self.process]:
            if process is not None:
                process.stdin.close()
                try:
                    process.wait(timeout=60)
                except Exception:
                    process.kill()
                    process.wait()
        self.process, self.retired = None, []


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        more = conn.recv(size - len(data))
        if not more:
            raise EOFError("the zygote closed the connection")
        data += more
    return data


class Child:
    """A child of the zygote: its pid and, once it ended, its return code."""

    def __init__(self, pid: int, conn: socket.socket) -> None:
        self.pid = pid
        self.conn = conn
        self.returncode = None

    def wait(self, timeout: float | None = None) -> int:
        """The return code; raises TimeoutError after ``timeout`` seconds."""
        if self.returncode is None:
            self.conn.settimeout(timeout)
            try:
                data = _recv_exact(self.conn, _NUM.size)  # TimeoutError after timeout
            except EOFError:  # the zygote died with its children
                data = _NUM.pack(-signal.SIGKILL)
            self.returncode = _NUM.unpack(data)[0]
            self.conn.close()
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            _kill(self.pid)


if __name__ == "__main__":
    _zygote(int(sys.argv[1]))
