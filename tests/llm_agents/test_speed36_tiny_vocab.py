"""The tiny team's corpus and vocabulary equal what the code before speed36 built: the same
texts (the same random actions: ``legal[rng.integers(0, n)]`` is ``rng.choice(legal)``'s
draw) and the same ids for the same words (each distinct text read once). The old functions
are kept here, whole, as the slow reference."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest

import games
from llm_agents.prompts import prompt_game_name
from llm_agents.tiny import ACTION_TAGS, EOS, PAD, UNK, build_tokenizer, game_corpus


def reference_corpus(game: str, episodes: int, seed: int = 0, **kwargs: Any) -> list[str]:
    g = games.make(game, **kwargs)
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    for e in range(episodes):
        ts = g.reset(seed + e)
        if e == 0:
            for agent in ts.acting:
                for a in range(g.spec.action_spaces[agent].n):
                    with contextlib.suppress(Exception):
                        texts.append(g.action_text(agent, a))
        while not ts.done:
            actions = {}
            for agent in ts.acting:
                texts.append(g.guarded(g.text_observation, agent))
                texts += g.guarded(g.legal_action_texts, agent)
                actions[agent] = int(rng.choice(np.flatnonzero(ts.legal[agent])))
            ts = g.step(actions)
    texts += [a.role for a in g.spec.agents] + list(g.spec.agent_ids) + [
        prompt_game_name(g.spec.name)]
    return texts


def reference_vocab(texts: list[str], chat: bool) -> dict[str, int]:
    from tokenizers import pre_tokenizers

    pre = pre_tokenizers.Whitespace()
    words: dict[str, None] = dict.fromkeys([PAD, EOS, UNK])
    extra = ["system", "user", "assistant", ":"] if chat else []
    for text in [*extra, *texts]:
        for piece in ACTION_TAGS:
            text = text.replace(piece, " ")
        words.update(dict.fromkeys(w for w, _ in pre.pre_tokenize_str(text)))
    return {w: i for i, w in enumerate(words)}


GAMES = [("openspiel/kuhn_poker", 30), ("openspiel/liars_dice", 4),
         ("pettingzoo/mpe2.simple_tag_v3", 3), ("matrix/climbing", 5)]


@pytest.mark.parametrize("game,episodes", GAMES)
def test_corpus_equals_the_reference(game, episodes):
    for seed in (0, 7):
        assert game_corpus(game, episodes, seed=seed) == reference_corpus(game, episodes, seed)


@pytest.mark.parametrize("chat", [False, True])
def test_vocabulary_equals_the_reference(chat):
    texts = ["You are <action>Bet</action> player 0", "Pass Bet", "Pass Bet", "x.y 0.25 [-1e+02]"]
    for game, episodes in GAMES:
        texts += reference_corpus(game, episodes)
    texts += ["late words after repeats", "Pass Bet"]
    tok = build_tokenizer(texts, "{{ x }}" if chat else None)
    ref = reference_vocab(texts, chat)
    vocab = tok.get_vocab()
    assert {w: vocab[w] for w in ref} == ref
    assert set(vocab) - set(ref) == set(ACTION_TAGS)  # added tokens, after the words
    from tokenizers import pre_tokenizers

    pre = pre_tokenizers.Whitespace()
    for text in texts[1:400]:  # each word its reference id
        assert tok(text)["input_ids"] == [ref[w] for w, _ in pre.pre_tokenize_str(text)]
    assert tok("Pass <action>Bet</action>")["input_ids"] == [
        ref["Pass"], tok.convert_tokens_to_ids("<action>"), ref["Bet"],
        tok.convert_tokens_to_ids("</action>")]
