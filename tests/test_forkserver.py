"""tests.subprocs.run through the zygote (tests.forkserver) behaves as subprocess.run would."""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkserver, subprocs

BIN = Path(sys.executable).parent
PY = sys.executable


@pytest.fixture(autouse=True)
def _zygote_on(monkeypatch):
    monkeypatch.setenv(forkserver.ENV_OFF, "1")


def forked(args, **kw) -> subprocess.CompletedProcess:
    """subprocs.run, failing the test if it did not go through the zygote."""
    assert subprocs._request(args, kw.get("cwd"), kw.get("env")) is not None, args
    return subprocs.run(args, **kw)


def test_exit_codes_and_streams():
    ok = forked([PY, "-c", "import sys; print('out'); print('err', file=sys.stderr)"],
                capture_output=True, text=True)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "out\n", "err\n")
    two = forked([PY, "-c", "import sys; sys.exit(2)"], capture_output=True)
    assert (two.returncode, two.stdout, two.stderr) == (2, b"", b"")
    message = forked([PY, "-c", "import sys; sys.exit('bad value')"], capture_output=True,
                     text=True)
    assert (message.returncode, message.stderr) == (1, "bad value\n")


def test_uncaught_exception_prints_its_traceback_like_python():
    code = "def f():\n    raise ValueError('boom')\nf()\n"
    child = forked([PY, "-c", code], capture_output=True, text=True)
    real = subprocess.run([PY, "-c", code], capture_output=True, text=True)
    assert child.returncode == real.returncode == 1
    assert child.stderr == real.stderr
    assert "forkserver" not in child.stderr


def test_killed_by_a_signal_is_a_negative_returncode():
    child = forked([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
    assert child.returncode == -signal.SIGTERM
    interrupted = forked([PY, "-c", "raise KeyboardInterrupt"], capture_output=True, text=True)
    assert interrupted.returncode == -signal.SIGINT
    assert interrupted.stderr.rstrip().endswith("KeyboardInterrupt")


@pytest.mark.parametrize("unbuffered", [None, "1"])
def test_std_streams_are_buffered_as_pythons(unbuffered, monkeypatch):
    """Block-buffered stdout, line-buffered stderr; unbuffered with PYTHONUNBUFFERED (the CI
    container sets it: the zygote's children were block-buffered there)."""
    if unbuffered is None:
        monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    else:
        monkeypatch.setenv("PYTHONUNBUFFERED", unbuffered)
    monkeypatch.setattr(subprocs, "_zygote", forkserver.Zygote())  # one with this environment
    code = ("import sys\nfor s in (sys.stdin, sys.stdout, sys.stderr):\n"
            "    print(type(s.buffer).__name__, s.line_buffering, s.write_through, s.encoding,"
            " s.errors)\n")
    try:
        child = forked([PY, "-c", code], capture_output=True, text=True, stdin=subprocess.PIPE)
    finally:
        subprocs._zygote.stop()
    real = subprocess.run([PY, "-c", code], capture_output=True, text=True,
                          stdin=subprocess.PIPE)
    assert (child.returncode, child.stdout) == (0, real.stdout)


def test_stdin_cwd_and_argv(tmp_path):
    child = forked([PY, "-c", "import os, sys; print(sys.stdin.read().upper(), os.getcwd(), "
                    "sys.argv, repr(sys.path[0]))", "a", "b"], input="abc",
                   capture_output=True, text=True, cwd=tmp_path)
    assert child.stdout == f"ABC {tmp_path} ['-c', 'a', 'b'] ''\n"
    script = tmp_path / "sub" / "script.py"
    script.parent.mkdir()
    script.write_text("import sys\nprint(__name__, sys.argv, sys.path[0])\n")
    ran = forked([PY, "sub/script.py", "x"], capture_output=True, text=True, cwd=tmp_path)
    assert ran.stdout == f"__main__ ['sub/script.py', 'x'] {script.parent}\n"
    (tmp_path / "modrun.py").write_text("import sys\nprint(__name__, sys.argv, sys.path[0])\n")
    module = forked([PY, "-m", "modrun", "y"], capture_output=True, text=True, cwd=tmp_path)
    assert module.stdout == f"__main__ ['{tmp_path / 'modrun.py'}', 'y'] {tmp_path}\n"


def test_environment_and_pythonpath(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "zyg_helper.py").write_text("VALUE = 41\n")
    env = {**os.environ, "ZYG_SEEN": "yes", "PYTHONPATH": str(tmp_path / "lib")}
    env.pop("HOME", None)
    child = forked([PY, "-c", "import os, zyg_helper; print(os.environ['ZYG_SEEN'], "
                    "zyg_helper.VALUE + 1, 'HOME' in os.environ)"],
                   env=env, capture_output=True, text=True)
    assert child.stdout == "yes 42 False\n", child.stderr
    # the pytest process's own PYTHONPATH is not the child's
    alone = forked([PY, "-c", "import zyg_helper"], capture_output=True, text=True)
    assert alone.returncode == 1 and "ModuleNotFoundError" in alone.stderr


def test_it_ends_as_python_ends(tmp_path):
    """Threads joined, then atexit handlers, streams and files left open flushed."""
    code = ("import atexit, sys, threading, time\n"
            "atexit.register(lambda: open('ended', 'w').write('atexit ran after '\n"
            "                                                 + open('thread').read()))\n"
            "threading.Thread(target=lambda: (time.sleep(1), open('thread', 'w').write('t')))"
            ".start()\n"
            "left = open('left_open', 'w'); left.write('never closed')\n"
            "sys.stdout.write('no newline, never flushed by hand')\n")
    child = forked([PY, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert (child.returncode, child.stderr) == (0, "")
    assert child.stdout == "no newline, never flushed by hand"
    assert (tmp_path / "ended").read_text() == "atexit ran after t"
    assert (tmp_path / "left_open").read_text() == "never closed"


def test_a_child_imports_our_packages_itself():
    child = forked([PY, "-c", "import sys; print(sorted({m.split('.')[0] for m in sys.modules} "
                    f"& set({forkserver.OURS!r}))); import games; print('games' in sys.modules)"],
                   capture_output=True, text=True)
    assert child.stdout == "[]\nTrue\n", child.stderr


def test_timeout_kills_the_child(tmp_path):
    code = ("import os, time\nopen('pid', 'w').write(str(os.getpid()))\n"
            "print('started', flush=True)\ntime.sleep(600)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        forked([PY, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=5)
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped, not a zombie


def test_two_children_at_once(tmp_path):
    # each waits until the other has written its file: one at a time would never end
    code = ("import os, sys, time\nopen(sys.argv[1], 'w').close()\n"
            "while not os.path.exists(sys.argv[2]): time.sleep(0.05)\nprint(os.getpid())\n")
    one, two = subprocs.run_together(
        {"args": [PY, "-c", code, "a", "b"], "cwd": tmp_path, "timeout": 120},
        {"args": [PY, "-c", code, "b", "a"], "cwd": tmp_path, "timeout": 120})
    assert one.returncode == two.returncode == 0
    assert one.stdout != two.stdout


def test_what_it_cannot_serve_runs_as_a_real_process(tmp_path):
    assert subprocs._request([PY, "-c", "pass"], None, None) is not None
    assert subprocs._request([PY, "-u", "-c", "pass"], None, None) is None
    assert subprocs._request(["sh", "-c", "true"], None, None) is None
    assert subprocs._request([PY, "-c", "pass"], None,
                             {**os.environ, "OMP_NUM_THREADS": "3"}) is None
    (tmp_path / "numpy.py").write_text("")
    assert subprocs._request([PY, "-c", "pass"], tmp_path, None) is None
    # start_new_session: only a real process has its own session
    code = "import os; print(os.getsid(0) == os.getpid())"
    alone = subprocs.run([PY, "-c", code], capture_output=True, text=True,
                         start_new_session=True)
    assert alone.stdout == "True\n"


def test_disabled_by_the_environment(monkeypatch):
    monkeypatch.setenv(forkserver.ENV_OFF, "0")
    assert subprocs._request([PY, "-c", "pass"], None, None) is None


def test_selfplay_train_is_the_same_through_the_zygote(tmp_path):
    """A refusal and a tiny run: same return code, output and files as a real process."""
    train = str(BIN / "selfplay-train")
    for args in ([train, "game=nonesuch"],
                 [train, "game=rps", "frames=64"]):
        results = {}
        for how, run in (("forked", forked), ("real", subprocess.run)):
            folder = tmp_path / how
            folder.mkdir(exist_ok=True)
            done = run([*args, f"hydra.run.dir={folder / 'run'}"], cwd=folder,
                       capture_output=True, text=True, timeout=600)
            files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
            results[how] = (done.returncode, _timeless(done.stdout.replace(str(folder), "F")),
                            _timeless(done.stderr.replace(str(folder), "F")), files)
        assert results["forked"] == results["real"]


def _timeless(text: str) -> str:
    """``text`` without what differs between two runs of one command: log times, seconds,
    progress bars' rates."""
    text = re.sub(r"\[\d{4}-\d\d-\d\d [\d:,]+\]", "[time]", text)
    text = re.sub(r"\b\d+\.\ds\b", "Ts", text)
    text = re.sub(r"(\s+800\s+)\d+\.\d+", r"\1T", text)  # the table's seconds
    return re.sub(r"[^\n\r]*\d+(\.\d+)?(frame|episode|it)/s[^\n\r]*", "", text)


def test_the_zygote_ends_when_its_pytest_dies(tmp_path):
    """Killed pytest (SIGKILL: no atexit) leaves no zygote behind: its request pipe closes."""
    import time

    driver = ("import os, sys, time\nsys.path.insert(0, os.getcwd())\n"
              "from tests import subprocs\n"
              "done = subprocs.run([sys.executable, '-c', 'import os; print(os.getppid())'],"
              " capture_output=True, text=True)\n"
              "print(done.stdout.strip(), flush=True)\ntime.sleep(600)\n")
    proc = subprocess.Popen([PY, "-c", driver], cwd=Path(__file__).parents[1],
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, forkserver.ENV_OFF: "1"})
    try:
        zygote = int(proc.stdout.readline())
        assert zygote != proc.pid and _running(zygote)
    finally:
        proc.kill()
        proc.wait()
    for _ in range(600):
        if not _running(zygote):
            break
        time.sleep(0.1)
    assert not _running(zygote)


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for its parent."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_zygote_started_in_a_changed_environment_is_replaced(monkeypatch):
    """Started lazily inside a test that had set OMP_NUM_THREADS, the zygote (whose torch read
    it) served no later test: every child fell back to a real process."""
    monkeypatch.setattr(subprocs, "_zygote", forkserver.Zygote())
    code = "import os; print(os.environ.get('OMP_NUM_THREADS'), os.getppid())"
    try:
        with monkeypatch.context() as changed:
            changed.setenv("OMP_NUM_THREADS", "7")
            first = forked([PY, "-c", code], capture_output=True, text=True)
        second = forked([PY, "-c", code], capture_output=True, text=True)
    finally:
        subprocs._zygote.stop()
    (omp1, zygote1), (omp2, zygote2) = first.stdout.split(), second.stdout.split()
    assert omp1 == "7" and omp2 == os.environ.get("OMP_NUM_THREADS", "None")
    assert zygote1 != zygote2
