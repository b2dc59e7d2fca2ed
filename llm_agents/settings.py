"""The LLM team's settings (the experiment's ``llm`` section), torch-free.

``selfplay-train`` builds :class:`LLMConfig` from the command line's ``llm.*`` values and the
``llm=`` preset before torch loads (``populations.config_checks``), so ``llm.grpo.lr=-1`` is
refused in the time it takes to parse the command line; the trainer, the team builder and the
backends take these classes from here (their old homes re-export them:
``llm_agents.build.LLMConfig``, ``llm_agents.trainer.GRPOConfig``, ...).

A check of a name against a registry of torch code (``grpo.adv_norm``: ``marl.advantages``;
``grpo.kl_estimator`` / ``grpo.loss_agg``: :mod:`llm_agents.losses`; ``grpo.action.mode``:
:mod:`llm_agents.actions`) imports it; inside :func:`registry_checks_later` those checks wait
until every other check of the section passed.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llm_agents.prompts import PromptConfig
from marl.configs import (
    CLIP,
    COUNT,
    COUNTED,
    EPOCHS,
    HEADS,
    LAYERS,
    NON_NEGATIVE,
    POSITIVE,
    WIDTH,
    AdvantageConfig,
    DeferredChecks,
    check_number,
    did_you_mean,
    is_integer,
)

if TYPE_CHECKING:
    import numpy as np
    import torch

TEAMS = ("shared", "per_role")
BACKENDS = ("transformers", "vllm")
DTYPES = ("auto", "float32", "bfloat16", "float16")
MAX_RANK = 1024
MAX_POLICY_SAMPLES = 4096
MAX_NEW_TOKENS = 1 << 16
"""Most tokens one generation may ask for: a run's settings and a loaded snapshot's alike
(:func:`llm_agents.policy.check_payload` builds these classes, so one rule serves both)."""
TINY_PROMPT = ("{role}", "{observation} : {legal}")
"""``llm=tiny``'s prompt templates (system, user): bare words for a model built from the
game's texts (configs/llm/tiny.yaml; a test keeps them in step)."""
MAX_POSITIONS = 1 << 20  # a tiny model's positions: their embeddings are allocated up front
MAX_BATCH = 10**6  # episodes of a group / groups of a step / turns of a minibatch / games
# stepped together: far above any GRPO step (10**20 allocated or never finished)
MAX_ITERATIONS = 10**6  # llm.iterations and corpus_episodes, as population.generations:
# each GRPO iteration plays groups_per_step x group_size episodes (10**20 never finished)
MAX_LR = 1.0
"""Largest ``grpo.lr``: AdamW moves every weight by about lr per step, so above 1 one step
replaces the model (lr=1e39 and past overflowed float32 inside Adam: a torch traceback)."""
MAX_COEF = 1000.0
"""Largest ``grpo.kl_coef`` / ``ent_coef``: the policy-gradient term is of order 1 (1e99 made
the first loss infinite, blamed on the game's rewards)."""
MAX_PENALTY = 1_000_000
"""Largest ``|grpo.action.invalid_penalty|``, a reward beside the game's (of order 1): the
advantages' float32 statistics square it (1e99 made the first loss NaN)."""
TEMPERATURES = (0.01, 100.0)
"""Sampling temperatures accepted (``sampling.temperature``, ``score_temperature``): below
0.01 sampling is argmax (1e-30: every logprob 0, no gradient, nothing trained, no word), above
100 it is uniform (1e99: the same)."""
ON_INVALID = ("fallback", "end")
"""After invalid output in rollouts: play the fallback action, or end the episode there
(SPIRAL, arXiv:2506.24119): the offender's turn and return get ``invalid_penalty``, the
other agents nothing more."""
FALLBACKS: dict[str, Callable[[np.random.Generator, int], int]] = {
    "random": lambda rng, n: int(rng.integers(n)),  # a uniformly random legal action
    "first": lambda rng, n: 0,  # the first legal action
}
"""Action played after invalid output: name -> ``(rng, number of legal actions) -> index``
(:mod:`llm_agents.actions` registers more here)."""

_CHECKS = DeferredChecks("llm")
_registry_check = _CHECKS.check  # run a check that imports a torch registry now, or later
registry_checks_later = _CHECKS.later
"""Inside, the settings built here put their registry checks (which import torch) on the
yielded list as ``(settings object, check)`` instead of running them: the caller runs them
once every torch-free check passed (:class:`marl.configs.DeferredChecks`)."""


_GREEDY = ("for argmax decoding set greedy=True, on the command line "
           "llm.grpo.action.sampling.greedy=true; a greedy group's GRPO episodes play alike, "
           "leaving little variety to learn from")


@dataclass(frozen=True)
class SamplingConfig:
    """How :meth:`llm_agents.backends.Backend.generate` samples."""

    max_new_tokens: int = 16  # generated tokens per prompt at most
    temperature: float = 1.0  # logits are divided by it; logprobs are of that distribution
    top_p: float = 1.0  # nucleus sampling (recorded logprobs ignore the truncation)
    greedy: bool = False  # argmax instead of sampling
    stop: tuple[str, ...] = ("</action>",)  # generation ends after a stop string
    stop_at_eos: bool = True  # generation ends after the tokenizer's EOS token

    def __post_init__(self) -> None:
        # above the cap, training ran and then its own snapshots failed to load
        check_number("max_new_tokens", self.max_new_tokens, **COUNT, at_most=MAX_NEW_TOKENS,
                     why="tokens per generation; snapshots refuse more")
        # inf (uniform sampling) and NaN failed only at the first generation, naming no key
        check_number("temperature", self.temperature, **POSITIVE, why=_GREEDY)
        # 1e-30 / 1e99 sampled argmax / uniformly: grad norm 0 and entropy 0, without a word
        check_number("temperature", self.temperature, at_least=TEMPERATURES[0],
                     at_most=TEMPERATURES[1],
                     why=f"below, sampling is argmax, above, uniform: nothing trains; {_GREEDY}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p={self.top_p}; expected a value in (0, 1]")


@dataclass(frozen=True)
class ActionConfig:
    """How LLM agents choose actions (:mod:`llm_agents.actions`)."""

    mode: str = "generate"  # registered action mode: generate | score
    sampling: SamplingConfig = field(default_factory=SamplingConfig)  # generate mode sampling
    invalid_penalty: float = -1.0  # reward added to a turn whose output named no legal action
    fallback: str = "random"  # action played after invalid output: random | first
    on_invalid: str = "fallback"  # fallback: play it | end: the episode ends (SPIRAL)
    score_temperature: float = 1.0  # softmax temperature over candidate scores (score mode)
    length_normalize: bool = False  # score candidates by mean, not summed, token log-prob
    policy_samples: int = 16  # generate mode: samples per state estimating action probs; 0: refuse

    def __post_init__(self) -> None:
        if self.fallback not in FALLBACKS:
            raise ValueError(f"fallback={self.fallback!r} unknown; choose one of "
                             f"{sorted(FALLBACKS)}{did_you_mean(self.fallback, FALLBACKS)}")
        if self.on_invalid not in ON_INVALID:
            raise ValueError(f"on_invalid={self.on_invalid!r} unknown; choose one of "
                             f"{list(ON_INVALID)}{did_you_mean(self.on_invalid, ON_INVALID)}")
        # NaN / inf were taken and failed later (nan: a generate run took the penalty silently)
        check_number("score_temperature", self.score_temperature, **POSITIVE)
        check_number("score_temperature", self.score_temperature, at_least=TEMPERATURES[0],
                     at_most=TEMPERATURES[1], why="below, choices are argmax; above, uniform")
        check_number("invalid_penalty", self.invalid_penalty)
        # 1e99 passed and the first loss was NaN, blamed on the game's rewards
        check_number("invalid_penalty", self.invalid_penalty, at_least=-MAX_PENALTY,
                     at_most=MAX_PENALTY, why="a reward beside the game's")
        samples = self.policy_samples
        if not is_integer(samples) or not 0 <= samples <= MAX_POLICY_SAMPLES:
            raise ValueError(f"policy_samples={self.policy_samples}; expected 0 (refuse) .. "
                             f"{MAX_POLICY_SAMPLES}")
        _registry_check(self, self._check_mode)

    def _check_mode(self) -> None:
        from llm_agents.actions import available_modes  # the modes are torch code

        if self.mode not in available_modes():
            raise ValueError(f"mode={self.mode!r} unknown; choose one of {available_modes()}"
                             f"{did_you_mean(self.mode, available_modes())}")


@dataclass(frozen=True)
class GRPOConfig:
    """Hyperparameters of :class:`llm_agents.MultiTurnGRPO` (one source for presets and
    code)."""

    group_size: int = 8  # K: episodes per group (same game, seed and opponents)
    groups_per_step: int = 8  # G: groups per iteration
    # a name of marl.advantages' registry: group_role | global | agent | role | role_ema |
    # player_turn | joint_group | none (a user's module may register more)
    adv_norm: str = "group_role"
    advantage: AdvantageConfig = field(default_factory=AdvantageConfig)  # eps, role_ema_alpha...
    role_ema_per_trajectory: bool = True  # role_ema: one update per (game, role, episode): SPIRAL
    gamma: float = 1.0  # discount per own turn of the turn-level returns
    lr: float = 1e-4  # AdamW learning rate
    lr_decay_iterations: int = 0  # decay lr linearly to 0 over this many iterations (0: constant)
    weight_decay: float = 0.0  # AdamW weight decay
    epochs: int = 1  # passes over each batch of turns
    minibatch_turns: int = 256  # turns per optimizer step
    clip_low: float = 0.2  # PPO ratio clip below 1
    clip_high: float | None = None  # PPO ratio clip above 1 (None: clip_low)
    kl_coef: float = 0.0  # weight of the KL penalty to a frozen reference copy (> 0 keeps one)
    # losses.KL_ESTIMATORS; as a loss k3 (GRPO's) pulls by grad KL(ref || pi), k2 by
    # grad KL(pi || ref), and k1 measures the KL but its expected gradient is 0
    kl_estimator: str = "k3"
    ent_coef: float = 0.0  # entropy bonus weight
    loss_agg: str = "token_mean"  # losses.AGGREGATIONS: token_mean | turn_mean
    max_grad_norm: float = 1.0  # global gradient clipping
    recompute_old_logprobs: bool = True  # old log-probs from the trainer's forward, not backend's
    max_in_flight: int = 64  # games stepped together during rollouts
    action: ActionConfig = field(default_factory=ActionConfig)  # action mode, sampling, penalty
    prompt: PromptConfig = field(default_factory=PromptConfig)  # prompt templates
    device: str = "auto"  # learner device: auto | cpu | cuda[:i]
    seed: int = 0  # seeds task draws, sampling and fallbacks

    def __post_init__(self) -> None:
        check_number("lr_decay_iterations", self.lr_decay_iterations, **COUNTED)  # (-1: ">= 0")
        # 10**20 was taken (harmless: the lr barely decayed), as llm.iterations was
        check_number("lr_decay_iterations", self.lr_decay_iterations, **COUNTED,
                     at_most=MAX_ITERATIONS, why="10**6 GRPO iterations, as llm.iterations")
        for name in ("group_size", "groups_per_step", "minibatch_turns", "max_in_flight"):
            check_number(name, getattr(self, name), **COUNT, at_most=MAX_BATCH,
                         why="sizes of a GRPO step")
        check_number("epochs", self.epochs, **EPOCHS)
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma={self.gamma}; expected a value in [0, 1]")
        check_number("lr", self.lr, **POSITIVE)  # AdamW refused lr < 0 at the first update
        # 1e99 / 1e39 overflowed float32 inside Adam (a traceback); 1e20 trained garbage
        check_number("lr", self.lr, **POSITIVE, at_most=MAX_LR,
                     why="AdamW moves each weight by about lr per step")
        check_number("weight_decay", self.weight_decay, **NON_NEGATIVE)  # AdamW's rule too
        # as MAPPO's: a clip <= 0 or a gradient clip of 0 trained nothing, without a word
        for name, rule in (("clip_low", POSITIVE), ("kl_coef", NON_NEGATIVE),
                           ("ent_coef", NON_NEGATIVE), ("max_grad_norm", CLIP)):
            check_number(name, getattr(self, name), **rule)
        for name in ("kl_coef", "ent_coef"):  # 1e99: an infinite first loss, blamed on the game
            check_number(name, getattr(self, name), **NON_NEGATIVE, at_most=MAX_COEF,
                         why="the policy-gradient term is of order 1")
        if self.clip_high is not None:
            check_number("clip_high", self.clip_high, **POSITIVE)
        _registry_check(self, self._check_names)

    def _check_names(self) -> None:
        from llm_agents import losses  # the registries of torch functions
        from llm_agents.credit import TURN_KEYS
        from marl.advantages import check_adv_norm

        check_adv_norm(self.adv_norm, TURN_KEYS, by="the LLM trainer")  # one-line errors
        for name, table in (("kl_estimator", losses.KL_ESTIMATORS),
                            ("loss_agg", losses.AGGREGATIONS)):
            if getattr(self, name) not in table:
                raise ValueError(f"{name}={getattr(self, name)!r} unknown; choose one of "
                                 f"{sorted(table)}{did_you_mean(getattr(self, name), table)}")

    def group_of_one_note(self) -> str | None:
        """A warning line when ``group_size`` is 1 and ``adv_norm`` normalizes within groups
        (``group_role``, ``joint_group``: the registry's ``needs`` name ``group``): a group of
        one gets mean 0 and std 1, so its advantages are the raw returns, not GRPO's
        group-relative ones (which would all be 0); None otherwise."""
        from marl.advantages import get_adv_norm

        if self.group_size != 1:
            return None
        needs = get_adv_norm(self.adv_norm).needs
        if not any("group" in alt.split("|") for alt in needs):
            return None
        return (f"llm.grpo.group_size=1 with adv_norm={self.adv_norm}: each group holds one "
                "episode, so its advantages are the raw returns (a group of one has mean 0, std "
                "1), not group-relative; set llm.grpo.group_size=2 or more for GRPO, or "
                "llm.grpo.adv_norm=role (or global) for a baseline over the whole batch")

    def advantage_config(self) -> AdvantageConfig:
        """``advantage`` as the trainer runs it: ``role_ema`` updates once per (game, role,
        episode) as in SPIRAL (``per_trajectory``) unless ``role_ema_per_trajectory`` is off."""
        if self.adv_norm == "role_ema" and self.role_ema_per_trajectory:
            return dataclasses.replace(self.advantage, per_trajectory=True)
        return self.advantage


@dataclass(frozen=True)
class TinyModelConfig:
    """Size of a tiny causal LM (defaults: ~100k parameters, fast on one CPU thread)."""

    arch: str = "gpt2"  # a key of llm_agents.tiny.ARCHITECTURES: gpt2 | llama
    n_layer: int = 2  # transformer blocks
    n_embd: int = 64  # hidden width
    n_head: int = 4  # attention heads
    n_positions: int = 512  # longest prompt + completion
    seed: int = 0  # weight initialization seed

    def __post_init__(self) -> None:
        for name, bounds in (("n_layer", LAYERS), ("n_embd", WIDTH), ("n_head", HEADS)):
            check_number(name, getattr(self, name), **bounds)
        check_number("n_positions", self.n_positions, **COUNT, at_most=MAX_POSITIONS,
                     why="position embeddings are allocated up front")
        if self.n_embd % self.n_head:  # transformers raised this when the model was built
            raise ValueError(f"n_embd={self.n_embd} is not a multiple of n_head="
                             f"{self.n_head}; each head takes n_embd / n_head of the width")
        if self.arch == "llama" and (self.n_embd // self.n_head) % 2:  # rotary halves a head
            raise ValueError(f"n_embd={self.n_embd} / n_head={self.n_head} is an odd head size; "
                             "arch=llama rotates pairs of a head's dimensions: give an even one")
        # a registry (tiny.register_arch, a user's module may add one): it was refused only
        # when the model was built, ~12 s into an llm_grpo run, and never with another algo
        _registry_check(self, self._check_arch)

    def _check_arch(self) -> None:
        from llm_agents.tiny import ARCHITECTURES  # the builders import torch

        if self.arch not in ARCHITECTURES:
            raise ValueError(f"arch={self.arch!r} unknown; choose one of "
                             f"{sorted(ARCHITECTURES)}{did_you_mean(self.arch, ARCHITECTURES)}")


@dataclass(frozen=True)
class LoRAConfig:
    """LoRA adapters (``r=0``: off, the whole model trains)."""

    r: int = 0  # adapter rank; 0 turns LoRA off
    alpha: int = 16  # scaling is alpha / r
    dropout: float = 0.0  # dropout on the adapter input
    target_modules: tuple[str, ...] = ("all-linear",)  # peft names; all-linear: every linear

    def __post_init__(self) -> None:
        if not is_integer(self.r) or not 0 <= self.r <= MAX_RANK:
            raise ValueError(f"lora r={self.r}; expected 0 (off) .. {MAX_RANK}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"lora dropout={self.dropout}; expected a value in [0, 1)")
        check_number("alpha", self.alpha, **POSITIVE)  # scaling alpha / r: 0 is no adapter


@dataclass(frozen=True)
class LLMConfig:
    """Which model(s) an LLM team uses and how its GRPO trainer runs
    (:mod:`llm_agents.build`)."""

    model: str = "tiny"  # tiny (built in code from the game texts) | a model directory | hub name
    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)  # model=tiny: its size
    corpus_episodes: int = 200  # model=tiny: random episodes whose texts make the vocabulary
    backend: str = "transformers"  # transformers (CPU/GPU) | vllm (GPU)
    team: str = "shared"  # shared: one model for every role | per_role: one model per role
    role_prompts: dict[str, str] = field(default_factory=dict)  # role -> prompt line
    iterations: int = 100  # GRPO iterations (population=none) or per league generation
    dtype: str = "float32"  # weights: auto (bf16 for LoRA on a bf16 GPU) | float32 | bfloat16...
    gradient_checkpointing: bool = False  # recompute activations in the backward pass
    lora: LoRAConfig = field(default_factory=LoRAConfig)  # r > 0: train LoRA adapters only
    grpo: GRPOConfig = field(default_factory=GRPOConfig)

    def __post_init__(self) -> None:
        if self.team not in TEAMS:
            raise ValueError(f"llm team {self.team!r} unknown; choose one of {list(TEAMS)}"
                             f"{did_you_mean(self.team, TEAMS)}")
        if self.backend not in BACKENDS:
            raise ValueError(f"llm backend {self.backend!r} unknown; choose one of "
                             f"{list(BACKENDS)}{did_you_mean(self.backend, BACKENDS)}")
        # 10**20 was taken and trained without end, as population sizes were
        check_number("llm iterations", self.iterations, **COUNT)  # (0: ">= 1", as before)
        check_number("llm iterations", self.iterations, **COUNT, at_most=MAX_ITERATIONS,
                     why="10**6 GRPO iterations")
        # 0: the tiny vocabulary had no observation or action word
        check_number("llm corpus_episodes", self.corpus_episodes, **COUNT)
        check_number("llm corpus_episodes", self.corpus_episodes, **COUNT,
                     at_most=MAX_ITERATIONS, why="10**6 random episodes played first")
        if not self.model:  # llm=hf / llm=vllm without llm.model trained nothing real
            raise ValueError("llm model is empty; llm=hf and llm=vllm (and smollm2_kuhn) "
                             "train your model: llm.model=<a model directory or hub name> "
                             "(llm=tiny builds one)")
        if self.dtype not in DTYPES:
            raise ValueError(f"llm dtype {self.dtype!r} unknown; choose one of {list(DTYPES)}"
                             f"{did_you_mean(self.dtype, DTYPES)}")
        # refused by the loader after the run folder and torch (37-65 s under load)
        check_model_folder(self.model)

    def check_nash_conv(self) -> None:
        """Refuse, in the action mode's own line, a team whose NashConv (a league's
        ``population.nash_conv``) cannot be scored: generate mode with
        ``llm.grpo.action.policy_samples=0`` asks for no estimate of the action
        probabilities. Before, the first snapshot's NashConv refused it, after the models were
        built and generation 0 trained (~20 s to a minute in)."""
        from llm_agents.actions import GenerateMode, make_mode

        action = self.grpo.action
        mode = make_mode(action)
        if isinstance(mode, GenerateMode) and action.policy_samples == 0:
            mode.probabilities(None, [])  # type: ignore[arg-type] - refuses before generating

    def unused_role_prompts(self, roles: Sequence[str], game: str) -> str | None:
        """Check ``role_prompts``' keys against ``roles``, the roles of ``game`` (the team's
        games, by name): a key that misspells one of them (``scuot``) is refused in one line
        naming the game's roles; keys that name no role of it at all (a preset's prompts for
        another game: ``experiment=tool_team_llm game.name=my_task`` keeps relay's ``scout``
        and ``solver``) are not used, said in the warning line returned (None: every key is a
        role). Hydra merges ``llm.role_prompts={...}`` into a preset's prompts (it cannot
        drop a preset's key), so those are not refused."""
        import difflib

        unknown = [k for k in self.role_prompts if k not in roles]
        theirs = f"{game}'s roles are {', '.join(roles)}"
        for key in unknown:
            near = difflib.get_close_matches(key, list(roles), n=1)
            if near:
                raise ValueError(f"llm.role_prompts has role {key!r} (did you mean {near[0]!r}?); "
                                 f"{theirs}")
        if not unknown:
            return None
        missing = [r for r in roles if r not in self.role_prompts]
        give = (f"; give theirs with '+llm.role_prompts={{"
                f"{', '.join(f'{r}: ...' for r in missing)}}}'" if missing else "")
        return (f"llm.role_prompts has prompts for {', '.join(unknown)}, roles {game} does not "
                f"have: they are not used ({theirs}){give}")

    def tiny_settings_note(self) -> str | None:
        """A line when a model of the user's (``llm.model=<dir or hub name>``) runs with the
        tiny model's preset (``llm=tiny`` / ``tiny_kuhn``, the default: its bare prompts say
        so), whose lr, action mode and prompts suit a ~100k-parameter model built from the
        game's words, not a real one; None otherwise."""
        prompt = self.grpo.prompt
        if self.model == "tiny" or (prompt.system, prompt.user) != TINY_PROMPT:
            return None
        return (f"llm.model={self.model!r} runs with the tiny model's settings (llm=tiny's lr "
                f"{self.grpo.lr:g}, action mode {self.grpo.action.mode}, bare prompts "
                f"{prompt.system!r} / {prompt.user!r}); llm=hf holds the settings for a real "
                "model (lr 1e-6, prompts with the rules, generate mode): add llm=hf")

    def torch_dtype(self, device: str | torch.device) -> torch.dtype:
        """The weights' dtype on ``device`` (``auto``: see :mod:`llm_agents.build`)."""
        import torch

        if self.dtype != "auto":
            return getattr(torch, self.dtype)
        dev = torch.device(device)
        bf16 = dev.type == "cuda" and torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if bf16 and self.lora.r > 0 else torch.float32


def model_path(model: str) -> bool:
    """Whether the loader takes ``model`` as a local path (it starts with ``/``, ``.`` or
    ``~``, or is a folder here), not a hub name: ``org/name`` that is no folder here stays a
    hub name."""
    from pathlib import Path

    return model.startswith(("/", ".", "~")) or Path(model).expanduser().is_dir()


def missing_model_folder(model: str) -> str | None:
    """Why ``model``, written as a local path (:func:`model_path`), names no model folder
    (None: it does, or it is ``tiny``, Hydra's ``???`` or a hub name, which the loader looks
    up), without torch, so that ``selfplay-train`` refuses it before the run folder."""
    problem = _model_folder_problem(model)
    return None if problem is None else problem[0]


_ANY_MODEL = "give 'tiny', a local model directory or a hub name available here"


def _model_folder_problem(model: str) -> tuple[str, str] | None:
    """:func:`missing_model_folder`'s reason and what to do, or None."""
    from pathlib import Path

    if model in ("tiny", "???", "") or not model_path(model):
        return None
    folder = Path(model).expanduser()
    if folder.is_file():  # llm.model=/path/to/model/config.json: its folder was meant
        return ("it is a file, not a model folder",
                f"give the folder that holds it: llm.model={str(Path(model).parent)!r}")
    if not folder.is_dir():
        return "no such directory", _ANY_MODEL
    if not (folder / "config.json").is_file():
        return "no config.json in it", _ANY_MODEL
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        # AutoTokenizer built an empty tokenizer from it, refused only once torch and
        # transformers had loaded (~35 s): a file listing tells it here
        return (f"it has no tokenizer files: none of {', '.join(TOKENIZER_FILES)}",
                "save the tokenizer into the model folder too (tokenizer.save_pretrained("
                "folder))")
    if not any((folder / name).is_file() for name in (*WEIGHT_FILES, "adapter_config.json")):
        # transformers' own "Error no file named model.safetensors, or pytorch_model.bin,
        # found in directory ...", once torch had loaded
        return (f"it has no weights: none of {', '.join(WEIGHT_FILES)}",
                "save the model into the folder too (model.save_pretrained(folder))")
    for path in sorted(folder.glob("*.safetensors")):
        damage = safetensors_damage(path)
        if damage:  # a SafetensorError once torch and transformers had loaded
            return (f"its safetensors weights are damaged: {path.name} {damage}",
                    "copy or download them again")
    return None


WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
"""The weight files ``AutoModelForCausalLM.from_pretrained`` looks for in a PyTorch model
folder: one model file or the index of its shards (a PEFT adapter folder, with its
``adapter_config.json``, names the base model to load instead)."""


def safetensors_damage(path: Any) -> str | None:
    """What is wrong with the safetensors file ``path`` by its header alone (None: nothing
    found), read without torch: a file cut short (a copy stopped half way) holds less than
    the 8-byte header length, the JSON header or the tensors' bytes it promises."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            return f"is {size} bytes, shorter than its 8-byte header length"
        length = int.from_bytes(head, "little")
        if length > size - 8:
            return f"is {size} bytes, shorter than its header of {length} bytes"
        try:
            header = json.loads(f.read(length))
            end = max((int(t["data_offsets"][1]) for k, t in header.items()
                       if k != "__metadata__"), default=0)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return "has a header that is not a safetensors header"
    if 8 + length + end > size:
        return f"is {size} bytes, shorter than the {8 + length + end} its tensors need"
    return None


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
"""A model folder holds at least one of these when its tokenizer was saved with it (the same
as ``llm_agents.backends.hf.TOKENIZER_FILES``, whose loader refuses the empty tokenizer
AutoTokenizer builds without them)."""


def check_model_folder(model: str) -> None:
    """Refuse, in one line, a ``model`` written as a path that names no model folder
    (:func:`missing_model_folder`): :class:`LLMConfig` before the run, the loader
    (:func:`llm_agents.build._load`) again, as the folder may have gone since."""
    problem = _model_folder_problem(model)
    if problem:  # a folder without a model gave "Couldn't instantiate the backend tokenizer"
        raise ValueError(f"llm.model={model!r} could not be loaded ({problem[0]}); {problem[1]}")


def backend_unavailable(backend: str) -> str | None:
    """Why ``backend`` cannot run on this machine (None: it can): ``vllm`` needs its package
    and a CUDA GPU. The package is looked up without importing it (or torch); torch is
    imported only to ask for CUDA once vllm is installed."""
    if backend != "vllm":
        return None
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        return ("the vllm package is not installed (pip install 'selfplay[vllm]', on a machine "
                "with a CUDA GPU)")
    import torch

    if not torch.cuda.is_available():
        return "vllm needs a CUDA GPU and torch finds none"
    return None


# vLLM's own servers (its distributed rendezvous, its workers' sockets) listen on the
# address VLLM_HOST_IP names, otherwise on the machine's outward address: one engine on one
# machine needs no more than loopback. A multi-machine engine sets its own.
VLLM_LOOPBACK_ENV = {"VLLM_HOST_IP": "127.0.0.1"}


def vllm_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables :func:`prepare_vllm_env` adds to ``environ`` before vLLM starts:
    those of :data:`VLLM_LOOPBACK_ENV` the user has not set (an empty value is unset, as
    vLLM reads it)."""
    return {k: v for k, v in VLLM_LOOPBACK_ENV.items() if not environ.get(k)}


def prepare_vllm_env() -> dict[str, str]:
    """Bind vLLM's servers to loopback unless the user said otherwise: adds
    :func:`vllm_env` to ``os.environ`` (vLLM reads it when it starts its engine, here or
    in the processes it starts, which inherit it) and returns what it added."""
    added = vllm_env(os.environ)
    os.environ.update(added)
    return added


def check_backend_here(backend: str) -> None:
    """``ValueError`` (one line, in the command line's words) when ``backend`` cannot run on
    this machine (:func:`backend_unavailable`)."""
    why = backend_unavailable(backend)
    if why:
        raise ValueError(f"llm.backend={backend!r} cannot run here: {why}; use "
                         "llm.backend=transformers (llm=hf)")


def registry_refusal(cfg: Any, later: list[tuple[Any, Callable[[], None]]]
                     ) -> tuple[str, type, Exception] | None:
    """Run the registry checks ``later`` collected while ``cfg`` (settings of this module) was
    built: the first refusal as ``(dotted path of its object inside cfg, its class, error)``
    (``grpo.action``), None when all pass."""
    for owner, check in later:
        try:
            check()
        except ValueError as err:
            return _path_of(cfg, owner, "") or "", type(owner), err
    return None


def _path_of(node: Any, target: Any, path: str) -> str | None:
    if node is target:
        return path
    for f in dataclasses.fields(node) if dataclasses.is_dataclass(node) else ():
        child = getattr(node, f.name)
        if dataclasses.is_dataclass(child):
            found = _path_of(child, target, f"{path}.{f.name}" if path else f.name)
            if found is not None:
                return found
    return None
