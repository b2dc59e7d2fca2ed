"""Leagues, evaluation and the CLI on VMAS games: a match job plays every episode of a pair
at once as copies of one VMAS batch; ``selfplay-train game=vmas_spread`` trains from the
command line; the ``vmas_tag_league`` preset runs a PFSP league (adversaries against the good
agent) at small settings."""

import json
import sqlite3
import sys

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
from marl.mappo import MAPPO, MAPPOConfig
from populations.runners import RANDOM, LocalRunner, MatchJob, play_job
from tests import subprocs

TAG_KW = {"max_steps": 5, "shape_agent_rew": True}  # distinct returns per episode


def _snapshot(tmp_path, seed=0):
    """An (untrained) MAPPO policy for every seat of vmas/simple_tag, as a policy file."""
    spec = games.make("vmas/simple_tag", **TAG_KW).spec
    return str(MAPPO(spec, MAPPOConfig(), seed=seed).policy().save(tmp_path / f"p{seed}.pt"))


def test_a_vmas_match_job_plays_all_its_episodes_as_copies_of_one_batch(tmp_path):
    spec = games.make("vmas/simple_tag", **TAG_KW).spec
    path = _snapshot(tmp_path)
    seats = {a: (path if a.startswith("adversary") else RANDOM) for a in spec.agent_ids}
    res = play_job(MatchJob("m", "vmas/simple_tag", seats, 24, 3, TAG_KW, num_envs=8))
    assert (res.copies, res.steps) == (24, 5)  # one episode's steps, not 24 / 8 of them
    assert len(res.returns) == 24 and set(res.returns[0]) == set(spec.agent_ids)
    assert len({r["agent_0"] for r in res.returns}) > 1  # 24 different episodes
    # a game stepped copy by copy keeps num_envs copies
    kw = {"N": 2, "max_cycles": 5}
    pz = games.make("pettingzoo/mpe2.simple_spread_v3", **kw).spec
    res = play_job(MatchJob("p", "pettingzoo/mpe2.simple_spread_v3",
                            {a: RANDOM for a in pz.agent_ids}, 24, 3, kw, num_envs=8))
    assert (res.copies, res.steps) == (8, 15) and len(res.returns) == 24


def test_a_vmas_match_job_replays_identically_and_depends_on_its_seed(tmp_path):
    spec = games.make("vmas/simple_tag", **TAG_KW).spec
    a, b = _snapshot(tmp_path, 0), _snapshot(tmp_path, 1)
    seats = {ag: (a if ag.startswith("adversary") else b) for ag in spec.agent_ids}
    jobs = [MatchJob(f"j{s}", "vmas/simple_tag", seats, 6, s, TAG_KW) for s in (1, 1, 2)]
    runner = LocalRunner()  # policies cached across jobs: they are reseeded per job
    first, again, other = runner.play(jobs)
    assert first.returns == again.returns == play_job(jobs[0]).returns
    assert first.returns != other.returns


def _compose(overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return compose(config_name="config", overrides=overrides)


def test_vmas_tag_league_preset_runs_a_pfsp_league_at_small_settings(tag_league):
    preset = OmegaConf.to_object(_compose(["experiment=vmas_tag_league"]))
    assert preset.game.name == "vmas/simple_tag" and preset.num_envs == 1024
    assert preset.population.kind == "league"
    assert preset.population.matchmaking.rule == "pfsp"
    summary, _, _ = tag_league  # the preset at small settings (TAG_LEAGUE), run once
    db = sqlite3.connect(summary.database)
    rows = [(k, json.loads(s)) for k, s in db.execute("SELECT key, seats FROM matches")]
    # v1-v0, then v2-v0 and v2-v1: 6 role-swapped episode pairs each
    assert len(rows) == 3 * 2 * 6
    for _, seats in rows:  # the three adversaries are one side: one snapshot plays them all
        assert len({seats[f"adversary_{i}"] for i in range(3)}) == 1
        assert seats["agent_0"] != seats["adversary_0"]
    assert max(r[0] for r in db.execute("SELECT step FROM metrics")) >= 200
    db.close()
    assert {r["version"] for r in summary.table} == {0, 1, 2}
    assert all(r["pairs"] > 0 for r in summary.table)  # every snapshot rated


def test_selfplay_train_game_vmas_spread_from_the_command_line(tmp_path):
    run = tmp_path / "run"
    res = subprocs.run(
        [sys.executable, "-m", "populations.cli", "game=vmas_spread", "frames=64", "num_envs=8",
         "mappo.rollout_steps=8", "mappo.epochs=1", "eval_episodes=3", "progress=false",
         "logger=none", f"hydra.run.dir={run}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    db = sqlite3.connect(run / "league.db")
    assert [r[0] for r in db.execute("SELECT max(step) FROM metrics")] == [64]
    rets = [json.loads(r[0]) for r in db.execute("SELECT returns FROM matches")]
    assert len(rets) == 3 and all(np.isfinite(r["agent_0"]) for r in rets)


def test_selfplay_train_refuses_a_bad_vmas_kwarg_in_one_line(tmp_path):
    res = subprocs.run(
        [sys.executable, "-m", "populations.cli", "game=vmas_spread", "game.kwargs.colour=1",
         "progress=false",
         "logger=none", f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("selfplay-train: ")
    assert "vmas/simple_spread" in err[0] and "colour" in err[0]
    assert "Traceback" not in res.stderr and not (tmp_path / "run").exists()


def test_psro_with_sampled_payoffs_runs_on_vmas_tag(tmp_path):
    """With players=seats PSRO's players are the seats (3 adversaries and the good agent),
    each with an RL (MAPPO) best response and payoffs sampled on VMAS copies (the default,
    teams, is in test_psro_teams.py)."""
    from populations.experiment import run_experiment

    exp = OmegaConf.to_object(_compose([
        "population=psro", "game=vmas_tag", "game.kwargs.max_steps=3", "population.oracle=rl",
        "population.psro.payoffs=sampled", "population.psro.meta_solver=prd",
        "population.psro.players=seats", "population.psro.episodes_per_entry=2",
        "population.psro.num_envs=2",
        "population.iterations=1", "population.oracle_frames=24", "mappo.rollout_steps=3",
        "mappo.epochs=1", "num_envs=8", "eval_episodes=2", "progress=false", "logger=none"]))
    summary = run_experiment(exp, tmp_path / "run")
    weights: dict[str, float] = {}
    for row in summary.table:
        weights[row["seat"]] = weights.get(row["seat"], 0.0) + row["meta_weight"]
    assert set(weights) == {"adversary_0", "adversary_1", "adversary_2", "agent_0"}
    assert all(w == pytest.approx(1.0, abs=1e-3) for w in weights.values())


def test_selfplay_train_feeds_mappo_tensor_vecsteps_from_a_vmas_game(tmp_path, monkeypatch):
    """The launcher's training copies are a VMAS batch returning torch tensors (the rollout
    stays on the game's device); its evaluation still gives policies numpy."""
    from populations.experiment import run_experiment

    made = []

    class Recorded(games.VectorGame):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(games, "VectorGame", Recorded)
    exp = OmegaConf.to_object(_compose([
        "game=vmas_spread", "frames=64", "num_envs=8", "mappo.rollout_steps=8",
        "mappo.epochs=1", "eval_episodes=2", "progress=false", "logger=none"]))
    run_experiment(exp, tmp_path / "run")
    train_vg, eval_vg = made
    assert train_vg.native is not None and train_vg.tensors
    assert not eval_vg.tensors


TAG_LEAGUE = ["experiment=vmas_tag_league", "num_envs=8", "population.generations=2",
              "population.frames_per_generation=200", "mappo.epochs=1", "eval_episodes=6",
              "game.kwargs.max_steps=5", "progress=false", "logger=none"]


def _tag_league(tmp_path, name):
    from populations.experiment import run_experiment

    summary = run_experiment(OmegaConf.to_object(_compose(TAG_LEAGUE)), tmp_path / name)
    db = sqlite3.connect(summary.database)
    metrics = sorted(db.execute("SELECT step, key, value FROM metrics"))
    returns = sorted(r[0] for r in db.execute("SELECT returns FROM matches"))
    db.close()
    return summary, metrics, returns


@pytest.fixture(scope="module")
def tag_league(tmp_path_factory):
    """The vmas_tag_league preset at small settings, run once with nothing patched: the
    preset test reads it, and the tensor-VecStep test's recorded run must replay it."""
    return _tag_league(tmp_path_factory.mktemp("vmas_tag"), "plain")


def test_a_vmas_league_member_trains_on_tensor_vecsteps_and_replays_identically(
        tmp_path, monkeypatch, tag_league):
    """A MAPPO league member on a VMAS game is fed torch-tensor VecSteps (its rollout stays on
    the game's device); frozen opponents still act on numpy and their actions reach the
    joint action; the league rates every snapshot and a fixed seed replays it exactly."""
    import torch

    observed: list[type] = []  # the type of each VecStep's done the learner observed
    stepped: list[tuple[type, bool]] = []  # after each learner act: actions' type, opponents?
    last = {"mixed": None}  # whether a snapshot held seats in the learner's last act
    observe, act, step = MAPPO.observe, MAPPO.act, games.VectorGame.step

    def observe_recorded(self, vs):
        observed.append(type(vs.done))
        return observe(self, vs)

    def act_recorded(self, vs, *args, **kwargs):
        last["mixed"] = self.seat_mask is not None and not self.seat_mask.all()
        return act(self, vs, *args, **kwargs)

    def step_recorded(self, actions):
        if last["mixed"] is not None:  # a training step (evaluation never calls act)
            stepped.append((type(actions["agent_0"]), last["mixed"]))
            last["mixed"] = None
        return step(self, actions)

    monkeypatch.setattr(MAPPO, "observe", observe_recorded)
    monkeypatch.setattr(MAPPO, "act", act_recorded)
    monkeypatch.setattr(games.VectorGame, "step", step_recorded)
    summary, metrics, returns = _tag_league(tmp_path, "a")
    monkeypatch.undo()
    assert observed and set(observed) == {torch.Tensor}  # no numpy VecStep reached it
    assert {t for t, _ in stepped} == {torch.Tensor}  # the joint action stays on device
    assert any(mixed for _, mixed in stepped)  # ... also where snapshots wrote into it
    assert {r["version"] for r in summary.table} == {0, 1, 2}
    assert all(r["pairs"] > 0 for r in summary.table)
    again, metrics2, returns2 = tag_league  # the same league, unpatched, in its own folder
    assert metrics == metrics2 and returns == returns2
    assert [(r["version"], r["mu"]) for r in summary.table] == \
        [(r["version"], r["mu"]) for r in again.table]
    # on CPU the numpy path (what a non-tensor learner gets) trains the very same league
    import populations.members as members

    monkeypatch.setattr(members, "_reads_tensors", lambda learner: False)
    _, metrics3, returns3 = _tag_league(tmp_path, "numpy")
    assert metrics == metrics3 and returns == returns3


def test_sampled_psro_payoffs_play_a_vmas_profile_as_one_batch(tmp_path):
    """Sampled PSRO payoffs on a VMAS game step every episode of a profile at once (as match
    jobs do); the estimate is reproducible and a stepped game keeps num_envs copies."""
    from marl.core import load_policy
    from populations.payoffs import SampledPayoffs
    from populations.psro import Member

    sp = SampledPayoffs("vmas/simple_tag", episodes=12, num_envs=4, seed=3, game_kwargs=TAG_KW)
    assert sp.copies == 12
    pol = load_policy(_snapshot(tmp_path))
    for a in sp.spec.agent_ids:
        sp.add_member(Member(f"psro/{a}/0", a, pol))
    first = sp.play([0] * len(sp.spec.agent_ids))
    assert first.shape == (len(sp.spec.agent_ids),) and np.isfinite(first).all()
    np.testing.assert_array_equal(first, sp.play([0] * len(sp.spec.agent_ids)))
    kw = {"N": 2, "max_cycles": 5}
    assert SampledPayoffs("pettingzoo/mpe2.simple_spread_v3", episodes=12, num_envs=4,
                          game_kwargs=kw).copies == 4
