"""Prompts for real models state the rules, the role, whose turn it is, the history and the
legal actions; invalid output can end the episode (SPIRAL); generate-mode action
probabilities are the behaviour policy (sampled, fallback included), not the scoring softmax."""

from itertools import cycle

import numpy as np
import pytest

import games
from llm_agents.actions import ActionConfig, make_mode, match_action
from llm_agents.backends import Backend, Generation, SamplingConfig
from llm_agents.policy import LLMPolicy
from llm_agents.prompts import (
    GAME_TEXTS,
    REAL_MODEL_PROMPT,
    PromptBuilder,
    PromptConfig,
    game_text,
    prompt_game_name,
    register_game_text,
)
from llm_agents.records import Request
from llm_agents.rollout import EpisodeJob, RolloutEngine
from llm_agents.team import Team
from llm_agents.tiny import build_model
from tests.llm_agents.conftest import KUHN, RELAY

GAMES = [(KUHN, {}), ("openspiel/leduc_poker", {}), ("openspiel/tic_tac_toe", {}),
         ("openspiel/matrix_rps", {}), ("matrix/climbing", {}), ("tool/relay", RELAY),
         ("tool/lookup", {})]


def _prompts(name, kwargs, steps=3):
    """Real-model prompts of the first decisions of one episode (the last action each time)."""
    g = games.make(name, **kwargs)
    ts, out = g.reset(1), []
    builder = PromptBuilder(REAL_MODEL_PROMPT)
    for _ in range(steps):
        if ts.done:
            break
        acts = {}
        for a in ts.acting:
            legal = g.legal_action_texts(a)
            out.append((a, g.spec.agent(a).role, legal, builder.build(
                None, game=name, agent=a, role=g.spec.agent(a).role, role_prompt="",
                observation=g.text_observation(a), legal=legal,
                instruction=REAL_MODEL_PROMPT.generate_instruction)))
            acts[a] = g.legal_actions(a)[-1]
        ts = g.step(acts)
    return out


@pytest.mark.parametrize(("name", "kwargs"), GAMES)
def test_real_model_prompts_state_rules_role_turn_and_legal_actions(name, kwargs):
    for agent, role, legal, prompt in _prompts(name, kwargs):
        assert game_text(name).rules in prompt
        assert f"You are {agent}, playing as {role}" in prompt
        assert f"It is your turn to act, {agent}" in prompt
        assert "Legal actions: " + " | ".join(legal) in prompt
        assert "<action>ACTION</action>" in prompt


def test_poker_and_board_prompts_show_the_history_readably():
    kuhn = [p for *_, p in _prompts(KUHN, {})]
    assert "Betting so far: no moves yet." in kuhn[0]
    assert "Betting so far: player_0 bet." in kuhn[1]
    leduc = [p for *_, p in _prompts("openspiel/leduc_poker", {}, steps=4)]
    assert "Moves in round 1: raise." in leduc[1] and "Your private card:" in leduc[1]
    assert "[Observer" not in leduc[0]
    ttt = [p for *_, p in _prompts("openspiel/tic_tac_toe", {})]
    assert "You play x." in ttt[0] and "You play o." in ttt[1] and "..x" in ttt[1]
    assert GAME_TEXTS[KUHN].view("2pb", "player_0") == (
        "Your card: King.\nBetting so far: player_0 passed, then player_1 bet.")


def test_user_games_get_rules_and_templates_are_checked():
    assert "my_game: on each of your turns" in game_text("my_game").rules
    register_game_text("my_game_rules", "Say higher numbers.", lambda obs, agent: obs.upper())
    try:
        text = PromptBuilder(PromptConfig(system="{rules}", user="{state}|{observation}")).build(
            None, game="my_game_rules", agent="a", role="r", role_prompt="", observation="x",
            legal=["1"], instruction="")
        assert text == "Say higher numbers.\nX|x\n"
    finally:
        GAME_TEXTS.pop("my_game_rules")
    with pytest.raises(ValueError, match=r"^prompt user has a bad slot \{history\}; a slot is a "
                       r"plain \{name\} .* with name one of role, agent, game, "):
        PromptConfig(user="{history}")


def test_prompts_and_tiny_vocabularies_name_games_as_before_names_carried_kwargs():
    """Since spec names carry kwargs ('tool/relay(max_value=2,ops=\'+\')'), prompts, rules
    lookup and a tiny model's vocabulary use the name without them, as before: an LLM run
    started before resumes with the same vocabulary and prompts. OpenSpiel names keep their
    parameters, as they always did."""
    from llm_agents.tiny import build_tokenizer, game_corpus

    named = games.make("tool/relay", max_value=2, ops="+").spec.name
    assert named != "tool/relay" and prompt_game_name(named) == "tool/relay"
    corpus = game_corpus("tool/relay", 3, max_value=2, ops="+")
    assert corpus[-1] == "tool/relay"
    assert not {"max_value", "ops", "("} & set(build_tokenizer(corpus).get_vocab())
    build = PromptBuilder().build
    kw = dict(agent="a", role="r", role_prompt="", observation="x", legal=["1"], instruction="")
    assert build(None, game=named, **kw) == build(None, game="tool/relay", **kw)
    assert "playing tool/relay." in build(None, game=named, **kw)
    leduc = "openspiel/leduc_poker(players=2)"
    assert prompt_game_name(leduc) == leduc and game_text(leduc) is not None
    # only a suffix a spec name writes goes: a user's own parentheses stay, and rules
    # registered under the full name are found first
    for own in ("Connect Four (7x6)", "my(game)", "(weird)", "x(a=1"):
        assert prompt_game_name(own) == own
    register_game_text("tool/relay(max_value=2,ops='+')", "Relay rules for this size.")
    try:
        prompt = PromptBuilder(REAL_MODEL_PROMPT).build(None, game=named, **kw)
        assert "Rules: Relay rules for this size." in prompt and "game tool/relay." in prompt
    finally:
        GAME_TEXTS.pop("tool/relay(max_value=2,ops='+')")


class ScriptedBackend(Backend):
    """A backend whose generations cycle through fixed texts (the behaviour under test is
    the parsing and the fallback, not the model)."""

    def __init__(self, tokenizer, texts):
        self.tokenizer, self.texts = tokenizer, cycle(texts)

    def generate_ids(self, prompt_ids, sampling):
        out = []
        for p in prompt_ids:
            text = next(self.texts)
            ids = self.encode_candidates([text])[0]
            out.append(Generation(text, ids, [0.0] * len(ids), list(p), "stop"))
        return out

    def score_ids(self, prompt_ids, candidate_ids, length_normalize=False):
        return [np.log(np.arange(1, len(c) + 1, dtype=float)) for c in candidate_ids]


def _requests(n=2):
    legal = ["Pass", "Bet"]
    return [Request(f"prompt {i}", legal, [" Pass", " Bet"],
                    lambda t: match_action(t, legal)) for i in range(n)]


SCRIPT = ["<action>Bet</action>", "I fold?", "<action>Pass</action>", "bet"]


@pytest.mark.parametrize(("fallback", "expected"), [("random", [0.375, 0.625]),
                                                    ("first", [0.5, 0.5])])
def test_generate_mode_probabilities_are_the_behaviour_policy(kuhn_tok, fallback, expected):
    backend = ScriptedBackend(kuhn_tok, SCRIPT)
    mode = make_mode(ActionConfig(mode="generate", fallback=fallback, policy_samples=8))
    for probs in mode.probabilities(backend, _requests()):
        np.testing.assert_allclose(probs, expected)  # Bet 2, Pass 1, invalid 1 (per 4)
    score = make_mode(ActionConfig(mode="score")).probabilities(backend, _requests(1))[0]
    np.testing.assert_allclose(score, [1 / 3, 2 / 3])  # the scoring softmax differs


def test_generate_mode_can_refuse_action_probabilities(kuhn_tok):
    mode = make_mode(ActionConfig(mode="generate", policy_samples=0))
    with pytest.raises(ValueError, match=r"not exact and llm.grpo.action.policy_samples=0 "
                       r"asks for no estimate; set llm.grpo.action.policy_samples > 0 .* or "
                       r"population.nash_conv=false"):
        mode.probabilities(ScriptedBackend(kuhn_tok, SCRIPT), _requests())
    with pytest.raises(ValueError, match="policy_samples=-1"):
        ActionConfig(policy_samples=-1)


def test_llm_policy_action_probs_follow_the_mode(kuhn_tok):
    spec = games.make(KUHN).spec
    team = Team.shared(build_model(kuhn_tok), kuhn_tok,
                       backend=ScriptedBackend(kuhn_tok, ["<action>Bet</action>"]))
    policy = LLMPolicy.from_team(team, spec, action=ActionConfig(mode="generate",
                                                                 policy_samples=4))
    vs = games.VectorGame(KUHN, 3, with_text=True).reset()
    agent = next(a for a in vs.acting if vs.acting[a].any())
    np.testing.assert_allclose(policy.action_probs(agent, vs)[vs.acting[agent]], [[0, 1]] * 3)


@pytest.mark.parametrize("on_invalid", ["fallback", "end"])
def test_invalid_output_can_end_the_episode(kuhn_tok, on_invalid):
    team = Team.shared(build_model(kuhn_tok), kuhn_tok,
                       backend=ScriptedBackend(kuhn_tok, ["no idea"]))
    action = ActionConfig(mode="generate", on_invalid=on_invalid, invalid_penalty=-2.0,
                          sampling=SamplingConfig(max_new_tokens=4))
    batch = RolloutEngine(team, action).run([EpisodeJob(KUHN, seed=s) for s in range(4)])
    assert batch.metrics["charts/legal_rate"] == 0.0
    for ep in batch.episodes:
        if on_invalid == "end":  # the first move was invalid: over, unplayed, penalized
            assert ep.length == 0 and ep.info == {"invalid_end": "player_0"}
            assert ep.returns == {"player_0": -2.0, "player_1": 0.0}
            assert [batch.turns[i].reward for i in ep.turns] == [-2.0]
        else:  # fallback moves play the hand out
            assert ep.length >= 2 and len(ep.turns) >= 2
    with pytest.raises(ValueError,
                       match=r"on_invalid='lose' unknown; choose one of \['fallback', 'end'\]"):
        ActionConfig(on_invalid="lose")
