"""The ``transformers`` backend: any causal LM that ``AutoModelForCausalLM`` loads, on CPU or GPU.

Generation is a batched sampling loop with a key/value cache over left-padded prompts
(position ids follow the attention mask, so padding never shifts positions); prompts are
grouped into micro-batches of similar length (:func:`length_buckets`), a prompt repeated in
a micro-batch runs its prompt pass once (its cache is copied per row), and rows that hit EOS
or a stop string leave the batch (a hybrid model's cache, e.g. LFM2's conv state, cannot
copy or drop rows: there each prompt runs, and a finished row runs on, its tokens dropped).
The recorded log-probability of each sampled token is taken from the same
temperature-scaled distribution it was sampled from.

Scoring runs each prompt once and its candidates on a repeated key/value cache
(:func:`llm_agents.logprobs.continuation_logprobs`), in length buckets of about
``max_batch_tokens``.

A prompt plus ``max_new_tokens`` (or plus a candidate's tokens) beyond the model's context
(:func:`context_length`) is refused in one line naming both, before any forward pass: a
learned position table would be indexed out of range.

The backend shares its ``nn.Module`` with the trainer, so updated weights are used at once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from llm_agents.backends.base import Backend, Generation, SamplingConfig, register_backend
from llm_agents.logprobs import (
    continuation_logprobs,
    forward_kwargs,
    rows_selectable,
    selects_rows,
    sequence_scores,
)
from llm_agents.settings import TOKENIZER_FILES, model_path  # a model folder's tokenizer files
from marl.core import resolve_device  # re-exported by llm_agents.backends

log = logging.getLogger(__name__)


def load_pretrained(name_or_path: str, device: str | torch.device = "auto",
                    dtype: torch.dtype | None = None) -> tuple[nn.Module, Any]:
    """``(model, tokenizer)`` from a local model directory or a hub name already available.

    Raises:
        ValueError: one line, for a folder without tokenizer files or one that holds no
            causal LM (a ``BertModel``), which ``transformers`` loads anyway.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(name_or_path).expanduser()
    source = str(folder) if model_path(name_or_path) else name_or_path  # '~' expanded
    tokenizer = AutoTokenizer.from_pretrained(source)
    problem = tokenizer_problem(tokenizer, folder if folder.is_dir() else None)
    if problem is None and (folder / "config.json").is_file():  # before its weights load
        problem = causal_problem(*config_architectures(folder / "config.json"))
    if problem is None:
        kwargs = {"dtype": dtype} if dtype is not None else {}
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
        problem = causal_problem(getattr(model.config, "architectures", None),
                                 getattr(model.config, "model_type", None))
    if problem is not None:
        raise ValueError(f"{name_or_path!r} could not be loaded ({problem[0]}); {problem[1]}")
    if tokenizer.pad_token_id is None:  # many chat models ship without a pad token
        tokenizer.pad_token = tokenizer.eos_token
    return model.to(resolve_device(device)), tokenizer


_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def tokenizer_problem(tokenizer: Any, folder: Path | None = None) -> tuple[str, str] | None:
    """Why ``tokenizer`` (``AutoTokenizer``'s, from local ``folder`` if given) cannot serve and
    what to do, or None: from a folder without tokenizer files ``AutoTokenizer`` builds an
    empty one (one special token; text encodes to no ids, and the first forward pass fails)."""
    if tokenizer.encode("Legal actions: Pass, Bet", add_special_tokens=False):
        return None
    fix = "save the tokenizer into the model folder too (tokenizer.save_pretrained(folder))"
    if folder is not None and not any((folder / name).is_file() for name in TOKENIZER_FILES):
        return f"it has no tokenizer files: none of {', '.join(TOKENIZER_FILES)}", fix
    return f"its tokenizer encodes text to no tokens, with {len(tokenizer)} in its vocabulary", fix


def causal_problem(architectures: Any, model_type: Any = None) -> tuple[str, str] | None:
    """Why a model whose config names ``architectures`` is no causal LM and what to do, or
    None (also when the config names none): ``AutoModelForCausalLM`` loads a saved
    ``BertModel`` as a ``BertLMHeadModel`` with an untrained head, which fails later. A
    ``...ForConditionalGeneration`` model (Llama 4, Mistral 3) whose ``model_type`` has a
    causal LM class of its own loads as that class (its language model), so it passes."""
    names = [a for a in architectures if isinstance(a, str)] \
        if isinstance(architectures, list | tuple) else []
    if not names:
        return None
    try:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
        causal = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
        types = dict(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    except ImportError:  # another transformers layout: the class names' suffixes decide
        causal, types = set(), {}
    if any(a in causal or a.endswith(_CAUSAL_SUFFIXES) for a in names):
        return None
    mapped = types.get(model_type) if isinstance(model_type, str) else None
    if isinstance(mapped, str) and mapped.endswith(_CAUSAL_SUFFIXES) and \
            any(a.endswith("ForConditionalGeneration") for a in names):
        return None
    return (f"it holds a {names[0]}, not a causal language model: AutoModelForCausalLM would "
            "add an untrained language-model head",
            "give a causal LM (a ...ForCausalLM or ...LMHeadModel in its config.json's "
            "architectures)")


def config_architectures(config_json: Path) -> tuple[Any, Any]:
    """The ``architectures`` and ``model_type`` a model folder's ``config.json`` names (None
    each if unreadable): :func:`causal_problem`'s arguments."""
    try:
        config = json.loads(config_json.read_bytes())
        return config.get("architectures"), config.get("model_type")
    except (OSError, ValueError, AttributeError):  # left to transformers' own message
        return None, None


def context_length(model: nn.Module) -> int | None:
    """The most positions (prompt plus new tokens) ``model`` takes: its config's
    ``max_position_embeddings`` (GPT-2's ``n_positions``, by the config's attribute map);
    None when the config gives none. Beyond it a learned position table is indexed out of
    range (``IndexError: index out of range in self``)."""
    n = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def _over_context(what: str, prompt: int, extra: int, context: int, lower: str) -> ValueError:
    """The one-line error of a prompt (``prompt`` tokens) and ``extra`` more tokens (``what``)
    over the model's ``context``; ``lower`` says what else to make smaller (ending in "or ")."""
    return ValueError(
        f"a prompt of {prompt} tokens plus {what} does not fit the model's context of "
        f"{context} positions (max_position_embeddings, GPT-2's n_positions, in its config; "
        f"{prompt + extra} needed); shorten the prompt (llm.grpo.prompt: its rules, history "
        f"or instructions), {lower}use a model with a longer context (the tiny model's: "
        "llm.tiny.n_positions)")


def _sample(logits: Tensor, sampling: SamplingConfig,
            gen: torch.Generator) -> tuple[Tensor, Tensor]:
    """Next tokens ``[B]`` and their log-probabilities ``[B]`` from ``logits [B, V]``."""
    logp = torch.log_softmax(logits.float() / sampling.temperature, -1)
    if sampling.greedy:
        tok = logp.argmax(-1)
    else:
        probs = logp.exp()
        if sampling.top_p < 1.0:
            sorted_p, order = probs.sort(-1, descending=True)
            drop = sorted_p.cumsum(-1) - sorted_p > sampling.top_p
            probs = probs.scatter(-1, order, sorted_p.masked_fill(drop, 0.0))
        tok = torch.multinomial(probs, 1, generator=gen).squeeze(-1)
    return tok, logp.gather(-1, tok[:, None]).squeeze(-1)


def length_buckets(lengths: Sequence[int], extra: int, max_tokens: int,
                   slack: float = 1.5) -> list[list[int]]:
    """Indices grouped into micro-batches of similar length, shortest first.

    A micro-batch grows while its padded prompt size stays within ``slack`` times its real
    prompt tokens and its padded size plus ``extra`` generated tokens within ``max_tokens``:
    a batch mixing short (poker) and long (tool-task) prompts is not padded to the longest.
    """
    out: list[list[int]] = []
    cur: list[int] = []
    total = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        n, L = len(cur) + 1, lengths[i]
        if cur and (L * n > slack * (total + L) or (L + extra) * n > max_tokens):
            out.append(cur)
            cur, total = [], 0
        cur.append(i)
        total += L
    return out + [cur] if cur else out


def _cache(out: Any) -> Any:
    return out["cache"] if "cache" in out else out.get("past_key_values")


@register_backend("transformers")
class TransformersBackend(Backend):
    """Generation and scoring with a ``transformers`` causal LM.

    Example::

        >>> from llm_agents.tiny import build_tokenizer, build_model
        >>> tok = build_tokenizer(["Pass Bet"])
        >>> backend = TransformersBackend(build_model(tok), tok, seed=0)
        >>> backend.score(["Pass"], [["Bet", "Pass"]])[0].logprobs.shape
        (2,)

    Args:
        model: the causal LM (shared with the trainer).
        tokenizer: its tokenizer (needs ``eos_token_id``; ``pad_token_id`` defaults to EOS).
        device: where inputs go (default: the model's device).
        seed: seed of the sampling generator.
        max_batch_tokens: scoring and generation are chunked to about this many tokens.
    """

    def __init__(self, model: nn.Module, tokenizer: Any, device: str | torch.device | None = None,
                 seed: int = 0, max_batch_tokens: int = 65536) -> None:
        self.model, self.tokenizer = model, tokenizer
        first = next(model.parameters())
        self.device = torch.device(device) if device is not None else first.device
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos_token; set tokenizer.eos_token first")
        self.eos_id = int(tokenizer.eos_token_id)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad) if pad is not None else self.eos_id
        self.max_batch_tokens = max_batch_tokens
        self.seed = seed
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)
        self._names = forward_kwargs(model)

    @classmethod
    def from_pretrained(cls, name_or_path: str, device: str | torch.device = "auto",
                        dtype: torch.dtype | None = None, **kwargs: Any) -> TransformersBackend:
        """Load a local model directory (or a hub name the user has) and wrap it."""
        model, tokenizer = load_pretrained(name_or_path, device, dtype)
        return cls(model, tokenizer, **kwargs)

    def reseed(self, seed: int) -> None:
        self.generator.manual_seed(seed)

    def to(self, device: str | torch.device) -> TransformersBackend:
        """Move the model and the sampling generator (reseeded) to ``device``."""
        device = torch.device(device)
        if device != self.device:
            self.model.to(device)
            self.device = device
            self.generator = torch.Generator(device=device)
            self.generator.manual_seed(self.seed)
        return self

    # ---------------------------------------------------------------- generation
    def _stop_ids(self, sampling: SamplingConfig) -> list[list[int]]:
        return [ids for s in sampling.stop if (ids := self.encode_candidates([s])[0])]

    @torch.no_grad()
    def generate_ids(self, prompt_ids: Sequence[Sequence[int]],
                     sampling: SamplingConfig) -> list[Generation]:
        self.model.eval()  # no dropout while acting
        lengths = [len(p) for p in prompt_ids]
        context = context_length(self.model)
        if context is not None and lengths and max(lengths) + sampling.max_new_tokens > context:
            raise _over_context(
                f"max_new_tokens={sampling.max_new_tokens}", max(lengths),
                sampling.max_new_tokens, context,
                "lower max_new_tokens (llm.grpo.action.sampling.max_new_tokens) or ")
        out: list[Generation | None] = [None] * len(prompt_ids)
        for bucket in length_buckets(lengths, sampling.max_new_tokens, self.max_batch_tokens):
            gens = self._generate_chunk([prompt_ids[i] for i in bucket], sampling)
            for i, g in zip(bucket, gens, strict=True):
                out[i] = g
        return out  # type: ignore[return-value]

    def _generate_chunk(self, prompt_ids: Sequence[Sequence[int]],
                        sampling: SamplingConfig) -> list[Generation]:
        B, P = len(prompt_ids), max(len(p) for p in prompt_ids)
        ids = torch.full((B, P), self.pad_id, dtype=torch.long)
        attn = torch.zeros((B, P), dtype=torch.long)
        for b, p in enumerate(prompt_ids):  # left padding
            ids[b, P - len(p) :] = torch.tensor(p, dtype=torch.long)
            attn[b, P - len(p) :] = 1
        inputs, attn = ids.to(self.device), attn.to(self.device)
        pos = (attn.cumsum(-1) - 1).clamp_min(0)
        stops = self._stop_ids(sampling)
        tokens: list[list[int]] = [[] for _ in range(B)]
        logps: list[list[float]] = [[] for _ in range(B)]
        finished = [False] * B
        rows = list(range(B))  # rows still generating, in batch order
        keep_kw = {self._names["keep"]: 1} if self._names["keep"] else {}
        res, cache = self._prefill(prompt_ids, inputs, attn, pos, keep_kw)
        for step in range(sampling.max_new_tokens):
            if step:
                res = self.model(input_ids=inputs, attention_mask=attn, position_ids=pos,
                                 use_cache=True, **{self._names["cache"]: cache}, **keep_kw)
                cache = _cache(res)
            tok, lp = _sample(res.logits[:, -1], sampling, self.generator)
            alive = []
            for j, (b, t, p) in enumerate(zip(rows, tok.tolist(), lp.tolist(), strict=True)):
                if finished[b]:  # a row a hybrid cache could not drop: its tokens are not kept
                    continue
                tokens[b].append(t)
                logps[b].append(p)
                if (sampling.stop_at_eos and t == self.eos_id) or any(
                        tokens[b][-len(s):] == s for s in stops):
                    finished[b] = True
                else:
                    alive.append(j)
            if not alive:
                break
            if len(alive) < len(rows) and rows_selectable(cache):
                keep = torch.tensor(alive, device=self.device)  # finished rows stop computing
                cache.batch_select_indices(keep)
                tok, attn, pos = tok[keep], attn[keep], pos[keep]
                rows = [rows[j] for j in alive]
            inputs = tok[:, None]
            attn = torch.cat([attn, attn.new_ones(len(inputs), 1)], 1)
            pos = pos[:, -1:] + 1
        return [
            Generation(
                text=self.tokenizer.decode(t, skip_special_tokens=True), token_ids=t,
                logprobs=lp, prompt_ids=list(p), finish_reason="stop" if f else "length",
            )
            for t, lp, p, f in zip(tokens, logps, prompt_ids, finished, strict=True)
        ]

    def _prefill(self, prompt_ids: Sequence[Sequence[int]], inputs: Tensor, attn: Tensor,
                 pos: Tensor, keep_kw: dict[str, int]) -> tuple[Any, Any]:
        """The prompts' forward pass and its cache, one row per prompt. A prompt repeated in
        the batch (a GRPO group's first turns, a small game's information states) runs once
        and its cache rows are copied, when the model's cache can select rows (learned at its
        first prompt pass: a hybrid model's then runs again in full, once)."""
        first: dict[tuple[int, ...], int] = {}
        same = [first.setdefault(tuple(p), len(first)) for p in prompt_ids]
        if len(first) < len(same) and selects_rows(self.model) is not False:
            lead = []
            for b, u in enumerate(same):
                if u == len(lead):  # the first row with this prompt
                    lead.append(b)
            at = torch.tensor(lead, device=inputs.device)
            res = self.model(input_ids=inputs[at], attention_mask=attn[at], position_ids=pos[at],
                             use_cache=True, **keep_kw)
            cache = _cache(res)
            if selects_rows(self.model, cache):
                rows = torch.tensor(same, device=inputs.device)
                cache.batch_select_indices(rows)
                res.logits = res.logits[rows]
                return res, cache
        res = self.model(input_ids=inputs, attention_mask=attn, position_ids=pos, use_cache=True,
                         **keep_kw)
        selects_rows(self.model, _cache(res))
        return res, _cache(res)

    # ------------------------------------------------------------------- scoring
    @torch.no_grad()
    def score_ids(self, prompt_ids: Sequence[Sequence[int]],
                  candidate_ids: Sequence[Sequence[Sequence[int]]],
                  length_normalize: bool = False) -> list[np.ndarray]:
        self.model.eval()
        scores: dict[int, np.ndarray] = {}
        live = [i for i, c in enumerate(candidate_ids) if c]
        longest = max((len(x) for i in live for x in candidate_ids[i]), default=1)
        context = context_length(self.model)
        over = [(len(prompt_ids[i]), max(len(x) for x in candidate_ids[i])) for i in live]
        if context is not None and over and (worst := max(over, key=sum))[0] + worst[1] > context:
            raise _over_context(f"its candidate action of {worst[1]} tokens", *worst, context,
                                "or ")
        per_prompt = max(1, round(sum(len(candidate_ids[i]) for i in live) / max(1, len(live))))
        buckets = length_buckets([len(prompt_ids[i]) for i in live], longest,
                                 max(1, self.max_batch_tokens // per_prompt))
        for bucket in buckets:
            rows = [live[j] for j in bucket]
            logp, mask = continuation_logprobs(
                self.model, [prompt_ids[i] for i in rows], [candidate_ids[i] for i in rows],
                self.pad_id, self.device)
            flat = sequence_scores(logp, mask, length_normalize).double().cpu().numpy()
            k = 0
            for i in rows:
                scores[i] = flat[k : k + len(candidate_ids[i])]
                k += len(candidate_ids[i])
        return [scores.get(i, np.zeros(0)) for i in range(len(candidate_ids))]
