"""``LLMPolicy``: an LLM team as a ``marl.core.Policy`` -- a population member like any other.

It reads the text view of a ``VecStep`` (``text[agent][b]``, ``legal_text[agent][b]``: the
runner builds ``VectorGame(with_text=True)`` because ``meta.inputs == ("text",)``), acts with
its action mode, and gives action probabilities (exact in score mode: the scoring softmax
over the legal action texts; a sampled estimate of the behaviour policy in generate mode),
so exploitability, ratings and matches against classic learners all work.

Saved files hold only tensors and plain values (``torch.load(weights_only=True)``): each
model's config as JSON, its weights, its tokenizer files and, for a LoRA model, its plain
LoRA settings (checked by :func:`llm_agents.lora.check_lora_fields`).

Loading treats a file as untrusted (:func:`check_payload`): the whole payload is checked
before anything touches the disk; tokenizer files may only have the plain names
transformers writes (:data:`TOKENIZER_FILES`) and are written, without following links,
inside a fresh temporary folder; a chat template (Jinja, rendered on every prompt, each
render bounded by :func:`llm_agents.chat_render.render_chat`) must also pass the static check
(:func:`llm_agents.chat_templates.chat_template_problem`);
configs may not load custom code (``auto_map``) and their
sizes are capped (:data:`CONFIG_LIMITS`, :data:`MAX_PARAMS`), and the model is built on the
meta device first, so a config asking for far more than its saved weights is refused
before anything is allocated (:func:`marl.core.build_checked`). The action and prompt
settings are built as a run builds them (:func:`settings_of`): one set of rules (prompt slots,
``max_new_tokens``, ...) for the settings a run starts with and the snapshots it loads.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from games import GameSpec, VecStep
from llm_agents.actions import ActionConfig, make_mode, match_action
from llm_agents.chat_render import TRUST_CHAT_TEMPLATES
from llm_agents.chat_templates import chat_template_problem, templates_of
from llm_agents.lora import check_lora_fields, lora_fields, rebuild_lora
from llm_agents.prompts import PromptBuilder, PromptConfig
from llm_agents.records import Request
from llm_agents.settings import MAX_NEW_TOKENS, SamplingConfig  # noqa: F401 - its old home
from llm_agents.team import RoleBinding, Team, TeamModel, backend_for
from marl.core import Policy, PolicyLoadError, PolicyMeta, build_checked, register_policy

TOKENIZER_FILES = frozenset({
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "vocab.json", "merges.txt", "vocab.txt", "tokenizer.model", "spiece.model",
    "sentencepiece.bpe.model", "chat_template.jinja", "chat_template.json",
})
"""The tokenizer file names a snapshot may hold (what ``save_pretrained`` writes), plus
``additional_chat_templates/<name>.jinja`` (:data:`_EXTRA_TEMPLATE`)."""
_EXTRA_TEMPLATE = re.compile(r"additional_chat_templates/[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}\.jinja")

CONFIG_LIMITS: dict[str, int] = {
    **dict.fromkeys(("num_hidden_layers", "n_layer", "num_layers", "n_layers"), 256),
    **dict.fromkeys(("hidden_size", "n_embd", "d_model", "intermediate_size", "n_inner",
                     "ffn_dim", "d_ff", "head_dim"), 2**16),
    **dict.fromkeys(("num_attention_heads", "n_head", "num_key_value_heads", "num_heads"), 1024),
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts"), 512),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "n_ctx"), 2**20),
    "vocab_size": 2**20,
}
"""Largest value a snapshot's model config may give each size (anywhere in the config)."""
MAX_PARAMS = 200 * 10**9
"""Largest parameter count a snapshot's config may ask for, estimated from its sizes."""
_FORBIDDEN_CONFIG_KEYS = ("auto_map", "quantization_config", "trust_remote_code")


def _tokenizer_files(tokenizer: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        out: dict[str, Any] = {}
        for f in sorted(Path(tmp).rglob("*")):
            if f.is_file():
                name = f.relative_to(tmp).as_posix()
                if not _allowed_file(name):  # loading would refuse it: fail now, not later
                    raise ValueError(f"tokenizer wrote {name!r}, which snapshots do not carry; "
                                     f"allowed: {sorted(TOKENIZER_FILES)}")
                raw = f.read_bytes()
                try:
                    out[name] = raw.decode("utf-8")
                except UnicodeDecodeError:  # sentencepiece models and other binaries
                    out[name] = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
        return out


# ------------------------------------------------------------------ untrusted payloads
def _allowed_file(name: Any) -> bool:
    return isinstance(name, str) and (
        name in TOKENIZER_FILES or bool(_EXTRA_TEMPLATE.fullmatch(name))
    )


def _items(config: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) of a JSON config, nested ones (``text_config``) included."""
    if isinstance(config, dict):
        for k, v in config.items():
            yield str(k), v
            yield from _items(v)
    elif isinstance(config, list):
        for v in config:
            yield from _items(v)


def _check_config(name: str, text: Any) -> None:
    """A model config: JSON, no custom code, every size within :data:`CONFIG_LIMITS`, and an
    estimated parameter count (``L * (4 d^2 + 3 d f) * experts + 2 V d``) within
    :data:`MAX_PARAMS` -- all before any object is built."""
    if not isinstance(text, str):
        raise PolicyLoadError(f"model {name!r}: config is not JSON text")
    try:
        config = json.loads(text)
    except ValueError as err:
        raise PolicyLoadError(f"model {name!r}: config is not JSON ({err})") from None
    if not isinstance(config, dict) or not isinstance(config.get("model_type"), str):
        raise PolicyLoadError(f"model {name!r}: config is not a transformers model config")
    values: dict[str, int] = {}
    for key, value in _items(config):
        if key in _FORBIDDEN_CONFIG_KEYS:
            raise PolicyLoadError(f"model {name!r}: config key {key!r} is not allowed in a "
                                  "snapshot (no custom code or quantization)")
        if key in CONFIG_LIMITS and value is not None:
            if type(value) is not int or not 0 <= value <= CONFIG_LIMITS[key]:
                raise PolicyLoadError(f"model {name!r}: config {key}={value!r:.40} is out of "
                                      f"range (0 to {CONFIG_LIMITS[key]})")
            values[key] = max(values.get(key, 0), value)

    def size(*keys: str, default: int = 0) -> int:
        return max([values.get(k, 0) for k in keys] + [default])

    d = size("hidden_size", "n_embd", "d_model")
    f = size("intermediate_size", "n_inner", "ffn_dim", "d_ff", default=4 * d)
    layers = size("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    experts = size("num_experts", "num_local_experts", "n_routed_experts", default=1)
    estimate = layers * (4 * d * d + 3 * d * f * experts) + 2 * size("vocab_size") * d
    if estimate > MAX_PARAMS:
        raise PolicyLoadError(f"model {name!r}: config asks for about {estimate:.2e} parameters; "
                              f"snapshots are limited to {MAX_PARAMS:.0e}")


def _check_tokenizer_files(name: str, files: Any) -> None:
    if not isinstance(files, dict) or not files:
        raise PolicyLoadError(f"model {name!r}: tokenizer_files is not a non-empty dict")
    for fname, content in files.items():
        if not _allowed_file(fname):
            raise PolicyLoadError(f"model {name!r}: tokenizer file name {fname!r:.80} is not "
                                  f"allowed; allowed: {sorted(TOKENIZER_FILES)}")
        ok = isinstance(content, str) or (
            isinstance(content, torch.Tensor) and content.dtype == torch.uint8
            and content.dim() == 1 and content.device.type == "cpu")
        if not ok:
            raise PolicyLoadError(f"model {name!r}: tokenizer file {fname!r} is neither text "
                                  "nor a 1-D uint8 tensor")
    if "tokenizer_config.json" in files:
        try:
            tok_config = json.loads(files["tokenizer_config.json"])
        except (TypeError, ValueError):
            raise PolicyLoadError(f"model {name!r}: tokenizer_config.json is not JSON") from None
        if not isinstance(tok_config, dict):
            raise PolicyLoadError(f"model {name!r}: tokenizer_config.json is not an object")
        # Values under these keys name files or code to load: only the folder's own files may
        # be read, and no code.
        bad = [k for k in tok_config if k == "auto_map" or k.endswith(("_file", "_files", "_dir"))]
        if bad:
            raise PolicyLoadError(f"model {name!r}: tokenizer_config.json key {bad[0]!r} is not "
                                  "allowed in a snapshot")
    # a chat template is Jinja code run on every prompt: the render is bounded
    # (llm_agents.chat_render), and this static check refuses a bad one before any run
    # starts, naming the rule (sec38); SELFPLAY_TRUST_CHAT_TEMPLATES=1 is the way out for
    # snapshots one made oneself
    if os.environ.get(TRUST_CHAT_TEMPLATES) == "1":
        return
    for where, template in templates_of(files):
        if problem := chat_template_problem(template):
            raise PolicyLoadError(f"model {name!r}: tokenizer chat template ({where}) {problem}; "
                                  f"{TRUST_CHAT_TEMPLATES}=1 loads it anyway (only for "
                                  "snapshots you trust)")


def _check_fields(d: Any, cls: type, what: str, nested: tuple[str, ...] = ()) -> None:
    """``d`` holds only fields of the dataclass ``cls``, each of its default's type."""
    if not isinstance(d, dict):
        raise PolicyLoadError(f"{what} is not a dict")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(map(str, d)) - set(fields))
    if unknown:
        raise PolicyLoadError(f"{what} has unknown fields {unknown}; known: {sorted(fields)}")
    for key, value in d.items():
        if key in nested:
            continue
        default = fields[key].default
        if isinstance(default, bool):
            ok = type(value) is bool
        elif isinstance(default, int | float):
            ok = type(value) in (int, float) if isinstance(default, float) else type(value) is int
        elif isinstance(default, str):
            ok = isinstance(value, str)
        elif isinstance(default, tuple):
            ok = isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
        else:
            ok = False
        if not ok:
            raise PolicyLoadError(f"{what} field {key!r} has a bad value {value!r:.60}")


def settings_of(payload: dict[str, Any]) -> tuple[ActionConfig, PromptConfig]:
    """The action and prompt settings of a payload whose fields :func:`check_payload` typed,
    built as a run builds them: their own checks (prompt slots, ``max_new_tokens``,
    ``policy_samples``, ...) are the loader's rules too, so a snapshot loads exactly when a run
    could have had its settings. ``PolicyLoadError`` (one line) when they refuse."""
    action = dict(payload["action"])
    sampling = action.pop("sampling", {})
    try:
        sampling = SamplingConfig(**{**sampling, "stop": tuple(sampling.get(
            "stop", SamplingConfig.stop))})
    except (ValueError, TypeError) as err:
        raise PolicyLoadError(f"sampling {_line(err)}") from None
    try:
        action = ActionConfig(**action, sampling=sampling)
    except (ValueError, TypeError) as err:
        raise PolicyLoadError(f"action {_line(err)}") from None
    try:
        return action, PromptConfig(**payload["prompt"])
    except (ValueError, TypeError) as err:
        raise PolicyLoadError(_line(err)) from None


def _line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def check_payload(payload: Any) -> None:
    """Check an untrusted LLM policy payload completely, before anything touches the disk.

    Raises:
        PolicyLoadError: one line naming what is malformed, disallowed or too large.
    """
    expected = {"models", "roles", "action", "prompt", "seed"}
    if not isinstance(payload, dict) or set(payload) != expected:
        keys = sorted(map(str, payload)) if isinstance(payload, dict) else type(payload).__name__
        raise PolicyLoadError(f"llm payload has {keys}; expected {sorted(expected)}")
    models = payload["models"]
    if not isinstance(models, dict) or not models:
        raise PolicyLoadError("llm payload 'models' is not a non-empty dict")
    for name, entry in models.items():
        if not isinstance(entry, dict) or set(entry) - {"lora"} != {
                "config", "weights", "tokenizer_files"}:
            raise PolicyLoadError(
                f"model {name!r} entry is not {{config, weights, tokenizer_files[, lora]}}")
        if "lora" in entry and (reason := check_lora_fields(entry["lora"])):
            raise PolicyLoadError(f"model {name!r}: {reason}")
        _check_config(name, entry["config"])
        _check_tokenizer_files(name, entry["tokenizer_files"])
        weights = entry["weights"]
        if not isinstance(weights, dict) or not all(
                isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()):
            raise PolicyLoadError(f"model {name!r}: weights are not a dict of named tensors")
    roles = payload["roles"]
    if not isinstance(roles, dict) or not all(
            isinstance(r, str) and isinstance(b, list | tuple) and len(b) == 2
            and b[0] in models and isinstance(b[1], str) for r, b in roles.items()):
        raise PolicyLoadError("llm payload 'roles' is not {role: [model name, prompt]}")
    if type(payload["seed"]) is not int:
        raise PolicyLoadError(f"llm payload seed {payload['seed']!r:.40} is not an int")
    _check_fields(payload["action"], ActionConfig, "action config", nested=("sampling",))
    _check_fields(payload["action"].get("sampling", {}), SamplingConfig, "sampling config")
    _check_fields(payload["prompt"], PromptConfig, "prompt config")
    settings_of(payload)  # the settings' own rules (max_new_tokens, prompt slots, ...)


def _write_inside(folder: Path, name: str, content: str | torch.Tensor) -> None:
    """Write one checked file into ``folder``: the resolved path must stay inside it, and
    the file must be new (``O_EXCL | O_NOFOLLOW``: no link is followed)."""
    root = folder.resolve()
    target = (root / name).resolve()
    if not target.is_relative_to(root) or target == root:
        raise PolicyLoadError(f"tokenizer file {name!r} would be written outside its folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content.numpy().tobytes()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _load_model(name: str, entry: dict[str, Any],
                device: str | torch.device) -> tuple[Any, Any]:
    """Build one checked model entry (see :func:`check_payload`)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _write_inside(folder, "config.json", entry["config"])
        config = AutoConfig.from_pretrained(tmp, trust_remote_code=False)
        for fname, content in entry["tokenizer_files"].items():
            _write_inside(folder, fname, content)
        tokenizer = AutoTokenizer.from_pretrained(tmp, trust_remote_code=False)
    def build() -> Any:
        model = AutoModelForCausalLM.from_config(config)
        return rebuild_lora(model, entry["lora"]) if "lora" in entry else model

    with torch.random.fork_rng(devices=[]):
        model = build_checked(build, entry["weights"], f"model {name!r}")
    # frozen like the learner's own snapshot (MultiTurnGRPO.policy): with weights that require
    # grad, a loaded snapshot's probabilities differed from the learner's in the 7th digit
    return model.to(device).eval().requires_grad_(False), tokenizer


@dataclasses.dataclass(frozen=True)
class LegalStats:
    """Moves an :class:`LLMPolicy` chose and how many were fallbacks for invalid output."""

    decisions: int
    invalid: int

    def __sub__(self, before: LegalStats) -> LegalStats:
        return LegalStats(self.decisions - before.decisions, self.invalid - before.invalid)

    @property
    def rate(self) -> float | None:
        """The share of moves the model named legally (None: no move chosen)."""
        return None if self.decisions == 0 else 1.0 - self.invalid / self.decisions


@register_policy("llm")
class LLMPolicy(Policy):
    """A frozen LLM team acting through the text view; see the module docstring.

    Example (save and load like any other policy)::

        >>> import games, tempfile
        >>> from llm_agents.tiny import build_model, build_tokenizer, game_corpus
        >>> from llm_agents.team import Team
        >>> from marl.core import load_policy
        >>> spec = games.make("openspiel/kuhn_poker").spec
        >>> tok = build_tokenizer(game_corpus("openspiel/kuhn_poker", 50))
        >>> policy = LLMPolicy.from_team(Team.shared(build_model(tok), tok), spec)
        >>> path = policy.save(tempfile.mkdtemp() + "/llm.pt")
        >>> load_policy(path).meta.kind
        'llm'
    """

    def __init__(self, team: Team, meta: PolicyMeta, action: ActionConfig | None = None,
                 prompt: PromptConfig | None = None, seed: int = 0) -> None:
        self.team, self.meta = team, meta
        self.action = action or ActionConfig(mode="score")
        self.prompt = prompt or PromptConfig()
        self.mode = make_mode(self.action)
        self.builder = PromptBuilder(self.prompt)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.decisions = 0  # moves chosen by act() since the policy was built
        self.invalid = 0  # of which the output named no legal action: the fallback played

    @classmethod
    def from_team(cls, team: Team, spec: GameSpec, agents: Sequence[str] | None = None,
                  action: ActionConfig | None = None, prompt: PromptConfig | None = None,
                  step: int = 0, seed: int = 0) -> LLMPolicy:
        """Wrap ``team`` as a policy for the seats ``agents`` (default: all) of ``spec``."""
        agents = tuple(agents) if agents is not None else spec.agent_ids
        meta = PolicyMeta.from_spec("llm", spec, agents, inputs=("text",), step=step,
                                    extra={"models": sorted(team.models)})
        return cls(team, meta, action, prompt, seed)

    def reseed(self, seed: int) -> None:
        """Restart the choices among scored actions and each model's sampling generator (a
        league reseeds the snapshots it seats every generation: a cached one then plays as
        one loaded after a resume)."""
        self.rng = np.random.default_rng(seed)
        for tm in self.team.models.values():
            if callable(getattr(tm.backend, "reseed", None)):
                tm.backend.reseed(seed)

    # ------------------------------------------------------------------- acting
    def _role(self, agent: str) -> str:
        return self.meta.roles[self.meta.agents.index(agent)] if agent in self.meta.agents \
            else agent

    def _requests(self, agent: str, vs: VecStep) -> tuple[list[int], list[Request], list]:
        if vs.text is None or vs.legal_text is None:
            raise ValueError("LLMPolicy needs text views: build the VectorGame with with_text=True")
        if agent in self.meta.agents:  # another game's moves: it played uniform fallbacks
            n, given = self.meta.action_space(agent).n, vs.legal[agent].shape[-1]
            if n != given:
                raise ValueError(f"the llm policy for seat {agent!r} was trained on "
                                 f"{self.meta.game} ({n} actions) but is given {given} actions; "
                                 "play it on the game it was trained on")
        role = self._role(agent)
        tm, binding = self.team.model_for(role), self.team.binding(role)
        rows = np.flatnonzero(vs.acting[agent]).tolist()
        reqs, ids = [], []
        for b in rows:
            legal = list(vs.legal_text[agent][b])
            reqs.append(self.builder.request(
                tm.tokenizer, game=self.meta.game, agent=agent, role=role,
                role_prompt=binding.prompt, observation=vs.text[agent][b], legal=legal,
                instruction=self.mode.instruction(self.prompt),
                parse=lambda text, legal=legal: match_action(text, legal)))
            ids.append(np.flatnonzero(vs.legal[agent][b]))
        return rows, reqs, ids

    def act(self, agent: str, vs: VecStep, greedy: bool = False) -> np.ndarray:
        legal = vs.legal[agent]
        out = np.where(legal.any(1), legal.argmax(1), 0).astype(np.int64)  # placeholders
        rows, reqs, ids = self._requests(agent, vs)
        if rows:
            backend = self.team.model_for(self._role(agent)).backend
            for b, d, legal_ids in zip(rows, self.mode.decide(backend, reqs, self.rng, greedy),
                                       ids, strict=True):
                out[b] = legal_ids[d.index]  # an invalid output's index is the fallback's
                self.invalid += not d.valid
            self.decisions += len(rows)
        return out

    def legal_stats(self) -> LegalStats:
        """The moves :meth:`act` chose since the policy was built and how many of them were
        fallbacks (the output named no legal action): a match or an evaluation reads the
        difference over its episodes, so a return earned by fallback moves is told apart
        from one the model earned. ``on_invalid="end"`` is a training rule (the rollout ends
        the episode); a policy in a match must move, so it plays the fallback there."""
        return LegalStats(self.decisions, self.invalid)

    def action_probs(self, agent: str, vs: VecStep) -> np.ndarray:
        """``[B, N]``: each acting copy's action probabilities (the scoring softmax; in
        generate mode a sampled estimate, :meth:`GenerateMode.probabilities`)."""
        out = np.zeros(vs.legal[agent].shape, np.float64)
        rows, reqs, ids = self._requests(agent, vs)
        if rows:
            backend = self.team.model_for(self._role(agent)).backend
            for b, p, legal_ids in zip(rows, self.mode.probabilities(backend, reqs), ids,
                                       strict=True):
                out[b, legal_ids] = p
        return out

    # ---------------------------------------------------------------- save/load
    def payload(self) -> dict[str, Any]:
        models = {
            name: {"config": tm.model.config.to_json_string(),
                   "weights": {k: v.detach().cpu() for k, v in tm.model.state_dict().items()},
                   "tokenizer_files": _tokenizer_files(tm.tokenizer)}
            for name, tm in self.team.models.items()
        }
        for name, tm in self.team.models.items():
            if (lora := lora_fields(tm.model)) is not None:
                models[name]["lora"] = lora
        roles = {r: [b.model, b.prompt] for r, b in self.team.roles.items()}
        return {"models": models, "roles": roles, "action": dataclasses.asdict(self.action),
                "prompt": dataclasses.asdict(self.prompt), "seed": self.seed}

    @classmethod
    def from_payload(cls, meta: PolicyMeta, payload: dict[str, Any],
                     device: str | torch.device = "cpu") -> LLMPolicy:
        check_payload(payload)  # everything, before the first file is written
        models = {}
        for name, entry in payload["models"].items():
            model, tok = _load_model(name, entry, device)
            models[name] = TeamModel(name, model, tok, backend_for(model, tok, "transformers",
                                                                  seed=payload["seed"]))
        team = Team(models, {r: RoleBinding(m, p) for r, (m, p) in payload["roles"].items()})
        action, prompt = settings_of(payload)
        return cls(team, meta, action, prompt, payload["seed"])
