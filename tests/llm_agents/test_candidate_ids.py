"""A backend keeps the token ids of candidate texts it has tokenized (legal-action strings
repeat every turn): the same ids as tokenizing each time, the tokenizer called once per
distinct text, a fresh memo for a new tokenizer, and lists the caller may change."""

from llm_agents.backends import base
from llm_agents.tiny import build_tokenizer
from tests.llm_agents.counting import CountingTokenizer, IdsOnly

TEXTS = ["bet", "pass", "call the bet", "fold", ""]


def test_candidate_ids_are_tokenized_once_per_text_and_match_the_tokenizer():
    tok = build_tokenizer(TEXTS)
    counting = CountingTokenizer(tok)
    b = IdsOnly(counting)
    want = [list(tok(t, add_special_tokens=False)["input_ids"]) or [int(tok.eos_token_id)]
            for t in TEXTS]
    assert b.encode_candidates(TEXTS) == want
    assert b.encode_candidates(TEXTS[::-1]) == want[::-1]
    assert sorted(counting.calls) == sorted(TEXTS)  # the second call tokenized nothing
    b.encode_candidates(["bet"])[0].append(999)  # a caller's list is its own
    assert b.encode_candidates(["bet"]) == [want[0]]

    other = CountingTokenizer(build_tokenizer(["bet pass"]))
    b.tokenizer = other  # another tokenizer: its own ids, not the old memo's
    assert b.encode_candidates(["bet"]) == [list(other.tok("bet", add_special_tokens=False)
                                                 ["input_ids"])]
    assert other.calls == ["bet"]


def test_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(base, "CANDIDATE_MEMO", 3)
    b = IdsOnly(build_tokenizer(TEXTS))
    b.encode_candidates(TEXTS)
    assert len(b._candidate_ids[1]) <= 3
