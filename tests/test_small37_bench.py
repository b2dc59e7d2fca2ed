"""bench/startup.py and bench/vmas_train.py as a user runs them (small37): ``startup.py
--help`` gave its docstring's first line cut mid-sentence, and ``--runs`` took any integer
(0 or a negative number ended in a StatisticsError traceback, a huge one ran for days); now
it is refused in argparse's one line, like the other bench scripts' sizes. vmas_train printed
``nan`` returns (and numpy's "Mean of empty slice" warnings) for runs in which no episode
finished; now it says so."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import subprocs

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _run(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocs.run([sys.executable, str(BENCH / script), *args], cwd=cwd,
                        capture_output=True, text=True, timeout=300,
                        env={**os.environ, "COLUMNS": "1000"})


@pytest.mark.parametrize(("value", "shown"), [("0", "0"), ("-3", "-3"), ("101", "101"),
                                              ("1000000", "1000000"), ("x", "'x'")])
def test_startup_refuses_runs_out_of_range_in_one_line(tmp_path, value, shown):
    res = _run("startup.py", "--runs", value, cwd=tmp_path)
    assert res.returncode == 2 and res.stdout == "", res
    assert res.stderr.splitlines()[-1] == (
        f"startup.py: error: argument --runs: {shown}: expected an integer in [1, 100]"), res
    assert not list(tmp_path.iterdir())  # refused before any command ran


def test_startup_help_gives_the_docstrings_first_paragraph_whole(tmp_path):
    res = _run("startup.py", "--help", cwd=tmp_path)
    assert res.returncode == 0, res
    doc = ast.get_docstring(ast.parse((BENCH / "startup.py").read_text()), clean=True)
    paragraph = " ".join(doc.split("\n\n")[0].split())
    assert paragraph.endswith(".") and paragraph in " ".join(res.stdout.split()), res.stdout
    assert "times each command runs (1 to 100; default 5)" in res.stdout, res.stdout


def test_vmas_train_says_no_episode_finished_instead_of_nan(tmp_path):
    # 1 frame is one round of 32 copies x 25 steps: 800 frames, episodes of 100 steps
    res = _run("vmas_train.py", "--settings", "defaults", "--frames", "1", "--no-peer",
               "--seeds", "0", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout
    assert "nan" not in out.lower() and "Mean of empty slice" not in res.stderr, out + res.stderr
    assert "selfplay defaults seed 0: no episode finished in 800 frames (no return to report; " \
        "give more --frames)" in out.splitlines(), out
    assert "| selfplay defaults | " in out and out.rstrip().endswith(
        " | no episode finished in 800 frames | no episode finished in 800 frames | never |"), out
