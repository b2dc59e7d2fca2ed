"""Mutation walk mut41b over llm_agents/prompts.py: behaviours no test pinned, each found by a
mutation that survived every existing test (named in each test's docstring)."""

from games.registry import kwargs_name
from llm_agents.actions import match_action
from llm_agents.prompts import PromptBuilder, PromptConfig, prompt_game_name
from llm_agents.tiny import SIMPLE_CHAT_TEMPLATE, build_tokenizer

LEGAL = ["Pass", "Bet"]
ASK = dict(game="kuhn", agent="player_0", role="r", role_prompt="", observation="1p",
           legal=LEGAL, instruction="")


def _parse(text):
    return match_action(text, LEGAL)


def test_the_reply_is_parsed_after_the_written_response_prefix():
    """A reply continues ``response_prefix``: ``Pass`` after ``<action>`` is closed by the
    parser, and ``Bet</action>`` closes the written tag (mutations: the prefix was not put
    before the reply; the open tag was not closed)."""
    req = PromptBuilder(PromptConfig(response_prefix="<action>")).request(None, **ASK,
                                                                          parse=_parse)
    assert req.prompt.endswith("<action>")
    assert req.parse("Pass") == 0
    assert req.parse("Bet</action> is my move") == 1
    assert req.parse("Pass, Bet") is None


def test_legal_actions_are_joined_with_the_configured_separator():
    """(mutation: the separator was always `` | ``)."""
    cfg = PromptConfig(system="{role}", user="{legal}", legal_separator=" / ")
    assert PromptBuilder(cfg).build(None, **ASK) == "r\nPass / Bet\n"


def test_an_empty_system_part_adds_no_blank_line():
    """(mutation: an empty system part left a leading newline)."""
    cfg = PromptConfig(system="", user="{observation} [{legal}]")
    assert PromptBuilder(cfg).build(None, **ASK) == "1p [Pass | Bet]\n"


def test_candidates_get_the_prefix_only_after_a_plain_text_prompt():
    """After a chat template's generation prompt the action text is scored as it is; after
    a plain prompt, behind ``candidate_prefix`` (mutation: the prefix was always added)."""
    builder = PromptBuilder(PromptConfig(candidate_prefix=" "))
    chat = build_tokenizer(["Pass Bet 1p r player_0 kuhn"], chat_template=SIMPLE_CHAT_TEMPLATE)
    plain = build_tokenizer(["Pass Bet 1p r player_0 kuhn"])
    assert builder.request(chat, **ASK, parse=_parse).candidates == LEGAL
    assert builder.request(plain, **ASK, parse=_parse).candidates == [" Pass", " Bet"]


def test_only_a_suffix_written_by_kwargs_name_is_dropped_from_a_game_name():
    """``walk(x = 1)`` is not how a recorded name writes its kwargs, so prompts say it whole
    (mutation: any parseable suffix was dropped)."""
    assert prompt_game_name(kwargs_name("walk", {"x": 1})) == "walk"
    assert prompt_game_name("walk(x = 1)") == "walk(x = 1)"
    assert prompt_game_name("walk(b=1,a=2)") == "walk(b=1,a=2)"
