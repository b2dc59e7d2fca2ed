"""A vLLM rollout actor's tiny team, built from the driver's words (llm40).

A Ray rollout actor with ``llm.backend=vllm`` and a tiny model builds its team from the
driver's vocabulary (:func:`~llm_agents.build.tiny_vocabulary`, fix38) and writes each model
to its own folder (``_served``: ``<actor folder>/models/<name>``), which the vLLM engine
loads. The engine reads its tokenizer from that folder and decodes the text the actions are
parsed from (``Generation.text``), while the team encodes prompts with its own tokenizer: the
two must map every id alike, or an actor parses other actions than the driver would. Only
the CPU build was tested with the transformers backend (test_fix38_vocab_actors).

The CPU tests run the actor's build steps after its backend check (``_load`` from the words,
``_served``) and read the folder as vLLM does (``AutoTokenizer``/``AutoConfig``/
``AutoModelForCausalLM.from_pretrained``), then serve it through the backend with the
recording fake engine of test_vllm_fake (vLLM does not run without CUDA). The last test
builds a real :class:`RolloutActor` on vLLM and skips without CUDA and the vllm package.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest
import torch

import llm_agents.build as build
from llm_agents.backends import SamplingConfig, TransformersBackend, VLLMBackend
from llm_agents.build import build_team, tiny_vocabulary
from llm_agents.ray_rollouts import RolloutActor, team_fingerprint
from llm_agents.settings import LLMConfig, TinyModelConfig
from llm_agents.team import Team
from llm_agents.tiny import game_corpus
from llm_agents.trainer import GRPOConfig
from tests.llm_agents.conftest import COMPACT
from tests.llm_agents.test_vllm_fake import FAKE_VLLM

KUHN = ["openspiel/kuhn_poker"]
TINY = LLMConfig(tiny=TinyModelConfig(n_layer=1, n_embd=16, n_head=2), corpus_episodes=3,
                 grpo=GRPOConfig(group_size=2, groups_per_step=2, prompt=COMPACT,
                                 device="cpu"))
VLLM = dataclasses.replace(TINY, backend="vllm")


def _driver(tmp_path, cfg: LLMConfig = TINY):
    team = build_team(cfg, KUHN, workdir=tmp_path / "run")
    return team, next(iter(team.models.values())).tokenizer


def _texts(tok):
    """What the team encodes and the engine decodes: the games' texts, the prompts' words and
    every token of the vocabulary (added ones, the action tags, included)."""
    return [*game_corpus(KUHN[0], 5), COMPACT.static_text(), " ".join(tok.get_vocab())]


def _actor_pairs(tmp_path, team: str, words):
    """The (model, tokenizer) pairs a vLLM actor's ``build_team`` makes past its backend
    check, written where the actor's engine reads them."""
    cfg = dataclasses.replace(VLLM, team=team)
    names = ["shared"] if team == "shared" else build._roles(KUHN, {})
    pairs = build._load(cfg, KUHN, {}, len(names), say=False, vocabulary=words)
    build._served(cfg, pairs, names, tmp_path / "actor")
    return dict(zip(names, pairs, strict=True))


@pytest.mark.parametrize("team", ["shared", "per_role"])
def test_the_served_folder_maps_every_id_as_the_drivers_tokenizer(tmp_path, team):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    driver, dtok = _driver(tmp_path)
    words = tiny_vocabulary(driver)
    for name, (model, tok) in _actor_pairs(tmp_path, team, words).items():
        folder = Path(model.name_or_path)
        assert folder == tmp_path / "actor" / "models" / name
        engine_tok = AutoTokenizer.from_pretrained(folder)  # as vLLM loads it
        assert engine_tok.get_vocab() == tok.get_vocab() == dtok.get_vocab()
        for attr in ("eos_token_id", "pad_token_id", "bos_token_id", "unk_token_id"):
            assert getattr(engine_tok, attr) == getattr(dtok, attr), attr
        for text in _texts(dtok):
            ids = dtok(text).input_ids
            assert engine_tok(text).input_ids == tok(text).input_ids == ids
            assert engine_tok.decode(ids, skip_special_tokens=True) == \
                dtok.decode(ids, skip_special_tokens=True)
        every = list(range(len(dtok)))
        assert [engine_tok.decode([i], skip_special_tokens=True) for i in every] == \
            [dtok.decode([i], skip_special_tokens=True) for i in every]
        config = AutoConfig.from_pretrained(folder)
        assert config.vocab_size == model.get_input_embeddings().num_embeddings >= len(dtok)
        served = AutoModelForCausalLM.from_pretrained(folder).state_dict()
        for key, value in model.state_dict().items():
            torch.testing.assert_close(served[key], value, rtol=0, atol=0, msg=key)


def test_the_engine_decodes_what_the_team_would_and_the_actor_matches_the_driver(tmp_path):
    driver, dtok = _driver(tmp_path)
    ((model, tok),) = _actor_pairs(tmp_path, "shared", tiny_vocabulary(driver)).values()
    actor = Team.shared(model, tok, backend="vllm", vllm_module=FAKE_VLLM, seed=0)
    assert team_fingerprint(actor) == team_fingerprint(driver)  # RayRollouts' own check
    backend = actor.models["shared"].backend
    assert isinstance(backend, VLLMBackend)
    prompts = [dtok(t).input_ids for t in game_corpus(KUHN[0], 4)[:6]]
    sampling = SamplingConfig(max_new_tokens=6, stop=(), temperature=1.0)
    gens = backend.generate_ids(prompts, sampling)
    hf = TransformersBackend(model, tok, seed=0)
    for p, gen in zip(prompts, gens, strict=True):
        assert gen.prompt_ids == p and gen.token_ids
        # the engine's text, decoded from its folder, is the team's decode of the same ids
        assert gen.text == dtok.decode(gen.token_ids, skip_special_tokens=True)
        # and scores the ids it sampled as the transformers copy does
        (score,) = hf.score_ids([p], [[gen.token_ids]])
        assert float(score[0]) == pytest.approx(sum(gen.logprobs), abs=1e-4)


def _vllm_here() -> str | None:
    if not torch.cuda.is_available():
        return "needs a CUDA GPU"
    if importlib.util.find_spec("vllm") is None:
        return "needs the vllm package (pip install 'selfplay[vllm]')"
    return None


@pytest.mark.skipif(_vllm_here() is not None, reason=f"vLLM actor: {_vllm_here()}")
def test_a_vllm_actor_builds_the_drivers_team_and_decodes_as_it(tmp_path):
    # a head size of 64: the attention kernels vLLM picks take it on any GPU (16/2 is 8)
    cfg = dataclasses.replace(TINY, tiny=TinyModelConfig(n_layer=1, n_embd=128, n_head=2))
    driver, dtok = _driver(tmp_path, cfg)
    words = tiny_vocabulary(driver)
    actor = RolloutActor(dataclasses.replace(cfg, backend="vllm"), KUHN, {}, "cuda", 1, {},
                         words)
    folder = actor.workdir.path
    try:
        assert folder is not None and Path(folder).is_dir()
        assert actor.fingerprint() == team_fingerprint(driver)
        assert tiny_vocabulary(actor.player.team) == words
        backend = actor.player.team.models["shared"].backend
        assert isinstance(backend, VLLMBackend)
        assert backend.llm.get_tokenizer().get_vocab() == dtok.get_vocab()
        prompts = [dtok(t).input_ids for t in game_corpus(KUHN[0], 4)[:4]]
        gens = backend.generate_ids(prompts, SamplingConfig(max_new_tokens=4, stop=()))
        for gen in gens:
            assert gen.token_ids and max(gen.token_ids) < len(dtok)
            assert gen.text == dtok.decode(gen.token_ids, skip_special_tokens=True)
    finally:
        for tm in actor.player.team.models.values():
            tm.backend.close()  # the engine and its GPU memory
        actor.close()
    assert not Path(folder).exists()  # the served model's folder goes with the actor
