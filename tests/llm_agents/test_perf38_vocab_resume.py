"""A tiny LLM team keeps the vocabulary it built in its run folder and a resume reads it
back instead of playing ``llm.corpus_episodes`` random episodes again (mixed_algo_league
rebuilt it, 43-73 s on a loaded machine, on every resume): the same token ids, and a
damaged file is one line naming it."""

from __future__ import annotations

import dataclasses
import json

import pytest

import llm_agents.build as build
from llm_agents.build import VOCAB_FOLDER, build_team
from llm_agents.settings import LLMConfig, TinyModelConfig
from populations.experiment import run_experiment

KUHN = ["openspiel/kuhn_poker"]
TINY = LLMConfig(tiny=TinyModelConfig(n_layer=1, n_embd=16, n_head=2), corpus_episodes=3)
TEXTS = ["Kuhn poker: you hold K. <action>bet</action>", "pass bet call fold zebra !?"]


def _tokenizer(team):
    return team.models["shared"].tokenizer


@pytest.fixture
def no_corpus(monkeypatch):
    """Building a vocabulary from the games' texts fails the test."""
    def refused(*args, **kwargs):
        raise AssertionError("the vocabulary was built again")

    return lambda: monkeypatch.setattr(build, "game_corpus", refused)


def test_a_run_folder_keeps_its_vocabulary_and_gives_the_same_ids(tmp_path, no_corpus):
    fresh = _tokenizer(build_team(TINY, KUHN, workdir=tmp_path))
    (saved,) = (tmp_path / VOCAB_FOLDER).glob("tiny_vocab_*.json")
    no_corpus()
    again = _tokenizer(build_team(TINY, KUHN, workdir=tmp_path))
    assert again.get_vocab() == fresh.get_vocab() and len(again) == len(fresh)
    assert again(TEXTS)["input_ids"] == fresh(TEXTS)["input_ids"]
    assert again.pad_token_id == fresh.pad_token_id and again.eos_token_id == fresh.eos_token_id
    assert [p.name for p in (tmp_path / VOCAB_FOLDER).iterdir()] == [saved.name]


def test_other_settings_build_their_own_vocabulary(tmp_path):
    build_team(TINY, KUHN, workdir=tmp_path)
    build_team(dataclasses.replace(TINY, corpus_episodes=4), KUHN, workdir=tmp_path)
    build_team(TINY, KUHN, {KUHN[0]: {"players": 3}}, workdir=tmp_path)
    assert len(list((tmp_path / VOCAB_FOLDER).iterdir())) == 3


@pytest.mark.parametrize("content, why", [
    (b'{"format": "selfplay-tiny-vocab-1", "words": ["<pad>", "<e', "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b"[1, 2]", "not a selfplay-tiny-vocab-1 file"),
    (b'{"format": "other", "words": []}', "not a selfplay-tiny-vocab-1 file"),
    (b'{"format": "selfplay-tiny-vocab-1", "words": "abc"}', "not a list of non-empty strings"),
    (b'{"format": "selfplay-tiny-vocab-1", "words": ["<pad>", 3]}', "non-empty strings"),
    (b'{"format": "selfplay-tiny-vocab-1", "words": ["a", "b", "c"]}', "first words are not"),
    (b'{"format": "selfplay-tiny-vocab-1", "words": ["<pad>", "<eos>", "<unk>", "a b"]}',
     "do not rebuild their own ids"),
    (b'{"format": "selfplay-tiny-vocab-1", "words": ["<pad>", "<eos>", "<unk>", "a", "a"]}',
     "do not rebuild their own ids"),
])
def test_a_damaged_saved_vocabulary_is_one_line_naming_it(tmp_path, no_corpus, content, why):
    build_team(TINY, KUHN, workdir=tmp_path)
    (saved,) = (tmp_path / VOCAB_FOLDER).glob("tiny_vocab_*.json")
    saved.write_bytes(content)
    no_corpus()
    with pytest.raises(ValueError, match="is damaged") as err:
        build_team(TINY, KUHN, workdir=tmp_path)
    text = str(err.value)
    assert str(saved) in text and why in text and "delete it" in text and "\n" not in text, text


def test_an_oversized_saved_vocabulary_is_refused_unread(tmp_path, monkeypatch):
    build_team(TINY, KUHN, workdir=tmp_path)
    (saved,) = (tmp_path / VOCAB_FOLDER).glob("tiny_vocab_*.json")
    monkeypatch.setattr(build, "MAX_VOCAB_BYTES", len(saved.read_bytes()) - 1)
    with pytest.raises(ValueError, match=r"is damaged \(over"):
        build_team(TINY, KUHN, workdir=tmp_path)


def test_a_resumed_league_reads_its_vocabulary(tmp_path, no_corpus, caplog):
    """What mixed_algo_league did on every resume, in a league of one tiny LLM member; the
    resume's lines say it reads the saved vocabulary (its member line said "builds")."""
    import logging

    from tests.populations.test_llm_experiments import TINY_LLM, _experiment

    league = ["experiment=kuhn_llm_selfplay", "population.nash_conv=false", *TINY_LLM]
    run_experiment(_experiment([*league, "population.generations=1"]), tmp_path)
    (saved,) = (tmp_path / VOCAB_FOLDER).glob("tiny_vocab_*.json")
    words = json.loads(saved.read_text())["words"]
    assert words[:3] == ["<pad>", "<eos>", "<unk>"] and len(words) > 10
    no_corpus()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        summary = run_experiment(_experiment([*league, "population.generations=2",
                                              "resume=true"]), tmp_path)
    assert {r["version"] for r in summary.table} == {0, 1, 2}
    said = [r.getMessage() for r in caplog.records if "vocabulary" in r.getMessage()]
    assert any("random episodes of openspiel/kuhn_poker, unless its run saved one" in line
               for line in said), said
    assert any(f"reads the vocabulary its run built before from {saved}" in line
               for line in said), said


def test_the_vocabulary_is_kept_where_a_failed_start_removes_it():
    from populations.run_folder_names import RUN_NAMES

    assert VOCAB_FOLDER in RUN_NAMES
