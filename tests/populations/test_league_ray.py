"""A league whose members train on Ray learner actors (issue 20): the same snapshots,
matches, ratings and metrics as the in-process runner for a fixed seed; asynchronous
members; a learner actor that dies is restarted; a league on a two-node cluster."""

import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

import games
from marl.actor_critic import NetConfig
from marl.core import load_policy
from marl.mappo import MAPPO, MAPPOConfig
from populations.league import League, LeagueConfig
from populations.learner_actors import LearnerActorError
from populations.members import LearnerMember

GAME = "openspiel/kuhn_poker"
ROOT = Path(__file__).resolve().parents[2]


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


GENERATIONS = 3  # of the shared Ray run (ray_league) and of the runs compared with it


def in_process_reference(run_dir):
    """The in-process league, in a fresh process whose first torch call sets one thread: a
    process that computed with more threads first (as pytest's may have) keeps other CPU
    kernels, whose floats differ in the last bits (see populations.learner_actors)."""
    torch.set_num_threads(1)
    _run(_cfg(generations=GENERATIONS), Path(run_dir))


@pytest.fixture(scope="module")
def ray_league(tmp_path_factory, ray_local):
    """One league on Ray learner actors, where nothing dies, and its run folder: the in-process
    runner must record the same (test_ray_learners_equal_the_in_process_runner), and so must
    a run whose learner actor dies and is restarted (test_dead_learner_actor_...). One Ray
    league for both: its three actors start in 10-20 s on a loaded 2-core machine."""
    run = tmp_path_factory.mktemp("ray_league") / "run"
    never = run.parent / "never"
    never.mkdir()
    (never / "x").touch()  # already "died": these members never die
    cfg = _cfg(runner="ray", generations=GENERATIONS)
    before = _learner_folders()
    league = _run(cfg, run, _dying_members(cfg, never, 1))
    league.new_temp_folders = _learner_folders() - before
    return league, run


def _learner_folders():
    """The temp folders learner actors once kept their snapshot copies in (never removed)."""
    return set(Path(tempfile.gettempdir()).glob("selfplay-learner-*"))


def test_ray_learners_equal_the_in_process_runner(tmp_path, ray_league):
    code = ("import sys; from tests.populations.test_league_ray import in_process_reference; "
            "in_process_reference(sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "local")], check=True,
                   cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    league, ray_run = ray_league
    assert league.learners is None or league.learners.actors == []  # closed
    assert league.new_temp_folders == set()  # the actors left no files behind
    want, got = _tables(tmp_path / "local"), _tables(ray_run)
    assert [(m, v) for m, v, _ in got["snapshots"]] == [
        (m, v) for v in range(GENERATIONS + 1) for m in ("a", "b")]
    assert len(want["matches"]) > 0 and len(want["metrics"]) > 10
    assert {k for _, k, _ in want["metrics"]} >= {"a/losses/pg_loss", "b/losses/pg_loss"}
    for member in ("a", "b"):  # trained weights, tensor for tensor
        w = _weights(tmp_path / "local", member, GENERATIONS)
        g = _weights(ray_run, member, GENERATIONS)
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
    """``sync=False``: member a publishes v1 and v2 while member slow is still in its first
    generation (which waits for a's v2); the finishing order is in the database. Two
    generations (was 3): a's v3 came after what slow waits for, so it checked nothing more."""
    cfg = _cfg(runner="ray", sync=False, generations=2)
    spec = games.make(GAME).spec
    run = tmp_path / "run"
    members = [LearnerMember("a", MAPPO(spec, cfg.mappo, seed=1)),
               WaitFor("slow", MAPPO(spec, cfg.mappo, seed=2),
                       path=str(run / "snapshots" / "a" / "v0002.pt"))]
    league = _run(cfg, run, members)
    db = league.db.__class__(run / "league.db", readonly=True)
    rid = db.run_id("league")
    order = [(r["member"], r["version"]) for r in db.generations(rid)]
    assert sorted(order) == [("a", 1), ("a", 2), ("slow", 1), ("slow", 2)]
    assert order.index(("a", 2)) < order.index(("slow", 1))  # a did not wait for slow
    rows = db.generations(rid)
    assert [r["seq"] for r in rows] == list(range(1, 5))
    assert all(r["finished_at"] >= r["started_at"] for r in rows)
    assert [r["finished_at"] for r in rows] == sorted(r["finished_at"] for r in rows)
    snaps = [(s.member, s.version) for s in db.snapshots(rid)]
    assert sorted(snaps) == sorted([(m, v) for m in ("a", "slow") for v in range(3)])
    ratings = db.latest_ratings(rid)
    assert {s.id for s in db.snapshots(rid)} == set(ratings)  # every snapshot was rated
    assert db.count_matches(rid) > 0
    status = sqlite3.connect(run / "league.db").execute("SELECT status FROM runs").fetchone()
    db.close()
    assert status == ("finished",)


def test_sync_requires_ray():
    with pytest.raises(ValueError, match="sync=False .* needs runner='ray'"):
        _cfg(sync=False)


class DiesOnce(LearnerMember):
    """A member whose learner process dies (``os._exit``) in generation ``gen`` the first
    ``times`` times it gets there (counted in files under ``folder``, which outlive it)."""

    def __init__(self, *args, folder=None, gen=2, times=1, **kw):
        super().__init__(*args, **kw)
        self.folder, self.gen, self.times = folder, gen, times

    def train_generation(self, mm):
        if mm.plan.generation == self.gen:
            tries = len(os.listdir(self.folder))
            if tries < self.times:
                open(os.path.join(self.folder, f"died{tries}"), "w").close()
                super().train_generation(mm)  # dies with its work done, unsent
                os._exit(1)
        return super().train_generation(mm)


def _dying_members(cfg, folder, times):
    spec = games.make(GAME).spec
    return [LearnerMember("a", MAPPO(spec, cfg.mappo, seed=1)),
            DiesOnce("b", MAPPO(spec, cfg.mappo, seed=2), folder=str(folder), times=times)]


@pytest.mark.slow
def test_dead_learner_actor_is_restarted_from_the_last_checkpoint(tmp_path, ray_league):
    """Member b's actor dies in generation 2 after training it; a fresh actor trains that
    generation again from b's checkpointed state, and the run ends with exactly the
    snapshots, matches, ratings and metrics of the run where nothing died (ray_league)."""
    (tmp_path / "once").mkdir()
    cfg = _cfg(runner="ray", generations=GENERATIONS)
    league = _run(cfg, tmp_path / "run", _dying_members(cfg, tmp_path / "once", 1))
    ref, ref_run = ray_league
    assert os.listdir(tmp_path / "once") == ["died0"]  # it did die, once
    assert league.learners.restarts == 1 and ref.learners.restarts == 0
    assert _tables(tmp_path / "run") == _tables(ref_run)


def test_restarts_are_bounded_and_the_run_is_marked_failed(tmp_path, ray_local):
    (tmp_path / "always").mkdir()
    cfg = _cfg(runner="ray", generations=2, max_learner_restarts=1)
    league = League(cfg, tmp_path / "run", members=_dying_members(cfg, tmp_path / "always", 99))
    try:
        with pytest.raises(LearnerActorError, match="member 'b', generation 2: its learner "
                           "actor died 2 times \\(max_restarts=1\\)") as err:
            league.run()
    finally:
        league.close()
    assert "\n" not in str(err.value)
    db = sqlite3.connect(tmp_path / "run" / "league.db")
    status, error = db.execute("SELECT status, error FROM runs").fetchone()
    db.close()
    assert status == "failed" and "max_restarts=1" in error
    resumed = League(_cfg(runner="ray", generations=2), tmp_path / "run", resume=True,
                     members=_dying_members(cfg, tmp_path / "never_again", 0))
    try:  # the checkpoint from before the deaths continues the run
        assert (resumed.generation, resumed.phase) == (1, "done")
    finally:
        resumed.close()


@pytest.mark.slow
def test_driver_killed_with_kill_9_resumes_with_nothing_lost(tmp_path):
    """The league's resume guarantee holds with learner actors: a driver killed (-9) once
    generation 2 is checkpointed and resumed ends with the uninterrupted run's snapshots
    and matches, none twice. The uninterrupted run is in-process: Ray and the in-process
    runner record the same matches (test_ray_learners_equal_the_in_process_runner), and a
    third Ray instance beside the killed run's would cost seconds of both cores."""
    from tests.populations.test_league import kill_and_resume

    partial, (ref_rows, ref_snaps), (got_rows, got_snaps) = kill_and_resume(
        tmp_path, ["--generations", "3", "--frames-per-generation", "400", "--num-envs", "8",
                   "--eval-episodes", "2", "--runner", "ray"], ref_args=["--runner", "local"])
    assert 0 < len(partial) < len(ref_rows)  # it really was interrupted
    assert got_snaps == ref_snaps == [("main", v) for v in range(4)]
    assert len(got_rows) == len({k for k, _ in got_rows})  # no match twice
    assert got_rows == ref_rows


@pytest.mark.slow
def test_league_joins_a_two_node_cluster_by_address(tmp_path, loopback_cluster):
    """``runner.address``: a head and a second node started with ``ray start`` on this
    machine (loopback only, ``tests/ray_cluster.py``); the league's two learners train on
    different nodes."""
    run = tmp_path / "run"
    train = subprocess.run(
        [sys.executable, "-m", "populations.cli", f"game.name={GAME}", "encoder=mlp",
         "population=fsp", "population.members=[mappo,mappo_exploiter]",
         "mappo.net.critic=concat", "population.generations=1",
         "population.frames_per_generation=256",
         "num_envs=8", "eval_episodes=2", "progress=false", "logger=none",
         "runner=ray", "runner.workers=1", f"runner.address={loopback_cluster.address}",
         f"hydra.run.dir={run}"], env=loopback_cluster.env, capture_output=True, timeout=300)
    assert train.returncode == 0, train.stderr.decode()[-3000:]
    db = sqlite3.connect(run / "league.db")
    workers = [w for (w,) in db.execute("SELECT worker FROM generations")]
    status = db.execute("SELECT status FROM runs").fetchone()
    db.close()
    assert status == ("finished",) and len(workers) == 2
    assert len({w.split()[0] for w in workers}) == 2, workers  # two nodes
