"""``selfplay-eval`` for tests: in this process (its exit code and what it printed), and as a
child process interrupted with Ctrl-C once it has recorded a match."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

BAR = "selfplay-eval round robin:"
"""How the round robin's plain progress lines start (stderr is no terminal under capsys)."""


def run_eval(args: Sequence[str], capsys: pytest.CaptureFixture[str],
             bars: bool = False) -> tuple[int, str, str]:
    """``eval_main(args)``: ``(exit code, stdout, stderr)``; 0 when it returns. The round
    robin's plain progress lines (:data:`BAR`, stderr being no terminal) are left out of
    stderr unless ``bars``: the tests of its other lines pin them whole."""
    from populations.eval_cli import eval_main

    try:
        eval_main(list(args))
        code = 0
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    # a terminal's bar (monkeypatched isatty) redraws with '\r' on one line: kept
    err = out.err if bars else "\n".join(
        line for line in out.err.split("\n") if not line.startswith(BAR))
    return code, out.out, err


def matches(db: Path, run: int = 1) -> int:
    """How many matches the league database ``db`` holds for run ``run`` (0 before it has
    them, or its tables)."""
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM matches WHERE run_id = ?",
                                (run,)).fetchone()[0]
    except sqlite3.Error:  # not made yet, or its tables not yet
        return 0


def interrupted_after_first_match(command: Sequence[str], db: Path, cwd: Path,
                                  run: int = 1) -> subprocess.CompletedProcess[str]:
    """Run ``command`` (``selfplay-eval ...``) as a real child process and send it SIGINT
    (Ctrl-C) once ``db`` holds a match of run ``run``: its exit status, stdout and stderr."""
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    proc = subprocess.Popen(list(command), cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        while proc.poll() is None and matches(db, run) == 0:
            time.sleep(0.05)  # polling, not a condition of the test
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(list(command), proc.returncode, out, err)
