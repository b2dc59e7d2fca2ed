"""Each league member's row names the learner that trains it. The kind column showed the
policy kind its snapshots are saved as, so an IPPO member (``mappo`` policies) read MAPPO
in the printed summary and on the dashboard, like every MAPPO member beside it; a PSRO
run with ``population.oracle=ippo`` likewise."""

from __future__ import annotations

from pathlib import Path

from populations.dashboard import queries
from populations.db import LeagueDB
from populations.experiment import league_table, run_experiment
from tests.populations.test_single_resume import _exp

MIXED = ["game=kuhn", "population=self_play", "population.members=[mappo,ippo,vdn]",
         "population.generations=1", "population.frames_per_generation=16", "num_envs=4",
         "eval_episodes=1", "mappo.rollout_steps=4", "progress=false", "logger=none"]


def mixed_league(run_dir: Path) -> Path:
    """A real league of MAPPO, IPPO and VDN members on Kuhn poker (a second or so)."""
    run_experiment(_exp(*MIXED), run_dir)
    return run_dir / "league.db"


def test_each_member_row_names_its_own_learner(tmp_path):
    db = LeagueDB(mixed_league(tmp_path), readonly=True)
    try:
        run = db.run_id("league")
        labels = {r["member"]: r["kind_label"] for r in queries.league_table(db, run)}
        printed = {(r["member"], r["kind"]) for r in league_table(db, run)}
        snapshot_kinds = {s.member: s.kind for s in db.snapshots(run)}
    finally:
        db.close()
    assert labels == {"mappo": "MAPPO", "ippo": "IPPO", "vdn": "VDN"}
    assert printed == {("mappo", "mappo"), ("ippo", "ippo"), ("vdn", "vdn")}
    # the snapshots stay the policies they load as
    assert snapshot_kinds == {"mappo": "mappo", "ippo": "mappo", "vdn": "vdn"}


def test_a_psro_run_names_its_oracles_learner(tmp_path):
    run_experiment(_exp("game=kuhn", "population=psro", "population.oracle=ippo",
                        "population.iterations=1", "population.oracle_frames=16",
                        "population.psro.payoffs=sampled", "population.psro.episodes_per_entry=2",
                        "num_envs=4", "eval_episodes=1", "mappo.rollout_steps=4",
                        "progress=false", "logger=none"), tmp_path)
    db = LeagueDB(tmp_path / "league.db", readonly=True)
    try:
        rows = queries.league_table(db, db.run_id("default"))
    finally:
        db.close()
    kinds = {r["member"]: r["kind_label"] for r in rows}
    assert {kinds["psro-player_0-1"], kinds["psro-player_1-1"]} == {"IPPO"}
