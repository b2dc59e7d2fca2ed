"""Findings of user-path walk 18 in ``populations/``: a PSRO meta-mixture of continuous-action
members, non-finite rewards in evaluation matches (and databases they poisoned), the oracle
messages for continuous-action games, and the game name recorded with each match."""

import dataclasses
import json
import logging
import sqlite3

import numpy as np
import pytest

import games
from marl.train import RandomPolicy
from populations.db import LeagueDB, LeagueDBError, MatchRow
from populations.evaluation import recompute, round_robin
from populations.psro import Member, Mixture, SampledMixturePolicy
from populations.runners import RANDOM, LocalRunner, MatchJob, NonFiniteMatchError

CONT = "walk18/chase_cont"
SEATS = ("chaser", "evader")


@games.register(CONT)
class ChaseCont(games.Game):
    """Two seats each pick a point in [-1, 1]^2 every round; the chaser wants to be near."""

    def __init__(self, rounds: int = 3, nan_at: int = 0) -> None:
        """``nan_at``: the evader's reward is NaN at that step of every episode (0: never)."""
        self.rounds, self.nan_at = rounds, nan_at
        self.spec = games.GameSpec(  # its name with its arguments, as many games do
            name=CONT + "".join(f"({k}={v})" for k, v, default in (
                ("rounds", rounds, 3), ("nan_at", nan_at, 0)) if v != default),
            agents=tuple(games.AgentSpec(a, role=a, team=a) for a in SEATS),
            obs_shapes={a: (3,) for a in SEATS},
            action_spaces={a: games.ActionSpace("continuous", shape=(2,), low=-1.0, high=1.0)
                           for a in SEATS},
            max_steps=rounds, zero_sum=True, simultaneous=True)

    def _reset(self, seed):
        self.p = {a: np.zeros(2, np.float32) for a in SEATS}
        self.t = 0

    def _step(self, actions):
        for a in SEATS:
            self.p[a] = np.clip(self.p[a] + np.asarray(actions[a], np.float32), -2, 2)
        self.t += 1
        d = float(np.linalg.norm(self.p["chaser"] - self.p["evader"]))
        done = self.t >= self.rounds
        nan = self.t == self.nan_at
        return games.Transition({"chaser": -d, "evader": float("nan") if nan else d},
                                {a: False for a in SEATS}, {a: done for a in SEATS})

    def acting_agents(self):
        return () if self.t >= self.rounds else SEATS

    def observe(self, agent):
        return np.array([*self.p[agent], self.t / self.rounds], np.float32)

    def legal_actions(self, agent):
        return []

    def text_observation(self, agent):
        return f"{agent} at {self.p[agent].tolist()}"


class _Constant(RandomPolicy):
    """Plays the same continuous action everywhere."""

    def __init__(self, spec, value: float) -> None:
        super().__init__(spec)
        self.value = value

    def act(self, agent, vs, greedy=False):
        space = self.meta.action_space(agent)
        return np.full((vs.done.shape[0], *space.shape), self.value, np.float32)


def test_a_mixture_of_continuous_members_acts_with_their_shape_and_dtype():
    spec = games.make(CONT).spec
    members = tuple(Member(f"psro/chaser/{k}", "chaser", _Constant(spec, v))
                    for k, v in enumerate((-0.5, 0.25)))
    mix = SampledMixturePolicy(Mixture(members, np.array([0.5, 0.5])), "chaser", seed=3)
    vs = games.VectorGame(CONT, 16, seed=0).reset()
    out = mix.act("chaser", vs)  # was: TypeError (boolean indexing of an int64 [B] array)
    assert out.shape == (16, 2) and out.dtype == np.float32
    assert set(np.unique(mix.current)) == {0, 1}  # both members drawn: both wrote rows
    assert np.array_equal(out, np.array([[-0.5, -0.5], [0.25, 0.25]], np.float32)[mix.current])


# ------------------------------------------------------ non-finite rewards in matches
def _snapshots(db, run):
    """Two snapshots 'A' and 'B' of ``run`` whose seats play uniformly at random."""
    for name in "AB":
        db.add_snapshot(db.add_member(run, name, "random", SEATS), 0, RANDOM, "random", CONT,
                        SEATS)
    return [dataclasses.replace(s, path=RANDOM) for s in db.snapshots(run)]


def test_match_play_stops_at_a_nan_reward_naming_game_agent_step_and_seats():
    job = MatchJob("rr/1-2/ab", CONT, {a: RANDOM for a in SEATS}, 4, 0, {"nan_at": 2})
    with pytest.raises(NonFiniteMatchError) as err:
        LocalRunner().play([job])
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"non-finite reward (nan) in game '{CONT}(nan_at=2)', agent "
                          "'evader', at step 2 of an episode of match rr/1-2/ab (seats chaser, "
                          "evader: random): ")


def test_evaluation_records_nothing_of_a_nan_match_and_names_the_snapshots(tmp_path):
    db = LeagueDB(tmp_path / "l.db")
    run = db.create_run("eval", game=CONT)
    with pytest.raises(NonFiniteMatchError, match=r"agent 'evader', at step 3 of an episode of "
                       r"match rr/1-2/ab \(snapshots 'A' v0 \(id 1\) vs 'B' v0 \(id 2\)\): "
                       r"the match was stopped before anything of it was recorded"):
        round_robin(db, run, LocalRunner(), games.make(CONT).spec, CONT, {"nan_at": 3},
                    _snapshots(db, run), episodes=2)
    assert db.count_matches(run) == 0 and db.payoffs(run) == []
    with pytest.raises(LeagueDBError, match="non-finite return nan of agent 'evader'"):
        db.add_matches(run, [MatchRow("m/0", CONT, {"chaser": 1, "evader": 2},
                                      {"chaser": 0.0, "evader": float("nan")})])
    assert db.count_matches(run) == 0


def _poison(db, run, key):
    """A NaN return recorded as an earlier version did (straight into the table)."""
    db.conn.execute("INSERT INTO matches (run_id, key, game, seats, returns, seed, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (run, key, CONT, json.dumps({"chaser": 1, "evader": 2}),
                     json.dumps({"chaser": 0.5, "evader": float("nan")}), 0, 0.0))
    db.conn.commit()


def test_a_database_poisoned_by_an_earlier_version_resumes(tmp_path, caplog):
    db = LeagueDB(tmp_path / "l.db")
    run = db.create_run("eval", game=CONT)
    a, b = _snapshots(db, run)
    good = [MatchRow(f"g/1-2/{s}/e0000", CONT, seats, {"chaser": r, "evader": -r})
            for s, seats, r in (("ab", {"chaser": 1, "evader": 2}, 1.0),
                                ("ba", {"chaser": 2, "evader": 1}, -1.0))]
    db.add_matches(run, good)
    _poison(db, run, "g/1-2/ab/e0001")
    _poison(db, run, "g/1-2/ba/e0001")
    with caplog.at_level(logging.WARNING, "populations.evaluation"):
        recompute(db, run, step=0)  # was: sqlite3.IntegrityError (payoffs.value NOT NULL)
    assert [r.getMessage() for r in caplog.records] == [
        "2 recorded match episode(s) of run 1 have non-finite returns (NaN or infinity, "
        "recorded by an earlier version); payoffs and ratings leave them and their "
        "role-swapped halves out"]
    pay = {(p["row_snapshot"], p["col_snapshot"]): p for p in db.payoffs(run)}
    assert pay[(1, 2)]["value"] == 2.0 and pay[(1, 2)]["count"] == 1  # the finite pair alone

    # the evaluation of a poisoned pair plays it again (its seeds: what it would have given)
    _poison(db, run, "rr/1-2/ab/e0000")
    caplog.clear()
    with caplog.at_level(logging.WARNING, "populations.evaluation"):
        round_robin(db, run, LocalRunner(), games.make(CONT).spec, CONT, {}, [a, b],
                    episodes=2)
    assert "match rr/1-2: 1 recorded episode(s) hold non-finite returns" in caplog.text
    replayed = db.matches(run, "rr/")
    assert len(replayed) == 4
    assert all(np.isfinite(list(m.returns.values())).all() for m in replayed)
    fresh = LeagueDB(tmp_path / "fresh.db")
    fresh_run = fresh.create_run("eval", game=CONT)
    round_robin(fresh, fresh_run, LocalRunner(), games.make(CONT).spec, CONT, {},
                _snapshots(fresh, fresh_run), episodes=2)
    assert [m.returns for m in fresh.matches(fresh_run)] == [m.returns for m in replayed]
    with pytest.raises(sqlite3.IntegrityError):  # the constraint that was hit stays
        db.set_payoffs(run, [(1, 2, float("nan"), None, 1, False)])


# ------------------------------------------------ oracles for continuous-action games
@pytest.fixture
def ppo_discrete_only(monkeypatch):
    """MAPPO/IPPO as they were before their Gaussian actors (discrete actions only): the
    refusals and the fallback of ``auto`` where the rl oracle cannot play a game."""
    from marl import registry

    for name in ("mappo", "ippo"):
        entry = registry.get(name)
        cap = dataclasses.replace(entry.capabilities, continuous=False)
        monkeypatch.setitem(registry._LEARNERS, name,
                            dataclasses.replace(entry, capabilities=cap))


def test_the_rl_oracle_and_ippo_responses_play_continuous_actions():
    """Since MAPPO/IPPO have Gaussian actors, rl plays a continuous game and is auto's pick;
    the refusal of another algo lists it and the PPO learners."""
    from marl.registry import IncompatibleError
    from populations.approx_exploit import ApproxConfig, check_response_algo
    from populations.psro_run import check_oracle, rl_oracle

    spec = games.make(CONT).spec
    check_oracle("rl", spec)
    assert rl_oracle(spec) == "rl"
    with pytest.raises(IncompatibleError) as err:
        check_oracle("vdn", spec)
    assert str(err.value).endswith(
        "; oracles that play it: ['auto', 'rl', 'ippo', 'maddpg', 'mappo']")
    check_response_algo(spec, ApproxConfig(), "population.exploit.algo")  # ippo, its default
    with pytest.raises(ValueError) as err:
        check_response_algo(spec, ApproxConfig(algo="vdn"))
    assert str(err.value).endswith("; use one of ['ippo', 'maddpg', 'mappo']")


def test_psro_oracle_refusals_name_the_setting_and_only_oracles_that_play_the_game(
        ppo_discrete_only):
    from marl.registry import IncompatibleError
    from populations.psro_run import check_oracle

    spec = games.make(CONT).spec
    with pytest.raises(IncompatibleError) as err:
        check_oracle("rl", spec)
    assert str(err.value) == (
        f"population.oracle=rl (a PPO learner with local critics at default settings) cannot "
        f"play {CONT}: it does not support the continuous actions of {CONT}; oracles that "
        "play it: ['auto', 'maddpg']")  # was: algo=ippo ...; ['auto', 'exact', 'rl', 'maddpg']
    with pytest.raises(IncompatibleError) as err:
        check_oracle("vdn", spec)
    assert str(err.value).startswith(f"population.oracle: algo=vdn cannot play {CONT}: ")
    assert str(err.value).endswith("; oracles that play it: ['auto', 'maddpg']")


def test_auto_picks_maddpg_where_only_maddpg_plays_the_game(caplog, ppo_discrete_only):
    from populations.psro_run import resolve_auto
    from tests.populations.test_single_resume import _exp

    cfg = _exp("population=psro", f"game.name={CONT}")
    with caplog.at_level(logging.INFO, "populations.psro_run"):
        got = resolve_auto(cfg, games.make(CONT)).population
    assert (got.oracle, got.psro.payoffs) == ("maddpg", "sampled")  # was: rl, then refused
    assert "oracle=maddpg" in caplog.text and "the rl oracle cannot play it" in caplog.text
    spread = _exp("population=psro", "game=mpe_spread")  # discrete actions: rl as before
    assert resolve_auto(spread, games.make(spread.game.name, **spread.game.kwargs)
                        ).population.oracle == "rl"


def test_exploit_algo_refusals_name_their_setting(ppo_discrete_only):
    from populations.approx_exploit import ApproxConfig, check_response_algo

    spec = games.make(CONT).spec
    with pytest.raises(ValueError) as err:
        check_response_algo(spec, ApproxConfig(), "population.exploit.algo")
    assert str(err.value) == (
        "approx exploitability: population.exploit.algo: algo=ippo (its default) cannot play "
        f"{CONT}: ippo does not support the continuous actions of {CONT}; use one of "
        "['maddpg']")
    with pytest.raises(ValueError, match=r"^approx exploitability: --exploit-algo: algo=vdn "
                                         r"cannot play"):
        check_response_algo(spec, ApproxConfig(algo="vdn"))


# --------------------------------------------------- the game recorded with each match
def test_matches_record_the_game_with_its_arguments_as_the_run_does(tmp_path):
    db = LeagueDB(tmp_path / "l.db")
    spec = games.make(CONT, rounds=2).spec
    run = db.create_run("eval", game=spec.name)
    round_robin(db, run, LocalRunner(), spec, CONT, {"rounds": 2}, _snapshots(db, run),
                episodes=1)
    assert {m.game for m in db.matches(run)} == {f"{CONT}(rounds=2)"}  # was: the bare name
