"""Tiny language models built in code, for tests and CPU demos: no download, ever.

* :func:`game_corpus` plays random episodes of games and collects every text an agent can
  see or say (observations, legal action texts, the whole action table);
* :func:`build_tokenizer` makes a word-level tokenizer of that corpus (``tokenizers``
  ``WordLevel`` over ``\\w+|[^\\w\\s]+`` pieces; ``<action>`` and ``</action>`` are single
  tokens; specials ``<pad>``, ``<eos>``, ``<unk>``), optionally with a chat template;
* :func:`build_model` makes a randomly initialized GPT-2- or Llama-style causal LM for that
  tokenizer from a small config (registered architectures, see :data:`ARCHITECTURES`);
* :func:`save_model_dir` writes both as a normal model directory that
  ``AutoModelForCausalLM`` / ``AutoTokenizer.from_pretrained`` (and vLLM) load.

    >>> from llm_agents.tiny import TinyModelConfig, build_model, build_tokenizer, game_corpus
    >>> tok = build_tokenizer(game_corpus("openspiel/kuhn_poker", episodes=20))
    >>> model = build_model(tok, TinyModelConfig(n_layer=1, n_embd=32))
    >>> tok("Pass Bet")["input_ids"] == [tok.convert_tokens_to_ids("Pass"),
    ...                                   tok.convert_tokens_to_ids("Bet")]
    True
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

import games
from llm_agents.prompts import REAL_MODEL_PROMPT, PromptBuilder, PromptConfig, prompt_game_name
from llm_agents.settings import TinyModelConfig  # noqa: F401 - its old home

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
ACTION_TAGS = ("<action>", "</action>")
SIMPLE_CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant :{% endif %}"
)
"""A minimal chat template the tiny tokenizer can carry (``role : content`` lines)."""


def game_corpus(game: str | games.Game, episodes: int = 100, seed: int = 0,
                **kwargs: Any) -> list[str]:
    """Texts of ``episodes`` random episodes: observations, legal and all action texts."""
    g = games.make(game, **kwargs) if isinstance(game, str) else game
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    for e in range(episodes):
        ts = g.reset(seed + e)
        if e == 0:
            for agent in ts.acting:
                for a in range(g.spec.action_spaces[agent].n):
                    with contextlib.suppress(Exception):  # some games name only legal actions
                        texts.append(g.action_text(agent, a))
        while not ts.done:
            actions = {}
            for agent in ts.acting:
                texts.append(g.guarded(g.text_observation, agent))  # a user game's bug:
                texts += g.guarded(g.legal_action_texts, agent)  # one line naming its line
                legal = np.flatnonzero(ts.legal[agent])
                # rng.choice(legal), the same draw without its checks (~3x its cost here)
                actions[agent] = int(legal[rng.integers(0, len(legal))])
            ts = g.step(actions)
    texts += [a.role for a in g.spec.agents] + list(g.spec.agent_ids) + [
        prompt_game_name(g.spec.name)]  # as prompts say it: the same words as older runs
    return texts


def prompt_corpus(game: str | games.Game, prompt: PromptConfig = REAL_MODEL_PROMPT,
                  episodes: int = 5, seed: int = 0, **kwargs: Any) -> list[str]:
    """The prompts ``prompt`` renders (both action modes' instructions) on the turns of
    ``episodes`` random episodes of ``game``: its fixed words, the game's rules, the readable
    state view and the turn line -- the words a tokenizer needs for ``llm=hf``'s prompts
    (:data:`~llm_agents.prompts.REAL_MODEL_PROMPT`) beside :func:`game_corpus`'s."""
    g = games.make(game, **kwargs) if isinstance(game, str) else game
    builder, roles = PromptBuilder(prompt), {a.id: a.role for a in g.spec.agents}
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    for e in range(episodes):
        ts = g.reset(seed + e)
        while not ts.done:
            actions = {}
            for agent in ts.acting:
                for instruction in (prompt.generate_instruction, prompt.score_instruction):
                    texts.append(builder.build(
                        None, game=g.spec.name, agent=agent, role=roles[agent], role_prompt="",
                        observation=g.guarded(g.text_observation, agent),
                        legal=g.guarded(g.legal_action_texts, agent), instruction=instruction))
                legal = np.flatnonzero(ts.legal[agent])
                actions[agent] = int(legal[rng.integers(0, len(legal))])
            ts = g.step(actions)
    return texts


def build_tokenizer(texts: Iterable[str], chat_template: str | None = None) -> Any:
    """A word-level ``transformers`` fast tokenizer whose vocabulary is the words of ``texts``.

    Words are ``\\w+`` runs and runs of punctuation, in order of first appearance (so the same
    texts give the same ids). Decoding joins tokens with spaces; parsing of generated actions
    ignores whitespace differences for that reason.
    """
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    pre = pre_tokenizers.Whitespace()
    words: dict[str, None] = dict.fromkeys([PAD, EOS, UNK])
    extra = ["system", "user", "assistant", ":"] if chat_template else []
    # a text seen before adds no word: each distinct text once, in order (the legal-action
    # texts of every step of every episode were most of a game corpus's texts)
    for text in [*extra, *dict.fromkeys(texts)]:
        for piece in ACTION_TAGS:
            text = text.replace(piece, " ")
        words.update(dict.fromkeys(w for w, _ in pre.pre_tokenize_str(text)))
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.pre_tokenizer = pre
    tok.add_tokens([AddedToken(t, normalized=False) for t in ACTION_TAGS])
    tok.add_special_tokens([PAD, EOS, UNK])
    out = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=EOS,
                                  unk_token=UNK)
    if chat_template:
        out.chat_template = chat_template
    return out


ArchFn = Callable[[TinyModelConfig, int, dict[str, int]], Any]
ARCHITECTURES: dict[str, ArchFn] = {}


def register_arch(name: str) -> Callable[[ArchFn], ArchFn]:
    """Register a tiny architecture builder ``(cfg, vocab_size, special ids) -> model``."""

    def deco(fn: ArchFn) -> ArchFn:
        ARCHITECTURES[name] = fn
        return fn

    return deco


@register_arch("gpt2")
def _gpt2(cfg: TinyModelConfig, vocab: int, ids: dict[str, int]) -> Any:
    from transformers import GPT2Config, GPT2LMHeadModel

    conf = GPT2Config(vocab_size=vocab, n_positions=cfg.n_positions, n_embd=cfg.n_embd,
                      n_layer=cfg.n_layer, n_head=cfg.n_head, resid_pdrop=0.0, embd_pdrop=0.0,
                      attn_pdrop=0.0, activation_function="gelu", **ids)
    return GPT2LMHeadModel(conf)


@register_arch("llama")
def _llama(cfg: TinyModelConfig, vocab: int, ids: dict[str, int]) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    conf = LlamaConfig(vocab_size=vocab, hidden_size=cfg.n_embd, intermediate_size=2 * cfg.n_embd,
                       num_hidden_layers=cfg.n_layer, num_attention_heads=cfg.n_head,
                       num_key_value_heads=cfg.n_head, max_position_embeddings=cfg.n_positions,
                       tie_word_embeddings=True, **ids)
    return LlamaForCausalLM(conf)


def build_model(tokenizer: Any, cfg: TinyModelConfig | None = None) -> Any:
    """A randomly initialized causal LM for ``tokenizer`` (global RNG untouched)."""
    cfg = cfg or TinyModelConfig()
    if cfg.arch not in ARCHITECTURES:
        raise ValueError(f"tiny architecture {cfg.arch!r} unknown; choose one of "
                         f"{sorted(ARCHITECTURES)}")
    ids = {"bos_token_id": tokenizer.eos_token_id, "eos_token_id": tokenizer.eos_token_id,
           "pad_token_id": tokenizer.pad_token_id}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = ARCHITECTURES[cfg.arch](cfg, len(tokenizer), ids)
    return model.eval()


def save_model_dir(path: str | Path, model: Any, tokenizer: Any) -> Path:
    """Write ``model`` and ``tokenizer`` as a model directory; returns the path."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def tiny_model_dir(path: str | Path, games_: Sequence[str | games.Game], prompt_text: str = "",
                   cfg: TinyModelConfig | None = None, chat_template: str | None = None,
                   episodes: int = 100, prompt: PromptConfig | None = REAL_MODEL_PROMPT) -> Path:
    """Build a tokenizer from the games' texts (plus ``prompt_text``, and the words of the
    prompts ``prompt`` renders for them: :func:`prompt_corpus`; default ``llm=hf``'s, the
    preset such a folder is meant for; None: none) and a tiny model, and save both as a
    model directory."""
    texts = [prompt_text] + [t for g in games_ for t in game_corpus(g, episodes)]
    if prompt is not None:
        texts += [t for g in games_ for t in prompt_corpus(g, prompt)]
    tok = build_tokenizer(texts, chat_template)
    return save_model_dir(path, build_model(tok, cfg), tok)
