"""League members as walk 20 met them through ``selfplay-train population=pfsp``:

* a member trained against a QMIX/VDN/MADDPG snapshot met it exploring (ε-greedy, Gumbel
  noise), while evaluations and PSRO play those snapshots by their argmax;
* ``population.nash_conv=true`` with such a member failed after the run started ("qmix
  policies have no action probabilities"); PSRO scores them by their greedy one-hot play;
* members logged no episode returns (``charts/episode_return`` of single runs).
"""

from __future__ import annotations

import dataclasses
import logging
import re
import shutil
import time

import numpy as np
import pytest

import games
from marl import registry
from marl.core import Policy, PolicyMeta
from marl.mappo import MAPPO, MAPPOConfig
from populations.db import LeagueDB
from populations.league import League, LeagueConfig
from populations.members import GenerationMatchmaker, LearnerMember, OpponentDraw, TrainPlan

KUHN = "openspiel/kuhn_poker"
RPS = "openspiel/matrix_rps"  # simultaneous: MADDPG plays it


def _member(algo: str, spec: games.GameSpec) -> LearnerMember:
    """``algo``'s member; a replay learner updates from its 32nd frame (small leagues)."""
    entry = registry.get(algo)
    cfg = entry.default()
    if hasattr(cfg, "learning_starts"):
        cfg = dataclasses.replace(cfg, learning_starts=32, batch_size=16)
    return LearnerMember(algo, entry.build(spec, cfg, seed=1), algo=entry.name)


def _generation(member: LearnerMember, opponent: Policy, game: str, frames: int = 96):
    """One generation of ``member`` on ``game``, ``opponent`` (snapshot id 7) in every copy;
    returns the metrics it logged as ``(frames, metrics)``."""
    logged: list[tuple[int, dict[str, float]]] = []
    plan = TrainPlan(game, {}, num_envs=4, frames=frames, seed=0, generation=1,
                     team_of=(0, 1))
    draw = OpponentDraw(ids=(7,), probs=(1.0,), opponent_prob=1.0, seed=0)
    mm = GenerationMatchmaker(member.name, plan, draw, lambda sid: opponent,
                              lambda f, m: logged.append((f, m)))
    assert member.train_generation(mm) == frames
    return logged


@pytest.mark.parametrize("algo", ["qmix", "vdn", "maddpg"])
def test_an_off_policy_snapshot_is_trained_against_by_its_argmax(algo):
    spec = games.make(RPS).spec
    snapshot = registry.get(algo).build(spec, seed=2).policy()
    asked: list[bool] = []
    real = snapshot.act

    def act(agent, vs, greedy=False):
        asked.append(greedy)
        return real(agent, vs, greedy=greedy)

    snapshot.act = act  # the snapshot the league loads, spied on
    _generation(LearnerMember("main", MAPPO(spec, MAPPOConfig(rollout_steps=4), seed=0)),
                snapshot, RPS)
    assert asked and all(asked), asked


def test_an_on_policy_snapshot_still_samples():
    spec = games.make(KUHN).spec
    snapshot = MAPPO(spec, MAPPOConfig(rollout_steps=4), seed=2).policy()
    asked: list[bool] = []
    real = snapshot.act

    def act(agent, vs, greedy=False):
        asked.append(greedy)
        return real(agent, vs, greedy=greedy)

    snapshot.act = act
    _generation(LearnerMember("main", MAPPO(spec, MAPPOConfig(rollout_steps=4), seed=0)),
                snapshot, KUHN)
    assert asked and not any(asked)


# ---------------------------------------------------------------- exact NashConv
def _league(tmp_path, game: str, algos: list[str], **kw) -> League:
    spec = games.make(game).spec
    cfg = LeagueConfig(**{"game": game, "game_kwargs": {}, "generations": 1,
                          "frames_per_generation": 64, "num_envs": 4, "eval_episodes": 1, **kw})
    return League(cfg, tmp_path, members=[_member(a, spec) for a in algos])


def _metrics(run_dir) -> list[tuple[int, str, float]]:
    db = LeagueDB(run_dir / "league.db", readonly=True)
    try:
        return list(db.metric_rows(db.run_id("league")))
    finally:
        db.close()


@pytest.mark.parametrize(("game", "algos"), [(KUHN, ["mappo", "qmix"]),
                                              ("openspiel/matrix_rps", ["mappo", "maddpg"]),
                                              (KUHN, ["vdn"])])
def test_nash_conv_of_off_policy_members_is_of_their_greedy_play(tmp_path, game, algos):
    league = _league(tmp_path, game, algos, nash_conv=True)
    try:
        league.run()
    finally:
        league.close()
    values = {(s, k): v for s, k, v in _metrics(tmp_path) if k.startswith("nash_conv/")}
    kinds = {k for _, k in values}
    assert f"nash_conv/{algos[-1]}" in kinds
    assert len(values) == 2 * len(algos)  # generations 0 and 1, every member
    assert all(np.isfinite(v) and v >= -1e-9 for v in values.values())


def test_greedy_nash_conv_is_the_one_hot_policy_s(tmp_path):
    """The logged value is NashConv of the snapshot's argmax play (PSRO's GreedyPolicy)."""
    from populations.exploitability import nash_conv
    from populations.psro import GreedyPolicy

    league = _league(tmp_path, KUHN, ["qmix"], nash_conv=True)
    try:
        league.run()
        spec = league.spec
        want = [nash_conv(spec, GreedyPolicy(league.store.load(s.id))).nash_conv
                for s in league.store.snapshots()]
    finally:
        league.close()
    got = [v for _, k, v in sorted(_metrics(tmp_path)) if k == "nash_conv/qmix"]
    assert got == pytest.approx(want)


class _Opaque(Policy):
    """A policy that neither has action probabilities nor plays greedily by rule."""

    def __init__(self, spec: games.GameSpec) -> None:
        self.meta = PolicyMeta.from_spec("opaque_walk20", spec, spec.agent_ids)

    def act(self, agent, vs, greedy=False):
        return np.zeros(len(vs.done), dtype=np.int64)

    def payload(self):
        return {}

    @classmethod
    def from_payload(cls, meta, payload):
        raise NotImplementedError


class _OpaqueMember:
    kind, opponents, latest_only = "opaque_walk20", None, False

    def __init__(self, spec: games.GameSpec) -> None:
        self.name, self.spec = "opaque", spec

    def policy(self) -> Policy:
        return _Opaque(self.spec)

    def inputs(self):
        return {}

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass

    def train_generation(self, mm):
        raise AssertionError("refused before anything trains")


def test_a_member_without_action_probabilities_is_refused_before_the_run(tmp_path):
    spec = games.make(KUHN).spec
    cfg = LeagueConfig(game=KUHN, game_kwargs={}, generations=1, frames_per_generation=64,
                       num_envs=4, eval_episodes=1, nash_conv=True)
    with pytest.raises(ValueError) as err:
        League(cfg, tmp_path, members=[_member("mappo", spec), _OpaqueMember(spec)])
    msg = str(err.value)
    assert msg.startswith("nash_conv=True (population.nash_conv): member 'opaque' "), msg
    assert "opaque_walk20" in msg and "action probabilities" in msg and "\n" not in msg
    assert "exploit.every" in msg


# ---------------------------------------------------------------- episode returns
@pytest.mark.parametrize("algo", ["mappo", "maddpg", "vdn", "qmix"])
def test_members_log_their_training_episode_returns(tmp_path, algo):
    game = RPS if algo == "maddpg" else KUHN
    league = _league(tmp_path, game, ["mappo", algo] if algo != "mappo" else ["mappo", "ippo"],
                     frames_per_generation=128)
    try:
        league.run()
    finally:
        league.close()
    rows = _metrics(tmp_path)
    returns = [(s, v) for s, k, v in rows if k == f"{algo}/charts/episode_return"]
    assert returns, sorted({k for _, k, _ in rows})
    assert all(-2.0 <= v <= 2.0 for _, v in returns)  # Kuhn's payoffs: at most 2 chips


# ---------------------------------------------------------------- units: frames, episodes
LLM_LEAGUE = ["game=kuhn", "population=pfsp", "population.frames_per_generation=64",
              "num_envs=4", "eval_episodes=1", "llm.iterations=1", "mappo.rollout_steps=4",
              "progress=false", "logger=none"]


def _llm_league(run_dir, members: str, generations: int = 1, *extra: str):
    from populations.experiment import run_experiment
    from tests.populations.test_single_resume import _exp

    return run_experiment(_exp(*LLM_LEAGUE, f"population.members={members}",
                               f"population.generations={generations}", *extra), run_dir)


def _league_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "populations.league"]


@pytest.fixture(scope="module")
def llm_league(tmp_path_factory):
    """One finished 1-generation ``[mappo,llm_grpo]`` league and its ``populations.league``
    log lines: the first test below reads it, the resume test works on a copy (one LLM
    league instead of two)."""
    run = tmp_path_factory.mktemp("llm_league")
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda r: lines.append(r.getMessage()) if r.name == "populations.league" \
        else None
    logger = logging.getLogger("populations.league")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        _llm_league(run, "[mappo,llm_grpo]")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return run, lines


def _checkpoint_frames(run_dir) -> int:
    from populations.checkpoint import load_latest

    return load_latest(run_dir / "checkpoints")[1]["frames"]


def test_an_llm_member_s_episodes_are_not_counted_as_frames(llm_league):
    """``generation 1: llm trained 128 frames`` and ``generation 1/1 done, 192 steps``: the
    LLM team's GRPO episodes were added to the league's frame count (every metric's step)."""
    run, lines = llm_league
    assert any(re.fullmatch(r"generation 1: mappo trained 64 frames in \d+s", x)
               for x in lines), lines
    assert any(re.fullmatch(r"generation 1: llm trained \d+ episodes in \d+s", x)
               for x in lines), lines
    assert any(re.fullmatch(r"generation 1/1 done, 64 frames, \d+s", x) for x in lines), lines
    assert _checkpoint_frames(run) == 64


def test_a_league_of_an_llm_team_alone_counts_its_episodes(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="populations.league")
    _llm_league(tmp_path, "[llm_grpo]", 2)
    episodes = _checkpoint_frames(tmp_path)
    assert episodes > 0 and episodes % 2 == 0  # its step still moves on
    lines = _league_lines(caplog)
    assert any(re.fullmatch(rf"generation 2/2 done, {episodes} episodes, \d+s", x)
               for x in lines), lines


def test_an_older_run_that_counted_episodes_as_frames_resumes(tmp_path, caplog, llm_league):
    """A checkpoint from before holds frames + episodes as the league's step: a resume goes on
    from it (its metric steps grow, none logged before is written again)."""
    import torch

    from populations.checkpoint import checkpoint_files, save_checkpoint

    shutil.copytree(llm_league[0], tmp_path, dirs_exist_ok=True)  # the finished league
    newest = checkpoint_files(tmp_path / "checkpoints")[0]  # newest first
    state = torch.load(newest, weights_only=False)
    old = state["frames"] + 128  # as the run counted before: mappo's 64, the llm's 128
    state["frames"] = old
    step = int(newest.stem.split("_")[-1])
    for f in checkpoint_files(tmp_path / "checkpoints"):
        f.unlink()
    save_checkpoint(tmp_path / "checkpoints", step, state)
    before = {(s, k) for s, k, _ in _metrics(tmp_path)}
    caplog.set_level(logging.INFO, logger="populations.league")
    _llm_league(tmp_path, "[mappo,llm_grpo]", 2, "resume=true")
    after = {(s, k) for s, k, _ in _metrics(tmp_path)} - before
    steps = [s for s, k in after if k.startswith("mappo/")]
    assert steps and old < min(steps) and max(steps) <= old + 64, (old, sorted(after))
    assert _checkpoint_frames(tmp_path) == old + 64


# ---------------------------------------------------------------- progress, seconds
def _kuhn_league(run_dir, generations: int = 1, **kw) -> League:
    cfg = LeagueConfig(game=KUHN, game_kwargs={}, generations=generations,
                       frames_per_generation=64, num_envs=4, eval_episodes=1)
    return League(cfg, run_dir, **kw)


@pytest.mark.parametrize("progress", [True, False])
def test_a_league_generation_shows_a_bar_of_frames_only_with_progress(tmp_path, capsys,
                                                                      progress):
    """A league printed one line per member and generation (minutes apart in ``main``)."""
    league = _kuhn_league(tmp_path, progress=progress)
    try:
        league.run()
    finally:
        league.close()
    err = capsys.readouterr().err
    # 64 frames on 4 copies play one 25-step rollout: the bar counts to the 100 it plays
    shown = "generation 1/1 main" in err and "/100 [" in err and "frame/s" in err
    assert shown == progress, err[-2000:]


class _Clock:
    """``time`` for populations.league: perf_counter moves 100 s a call."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 100.0
        return self.now

    time = staticmethod(time.time)


def test_a_resumed_league_counts_the_seconds_before_its_resume(tmp_path, monkeypatch, caplog):
    """'generation 2/2 done, ..., 4s' after a resume: the seconds restarted (12s run whole)."""
    import populations.league as league_module
    from populations.checkpoint import load_latest

    caplog.set_level(logging.INFO, logger="populations.league")
    monkeypatch.setattr(league_module, "time", _Clock())
    league = _kuhn_league(tmp_path)
    league.run()
    league.close()
    before = load_latest(tmp_path / "checkpoints")[1]["seconds"]
    assert before > 0
    monkeypatch.setattr(league_module, "time", _Clock())  # a new process's clock
    league = _kuhn_league(tmp_path, generations=2, resume=True)
    league.run()
    league.close()
    assert load_latest(tmp_path / "checkpoints")[1]["seconds"] > before
    last = [r.getMessage() for r in caplog.records
            if r.getMessage().startswith("generation 2/2 done")]
    # 64 frames a generation of 4 copies x 25-step rollouts: a whole rollout each (296792b)
    seconds = int(re.fullmatch(r"generation 2/2 done, 200 frames, (\d+)s", last[-1])[1])
    assert seconds >= before + 100  # the resumed process's own calls come on top


@pytest.fixture(scope="module")
def kuhn_league_run(tmp_path_factory):
    """A finished 1-generation Kuhn league: the cases below each edit a copy of it."""
    run = tmp_path_factory.mktemp("kuhn_league")
    league = _kuhn_league(run)
    league.run()
    league.close()
    return run


@pytest.mark.parametrize(("seconds", "ok"), [(None, True), ("12", False), (float("nan"), False),
                                             (-1.0, False), (10**400, False)])
def test_a_checkpoint_s_seconds_are_checked(tmp_path, seconds, ok, kuhn_league_run):
    """A checkpoint from before has none (the resume counts from 0); a bad value is one line."""
    import torch

    from marl.core import CheckpointError
    from populations.checkpoint import checkpoint_files, save_checkpoint

    shutil.copytree(kuhn_league_run, tmp_path, dirs_exist_ok=True)
    newest = checkpoint_files(tmp_path / "checkpoints")[0]
    state = torch.load(newest, weights_only=False)
    if seconds is None:
        del state["seconds"]
    else:
        state["seconds"] = seconds
    for f in checkpoint_files(tmp_path / "checkpoints"):
        f.unlink()
    save_checkpoint(tmp_path / "checkpoints", int(newest.stem.split("_")[-1]), state)
    if ok:
        _kuhn_league(tmp_path, resume=True).close()
        return
    with pytest.raises(CheckpointError, match=r"seconds is .*; expected a finite number of "
                                              r"seconds >= 0$"):
        _kuhn_league(tmp_path, resume=True)


def test_a_members_return_counts_its_seats_against_snapshots_only():
    """In a self-play copy the member holds every seat: in a zero-sum game their mean is 0
    whatever it learned, so the logged curve flattened toward 0 (review). Those copies are
    left out; the mean is over the member's seats of each finished copy."""
    import types

    from populations.members import _member_returns

    agents = ("player_0", "player_1")
    ret = {"player_0": np.array([1.0, -2.0, 2.0]), "player_1": np.array([-1.0, 2.0, -2.0])}
    vs = types.SimpleNamespace(episode_return=ret)
    mine = np.array([[True, False], [False, True], [True, True]])  # copy 2: self-play
    opp = np.array([0, 3, -1])
    done = np.array([True, True, True])
    assert _member_returns(vs, agents, mine, done, opp) == [1.0, 2.0]  # it logged 0 too
    assert _member_returns(vs, agents, mine, np.array([False, True, True]), opp) == [2.0]
