"""A league whose members train on Ray learner actors (issue 20): the same snapshots,
matches, ratings and metrics as the in-process runner for a fixed seed; asynchronous
members; a learner actor that dies is restarted; a league on a two-node cluster."""

import os
import sqlite3
import time

import pytest
import torch

import games
from marl.actor_critic import NetConfig
from marl.core import load_policy
from marl.mappo import MAPPO, MAPPOConfig
from populations.league import League, LeagueConfig
from populations.members import LearnerMember
from populations.runners import init_ray

GAME = "openspiel/kuhn_poker"


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray instance (127.0.0.1) for the module's leagues."""
    ray = init_ray(None, 4)
    yield ray
    ray.shutdown()


def _cfg(**kw):
    base = dict(game=GAME, game_kwargs={}, generations=2, frames_per_generation=256,
                num_envs=8, eval_episodes=2, ray_workers=1,
                mappo=MAPPOConfig(rollout_steps=8, epochs=2,
                                  net=NetConfig(share="role", critic="concat")))
    return LeagueConfig(**{**base, **kw})


def _members(cfg):
    spec = games.make(GAME).spec
    return [LearnerMember("a", MAPPO(spec, cfg.mappo, seed=1)),
            LearnerMember("b", MAPPO(spec, cfg.mappo, seed=2))]


def _run(cfg, run_dir, members=None):
    league = League(cfg, run_dir, members=members or _members(cfg))
    try:
        league.run()
    finally:
        league.close()
    return league


def _tables(run_dir):
    """Everything a run recorded that the seed decides (not wall-clock times)."""
    db = sqlite3.connect(run_dir / "league.db")
    out = {
        "snapshots": db.execute("SELECT m.name, s.version, s.sha256 FROM snapshots s JOIN "
                                "members m ON s.member_id = m.id ORDER BY s.id").fetchall(),
        "matches": db.execute("SELECT key, seats, returns FROM matches ORDER BY key").fetchall(),
        "ratings": db.execute("SELECT snapshot_id, step, elo, mu, sigma, matches FROM ratings "
                              "ORDER BY snapshot_id, step").fetchall(),
        "metrics": db.execute("SELECT step, key, value FROM metrics ORDER BY step, key")
        .fetchall(),
    }
    db.close()
    return out


def _weights(run_dir, member, version):
    return load_policy(run_dir / "snapshots" / member / f"v{version:04d}.pt").payload()


def test_ray_learners_equal_the_in_process_runner(tmp_path, ray_local):
    _run(_cfg(), tmp_path / "local")
    league = _run(_cfg(runner="ray"), tmp_path / "ray")
    assert league.learners is None or league.learners.actors == []  # closed
    want, got = _tables(tmp_path / "local"), _tables(tmp_path / "ray")
    assert [(m, v) for m, v, _ in got["snapshots"]] == [
        ("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    assert len(want["matches"]) > 0 and len(want["metrics"]) > 10
    assert {k for _, k, _ in want["metrics"]} >= {"a/losses/pg_loss", "b/losses/pg_loss"}
    for member in ("a", "b"):  # trained weights, tensor for tensor
        w, g = _weights(tmp_path / "local", member, 2), _weights(tmp_path / "ray", member, 2)
        assert not torch.equal(w["actors"][next(iter(w["actors"]))],
                               _weights(tmp_path / "local", member, 0)["actors"][
                                   next(iter(w["actors"]))])  # it did train
        assert w["actors"].keys() == g["actors"].keys()
        assert all(torch.equal(w["actors"][k], g["actors"][k]) for k in w["actors"])
    assert got == want  # snapshot hashes, every match, rating and metric


class WaitFor(LearnerMember):
    """A member whose generation ``gen`` ends only once ``path`` exists (a file another
    member's later snapshot writes): a league that waits for every member each generation
    could never finish it."""

    def __init__(self, *args, path=None, gen=1, **kw):
        super().__init__(*args, **kw)
        self.path, self.gen = path, gen

    def train_generation(self, mm):
        frames = super().train_generation(mm)
        if mm.plan.generation == self.gen:
            deadline = time.monotonic() + 300  # a stuck test fails instead of hanging
            while not os.path.exists(self.path):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.path} never appeared")
                time.sleep(0.05)
        return frames


def test_async_members_publish_without_waiting(tmp_path, ray_local):
    """``sync=False``: member a publishes v1, v2, v3 while member slow is still in its first
    generation (which waits for a's v2); the finishing order is in the database."""
    cfg = _cfg(runner="ray", sync=False, generations=3)
    spec = games.make(GAME).spec
    run = tmp_path / "run"
    members = [LearnerMember("a", MAPPO(spec, cfg.mappo, seed=1)),
               WaitFor("slow", MAPPO(spec, cfg.mappo, seed=2),
                       path=str(run / "snapshots" / "a" / "v0002.pt"))]
    league = _run(cfg, run, members)
    db = league.db.__class__(run / "league.db", readonly=True)
    rid = db.run_id("league")
    order = [(r["member"], r["version"]) for r in db.generations(rid)]
    assert sorted(order) == [("a", 1), ("a", 2), ("a", 3), ("slow", 1), ("slow", 2),
                             ("slow", 3)]
    assert order.index(("a", 2)) < order.index(("slow", 1))  # a did not wait for slow
    rows = db.generations(rid)
    assert [r["seq"] for r in rows] == list(range(1, 7))
    assert all(r["finished_at"] >= r["started_at"] for r in rows)
    assert [r["finished_at"] for r in rows] == sorted(r["finished_at"] for r in rows)
    snaps = [(s.member, s.version) for s in db.snapshots(rid)]
    assert sorted(snaps) == sorted([(m, v) for m in ("a", "slow") for v in range(4)])
    ratings = db.latest_ratings(rid)
    assert {s.id for s in db.snapshots(rid)} == set(ratings)  # every snapshot was rated
    assert db.count_matches(rid) > 0
    status = sqlite3.connect(run / "league.db").execute("SELECT status FROM runs").fetchone()
    db.close()
    assert status == ("finished",)


def test_sync_requires_ray():
    with pytest.raises(ValueError, match="sync=False .* needs runner='ray'"):
        _cfg(sync=False)
