"""Examples run as a user runs them, so they cannot rot."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_nim_example_runs():
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "nim.py")],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    assert "CheckReport(episodes=20" in out
    assert "rewards: {'player_0': -1.0, 'player_1': 1.0}" in out
