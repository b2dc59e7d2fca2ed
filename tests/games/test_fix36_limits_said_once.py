"""With the switch on, a process says so once (fix36): a game built past its size limit
with SELFPLAY_GAME_LIMITS=off was built silently."""

import os
import sys

from games.limits import ENV, LIFTED_LINE
from tests import subprocs

BUILD_TWICE = ("import games\n"
               "for _ in range(2):\n"
               "    games.make('openspiel/goofspiel', num_cards=131)\n"
               "    games.make('vmas/simple_spread', n_agents=257)\n")


def test_the_switch_is_said_once_per_process(tmp_path):
    res = subprocs.run([sys.executable, "-c", BUILD_TWICE], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env={**os.environ, ENV: "off"})
    assert res.returncode == 0, res.stderr[-2000:]
    assert LIFTED_LINE == "game size limits lifted (SELFPLAY_GAME_LIMITS=off)"
    assert res.stderr.count(LIFTED_LINE) == 1, res.stderr


def test_nothing_is_said_with_the_limits_on(tmp_path):
    res = subprocs.run([sys.executable, "-c", "import games; games.make('openspiel/goofspiel', "
                        "num_cards=13)"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, env={**os.environ, ENV: ""})
    assert res.returncode == 0, res.stderr[-2000:]
    assert "limits lifted" not in res.stderr, res.stderr
