"""Mutation walk mut41b over llm_agents: behaviours no test pinned, each found by a mutation
that survived every existing test (the mutation is named in each test's docstring)."""

import numpy as np
import pytest
import torch

import games
from llm_agents.actions import (
    ActionConfig,
    behaviour_logprobs,
    game_parser,
    make_mode,
    match_action,
)
from llm_agents.backends import SamplingConfig
from llm_agents.records import Decision, EpisodeRecord, Request, Turn
from llm_agents.rollout import (
    TEAM_SEAT,
    EpisodeJob,
    RolloutBatch,
    RolloutEngine,
    batch_metrics,
    merge_batches,
)
from llm_agents.team import RoleBinding, Team, TeamModel

from .conftest import COMPACT, KUHN, RELAY
from .test_actions import ScriptedBackend


def test_an_ambiguous_reply_names_no_action():
    """``BXC3`` names both ``bxc3`` and ``Bxc3`` once case is ignored: no action, as
    ``Game.parse_action`` refuses it (mutation: the first of several matches won)."""
    legal = ["bxc3", "Bxc3", "Nf3"]
    assert match_action("BXC3", legal) is None
    assert match_action("<action>BXC3</action>", legal) is None
    assert match_action("Bxc3", legal) == 1 and match_action("nF3", legal) == 2


def test_game_parser_returns_an_index_into_the_legal_texts_not_an_action_id():
    """The relay solver's legal action ids are not 0, 1, 2...: the parser maps the game's
    parsed id to its place among the legal actions (mutation: it returned the id itself)."""
    g = games.make("tool/relay", **RELAY)
    g.reset(0)
    g.step({"scout_0": g.parse_action("scout_0", f"send {g.a}")})
    ids, texts = list(g.legal_actions("solver_0")), g.legal_action_texts("solver_0")
    assert ids != list(range(len(ids)))
    parse = game_parser(g, "solver_0", ids, texts)
    assert [parse(f"<action>{t}</action>") for t in texts] == list(range(len(texts)))
    assert parse("answer 99") is None


def test_random_fallback_draws_among_the_legal_actions(kuhn_tok):
    """Invalid output plays the ``random`` fallback: every legal action, about equally often
    (mutation: the fallback always played the first)."""
    mode = make_mode(ActionConfig(mode="generate", fallback="random"))
    legal = ["Pass", "Bet"]
    reqs = [Request("p", legal, legal, lambda t: match_action(t, legal))] * 400
    out = mode.decide(ScriptedBackend(kuhn_tok, ["no idea"]), reqs, np.random.default_rng(0))
    assert not any(d.valid for d in out)
    assert np.mean([d.index for d in out]) == pytest.approx(0.5, abs=0.1)


def _forward_matches_rollout(tok, model, action):
    team = Team.shared(model, tok)
    engine = RolloutEngine(team, action, COMPACT)
    batch = engine.run([EpisodeJob(KUHN, s) for s in range(6)])
    ul = engine.mode.unit_logprobs(model, batch.turns, team.models["shared"].pad_id, "cpu",
                                   with_entropy=True)
    recorded = behaviour_logprobs(batch.turns, ul.mask)
    torch.testing.assert_close(ul.logp * ul.mask, recorded, atol=1e-4, rtol=0)
    return batch, ul


def test_score_mode_training_forward_uses_the_score_temperature(kuhn_tok, make_model):
    """The trainer's softmax over candidates divides by ``score_temperature`` as the rollout
    did, and its entropy is the entropy of that softmax (mutations: the temperature
    dropped from the training forward; the entropy's sign flipped)."""
    action = ActionConfig(mode="score", score_temperature=0.25)
    batch, ul = _forward_matches_rollout(kuhn_tok, make_model(kuhn_tok), action)
    for t, h in zip(batch.turns, ul.entropy[:, 0].tolist(), strict=True):
        p = t.decision.probs
        assert h == pytest.approx(-(p * np.log(p)).sum(), abs=1e-4) and h > 0


def test_generate_mode_training_forward_uses_the_sampling_temperature(kuhn_tok, make_model):
    """Generated tokens' log-probabilities are recomputed at the sampling temperature the
    backend sampled at (mutation: the training forward used temperature 1)."""
    action = ActionConfig(mode="generate",
                          sampling=SamplingConfig(max_new_tokens=3, temperature=0.5))
    _forward_matches_rollout(kuhn_tok, make_model(kuhn_tok), action)


class Tip(games.Game):
    """``giver`` acts first and its move pays ``taker`` 1 at once; then ``taker`` acts and the
    episode ends paying it 0.5: ``taker`` is paid before its first turn."""

    def __init__(self) -> None:
        self.spec = games.GameSpec(
            name="mut41b_tip",
            agents=(games.AgentSpec("giver", role="giver", team="t"),
                    games.AgentSpec("taker", role="taker", team="t")),
            obs_shapes={"giver": (1,), "taker": (1,)},
            action_spaces={a: games.ActionSpace("discrete", n=1) for a in ("giver", "taker")},
            max_steps=2)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        rewards = {"giver": 0.0, "taker": 1.0 if self.t == 1 else 0.5}
        done = self.t == 2
        return games.Transition(rewards, dict.fromkeys(rewards, done),
                                dict.fromkeys(rewards, False))

    def acting_agents(self):
        return (("giver",), ("taker",), ())[self.t]

    def observe(self, agent):
        return np.zeros(1, np.float32)

    def legal_actions(self, agent):
        return [0] if agent in self.acting_agents() else []

    def action_text(self, agent, action):
        return "go"

    def text_observation(self, agent):
        return f"step {self.t}"


def test_a_reward_paid_before_an_agents_first_turn_lands_on_that_turn(kuhn_tok, monkeypatch):
    """What ``taker`` received before its first turn is credited to that turn (mutation: the
    carried reward was dropped)."""
    monkeypatch.setitem(games.registry._REGISTRY, "mut41b_tip", Tip)  # for this test only
    backend = ScriptedBackend(kuhn_tok, ["<action>go</action>"])
    team = Team({"m": TeamModel("m", torch.nn.Linear(1, 1), kuhn_tok, backend)},
                {"*": RoleBinding("m")})
    batch = RolloutEngine(team, ActionConfig(mode="generate"), COMPACT).run(
        [EpisodeJob("mut41b_tip", 0)])
    assert [(t.agent, t.reward) for t in batch.turns] == [("giver", 0.0), ("taker", 1.5)]
    assert batch.episodes[0].returns == {"giver": 0.0, "taker": 1.5}


def test_a_tool_task_ended_by_invalid_output_failed(kuhn_tok):
    """``on_invalid=end`` on a tool task: the unfinished task is a failure (success 0), not an
    episode without a success flag (mutation: the success flag was not set)."""
    backend = ScriptedBackend(kuhn_tok, ["no idea"])
    team = Team({"m": TeamModel("m", torch.nn.Linear(1, 1), kuhn_tok, backend)},
                {"*": RoleBinding("m")})
    action = ActionConfig(mode="generate", on_invalid="end")
    batch = RolloutEngine(team, action, COMPACT).run(
        [EpisodeJob("tool/relay", s, game_kwargs=RELAY) for s in range(3)])
    assert [e.success for e in batch.episodes] == [0.0] * 3
    assert batch.metrics["charts/success_rate"] == 0.0


def _episode(game, returns, seats, info):
    return EpisodeRecord(game, 0, 0, returns, 1, info, [], seats)


def test_batch_metrics_success_counts_forfeits_only_of_games_that_report_success():
    """An episode ended by invalid output counts as a failure only for a game whose other
    episodes report success; Kuhn poker reports none, so no success rate (mutation: every
    forfeit counted as a failure)."""
    team = dict.fromkeys(("player_0", "player_1"), TEAM_SEAT)
    kuhn = [_episode(KUHN, {"player_0": -1.0, "player_1": 0.0}, team,
                     {"invalid_end": "player_0"})]
    assert "charts/success_rate" not in batch_metrics([], kuhn, 1.0, 0)
    relay = [_episode("tool/relay", {"scout_0": 1.0}, {"scout_0": TEAM_SEAT}, {"success": True}),
             _episode("tool/relay", {"scout_0": 0.0}, {"scout_0": TEAM_SEAT},
                      {"invalid_end": "scout_0"})]
    assert batch_metrics([], kuhn + relay, 1.0, 0)["charts/success_rate"] == 0.5


def test_team_return_averages_the_teams_seats_only():
    """``charts/team_return`` is the mean return of the seats the team played, not of the
    fixed policies' seats (mutation: the seat test was inverted)."""
    eps = [_episode(KUHN, {"player_0": 1.0, "player_1": -1.0},
                    {"player_0": TEAM_SEAT, "player_1": "random"}, {}),
           _episode(KUHN, {"player_0": 2.0, "player_1": -2.0},
                    {"player_0": "random", "player_1": TEAM_SEAT}, {})]
    assert batch_metrics([], eps, 1.0, 0)["charts/team_return"] == pytest.approx(-0.5)


def _batch(game, n_episodes):
    turns, episodes = [], []
    for e in range(n_episodes):
        d = Decision(0, True, "", [1], [1, 2], [0.0, 0.0])
        episodes.append(EpisodeRecord(game, e, e, {"a": 1.0}, 1, {}, [len(turns)],
                                      {"a": TEAM_SEAT}))
        turns.append(Turn(e, e, 0, "a", "r", "m", 0, d, 0, float(e)))
    return RolloutBatch(turns, episodes, [game], {"charts/backend_calls": 1.0})


def test_merged_batches_renumber_episodes_turns_and_games():
    """Batches of several rollout workers merge as one: each turn names its own episode (the
    trajectory key of turn returns) and game, each episode its own turns (mutations: the
    episode and the turn indices were left as each worker numbered them)."""
    merged = merge_batches([_batch(KUHN, 2), _batch("tool/relay", 3)], 1.0)
    assert merged.games == [KUHN, "tool/relay"]
    assert [t.episode for t in merged.turns] == [0, 1, 2, 3, 4]
    assert [merged.games[t.game] for t in merged.turns] == [KUHN] * 2 + ["tool/relay"] * 3
    assert [e.turns for e in merged.episodes] == [[0], [1], [2], [3], [4]]
    assert [merged.turns[e.turns[0]].episode for e in merged.episodes] == [0, 1, 2, 3, 4]
    assert merged.metrics["charts/backend_calls"] == 2.0
    assert merged.metrics["charts/generated_tokens"] == 10.0


def test_a_slot_makes_the_game_again_when_the_jobs_kwargs_differ(multi_tok, make_model):
    """One slot plays ``tool/lookup`` with 4 keys, then with 8: the second episode's composer
    chooses among 8 questions (mutation: the slot's game was cached by name alone)."""
    team = Team.shared(make_model(multi_tok), multi_tok)
    engine = RolloutEngine(team, ActionConfig(mode="score"), COMPACT, max_in_flight=1)
    jobs = [EpisodeJob("tool/lookup", 0, game_kwargs={"num_keys": k}) for k in (4, 8)]
    batch = engine.run(jobs)
    firsts = [batch.turns[e.turns[0]] for e in batch.episodes]
    assert [len(t.decision.candidate_ids) for t in firsts] == [4, 8]
