"""``side_metrics`` gives its ``charts/win_rate/<side>`` keys in the game's team order whatever
the process's string hashing (res40: a resumed mixed league wrote the same values, but
``metrics.csv`` rows of one step in another order, since the sides came from a set)."""

import json
import os
import subprocess
import sys

CHILD = """
import json, games
from llm_agents.records import EpisodeRecord
from llm_agents.trainer import side_metrics
KUHN = "openspiel/kuhn_poker"
both = {"player_0": "team", "player_1": "team"}
eps = [EpisodeRecord(KUHN, i, 0, {"player_0": r, "player_1": -r}, 2, seats=both)
       for i, r in enumerate([1.0, -1.0, 2.0])]
print(json.dumps(list(side_metrics(eps, {KUHN: games.make(KUHN).spec}))))
"""


def test_win_rate_keys_follow_the_games_teams_under_any_hash_seed():
    orders = set()
    for seed in range(8):
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                             env=env, timeout=300, check=True)
        orders.add(tuple(json.loads(out.stdout.strip().splitlines()[-1])))
    assert orders == {("charts/seat_return/player_0", "charts/seat_return/player_1",
                       "charts/win_rate/player_0", "charts/win_rate/player_1")}
