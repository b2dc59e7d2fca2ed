"""Action modes: parsing, invalid output (penalty, fallback, counted, never a crash), the
scoring softmax, and the training forward reproducing the rollout's log-probabilities."""

import numpy as np
import pytest
import torch

import games
from llm_agents.actions import ActionConfig, behaviour_logprobs, make_mode, match_action
from llm_agents.backends import Generation, SamplingConfig, TransformersBackend
from llm_agents.backends.base import Backend
from llm_agents.records import Request
from llm_agents.rollout import EpisodeJob, RolloutEngine
from llm_agents.team import RoleBinding, Team, TeamModel

from .conftest import COMPACT, KUHN


class ScriptedBackend(Backend):
    """Replies with fixed texts in turn; scores are given per candidate text."""

    def __init__(self, tokenizer, replies, scores=None):
        self.tokenizer, self.replies, self.scores, self.calls = tokenizer, list(replies), scores, 0

    def generate_ids(self, prompt_ids, sampling):
        self.calls += 1
        out = []
        for p in prompt_ids:
            text = self.replies[len(out) % len(self.replies)]
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            out.append(Generation(text, ids, [-1.0] * len(ids), list(p), "stop"))
        return out

    def score_ids(self, prompt_ids, candidate_ids, length_normalize=False):
        self.calls += 1
        return [np.array([self.scores[self.tokenizer.decode(c)] for c in cands])
                for cands in candidate_ids]


@pytest.mark.parametrize(("text", "index"), [
    ("Bet", 1), ("  pass ", 0), ("I think <action>Bet</action>", 1),
    ("<action>Pass</action> no, <ACTION> bet </ACTION>", 1), ("x ( 0 , 1 )", 2),
    ("Raise", None), ("Bet Pass", None), ("<action></action>", None), ("", None),
])
def test_match_action(text, index):
    assert match_action(text, ["Pass", "Bet", "x(0,1)"]) == index


def test_match_action_reads_the_tag_findall_would():
    """Searching only up to the last closing tag finds the same last tag as before."""
    import random
    import re

    tag = re.compile(r"<action>(.*?)</action>", re.IGNORECASE | re.DOTALL)
    rng = random.Random(0)
    parts = ["<action>", "</action>", "<ACTION>", "</Action>", "Bet", "Pass", " ", "<act"]
    for _ in range(2000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 10)))
        found = tag.findall(text)
        said = found[-1] if found else text
        want = next((i for i, o in enumerate(["Pass", "Bet"])
                     if "".join(said.lower().split()) == o.lower()), None)
        assert match_action(text, ["Pass", "Bet"]) == want, text


@pytest.mark.timeout(60)  # a hang guard: ~10 ms now; the quadratic search took ~9 minutes
def test_match_action_is_linear_in_unclosed_tags():
    """An output of many ``<action>`` tags with no closing one after them (400 KB) made the
    lazy tag search scan to the end from each: 20,000 tags took 83 s to parse."""
    assert match_action("<action>" * 50_000, ["Pass", "Bet"]) is None
    assert match_action("<action>" * 50_000 + "</action><action>Bet</action>" + "<action>" * 50_000,
                        ["Pass", "Bet"]) == 1


def test_invalid_output_gets_penalty_and_fallback_and_is_counted(kuhn_tok):
    replies = ["<action>Bet</action>", "fold!", "Pass"]
    backend = ScriptedBackend(kuhn_tok, replies)
    team = Team({"m": TeamModel("m", torch.nn.Linear(1, 1), kuhn_tok, backend)},
                {"*": RoleBinding("m")})
    action = ActionConfig(mode="generate", invalid_penalty=-0.5, fallback="first")
    engine = RolloutEngine(team, action, COMPACT)
    batch = engine.run([EpisodeJob(KUHN, seed=s) for s in range(3)])
    first_turns = [t for t in batch.turns if t.index == 0]
    assert [t.valid for t in first_turns] == [True, False, True]
    assert first_turns[1].action == 0  # fallback "first" plays the first legal action (Pass)
    assert batch.metrics["charts/invalid_turns"] == sum(not t.valid for t in batch.turns) >= 1
    assert 0 < batch.metrics["charts/legal_rate"] < 1
    for ep in batch.episodes:  # penalties land on the turns, never in the game's returns
        for agent, ret in ep.returns.items():
            turns = [batch.turns[i] for i in ep.turns if batch.turns[i].agent == agent]
            penalty = -0.5 * sum(not t.valid for t in turns)
            assert sum(t.reward for t in turns) == pytest.approx(ret + penalty)


def test_scoring_samples_from_the_softmax_over_legal_texts(kuhn_tok):
    backend = ScriptedBackend(kuhn_tok, [], scores={"Pass": np.log(0.2), "Bet": np.log(0.8)})
    mode = make_mode(ActionConfig(mode="score", score_temperature=1.0))
    reqs = [Request("p", ["Pass", "Bet"], ["Pass", "Bet"], lambda t: None)] * 2000
    decisions = mode.decide(backend, reqs, np.random.default_rng(0))
    assert backend.calls == 1  # one batched call for every request
    np.testing.assert_allclose(decisions[0].probs, [0.2, 0.8])
    assert np.mean([d.index for d in decisions]) == pytest.approx(0.8, abs=0.03)
    assert all(d.valid for d in decisions)
    assert decisions[0].logprobs == [pytest.approx(np.log(decisions[0].probs[decisions[0].index]))]
    hot = make_mode(ActionConfig(mode="score", score_temperature=0.5))
    np.testing.assert_allclose(hot.probabilities(backend, reqs[:1])[0], [0.2**2, 0.8**2] /
                               np.sum([0.2**2, 0.8**2]))
    greedy = mode.decide(backend, reqs[:5], np.random.default_rng(0), greedy=True)
    assert [d.index for d in greedy] == [1] * 5


@pytest.mark.parametrize("mode", ["generate", "score"])
def test_training_forward_reproduces_rollout_logprobs(multi_tok, make_model, mode):
    model = make_model(multi_tok)
    team = Team.shared(model, multi_tok)
    action = ActionConfig(mode=mode, sampling=SamplingConfig(max_new_tokens=3))
    engine = RolloutEngine(team, action, COMPACT)
    jobs = [EpisodeJob(KUHN, s) for s in range(6)]
    jobs += [EpisodeJob("tool/lookup", s, game_kwargs={"num_keys": 4}) for s in range(6)]
    batch = engine.run(jobs)
    ul = engine.mode.unit_logprobs(model, batch.turns, team.models["shared"].pad_id, "cpu")
    recorded = behaviour_logprobs(batch.turns, ul.mask)
    torch.testing.assert_close(ul.logp * ul.mask, recorded, atol=1e-4, rtol=0)
    assert ul.mask.sum(1).tolist() == [len(t.decision.logprobs) for t in batch.turns]


def test_generate_mode_is_greedy_on_request(kuhn_tok, make_model):
    backend = TransformersBackend(make_model(kuhn_tok), kuhn_tok, seed=0)
    mode = make_mode(ActionConfig(mode="generate", sampling=SamplingConfig(max_new_tokens=3)))
    reqs = [Request("player_0\n1 : Pass Bet\n", ["Pass", "Bet"], [], lambda t: None)] * 4
    texts = {d.text for d in mode.decide(backend, reqs, np.random.default_rng(0), greedy=True)}
    assert len(texts) == 1
    game = games.make(KUHN)
    game.reset(0)
    assert match_action("<action> Bet </action>", game.legal_action_texts("player_0")) == 1
