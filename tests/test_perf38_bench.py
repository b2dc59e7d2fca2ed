"""bench/policy_load.py and bench/vocab_resume.py refuse a size they cannot run (argparse's
exit 2 naming the flag) before any work, and ``--trees`` names a folder without marl."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize("script, args, said", [
    ("policy_load.py", ["--loads", "0"], "--loads: 0: expected an integer >= 1"),
    ("policy_load.py", ["--rounds", "x"], "--rounds"),
    ("policy_load.py", ["--hidden", "64,0"], "--hidden"),
    ("vocab_resume.py", ["--episodes", "0"], "--episodes"),
    ("vocab_resume.py", ["--runs", "-1"], "--runs"),
])
def test_sizes_they_cannot_run_are_refused(script, args, said):
    done = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and said in done.stderr, done.stderr


def test_a_tree_without_marl_is_named(tmp_path):
    done = subprocess.run([sys.executable, str(BENCH / "policy_load.py"), "--trees",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and f"{tmp_path} holds no marl/core.py" in done.stderr
