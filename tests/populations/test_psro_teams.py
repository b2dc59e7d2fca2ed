"""PSRO's players can be teams (``population.psro.players``): on vmas_tag (3 adversaries vs
1 good agent) a teams run is a 2-player meta-game of K^2 profiles where ``nash`` applies,
each team member playing all of its seats; seats stay as they were (K^4 profiles); a
2-player game is the same whatever the setting; exact tools refuse a team of several seats
in one line; a teams run resumes exactly, and a run from before the setting resumes as
seats."""

import json
import sqlite3
import sys

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
import populations.cli  # noqa: F401  (registers the schema)
from games import VectorGame
from games.vector import episode_copies
from marl.core import derive_seed
from marl.mappo import MAPPOConfig
from marl.train import RandomPolicy, evaluate
from populations import exploitability as ex
from populations.experiment import run_experiment
from populations.meta_solvers import get_meta_solver
from populations.payoffs import ExactPayoffs
from populations.psro import (
    PSRO,
    ExactBestResponse,
    Member,
    Mixture,
    PSROConfig,
    RLOracle,
    RLOracleConfig,
    SampledMixturePolicy,
    psro_players,
)
from populations.psro_run import _resumed_players, registry_learner, resolve_auto
from tests import subprocs

TAG = "vmas/simple_tag"
TAG_KW = {"num_adversaries": 3, "num_good_agents": 1, "max_steps": 3}
SEATS = ("adversary_0", "adversary_1", "adversary_2", "agent_0")
KUHN = "openspiel/kuhn_poker"
# a MAPPO that updates within the tiny budget (3 steps x 2 copies per rollout)
TINY_MAPPO = MAPPOConfig(rollout_steps=3, epochs=1, minibatches=1)


def _tag_psro(players: str, meta_solver: str, episodes: int = 4) -> PSRO:
    oracle = RLOracle(TAG, RLOracleConfig(frames=12, num_envs=2), game_kwargs=TAG_KW,
                      learner_factory=registry_learner("mappo", TINY_MAPPO))
    return PSRO(TAG, oracle, PSROConfig(meta_solver=meta_solver, payoffs="sampled",
                                        episodes_per_entry=episodes, players=players),
                game_kwargs=TAG_KW)


def _count_profiles(psro: PSRO, monkeypatch) -> list[tuple[int, ...]]:
    """The profiles the estimator plays from now on (each still played for real)."""
    played, play = [], psro.estimator.play

    def spy(profile):
        played.append(tuple(profile))
        return play(profile)

    monkeypatch.setattr(psro.estimator, "play", spy)
    return played


def test_vmas_tag_teams_is_a_two_player_meta_game_that_nash_solves(monkeypatch):
    psro = _tag_psro("auto", "nash")  # auto: a team of 3 seats, so teams
    assert psro.seats_of == {"adversary": SEATS[:3], "good": SEATS[3:]}
    played = _count_profiles(psro, monkeypatch)
    it = psro.iteration()
    assert psro.payoffs.shape == (2, 2, 2) and not np.isnan(psro.payoffs).any()
    assert sorted(played) == [(0, 1), (1, 0), (1, 1)]  # K^2 entries, the new ones only
    # with the adversaries' shared reward, the team means are zero-sum: nash applies
    np.testing.assert_allclose(psro.payoffs[0], -psro.payoffs[1])
    assert set(it.meta_strategy) == {"adversary", "good"}
    for probs in it.meta_strategy.values():
        assert probs.shape == (2,) and probs.sum() == pytest.approx(1.0)
    adversary = psro.members["adversary"][1]
    assert adversary.seats == SEATS[:3] and adversary.name == "psro/adversary/1"
    assert set(adversary.policy.meta.agents) == set(SEATS[:3])  # one learner, its 3 seats


def test_team_payoff_is_the_mean_team_return_of_a_replayed_profile():
    psro = _tag_psro("teams", "nash", episodes=6)
    psro.iteration()
    i, j = 1, 0  # the new adversary member against the initial (random) good agent
    team = {"adversary": psro.members["adversary"][i].policy,
            "good": psro.members["good"][j].policy}
    for name, pol in team.items():  # the entry's own draws (populations.payoffs)
        pol.reseed(derive_seed(0, "payoffs", i, j, name))
    seats = {a: team["adversary" if a.startswith("adversary") else "good"] for a in SEATS}
    # a natively batched game plays all of an entry's episodes as copies of one batch
    assert psro.estimator.copies == episode_copies(games.make(TAG, **TAG_KW), 6, 64) == 6
    vg = VectorGame(TAG, 6, **TAG_KW,
                    seed=int(np.random.SeedSequence([0, i, j]).generate_state(1)[0]))
    res = evaluate(vg, seats, 6)
    assert psro.payoffs[0, i, j] == pytest.approx(res.per_team["adversary"], abs=1e-12)
    assert psro.payoffs[1, i, j] == pytest.approx(res.per_team["good"], abs=1e-12)
    adv = np.mean([res.per_agent[a] for a in SEATS[:3]])
    assert res.per_team["adversary"] == pytest.approx(adv)


def test_team_members_sampled_in_lockstep_match_their_exact_team_payoffs():
    """3-player Kuhn with teams {player_0, player_2} vs {player_1}: a team's member plays
    both of its seats in the lockstep sampler, and each entry is the mean of the seats'
    exact expected returns (per-seat sequence form, the member in each of its seats)."""
    game, kw = "openspiel/kuhn_poker(players=3)", {"teams": [["player_0", "player_2"],
                                                             ["player_1"]]}
    tree = ex.game_tree(game)

    def pure(agent, action):  # always `action` (0 pass, 1 bet): both legal everywhere
        mat = np.zeros_like(ex.uniform_matrix(tree, agent))
        mat[:, action] = 1.0
        return mat

    joint = ex.tabular_policy(tree, {"player_0": pure("player_0", 1),
                                     "player_2": pure("player_2", 0)})
    bettor = ex.tabular_policy(tree, {"player_1": pure("player_1", 1)})
    psro = PSRO(game, RLOracle(game, game_kwargs=kw),
                PSROConfig(payoffs="sampled", episodes_per_entry=4000, meta_solver="uniform"),
                game_kwargs=kw)
    assert psro.seats_of == {"team_0": ("player_0", "player_2"), "team_1": ("player_1",)}
    psro.restore({"team_0": [joint], "team_1": [bettor]}, 1)
    assert psro.estimator.sampler is not None  # every entry sampled in lockstep
    assert all(all(flags) for flags in psro.estimator.lockstep.values())
    exact = ExactPayoffs(tree)
    for seat, team in (("player_0", "team_0"), ("player_1", "team_1"), ("player_2", "team_0")):
        for k, m in enumerate(psro.members[team]):
            exact.add_member(Member(f"{seat}/{k}", seat, m.policy))
    for i in range(2):
        for j in range(2):
            v = exact.block([np.array([i]), np.array([j]), np.array([i])])[:, 0, 0, 0]
            # 4000 episodes: standard errors up to 0.04 (4 of them allowed); the members'
            # entries differ by far more
            np.testing.assert_allclose(psro.payoffs[:, i, j], [(v[0] + v[2]) / 2, v[1]],
                                       atol=0.16)
    assert abs(psro.payoffs[1, 1, 1] - psro.payoffs[1, 0, 0]) > 0.3


def test_an_opponent_team_mixture_draws_one_member_for_all_its_seats():
    """The seats of a team share one draw per copy and episode, redrawn when it ends."""
    game = games.make(TAG, **TAG_KW)
    members = tuple(Member(f"psro/adversary/{k}", "adversary", RandomPolicy(game.spec, seed=k),
                           seats=SEATS[:3]) for k in range(4))
    mix = SampledMixturePolicy(Mixture(members, np.full(4, 0.25)), "adversary", seed=0)
    assert mix.meta.agents == SEATS[:3]
    vg = VectorGame(TAG, 64, seed=0, **TAG_KW)
    vs, changed = vg.reset(), 0
    for _ in range(2 * TAG_KW["max_steps"]):
        before = None if mix.current is None else mix.current.copy()
        draws = []
        for a in SEATS[:3]:
            mix.act(a, vs)
            draws.append(mix.current.copy())
        assert all((d == draws[0]).all() for d in draws)  # one draw for the team's seats
        if before is not None:
            assert (draws[0][~vs.done] == before[~vs.done]).all()  # kept within an episode
            changed += int((draws[0] != before).sum())
        vs = vg.step({a: np.zeros(64, np.int64) for a in SEATS})
    assert changed > 0  # redrawn at episode ends


def test_vmas_tag_seats_is_unchanged_four_players(monkeypatch):
    psro = _tag_psro("seats", "uniform", episodes=2)  # (4-player prd takes seconds a call)
    assert psro.players == SEATS
    played = _count_profiles(psro, monkeypatch)
    psro.iteration()
    assert psro.payoffs.shape == (4, 2, 2, 2, 2) and len(played) == 2**4 - 1  # K^4
    assert psro.members["adversary_0"][1].policy.meta.agents == ("adversary_0",)
    with pytest.raises(ValueError, match="'nash' needs a 2-player"):
        get_meta_solver("nash")(psro.payoffs)


def test_two_player_game_is_the_same_for_auto_seats_and_teams():
    runs = {}
    for players in ("auto", "seats", "teams"):
        psro = PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(players=players))
        results = psro.run(3)
        runs[players] = (psro.players, [m.name for ms in psro.members.values() for m in ms],
                         psro.payoffs.tolist(), [r.nash_conv for r in results],
                         {a: p.tolist() for a, p in psro.meta_strategy.items()})
    assert runs["auto"] == runs["seats"] == runs["teams"]
    assert runs["teams"][0] == ("player_0", "player_1")
    # one-seat teams (declared) are the seats too
    spec = games.make("matrix/climbing", teams=[["agent_0"], ["agent_1"]], zero_sum=False).spec
    assert psro_players(spec, "teams") == {"agent_0": ("agent_0",), "agent_1": ("agent_1",)}


def test_a_bad_players_value_is_one_line():
    with pytest.raises(ValueError) as err:
        PSROConfig(players="team")
    msg = str(err.value)
    assert "\n" not in msg and "players='team'" in msg and "['auto', 'seats', 'teams']" in msg
    spread = games.make("vmas/simple_spread").spec  # one team: no teams meta-game
    with pytest.raises(ValueError, match="needs two or more teams.*use players=seats"):
        psro_players(spread, "teams")
    assert psro_players(spread, "auto") == {a: (a,) for a in spread.agent_ids}


def test_exact_tools_with_a_multi_seat_team_are_refused_in_one_line():
    kw = {"teams": [["player_0", "player_2"], ["player_1", "player_3"]]}
    bridge = "openspiel/tiny_bridge_4p"
    oracle = RLOracle(bridge, game_kwargs=kw)
    with pytest.raises(ValueError) as err:
        PSRO(bridge, oracle, PSROConfig(payoffs="exact"), game_kwargs=kw)
    msg = str(err.value)
    assert "\n" not in msg and "team_0" in msg and "payoffs=exact" in msg
    assert "players='auto' chose teams" in msg
    assert "use payoffs='sampled', or players='seats'" in msg


# ------------------------------------------------------------------ through the experiment
TAG_RUN = ["population=psro", "game=vmas_tag", "game.kwargs.max_steps=3", "num_envs=2",
           "eval_episodes=2", "progress=false", "logger=none", "population.oracle=mappo",
           "mappo.rollout_steps=3", "mappo.epochs=1", "mappo.minibatches=1",
           "population.oracle_frames=12", "population.psro.payoffs=sampled",
           "population.psro.episodes_per_entry=2"]


def _experiment(overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=overrides))


def _state(db_path):
    db = sqlite3.connect(db_path)
    try:
        return {
            "snapshots": sorted(db.execute(
                "SELECT m.name, s.version FROM snapshots s JOIN members m ON s.member_id = m.id"
            ).fetchall()),
            "iterations": db.execute("SELECT iteration, meta_strategy FROM psro_iterations "
                                     "ORDER BY iteration").fetchall(),
            "payoffs": sorted(db.execute("SELECT row_snapshot, col_snapshot, value "
                                         "FROM payoffs").fetchall()),
            "matches": sorted(db.execute("SELECT key, seats, returns FROM matches").fetchall()),
        }
    finally:
        db.close()


def test_exact_psro_on_vmas_tag_is_refused_before_any_run_folder(tmp_path):
    exp = _experiment(["population=psro", "game=vmas_tag", "population.oracle=exact",
                       "population.psro.payoffs=exact"])
    with pytest.raises(ValueError) as err:
        run_experiment(exp, tmp_path / "run")
    assert "\n" not in str(err.value) and "players=teams ('adversary'" in str(err.value)
    assert not (tmp_path / "run").exists()


def test_resumed_teams_run_equals_an_uninterrupted_one(tmp_path):
    base = [*TAG_RUN, "population.psro.meta_solver=nash"]
    whole = _state(run_experiment(_experiment([*base, "population.iterations=2"]),
                                  tmp_path / "whole").database)
    run_experiment(_experiment([*base, "population.iterations=1"]), tmp_path / "split")
    split = _state(run_experiment(
        _experiment([*base, "population.iterations=2", "resume=true"]),
        tmp_path / "split").database)
    assert split == whole
    assert [name for name, _ in whole["snapshots"]] == [
        f"psro-{t}-{k}" for t in ("adversary", "good") for k in range(3)]
    assert len(whole["payoffs"]) == 2 * 3 * 3  # the 2-player table: both sides of 3x3
    meta = json.loads(whole["iterations"][-1][1])
    assert set(meta) == {"adversary", "good"}
    seats = json.loads(whole["matches"][0][1])  # each seat plays its team's newest member
    assert len({seats[a] for a in SEATS[:3]}) == 1 and seats["agent_0"] != seats[SEATS[0]]


def test_a_run_from_before_the_setting_resumes_as_seats(tmp_path):
    base = [*TAG_RUN, "population.psro.meta_solver=uniform", "population.iterations=1",
            "population.psro.players=seats"]
    run_experiment(_experiment(base), tmp_path / "old")
    settings = tmp_path / "old" / "settings.json"
    saved = json.loads(settings.read_text())
    del saved["population"]["psro"]["players"]  # as a run recorded before the setting
    settings.write_text(json.dumps(saved))
    auto = [o for o in base if "players" not in o]
    # no iteration recorded yet: the settings say it (a missing field: seats)
    with pytest.raises(ValueError, match="before that setting and its players are seats"):
        _resumed_players(PSROConfig(players="teams"), tmp_path / "old", TAG, TAG_KW, None)
    assert _resumed_players(PSROConfig(), tmp_path / "old", TAG, TAG_KW, None).players == "seats"
    # an iteration recorded: its players say it
    with pytest.raises(ValueError, match="its players are seats .*; resume with players=auto "
                                         "or players=seats"):
        run_experiment(_experiment([*auto, "resume=true", "population.psro.players=teams"]),
                       tmp_path / "old")
    summary = run_experiment(_experiment([*auto, "resume=true"]), tmp_path / "old")
    assert {row["seat"] for row in summary.table} == set(SEATS)  # still 4 seat players
    # once an iteration is recorded, its players decide (whatever settings.json says)
    saved["population"]["psro"]["players"] = "auto"  # as resume_override would record
    settings.write_text(json.dumps(saved))
    summary = run_experiment(_experiment([*auto, "resume=true"]), tmp_path / "old")
    assert {row["seat"] for row in summary.table} == set(SEATS)
    with pytest.raises(ValueError, match="its players are seats"):
        run_experiment(_experiment([*auto, "resume=true", "resume_override=true",
                                    "population.psro.players=teams"]), tmp_path / "old")


def test_cli_trains_psro_teams_on_vmas_tag(tmp_path):
    res = subprocs.run(
        [sys.executable, "-m", "populations.cli", *TAG_RUN, "population.iterations=1",
         "population.psro.meta_solver=nash", f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    db = sqlite3.connect(tmp_path / "run" / "league.db")
    try:
        meta = json.loads(db.execute("SELECT meta_strategy FROM psro_iterations").fetchone()[0])
        payoffs = db.execute("SELECT COUNT(*) FROM payoffs").fetchone()[0]
    finally:
        db.close()
    assert {a: len(p) for a, p in meta.items()} == {"adversary": 2, "good": 2}
    assert payoffs == 2 * 2 * 2


@pytest.mark.parametrize("game, kwargs, decided", [
    # not OpenSpiel, a team of several seats; 2 team players, zero-sum not declared
    ("vmas_tag", [], ("rl", "sampled", "auto")),
    ("mpe_spread", [], ("rl", "sampled", "prd")),  # not OpenSpiel; 3 seat players
    ("kuhn", [], ("exact", "exact", "nash")),
    # imperfect recall: exact tools refuse it, so auto samples
    ("kuhn", ["game.name=openspiel/goofspiel", "game.kwargs.num_cards=4"],
     ("rl", "sampled", "nash")),
])
def test_the_psro_preset_picks_exact_tools_only_where_they_serve_the_game(game, kwargs,
                                                                          decided):
    exp = _experiment(["population=psro", f"game={game}", *kwargs])
    pop = exp.population
    assert (pop.oracle, pop.psro.payoffs, pop.psro.meta_solver) == ("auto",) * 3
    got = resolve_auto(exp, games.make(exp.game.name, **exp.game.kwargs)).population
    assert (got.oracle, got.psro.payoffs, got.psro.meta_solver) == decided
    # a value the user gave is kept, whatever auto would say
    fixed = _experiment(["population=psro", f"game={game}", *kwargs, "population.oracle=rl",
                         "population.psro.payoffs=sampled", "population.psro.meta_solver=uniform"])
    assert resolve_auto(fixed, games.make(exp.game.name, **exp.game.kwargs)) == fixed


def test_the_auto_meta_solver_is_nash_on_constant_sum_payoffs_and_prd_otherwise():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 4))
    zero_sum = np.stack([a, 3.0 - a])  # constant-sum
    auto = get_meta_solver("auto")
    for got, want in zip(auto(zero_sum), get_meta_solver("nash")(zero_sum), strict=True):
        np.testing.assert_array_equal(got, want)
    general = np.stack([a, rng.normal(size=(3, 4))])
    for got, want in zip(auto(general), get_meta_solver("prd")(general), strict=True):
        np.testing.assert_array_equal(got, want)


def test_psro_on_vmas_tag_runs_from_the_preset_defaults(tmp_path):
    """No oracle, payoff or meta-solver setting: the preset's auto picks an RL oracle,
    sampled payoffs, team players and (the team payoffs being constant-sum) nash."""
    run = [o for o in TAG_RUN if not o.startswith(("population.oracle=", "population.psro.pay"))]
    summary = run_experiment(_experiment([*run, "population.iterations=1"]), tmp_path / "run")
    saved = json.loads((tmp_path / "run" / "settings.json").read_text())["population"]
    assert (saved["oracle"], saved["psro"]["payoffs"], saved["psro"]["meta_solver"]) == (
        "rl", "sampled", "auto")
    assert {row["team"] for row in summary.table} == {"adversary", "good"}  # teams, not seats


def test_an_auto_run_records_what_it_decided_and_an_old_exact_run_resumes(tmp_path):
    kuhn = ["population=psro", "game=kuhn", "population.iterations=1", "progress=false",
            "logger=none"]
    run_experiment(_experiment([*kuhn, "population.oracle=exact",
                                "population.psro.payoffs=exact"]), tmp_path / "old")
    saved = json.loads((tmp_path / "old" / "settings.json").read_text())
    assert (saved["population"]["oracle"], saved["population"]["psro"]["payoffs"]) == (
        "exact", "exact")
    # the preset's auto decides exact on kuhn, so the old run's settings still match
    summary = run_experiment(_experiment([*kuhn, "population.iterations=2", "resume=true"]),
                             tmp_path / "old")
    assert len({row["member"] for row in summary.table}) == 2 * 3
    saved = json.loads((tmp_path / "old" / "settings.json").read_text())
    assert saved["population"]["oracle"] == "exact"
