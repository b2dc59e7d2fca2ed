"""Ctrl-C during ``selfplay-eval``'s seatings prints the table of the seatings that finished,
marked partial, above the count line (left33): the count said "1 of 4 seatings" and they were
kept in the database, but their returns were printed nowhere. A real SIGINT to a real child
process, as test_fix32e_seatings sends it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.populations.test_fix32e_seatings import EPISODES, _matches, _psro_member


def test_ctrl_c_during_seatings_prints_the_finished_ones_table(tmp_path):
    files = [_psro_member(tmp_path / "m", seat, f"{seat}_{k}")
             for seat in ("player_0", "player_1") for k in range(2)]  # 4 seatings
    db = tmp_path / "eval.db"
    command = [str(Path(sys.executable).with_name("selfplay-eval")), *files, "--db", "eval.db",
               "--episodes", str(EPISODES)]
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        while proc.poll() is None and _matches(db) == 0:  # the first seating recorded
            time.sleep(0.05)  # polling, not a condition of the test
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    seatings = int(re.search(r"interrupted after (\d) of 4 seatings", err).group(1))
    assert 1 <= seatings < 4, err[-3000:]
    lines = out.splitlines()
    heads = [k for k, line in enumerate(lines) if line.startswith("each seating on")]
    assert len(heads) == 1, (out, err[-3000:])
    head = heads[0]
    assert re.fullmatch(
        rf"each seating on \S*kuhn_poker \(partial: the {seatings} of 4 that finished before "
        rf"the interrupt, {EPISODES} episodes each\): a side's mean return per episode \(the "
        r"mean over its seats\) ± 95% interval", lines[head]), out
    rows = lines[head + 1:head + 1 + seatings]
    assert all(row.lstrip().startswith("player_0_0") for row in rows[:2]), out  # seating order
    assert lines[head + 1 + seatings] == ("each file over the seatings it sat in (mean of the "
                                          "seatings' mean returns; partial):"), out
    per_file = lines[head + 2 + seatings:]
    order = [("player_0_0", "player_1_0"), ("player_0_0", "player_1_1"),
             ("player_0_1", "player_1_0"), ("player_0_1", "player_1_1")]
    sat = {name for seating in order[:seatings] for name in seating}
    assert [line.split()[0] for line in per_file] == \
        [f for f in ("player_0_0", "player_0_1", "player_1_0", "player_1_1") if f in sat], out
