"""VDN / QMIX on turn-based games through ``populations``: ``selfplay-train algo=vdn
game=tictactoe`` from the command line, and QMIX teams as league members of a turn-based
team game (tiny bridge with two partnerships, North-South against East-West), a QMIX member
and a MAPPO member training against each other's snapshots, every snapshot rated on one
scale."""

import os
import sqlite3
import sys
from pathlib import Path

from marl.mappo import MAPPOConfig
from marl.value_decomp import ValueDecompConfig
from populations.experiment import (
    ExperimentConfig,
    GameConfig,
    PopulationConfig,
    _league_config,
    _league_members,
    league_table,
)
from populations.league import League
from populations.loggers import LoggerConfig
from tests import subprocs

ROOT = Path(__file__).resolve().parents[2]
BRIDGE = GameConfig("openspiel/tiny_bridge_4p",
                    {"teams": [["player_0", "player_2"], ["player_1", "player_3"]]})


def test_qmix_partnership_meets_a_mappo_partnership_at_tiny_bridge(tmp_path):
    cfg = ExperimentConfig(
        experiment="bridge", num_envs=4, eval_episodes=4, progress=False,
        logger=LoggerConfig(kind="none"), game=BRIDGE, mappo=MAPPOConfig(rollout_steps=16),
        qmix=ValueDecompConfig(mixer="qmix", batch_size=32, learning_starts=64),
        population=PopulationConfig(kind="league", generations=2, frames_per_generation=200,
                                    members=["qmix", "mappo"]))
    members = _league_members(cfg, tmp_path)
    league = League(_league_config(cfg), tmp_path / "run", members=members)
    try:
        league.run()
        db, run = league.db, league.run_id
        table = league_table(db, run)
        assert {r["member"] for r in table} == {"qmix", "mappo"}
        assert all(r["mu"] is not None and r["pairs"] > 0 for r in table)
        member_of = {s.id: s.member for s in db.snapshots(run)}
        pairs = {frozenset(member_of[s] for s in m.seats.values()) for m in db.matches(run)}
        assert frozenset({"qmix", "mappo"}) in pairs
        assert db.metric(run, "qmix/losses/td_loss")  # the QMIX team trained in the league
    finally:
        league.close()
    qmix = members[0].learner
    buf = {k: v[: len(qmix.buffer)] for k, v in qmix.buffer.data.items()}
    # each row is one partnership's turn: one seat acts, and only its team's seats count
    assert (buf["acting"].sum(1) == 1).all()
    team = qmix.team_AG.float()  # [A, G]
    assert ((buf["seated"].float() @ team > 0).sum(1) == 1).all()
    # rows of both partnerships (self-play copies) and copies where MAPPO held one side
    assert (buf["seated"].float() @ team > 0).any(0).all()


def test_selfplay_train_vdn_on_a_turn_based_preset(tmp_path):
    res = subprocs.run(
        [sys.executable, "-m", "populations.cli", "algo=vdn", "game=tictactoe", "frames=400",
         "num_envs=4", "eval_episodes=4", "vdn.learning_starts=32", "vdn.batch_size=32",
         "progress=false", "logger=none"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr[-2000:]
    (db_path,) = tmp_path.glob("runs/**/league.db")
    db = sqlite3.connect(db_path)
    updates = db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0]
    matches = db.execute("SELECT COUNT(*) FROM matches").fetchone()[0]
    db.close()
    assert updates >= 1 and matches == 4
