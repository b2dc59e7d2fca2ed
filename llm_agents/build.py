"""Build an LLM team and its trainer from one config (what ``configs/llm/`` presets set).

``model: tiny`` builds a word-level tokenizer from the games' own texts and a tiny
random-init causal LM in code (no download, for CPU demos and tests); any other value is a
local model directory or a hub name the user has, loaded with ``transformers``
(``AutoTokenizer`` / ``AutoModelForCausalLM``). ``team: shared`` binds every role to one
model; ``team: per_role`` gives each role of the games its own copy.

Real models (``configs/llm/hf.yaml``): ``lora`` wraps each model with ``peft`` LoRA
adapters (base frozen), ``gradient_checkpointing`` recomputes activations in the backward
pass, and ``dtype: auto`` loads the base in bfloat16 where that is safe -- a CUDA GPU with
bf16 and LoRA on (the trained adapters stay float32); full fine-tuning stays float32, since
AdamW steps of lr ~1e-6 vanish in bfloat16 weights.

    >>> from llm_agents.build import LLMConfig, build_trainer
    >>> from llm_agents.tiny import TinyModelConfig
    >>> cfg = LLMConfig(tiny=TinyModelConfig(n_layer=1, n_embd=16), corpus_episodes=20)
    >>> trainer = build_trainer(cfg, ["openspiel/kuhn_poker"], device="cpu")
    >>> sorted(trainer.team.models)
    ['shared']
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

import games
from llm_agents.backends.hf import (
    causal_problem,
    config_architectures,
    context_length,
    tokenizer_problem,
)
from llm_agents.lora import apply_lora, is_lora, merged_state_dict
from llm_agents.prompts import PromptConfig
from llm_agents.settings import (  # noqa: F401 - LLMConfig's old home: re-exported
    BACKENDS,
    DTYPES,
    TEAMS,
    GRPOConfig,
    LLMConfig,
    LoRAConfig,
    TinyModelConfig,
    check_backend_here,
    check_model_folder,
    model_path,
)
from llm_agents.team import Team
from llm_agents.tiny import (
    EOS,
    PAD,
    UNK,
    build_model,
    build_tokenizer,
    game_corpus,
    save_model_dir,
)
from llm_agents.trainer import MultiTurnGRPO
from marl.core import derive_seed, resolve_device
from marl.fileio import atomic_write

if TYPE_CHECKING:
    from llm_agents.ray_rollouts import RolloutWorkersConfig

log = logging.getLogger(__name__)
# set in vocabulary_said(): a caller's own line said what a tiny team's build spends its time on
_VOCABULARY_SAID: ContextVar[bool] = ContextVar("llm_tiny_vocabulary_said", default=False)


@contextmanager
def vocabulary_said() -> Iterator[None]:
    """A block whose tiny LLM teams' builds leave their ``building the LLM team: llm=tiny
    builds its vocabulary ...`` line to the caller, which said it (a league's member line,
    ``league member 1/2: building llm (llm_grpo; llm=tiny builds its vocabulary ...)``)."""
    token = _VOCABULARY_SAID.set(True)
    try:
        yield
    finally:
        _VOCABULARY_SAID.reset(token)


def _prepare(cfg: LLMConfig, model: Any, k: int = 0) -> Any:
    """Gradient checkpointing and LoRA adapters, as ``cfg`` asks (model ``k``'s adapters
    initialized from its own seed: peft draws them from the global torch RNG)."""
    if cfg.gradient_checkpointing:
        kwargs = {"use_reentrant": False}  # non-reentrant: frozen (LoRA) inputs are fine
        model.config.use_cache = False  # training passes; generation asks for its cache
        if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5 names it so
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    if cfg.dtype == "bfloat16" and cfg.lora.r == 0:
        log.warning("llm dtype bfloat16 with full fine-tuning: small AdamW steps may round away")
    with torch.random.fork_rng(devices=[]):  # same seed, same adapters; global RNG untouched
        torch.manual_seed(derive_seed(cfg.grpo.seed, "lora", k))
        return apply_lora(model, cfg.lora)


def _roles(games_: Sequence[str], game_kwargs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    roles: list[str] = []
    for g in games_:
        for a in games.make(g, **game_kwargs.get(g, {})).spec.agents:
            if a.role not in roles:
                roles.append(a.role)
    return roles


VOCAB_FOLDER = "models"
"""Where in a run folder tiny vocabularies are kept (:func:`_tiny_tokenizer`), as
``tiny_vocab_<hash>.json``: the folder of the tiny models vLLM serves, one of the names a run
writes (``populations.run_folder_names.RUN_NAMES``: a failed start removes it)."""
VOCAB_FORMAT = "selfplay-tiny-vocab-1"
MAX_VOCAB_BYTES = 64 * 2**20  # a saved vocabulary read back: mpe_tag's 200 episodes ~20 KB


def _vocab_file(workdir: str | Path | None, static: Sequence[str],
                corpus: Sequence[tuple[str, int, int, dict[str, Any]]]) -> Path | None:
    """Where a run keeps the tiny vocabulary of these texts (None: no run folder). Its name
    is a hash of everything the vocabulary is built from, so a resume with other settings
    (games, their kwargs, corpus_episodes, seed, prompts) builds its own."""
    if workdir is None:
        return None
    recipe = json.dumps({"format": VOCAB_FORMAT, "static": list(static), "corpus": corpus},
                        sort_keys=True, default=repr)
    digest = hashlib.sha256(recipe.encode()).hexdigest()
    return Path(workdir) / VOCAB_FOLDER / f"tiny_vocab_{digest}.json"


def _tiny_tokenizer(cfg: LLMConfig, games_: Sequence[str],
                    game_kwargs: Mapping[str, Mapping[str, Any]],
                    workdir: str | Path | None, say: bool,
                    vocabulary: Sequence[str] | None = None) -> Any:
    """The word-level tokenizer of a tiny team: built from the games' texts (seconds to
    minutes: mpe_tag's 200 random episodes took 43-73 s on a loaded machine) and saved in
    ``workdir/models/``, or read back from there -- a resumed run's tokenizer is the one
    its checkpoint was trained with, the same token ids, without the corpus. ``vocabulary``
    (:func:`tiny_vocabulary` of the driver's team, given to a rollout actor): those words,
    neither the corpus played again nor a file read."""
    if vocabulary is not None:
        return _from_words(list(vocabulary), lambda why: ValueError(
            f"the tiny LLM vocabulary given to this team is not one ({why})"))
    static = [cfg.grpo.prompt.static_text(), PromptConfig().static_text(),
              *cfg.role_prompts.values()]
    corpus = [(g, cfg.corpus_episodes, cfg.grpo.seed + i, dict(game_kwargs.get(g, {})))
              for i, g in enumerate(games_)]
    path = _vocab_file(workdir, static, corpus)
    said = not say or _VOCABULARY_SAID.get()  # a caller (a league's member line) said it
    if path is not None and os.path.lexists(path) and not path.is_file():  # a folder, a FIFO
        raise ValueError(f"the tiny LLM vocabulary {path} is not a file; delete it and the "
                         "run builds it again from the games' texts")
    if path is not None and path.is_file():
        if say:  # said even after a league's member line, which says a resume may read it
            log.info("building the LLM team: llm=tiny reads the vocabulary its run built "
                     "before from %s", path)
        return _read_vocab(path)
    if not said:  # seconds to minutes (mpe_tag, liars_dice loaded): a single run said
        log.info("building the LLM team: llm=tiny builds its vocabulary from "  # nothing
                 "llm.corpus_episodes=%d random episodes of %s", cfg.corpus_episodes,
                 ", ".join(games_))
    texts = list(static)
    for g, episodes, seed, kwargs in corpus:
        texts += game_corpus(g, episodes, seed=seed, **kwargs)
    tok = build_tokenizer(texts)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"format": VOCAB_FORMAT, "words": _words(tok)}))
    return tok


def tiny_vocabulary(team: Team) -> list[str]:
    """The words of a tiny team's vocabulary (one for all its models) in id order, for
    :func:`build_team`'s ``vocabulary``: a rollout actor's copy of the driver's team."""
    return _words(next(iter(team.models.values())).tokenizer)


def _words(tok: Any) -> list[str]:
    """A tiny tokenizer's words in id order (its action tags, added tokens, left out)."""
    vocab = tok.backend_tokenizer.get_vocab(with_added_tokens=False)
    return sorted(vocab, key=vocab.__getitem__)


def _read_vocab(path: Path) -> Any:
    """The tokenizer of a vocabulary :func:`_tiny_tokenizer` saved: a file in the run folder
    read as untrusted input, checked to rebuild the very ids it lists; anything else is one
    ``ValueError`` line naming it."""
    def damaged(why: str) -> ValueError:
        return ValueError(f"the tiny LLM vocabulary saved in {path} is damaged ({why}); delete "
                          "it and the run builds it again from the games' texts")

    with open(path, "rb") as fh:
        raw = fh.read(MAX_VOCAB_BYTES + 1)
    if len(raw) > MAX_VOCAB_BYTES:
        raise damaged(f"over {MAX_VOCAB_BYTES // 2**20} MiB")
    try:
        data = json.loads(raw)
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
        raise damaged(f"not JSON: {err}") from None
    except RecursionError:  # '[' * 200_000: escaped as a traceback
        raise damaged("not JSON: nested too deeply") from None
    words = data.get("words") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("format") != VOCAB_FORMAT:
        raise damaged(f"not a {VOCAB_FORMAT} file")
    if not isinstance(words, list):
        raise damaged("its words are not a list of non-empty strings")
    return _from_words(words, damaged)


def _from_words(words: list[Any], damaged: Callable[[str], ValueError]) -> Any:
    """The tiny tokenizer of ``words`` (in id order, as :func:`_words` lists them), checked
    to rebuild the very ids they list; ``damaged(why)`` is the error raised otherwise."""
    if not all(isinstance(w, str) and w for w in words):
        raise damaged("its words are not a list of non-empty strings")
    if words[:3] != [PAD, EOS, UNK]:
        raise damaged(f"its first words are not {PAD}, {EOS}, {UNK}")
    tok = build_tokenizer(words[3:])
    if _words(tok) != words:  # a repeated word, or one that is not one token of its own
        raise damaged("its words do not rebuild their own ids")
    return tok


def _load(cfg: LLMConfig, games_: Sequence[str], game_kwargs: Mapping[str, Mapping[str, Any]],
          count: int, say: bool = True,
          workdir: str | Path | None = None,
          vocabulary: Sequence[str] | None = None) -> list[tuple[Any, Any]]:
    """``count`` (model, tokenizer) pairs; tiny models differ by their init seed. ``say``:
    a tiny team's build says first what it spends its time on, unless a caller said it
    (:func:`vocabulary_said`); ``workdir``: the run folder a tiny vocabulary is kept in;
    ``vocabulary``: a tiny team's words, given (:func:`tiny_vocabulary`)."""
    if cfg.model == "tiny":
        tok = _tiny_tokenizer(cfg, games_, game_kwargs, workdir, say, vocabulary)
        return [(_prepare(cfg, build_model(tok, dataclasses.replace(cfg.tiny,
                                                                     seed=cfg.tiny.seed + k)), k),
                 tok) for k in range(count)]
    if cfg.model == "???":  # Hydra's mark for a value the user must give (configs/llm/hf.yaml)
        raise ValueError("llm.model is not set; give llm.model=<model directory or hub name>")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = cfg.torch_dtype(resolve_device(cfg.grpo.device))
    folder = Path(cfg.model).expanduser()
    local = model_path(cfg.model)  # a path, not a hub name
    # transformers does not expand '~': '~/models/x' was refused as a bad hub id (~19 s in)
    source = str(folder) if local else cfg.model
    if local:
        check_model_folder(cfg.model)  # as LLMConfig did: the folder may have gone since
        _check_json_files(cfg.model, folder)
        _refuse(cfg.model, causal_problem(*config_architectures(folder / "config.json")))

    def load(**kw: Any) -> tuple[Any, list[Any]]:
        # AutoModel's look for a LoRA adapter_config.json does not take local_files_only
        # from its caller (transformers 5): it is given again, or it asks the hub (retrying)
        adapter = {"adapter_kwargs": {"local_files_only": True}} if kw else {}
        tok = AutoTokenizer.from_pretrained(source, **kw)
        _refuse(cfg.model, tokenizer_problem(tok, folder if local else None))  # before weights
        models = [AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **kw, **adapter)
                  for _ in range(count)]
        _refuse(cfg.model, causal_problem(models[0].config.architectures,
                                            models[0].config.model_type))  # a hub model's
        return tok, models

    from safetensors import SafetensorError

    try:
        with _load_reports_held() as reports:
            try:  # a folder, or a hub name in the local cache: no request (offline, each
                tok, models = load(local_files_only=True)  # file's check retried ~50 s)
            except OSError:
                if local:
                    raise
                _reach_hub(cfg.model)  # one request, no retries: refused here when offline
                tok, models = load()  # a download
    except OSError as err:
        text = str(err).strip().splitlines()[0]
        raise ValueError(f"llm.model={cfg.model!r} could not be loaded ({text}); give 'tiny', "
                         "a local model directory or a hub name available here") from err
    except SafetensorError as err:  # a truncated file: "invalid header length", a traceback
        raise ValueError(f"llm.model={cfg.model!r} could not be loaded (its safetensors weights "
                         f"are damaged: {str(err).strip()}); copy or download them again") \
            from None
    except RuntimeError as err:  # sizes in config.json other than the weights'
        mismatch = _size_mismatch(err, reports)
        if mismatch is None:
            raise
        raise ValueError(f"llm.model={cfg.model!r} could not be loaded (its weights do not "
                         f"match its config.json{mismatch}); give the config.json saved with "
                         "these weights") from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return [(_prepare(cfg, m, k), tok) for k, m in enumerate(models)]


def _refuse(model: str, problem: tuple[str, str] | None) -> None:
    """The one-line error of a model that loads but cannot serve (``problem``: why, and what
    to do), if any."""
    if problem is not None:
        raise ValueError(f"llm.model={model!r} could not be loaded ({problem[0]}); {problem[1]}")


def _check_context(cfg: LLMConfig, pairs: Sequence[tuple[Any, Any]]) -> None:
    """Refuse ``max_new_tokens`` that leaves no position of a model's context for a prompt
    (a prompt's own length is known at its first generation: the backend names it)."""
    new = cfg.grpo.action.sampling.max_new_tokens
    for model, _ in pairs:
        context = context_length(model)
        if cfg.grpo.action.mode == "generate" and context is not None and new >= context:
            of = ("the tiny model (llm.tiny.n_positions)" if cfg.model == "tiny" else
                  f"llm.model={cfg.model!r} (max_position_embeddings, GPT-2's n_positions, in "
                  "its config.json)")
            raise ValueError(f"llm.grpo.action.sampling.max_new_tokens={new} leaves no room for "
                             f"a prompt in the context of {context} positions of {of}; lower "
                             "max_new_tokens or use a model with a longer context")


_JSON_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
               "special_tokens_map.json")


def _check_json_files(model: str, folder: Path) -> None:
    """A model folder's JSON files that do not parse (a copy stopped half way), named in one
    line: transformers' JSONDecodeError named no file ('Expecting value: line 59 column 7')."""
    for name in _JSON_FILES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            json.loads(path.read_bytes())
        except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
            raise ValueError(f"llm.model={model!r} could not be loaded (its {name} is damaged: "
                             f"{err}); copy or download it again") from None


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SHAPE = r"torch\.Size\((\[[^\]]*\])\)"
_REPORTED = re.compile(rf"^(\S+)\s*\|\s*MISMATCH\s*\|.*?ckpt: {_SHAPE} vs model: ?{_SHAPE}", re.M)
_RAISED = re.compile(rf"size mismatch for (\S+?): copying a param with shape {_SHAPE} from "
                     rf"checkpoint, the shape in current model is {_SHAPE}")


@contextmanager
def _load_reports_held() -> Iterator[list[logging.LogRecord]]:
    """transformers' load report (a table of tensors, logged as one multi-line warning) held
    back while models load: logged after a load that succeeds, read for the one-line error of
    one that fails (the table came before the traceback)."""
    logger = logging.getLogger("transformers.modeling_utils")
    held: list[logging.LogRecord] = []

    def hold(record: logging.LogRecord) -> bool:
        if "LOAD REPORT" in str(record.msg):
            held.append(record)
            return False
        return True

    logger.addFilter(hold)
    try:
        yield held
    finally:
        logger.removeFilter(hold)
    for record in held:  # not reached when the load raised
        logger.handle(record)


def _size_mismatch(err: RuntimeError, reports: Sequence[logging.LogRecord]) -> str | None:
    """For transformers' refusal of weights whose shapes differ from the config's: the first
    such tensor, `` (name: [27, 16] in the weights, [27, 32] by config.json)`` ('' when none is
    named); None for any other ``RuntimeError``."""
    text = str(err)
    if "ignore_mismatched_sizes" not in text and "size mismatch" not in text:
        return None
    found = _RAISED.search(text) or next(
        (m for r in reports if (m := _REPORTED.search(_ANSI.sub("", r.getMessage())))), None)
    return f" ({found[1]}: {found[2]} in the weights, {found[3]} by config.json)" if found \
        else ""


def _reach_hub(name: str) -> None:
    """Ask the hub once, without retries, for model ``name`` (not in the local cache): a
    one-line ``ValueError`` when the hub cannot be reached (an offline machine: Hugging Face's
    own download retried each file for ~50 s, ~40 warning lines), has no such model, or
    ``name`` cannot be one; other answers (gated, rate-limited) are left to the download."""
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError, RepositoryNotFoundError

    where = (f"llm.model={name!r} is not in the local Hugging Face cache "
             f"({constants.HF_HUB_CACHE})")
    fix = ("; give a local model directory (saved with save_pretrained) or run where the hub "
           "is reachable")
    if constants.HF_HUB_OFFLINE:
        raise ValueError(f"{where} and HF_HUB_OFFLINE is set{fix}")
    try:
        HfApi().model_info(name, timeout=constants.HF_HUB_ETAG_TIMEOUT)
    except RepositoryNotFoundError:
        raise ValueError(f"{where} and the hub has no model {name!r} (a private one needs "
                         f"`hf auth login`){fix}") from None
    except HFValidationError as err:
        raise ValueError(f"llm.model={name!r} is neither a local directory nor a hub name "
                         f"({err})") from None
    except HfHubHTTPError:
        return
    except Exception as err:  # noqa: BLE001 - the HTTP library's transport errors (httpx,
        # httpx2 or requests, as huggingface_hub's version has it): no route, DNS, timeout
        raise ValueError(f"{where} and the hub could not be reached ({type(err).__name__}: "
                         f"{str(err).strip().splitlines()[0] if str(err).strip() else ''})"
                         f"{fix}") from None


def _served(cfg: LLMConfig, pairs: list[tuple[Any, Any]], names: Sequence[str],
            workdir: str | Path | None) -> None:
    """vLLM serves model directories: write tiny models to ``workdir/models/<name>``."""
    if cfg.backend != "vllm" or cfg.model != "tiny":
        return
    if workdir is None:
        raise ValueError("llm backend 'vllm' with model 'tiny' needs a folder to write the "
                         "model to (pass workdir)")
    for (model, tok), name in zip(pairs, names, strict=True):
        served = model
        if is_lora(model):  # vLLM serves the plain architecture: the adapters merged in
            from transformers import AutoModelForCausalLM

            served = AutoModelForCausalLM.from_config(model.config)
            served.load_state_dict(merged_state_dict(model))
        path = save_model_dir(Path(workdir) / "models" / name, served, tok)
        model.config._name_or_path = model.name_or_path = str(path)


def build_team(cfg: LLMConfig, games_: Sequence[str],
               game_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
               workdir: str | Path | None = None, warn: bool = True,
               vocabulary: Sequence[str] | None = None) -> Team:
    """The team ``cfg`` describes for ``games_`` (their roles, their texts for tiny models);
    ``workdir`` (the run folder) keeps a tiny team's vocabulary, read back by a resume, and
    tiny models written for the vLLM backend. ``warn=False`` (a rollout
    actor's copy of the driver's team) leaves the settings' warnings and a tiny team's
    vocabulary line to the driver. ``vocabulary``: a tiny team's words in id order (the
    driver's :func:`tiny_vocabulary`, given to its rollout actors: the same ids, and no
    actor plays ``llm.corpus_episodes`` again); ignored for other models."""
    check_backend_here(cfg.backend)  # before the models load (seconds for a real one)
    kw = game_kwargs or {}
    roles = _roles(games_, kw)
    # a misspelled role's prompt (+llm.role_prompts.scuot=...) was dropped without a word
    unused = cfg.unused_role_prompts(roles, ", ".join(games_))
    for note in (unused, cfg.tiny_settings_note(), cfg.grpo.group_of_one_note()) if warn else ():
        if note:
            log.warning(note)
    backend_kw: dict[str, Any] = {"seed": cfg.grpo.seed}
    if cfg.team == "shared":
        pairs = _load(cfg, games_, kw, 1, say=warn, workdir=workdir, vocabulary=vocabulary)
        _check_context(cfg, pairs)
        _served(cfg, pairs, ["shared"], workdir)
        ((model, tok),) = pairs
        return Team.shared(model, tok, cfg.role_prompts, backend=cfg.backend, **backend_kw)
    pairs = _load(cfg, games_, kw, len(roles), say=warn, workdir=workdir,
                  vocabulary=vocabulary)
    _check_context(cfg, pairs)
    _served(cfg, pairs, roles, workdir)
    return Team.per_role(dict(zip(roles, pairs, strict=True)), cfg.role_prompts,
                         backend=cfg.backend, **backend_kw)


def build_trainer(cfg: LLMConfig, games_: Sequence[str],
                  game_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
                  seed: int | None = None, device: str | None = None,
                  workdir: str | Path | None = None,
                  rollouts: RolloutWorkersConfig | None = None,
                  ray_init: Callable[[str | None, int], Any] | None = None) -> MultiTurnGRPO:
    """A :class:`MultiTurnGRPO` over a fresh team; ``seed``/``device`` override ``cfg.grpo``;
    ``rollouts`` plays its episodes on workers (Ray actors: ``ray_init`` starts or joins Ray,
    see :mod:`llm_agents.ray_rollouts`)."""
    over: dict[str, Any] = {}
    if seed is not None:
        over["seed"] = seed
    if device is not None:
        over["device"] = device
    cfg = dataclasses.replace(cfg, grpo=dataclasses.replace(cfg.grpo, **over))
    team = build_team(cfg, games_, game_kwargs, workdir)
    trainer = MultiTurnGRPO(team, list(games_), cfg.grpo, game_kwargs=game_kwargs)
    if rollouts is not None:
        from llm_agents.ray_rollouts import make_rollouts

        make_rollouts(trainer, cfg, list(games_), game_kwargs or {}, rollouts, ray_init)
    return trainer
