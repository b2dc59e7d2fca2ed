"""A league member that trains on-policy rollouts (MAPPO/IPPO) ends each generation at an
update, as a single run does (``marl.train.budget_spent``): ``frames_per_generation=100``
of 64-frame rollouts played 104 frames and trained on 64 (the next generation's
``start_episodes`` dropped the rest), while the league counted 104."""

import sqlite3

import games
from marl.mappo import MAPPO
from populations.league import League
from populations.members import MAPPOMember
from tests.populations.test_league import _kuhn


def test_a_mappo_member_trains_every_frame_its_generation_counts(tmp_path):
    cfg = _kuhn(frames_per_generation=100)  # 8 copies x 8 rollout steps = 64 per update
    spec = games.make(cfg.game).spec
    league = League(cfg, tmp_path / "run", members=[MAPPOMember("main", MAPPO(spec, cfg.mappo))])
    try:
        league.run()
    finally:
        league.close()
    db = sqlite3.connect(tmp_path / "run" / "league.db")
    try:
        frames = [f for (f,) in db.execute("SELECT frames FROM generations ORDER BY version")]
        updates = db.execute("SELECT COUNT(*) FROM metrics WHERE key = 'losses/pg_loss'")
        updates = updates.fetchone()[0]
    finally:
        db.close()
    assert frames == [128, 128]  # rounded up to two whole rollouts, not 104
    assert updates == 4  # two per generation: 128 frames trained of 128 counted
