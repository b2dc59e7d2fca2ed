"""Teams of LLM agents: roles mapped to models and role prompts.

A :class:`Team` holds one or more :class:`TeamModel` (a trainable ``transformers`` model,
its tokenizer and the backend that serves it) and binds each role to one of them plus a
role prompt. Two common shapes:

* :meth:`Team.shared` -- one model plays every role; the role prompt (and the ``{role}``
  field of the prompt template) tells the roles apart. Self-play on a two-player game
  puts this one model in both seats.
* :meth:`Team.per_role` -- a separate model for each role (specialized agents).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from torch import nn

from llm_agents.backends.base import Backend, make_backend

ANY_ROLE = "*"


@dataclass
class TeamModel:
    """A trainable model, its tokenizer and the backend that generates with it."""

    name: str
    model: nn.Module
    tokenizer: Any
    backend: Backend

    @property
    def pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad if pad is not None else self.tokenizer.eos_token_id)

    def sync(self) -> None:
        """Push the model's weights into the backend (a no-op for shared modules)."""
        if getattr(self.backend, "model", None) is not self.model:
            self.backend.load_weights(self.model.state_dict())


@dataclass(frozen=True)
class RoleBinding:
    """Which team model plays a role, and the role prompt it gets."""

    model: str
    prompt: str = ""


def backend_for(model: nn.Module, tokenizer: Any, backend: str | Backend, **kw: Any) -> Backend:
    """The registered backend ``backend`` built for ``(model, tokenizer)`` (``transformers``
    wraps the module itself; ``vllm`` loads the model's directory into an engine, whose
    servers listen on loopback unless ``VLLM_HOST_IP`` says otherwise:
    :func:`~llm_agents.settings.prepare_vllm_env`, called by the backend)."""
    if isinstance(backend, Backend):
        return backend
    return make_backend(backend, model, tokenizer, **kw)


class Team:
    """Roles bound to models; see the module docstring.

    Example (one model, two role prompts)::

        >>> from llm_agents.tiny import build_model, build_tokenizer
        >>> tok = build_tokenizer(["send answer calc"])
        >>> team = Team.shared(build_model(tok), tok, {"scout": "Send your number."})
        >>> team.binding("scout").prompt, team.binding("solver").model
        ('Send your number.', 'shared')

    Args:
        models: team models by name.
        roles: role -> binding; the role ``"*"`` binds every role not listed.
    """

    def __init__(self, models: Mapping[str, TeamModel], roles: Mapping[str, RoleBinding]) -> None:
        for role, b in roles.items():
            if b.model not in models:
                raise ValueError(f"role {role!r} is bound to unknown model {b.model!r}; "
                                 f"models: {sorted(models)}")
        self.models = dict(models)
        self.roles = dict(roles)

    @classmethod
    def shared(cls, model: nn.Module, tokenizer: Any, role_prompts: Mapping[str, str] | None = None,
               backend: str | Backend = "transformers", name: str = "shared",
               **backend_kwargs: Any) -> Team:
        """One model for every role (role prompts optional)."""
        tm = TeamModel(name, model, tokenizer, backend_for(model, tokenizer, backend,
                                                        **backend_kwargs))
        roles = {r: RoleBinding(name, p) for r, p in (role_prompts or {}).items()}
        roles.setdefault(ANY_ROLE, RoleBinding(name, ""))
        return cls({name: tm}, roles)

    @classmethod
    def per_role(cls, models: Mapping[str, tuple[nn.Module, Any]],
                 role_prompts: Mapping[str, str] | None = None,
                 backend: str = "transformers", **backend_kwargs: Any) -> Team:
        """A separate ``(model, tokenizer)`` per role, each named after its role."""
        prompts = role_prompts or {}
        tms = {r: TeamModel(r, m, t, backend_for(m, t, backend, **backend_kwargs))
               for r, (m, t) in models.items()}
        return cls(tms, {r: RoleBinding(r, prompts.get(r, "")) for r in models})

    def binding(self, role: str) -> RoleBinding:
        """The binding of ``role`` (the ``"*"`` binding when the role is not listed)."""
        if role in self.roles:
            return self.roles[role]
        if ANY_ROLE in self.roles:
            b = self.roles[ANY_ROLE]
            return RoleBinding(b.model, b.prompt)
        raise ValueError(f"team has no model for role {role!r}; roles: {sorted(self.roles)}")

    def model_for(self, role: str) -> TeamModel:
        return self.models[self.binding(role).model]

    def modules(self) -> Iterator[tuple[str, nn.Module]]:
        for name, tm in self.models.items():
            yield name, tm.model

    def sync(self) -> None:
        """Push every model's weights into its backend."""
        for tm in self.models.values():
            tm.sync()
