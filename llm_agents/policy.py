"""``LLMPolicy``: an LLM team as a ``marl.core.Policy`` -- a population member like any other.

It reads the text view of a ``VecStep`` (``text[agent][b]``, ``legal_text[agent][b]``: the
runner builds ``VectorGame(with_text=True)`` because ``meta.inputs == ("text",)``), acts with
its action mode, and gives exact action probabilities (the scoring softmax over the legal
action texts), so exploitability, ratings and matches against classic learners all work.

Saved files hold only tensors and plain values (``torch.load(weights_only=True)``): each
model's config as JSON, its weights, and its tokenizer files.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from games import GameSpec, VecStep
from llm_agents.actions import ActionConfig, make_mode, match_action
from llm_agents.backends.base import SamplingConfig
from llm_agents.prompts import PromptBuilder, PromptConfig
from llm_agents.records import Request
from llm_agents.team import RoleBinding, Team, TeamModel, backend_for
from marl.core import Policy, PolicyMeta, register_policy


def _tokenizer_files(tokenizer: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        out: dict[str, Any] = {}
        for f in sorted(Path(tmp).rglob("*")):
            if f.is_file():
                raw = f.read_bytes()
                try:
                    out[str(f.relative_to(tmp))] = raw.decode("utf-8")
                except UnicodeDecodeError:  # sentencepiece models and other binaries
                    data = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
                    out[str(f.relative_to(tmp))] = data
        return out


def _load_model(entry: dict[str, Any], device: str | torch.device) -> tuple[Any, Any]:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.json").write_text(entry["config"])
        config = AutoConfig.from_pretrained(tmp)
        for name, content in entry["tokenizer_files"].items():
            target = Path(tmp) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, str):
                target.write_text(content)
            else:
                target.write_bytes(content.numpy().tobytes())
        tokenizer = AutoTokenizer.from_pretrained(tmp)
    with torch.random.fork_rng(devices=[]):
        model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(entry["weights"])
    return model.to(device).eval(), tokenizer


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

    @classmethod
    def from_team(cls, team: Team, spec: GameSpec, agents: Sequence[str] | None = None,
                  action: ActionConfig | None = None, prompt: PromptConfig | None = None,
                  step: int = 0, seed: int = 0) -> LLMPolicy:
        """Wrap ``team`` as a policy for the seats ``agents`` (default: all) of ``spec``."""
        agents = tuple(agents) if agents is not None else spec.agent_ids
        meta = PolicyMeta.from_spec("llm", spec, agents, inputs=("text",), step=step,
                                    extra={"models": sorted(team.models)})
        return cls(team, meta, action, prompt, seed)

    # ------------------------------------------------------------------- acting
    def _role(self, agent: str) -> str:
        return self.meta.roles[self.meta.agents.index(agent)] if agent in self.meta.agents \
            else agent

    def _requests(self, agent: str, vs: VecStep) -> tuple[list[int], list[Request], list]:
        if vs.text is None or vs.legal_text is None:
            raise ValueError("LLMPolicy needs text views: build the VectorGame with with_text=True")
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
                out[b] = legal_ids[d.index]
        return out

    def action_probs(self, agent: str, vs: VecStep) -> np.ndarray:
        """``[B, N]``: the scoring softmax over each acting copy's legal action texts."""
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
        roles = {r: [b.model, b.prompt] for r, b in self.team.roles.items()}
        return {"models": models, "roles": roles, "action": dataclasses.asdict(self.action),
                "prompt": dataclasses.asdict(self.prompt), "seed": self.seed}

    @classmethod
    def from_payload(cls, meta: PolicyMeta, payload: dict[str, Any],
                     device: str | torch.device = "cpu") -> LLMPolicy:
        models = {}
        for name, entry in payload["models"].items():
            model, tok = _load_model(entry, device)
            models[name] = TeamModel(name, model, tok, backend_for(model, tok, "transformers",
                                                                  seed=payload["seed"]))
        team = Team(models, {r: RoleBinding(m, p) for r, (m, p) in payload["roles"].items()})
        a = dict(payload["action"])
        sampling = _sampling(a.pop("sampling"))
        action = ActionConfig(**a, sampling=sampling)
        return cls(team, meta, action, PromptConfig(**payload["prompt"]), payload["seed"])


def _sampling(d: dict[str, Any]) -> SamplingConfig:
    return SamplingConfig(**{**d, "stop": tuple(d["stop"])})
