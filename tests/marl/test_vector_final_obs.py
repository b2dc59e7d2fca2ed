"""``VectorGame.final_obs`` on :mod:`tests.marl.exits_game`: an agent that left its episode at
an earlier step keeps zeros there, as in ``obs`` on every step since (review L4: it held the
game's observation of it, an input no critic trained on); one still in at the step, also one
truncated alone at it, gets its real last observation."""

import numpy as np

from games import VectorGame
from tests.marl.exits_game import IDS, Exits


def test_final_obs_is_zero_for_an_agent_that_left_before():
    B = 8
    vg = VectorGame(lambda: Exits(cut=True), B, seed=0, with_state=True)
    vs, rng = vg.reset(), np.random.default_rng(0)
    gone = [set() for _ in range(B)]
    seen = {"zero_departed": 0, "cut_alone_real": 0, "in_real": 0}
    for _ in range(60):
        actions = {a: (rng.random(vs.legal[a].shape) * vs.legal[a]).argmax(1) for a in IDS}
        vs = vg.step(actions)
        for b in range(B):
            ended = {a for a in IDS if vs.terminated[a][b] or vs.truncated[a][b]}
            if not (vs.done[b] or ended):
                continue
            for a in IDS:
                row = vs.final_obs[a][b]
                if a in gone[b]:
                    assert not row.any(), (b, a, row)
                    seen["zero_departed"] += 1
                else:  # t / LIMIT > 0 and the alive flags: the game's observation
                    assert row[0] > 0, (b, a, row)
                    cut = not vs.done[b] and bool(vs.truncated[a][b])
                    seen["cut_alone_real" if cut else "in_real"] += 1
            gone[b] = set() if vs.done[b] else gone[b] | ended
    assert min(seen.values()) >= 3, seen
