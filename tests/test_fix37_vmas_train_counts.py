"""bench/vmas_train.py names BenchMARL's count for what it is (session 37): its returns are
each training iteration's mean episode return (``collection_reward_episode_reward_mean``), so
its record counts ``iterations``; it was recorded as ``"episodes"`` (iterations counted as
episodes), and where none logged one the lines said "no episode finished" (an iteration
logs a mean only where an episode finished in it: its line says so)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "vmas_train.py"


@pytest.fixture(scope="module")
def vt():
    spec = importlib.util.spec_from_file_location("fix37_vmas_train", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_benchmarl_counts_iterations_not_episodes(vt):
    r = vt._first_last([1.0, 2.0, 3.0], 6000, "iterations")
    assert r == {"first": 1.0, "last": 3.0, "iterations": 3, "frames": 6000}
    assert vt._first_last([4.0], 800) == {"first": 4.0, "last": 4.0, "episodes": 1,
                                          "frames": 800}


def test_the_empty_lines_say_what_is_missing(vt, capsys):
    peer = vt._first_last([], 6000, "iterations")
    ours = vt._first_last([], 800)
    vt._report("benchmarl defaults seed 0", peer, None)
    vt._report("selfplay defaults seed 0", ours, None)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == ("benchmarl defaults seed 0: no iteration logged an episode return in "
                        "6,000 frames (no return to report; give more --frames)")
    assert lines[3] == ("selfplay defaults seed 0: no episode finished in 800 frames (no return "
                        "to report; give more --frames)")
    assert vt._mean_return([peer], "first") == (
        "no iteration logged an episode return in 6,000 frames")
    assert vt._mean_return([ours], "last") == "no episode finished in 800 frames"
