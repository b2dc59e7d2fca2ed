"""A long league with the default ``population.eval_window=0`` is warned at its start: every
new snapshot plays every earlier one, so its evaluation time and match rows grow with the
square of the generations (walk 37c, M3: said nowhere)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from populations.cli import LONG_LEAGUE, every_pair_warning

LINE = ("1000 generations with population.eval_window=0 evaluate 500500 snapshot pairs "
        "(16016000 episodes at eval_episodes=16; the last generation 1000 pairs, the first 1): "
        "each new snapshot plays every earlier one, so evaluation time and league.db's match "
        "rows grow with the square of the generations; set population.eval_window=K to "
        "evaluate each new snapshot against the K newest")


def test_a_long_league_is_warned_at_its_start(tmp_path):
    """Before: nothing; the run trains its first generation at once. The child is stopped
    with Ctrl-C once the line is out (or after its first generation, which fails the test)."""
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "populations.cli", "game=kuhn", "population=self_play",
         "population.generations=1000", "population.frames_per_generation=64", "num_envs=2",
         "eval_episodes=16", "progress=false", f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    deadline = time.monotonic() + 240
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line.rstrip("\n"))
            if LINE in line or "generation 1/1000 done" in line or time.monotonic() > deadline:
                break
    finally:
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    lines += rest.splitlines()
    warned = [k for k, line in enumerate(lines) if line.endswith(f"[WARNING] - {LINE}")]
    assert len(warned) == 1, "\n".join(lines)
    started = [k for k, line in enumerate(lines) if "generation 1:" in line]
    assert not started or started[0] > warned[0], "\n".join(lines)


def test_the_count_of_pairs_and_who_is_warned():
    """Generation g of m members: m new snapshots against m*g earlier ones and each other."""
    assert every_pair_warning(LONG_LEAGUE, 1, 8) is None
    line = every_pair_warning(LONG_LEAGUE + 1, 2, 8)
    # sum over g = 0..51 of 4 g + 1 = 4 * 51 * 52 / 2 + 52 pairs
    assert line is not None and line.startswith(
        "51 generations with population.eval_window=0 evaluate 5356 snapshot pairs (85696 "
        "episodes at eval_episodes=8; the last generation 205 pairs, the first 5): "), line
