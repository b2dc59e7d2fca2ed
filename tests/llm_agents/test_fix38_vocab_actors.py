"""A tiny team's vocabulary (review38a L3, L4): a saved file nested too deeply, or a folder
in its place, is one line naming it; a Ray rollout actor builds the driver's words instead
of playing ``llm.corpus_episodes`` again in its temporary folder (43-73 s per actor for
mpe_tag), so a resumed driver and its actors agree even where a game's text changed."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
import torch

import llm_agents.build as build
from llm_agents.build import VOCAB_FOLDER, build_team, build_trainer, tiny_vocabulary
from llm_agents.ray_rollouts import RolloutActor, RolloutWorkersConfig, team_fingerprint
from llm_agents.settings import LLMConfig, TinyModelConfig
from llm_agents.trainer import GRPOConfig
from populations.runners import init_ray
from tests.llm_agents.conftest import COMPACT

KUHN = ["openspiel/kuhn_poker"]
TINY = LLMConfig(tiny=TinyModelConfig(n_layer=1, n_embd=16, n_head=2), corpus_episodes=3,
                 grpo=GRPOConfig(group_size=2, groups_per_step=2, prompt=COMPACT,
                                 device="cpu"))


def _saved(tmp_path):
    build_team(TINY, KUHN, workdir=tmp_path)
    (saved,) = (tmp_path / VOCAB_FOLDER).glob("tiny_vocab_*.json")
    return saved


def _no_corpus(monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("the vocabulary was built from the games' texts again")

    monkeypatch.setattr(build, "game_corpus", refused)


def test_a_saved_vocabulary_nested_too_deeply_is_one_line(tmp_path):
    saved = _saved(tmp_path)
    saved.write_bytes(b"[" * 200_000)  # was: RecursionError
    with pytest.raises(ValueError, match="is damaged") as err:
        build_team(TINY, KUHN, workdir=tmp_path)
    text = str(err.value)
    assert str(saved) in text and "nested too deeply" in text and "\n" not in text, text


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_something_else_than_a_file_at_the_vocabulary_is_named(tmp_path, kind):
    saved = _saved(tmp_path)
    saved.unlink()
    saved.mkdir() if kind == "folder" else os.mkfifo(saved)  # folder was: IsADirectoryError
    with pytest.raises(ValueError, match="is not a file") as err:
        build_team(TINY, KUHN, workdir=tmp_path)
    assert str(saved) in str(err.value) and "delete it" in str(err.value)


def _other_words(tmp_path):
    """The run folder's saved vocabulary with one word more: what a resumed driver reads
    where the games' texts changed since the run built it."""
    saved = _saved(tmp_path)
    data = json.loads(saved.read_text())
    data["words"].append("fix38zebra")
    saved.write_text(json.dumps(data))
    return data["words"]


def test_an_actor_builds_the_words_it_is_given_without_the_corpus(tmp_path, monkeypatch):
    words = _other_words(tmp_path)
    driver = build_team(TINY, KUHN, workdir=tmp_path)
    assert tiny_vocabulary(driver) == words
    _no_corpus(monkeypatch)
    for team in ("shared", "per_role"):
        llm = dataclasses.replace(TINY, team=team)
        mine = build_team(llm, KUHN, vocabulary=words)
        actor = RolloutActor(llm, KUHN, {}, "cpu", torch.get_num_threads(), {}, words)
        assert actor.fingerprint() == team_fingerprint(mine)
        assert tiny_vocabulary(actor.player.team) == words
    with pytest.raises(ValueError, match="given to this team is not one"):
        build_team(TINY, KUHN, vocabulary=["a", "b"])


def test_ray_actors_take_a_resumed_drivers_words(tmp_path, ray_local):
    """Before: 'rollout actor 0 built a different team than the learner'."""
    _other_words(tmp_path)
    trainer = build_trainer(TINY, KUHN, workdir=tmp_path, ray_init=init_ray,
                            rollouts=RolloutWorkersConfig(workers=1))
    try:
        assert tiny_vocabulary(trainer.team)[-1] == "fix38zebra"
    finally:
        trainer.rollouts.close()
