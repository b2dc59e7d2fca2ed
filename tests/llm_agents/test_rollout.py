"""Batched multi-game rollouts: one backend call per model per step across all games,
reward credit per turn, fixed policies in seats, per-role teams, determinism."""

import numpy as np
import pytest

import games
from llm_agents.actions import ActionConfig
from llm_agents.backends import SamplingConfig, TransformersBackend
from llm_agents.rollout import EpisodeJob, RolloutEngine, vecstep_of
from llm_agents.team import Team
from marl.train import RandomPolicy

from .conftest import COMPACT, KUHN, RELAY


class CountingBackend(TransformersBackend):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def generate_ids(self, prompt_ids, sampling):
        self.calls += 1
        return super().generate_ids(prompt_ids, sampling)

    def score_ids(self, prompt_ids, candidate_ids, length_normalize=False):
        self.calls += 1
        return super().score_ids(prompt_ids, candidate_ids, length_normalize)


def _jobs(n_per_game):
    jobs = [EpisodeJob(KUHN, s, group=s) for s in range(n_per_game)]
    jobs += [EpisodeJob("tool/relay", s, group=s, game_kwargs=RELAY) for s in range(n_per_game)]
    jobs += [EpisodeJob("tool/lookup", s, group=s) for s in range(n_per_game)]
    return jobs


@pytest.mark.parametrize("mode", ["generate", "score"])
def test_every_step_is_one_backend_call_across_all_games(multi_tok, make_model, mode):
    backend = CountingBackend(make_model(multi_tok), multi_tok)
    team = Team.shared(backend.model, multi_tok, backend=backend)
    action = ActionConfig(mode=mode, sampling=SamplingConfig(max_new_tokens=3))
    batch = RolloutEngine(team, action, COMPACT, max_in_flight=64).run(_jobs(20))
    longest = max(e.length for e in batch.episodes)
    assert backend.calls == longest == batch.metrics["charts/backend_calls"]
    assert len(batch.turns) > 3 * backend.calls * 10  # many decisions per call
    assert batch.games == [KUHN, "tool/relay", "tool/lookup"]
    assert {batch.games[t.game] for t in batch.turns} == set(batch.games)
    assert [e.game for e in batch.episodes] == [j.game for j in _jobs(20)]
    assert "charts/success_rate" in batch.metrics


def test_slots_refill_when_fewer_games_fit_in_flight(multi_tok, make_model):
    team = Team.shared(make_model(multi_tok), multi_tok)
    engine = RolloutEngine(team, ActionConfig(mode="score"), COMPACT, max_in_flight=5)
    batch = engine.run(_jobs(7))
    assert len(batch.episodes) == 21 and all(e.length > 0 for e in batch.episodes)
    for i, e in enumerate(batch.episodes):
        assert all(batch.turns[t].episode == i for t in e.turns)
        assert [batch.turns[t].index for t in e.turns] == list(range(len(e.turns)))


def test_rewards_are_credited_to_each_agents_latest_turn(multi_tok, make_model):
    team = Team.shared(make_model(multi_tok), multi_tok)
    batch = RolloutEngine(team, ActionConfig(mode="score"), COMPACT).run(_jobs(12))
    for e in batch.episodes:
        for agent, ret in e.returns.items():
            own = [batch.turns[i] for i in e.turns if batch.turns[i].agent == agent]
            assert sum(t.reward for t in own) == pytest.approx(ret)
            if own and e.game == KUHN:  # poker pays at the end: all on the last own turn
                assert all(t.reward == 0 for t in own[:-1])


def test_fixed_policies_play_their_seats(multi_tok, make_model):
    spec = games.make(KUHN).spec
    team = Team.shared(make_model(multi_tok), multi_tok)
    rand = RandomPolicy(spec, seed=0)
    jobs = [EpisodeJob(KUHN, s, opponents={"player_1": rand}) for s in range(16)]
    batch = RolloutEngine(team, ActionConfig(mode="score"), COMPACT).run(jobs)
    assert {t.agent for t in batch.turns} == {"player_0"}
    assert all(e.seats == {"player_0": "team", "player_1": "random"} for e in batch.episodes)
    assert all(e.length >= 2 for e in batch.episodes)


def test_per_role_team_routes_each_role_to_its_model(multi_tok, make_model):
    models = {"scout": (make_model(multi_tok, 1), multi_tok),
              "solver": (make_model(multi_tok, 2), multi_tok)}
    team = Team.per_role(models, {"scout": "send A", "solver": "compute"})
    batch = RolloutEngine(team, ActionConfig(mode="score"), COMPACT).run(
        [EpisodeJob("tool/relay", s, game_kwargs=RELAY) for s in range(8)])
    assert {(t.role, t.model) for t in batch.turns} == {("scout", "scout"), ("solver", "solver")}
    with pytest.raises(ValueError, match="no model for role 'player_0'"):
        RolloutEngine(team, ActionConfig(mode="score"), COMPACT).run([EpisodeJob(KUHN, 0)])


def test_same_seed_same_rollouts(multi_tok, make_model):
    model = make_model(multi_tok)

    def run():
        team = Team.shared(model, multi_tok, seed=4)
        action = ActionConfig(mode="generate", sampling=SamplingConfig(max_new_tokens=3))
        b = RolloutEngine(team, action, COMPACT, seed=4).run(_jobs(6))
        return [(t.decision.completion_ids, t.action, t.reward) for t in b.turns]

    assert run() == run()


def test_vecstep_of_games_at_any_state():
    g1, g2 = games.make(KUHN), games.make(KUHN)
    ts1, ts2 = g1.reset(0), g2.reset(1)
    ts2 = g2.step({"player_0": 0})
    vs = vecstep_of([g1, g2], [ts1, ts2])
    assert vs.acting["player_0"].tolist() == [True, False]
    assert vs.acting["player_1"].tolist() == [False, True]
    assert vs.legal_text["player_1"][1] == ["Pass", "Bet"] and vs.text["player_0"][1] == ""
    np.testing.assert_array_equal(vs.obs["player_1"][1], ts2.obs["player_1"])


def test_a_gnn_snapshot_acts_in_a_vecstep_of_games():
    """An LLM team's opponent may be a MAPPO+GNN snapshot (mixed_algo_league): vecstep_of
    carries the entity graph, and the snapshot acts as it does in a VectorGame with graphs
    (it raised 'a GNN policy needs a VectorGame built with with_graphs=True' before)."""
    from marl.actor_critic import NetConfig
    from marl.mappo import MAPPO, MAPPOConfig

    tag, kw = "pettingzoo/mpe2.simple_tag_v3", {"max_cycles": 25}
    gs = [games.make(tag, **kw) for _ in range(2)]
    cfg = MAPPOConfig(net=NetConfig(encoder="gnn", critic="local", gnn_hidden=16))
    pol = MAPPO(gs[0].spec, cfg, seed=0).policy()
    vs = vecstep_of(gs, [g.reset(seed=s) for g, s in zip(gs, (7, 8), strict=True)])
    ref = games.VectorGame(tag, 2, seed=7, with_graphs=True, **kw).reset()
    for agent in gs[0].spec.agent_ids:
        np.testing.assert_array_equal(vs.graph, ref.graph)
        np.testing.assert_allclose(pol.action_probs(agent, vs), pol.action_probs(agent, ref),
                                   rtol=1e-6, atol=1e-7)


def test_an_off_policy_snapshot_in_a_seat_plays_its_argmax(multi_tok, make_model):
    """An LLM team met a QMIX snapshot's exploring play (epsilon from its training) while
    league matches and members' training play it by its argmax (walk 20): with epsilon 1 and
    epsilon 0 the same weights now play the same episodes."""
    from marl import registry

    spec = games.make(KUHN).spec
    learner = registry.get("qmix").build(spec, None, ("player_1",), seed=0)
    team = Team.shared(make_model(multi_tok), multi_tok)

    def play(epsilon):
        jobs = [EpisodeJob(KUHN, s, opponents={"player_1": learner.policy(epsilon=epsilon)})
                for s in range(24)]
        batch = RolloutEngine(team, ActionConfig(mode="score"), COMPACT,
                              seed=0).run(jobs, greedy=False)
        return [e.returns for e in batch.episodes]

    assert play(1.0) == play(0.0)
