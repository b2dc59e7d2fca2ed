"""The two things the population manager sees of a classic learner: ``Learner`` and ``Policy``.

* A :class:`Learner` owns networks, optimizer and buffer for the seats (agent ids) it
  controls. The loop is: ``actions = learner.act(vs)`` → ``vs = game.step(...)`` →
  ``learner.observe(vs)`` → ``if learner.ready(): metrics = learner.update()``.
  ``state_dict()`` holds everything needed to resume (weights, optimizer, normalizers, RNG).
* A :class:`Policy` is a frozen snapshot a learner publishes: it acts without the learner,
  saves and loads by itself (``torch.load(weights_only=True)``) and knows the game and
  seats it was trained for (:class:`PolicyMeta`).

Both read their inputs from a ``games.VecStep`` (``obs[agent]`` ``[B, O]``, ``legal[agent]``
``[B, N]``, ``graph`` ``[B, V, F]``), so one call serves B copies of a game.
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
import importlib
import os
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch

from games import ActionSpace, GameSpec, VecStep
from marl.configs import unknown_device
from marl.fileio import atomic_write, check_torch_zip, not_a_file
from marl.networks import weights_to_load
from marl.state_checks import nonfinite_tensor, short_repr

POLICY_FORMAT = 1


class CheckpointError(RuntimeError):
    """A policy or learner file is missing, unreadable or of the wrong kind."""


class ModelChangedError(ValueError):
    """A learner's checkpoint holds other models than the ones built now (another model
    folder, other model settings): raised by ``load_state_dict`` naming the first difference,
    so a resume can name the changed model rather than the settings."""


class PolicyLoadError(CheckpointError, ValueError):
    """A policy file cannot be loaded: missing, truncated, malformed or asking for too much.

    The message is one line naming the file; a command line catches this (or
    ``CheckpointError`` / ``ValueError``) and prints it.
    """


@dataclass(frozen=True)
class PolicyMeta:
    """What a policy was trained for; stored next to its weights.

    Attributes:
        kind: registered policy kind (``mappo``, ``vdn``, ``maddpg``...).
        game: game spec name it was trained on.
        agents: seats it was trained to fill.
        roles: role of each seat in ``agents``.
        obs_shapes: observation shape per seat.
        action_spaces: action space per seat, as ``dataclasses.asdict(ActionSpace)``.
        inputs: what ``act`` reads from a VecStep: ``obs``, ``graph`` and/or ``state``.
        step: learner step at which the snapshot was taken.
        extra: free JSON-able metadata.
    """

    kind: str
    game: str
    agents: tuple[str, ...]
    roles: tuple[str, ...]
    obs_shapes: dict[str, tuple[int, ...]]
    action_spaces: dict[str, dict[str, Any]]
    inputs: tuple[str, ...] = ("obs",)
    step: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_spec(cls, kind: str, spec: GameSpec, agents: tuple[str, ...], **kw: Any) -> PolicyMeta:
        return cls(
            kind=kind,
            game=spec.name,
            agents=tuple(agents),
            roles=tuple(spec.agent(a).role for a in agents),
            obs_shapes={a: tuple(spec.obs_shapes[a]) for a in agents},
            action_spaces={a: dataclasses.asdict(spec.action_spaces[a]) for a in agents},
            **kw,
        )

    def action_space(self, agent: str) -> ActionSpace:
        d = dict(self.action_spaces[agent])
        d["shape"] = tuple(d.get("shape", ()))
        return ActionSpace(**d)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["agents"], d["roles"] = list(self.agents), list(self.roles)
        d["inputs"] = list(self.inputs)
        d["obs_shapes"] = {a: list(s) for a, s in self.obs_shapes.items()}
        d["action_spaces"] = {
            a: {**sp, "shape": list(sp.get("shape", ()))} for a, sp in self.action_spaces.items()
        }
        return d

    @classmethod
    def from_dict(cls, d: Any) -> PolicyMeta:
        """Rebuild metadata written by :meth:`to_dict`, checking every field's type.

        Raises:
            ValueError: one line naming the bad or missing field.
        """
        _check_meta(d)
        d = dict(d)
        d["agents"], d["roles"] = tuple(d["agents"]), tuple(d["roles"])
        d["inputs"] = tuple(d.get("inputs", ("obs",)))
        d["obs_shapes"] = {a: tuple(s) for a, s in d["obs_shapes"].items()}
        d["action_spaces"] = {
            a: {**sp, "shape": tuple(sp.get("shape", ()))} for a, sp in d["action_spaces"].items()
        }
        return cls(**d)


def _is_str_list(x: Any) -> bool:
    return isinstance(x, list | tuple) and all(isinstance(v, str) for v in x)


def _is_shape(x: Any) -> bool:
    return isinstance(x, list | tuple) and all(type(v) is int and v >= 0 for v in x)


_ACTION_SPACE_FIELDS = {f.name for f in dataclasses.fields(ActionSpace)}


def _check_meta(d: Any) -> None:
    """Raise a one-line ``ValueError`` unless ``d`` is well-formed policy metadata."""
    if not isinstance(d, dict):
        raise ValueError(f"policy metadata is a {type(d).__name__}, not a dict")
    fields = {f.name: f for f in dataclasses.fields(PolicyMeta)}
    unknown = sorted(set(map(str, d)) - set(fields))
    if unknown:
        raise ValueError(f"policy metadata has unknown fields {unknown}; known: {sorted(fields)}")
    required = [n for n, f in fields.items()
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [n for n in required if n not in d]
    if missing:
        raise ValueError(f"policy metadata lacks fields {missing}")
    agents = d["agents"]
    checks = {
        "kind": isinstance(d["kind"], str),
        "game": isinstance(d["game"], str),
        "agents": _is_str_list(agents),
        "roles": _is_str_list(d["roles"]) and len(d["roles"]) == len(agents),
        "inputs": _is_str_list(d.get("inputs", ())),
        "step": type(d.get("step", 0)) is int and 0 <= d.get("step", 0) < 2**63,  # SQLite
        "extra": isinstance(d.get("extra", {}), dict),
        "obs_shapes": isinstance(d["obs_shapes"], dict)
        and all(isinstance(a, str) and _is_shape(s) for a, s in d["obs_shapes"].items()),
        "action_spaces": isinstance(d["action_spaces"], dict)
        and all(isinstance(a, str) and isinstance(sp, dict) and isinstance(sp.get("kind"), str)
                and set(sp) <= _ACTION_SPACE_FIELDS and _is_shape(sp.get("shape", ()))
                for a, sp in d["action_spaces"].items()),
    }
    bad = [name for name, ok in checks.items() if not ok]
    if bad:
        accepted = {"step": "; accepted: a learner step >= 0 below 2**63",
                    "extra": "; accepted: a dict"}.get(bad[0], "")
        raise ValueError(f"policy metadata field {bad[0]!r} is malformed: "
                         f"{short_repr(d[bad[0]])}{accepted}")  # bounded: a file may nest it
    seats = set(agents)
    for name in ("obs_shapes", "action_spaces"):
        if not seats <= set(d[name]):
            raise ValueError(f"policy metadata {name!r} lacks seats {sorted(seats - set(d[name]))}")


@dataclass(frozen=True)
class Capabilities:
    """What a learner supports; test matrices and launchers derive valid pairs from it.

    Attributes:
        discrete: discrete action spaces (with legal masks).
        continuous: continuous (box) action spaces.
        on_policy: trains on fresh rollouts only (False: replay buffer).
        turn_based: turn-based games (one agent acting at a time).
        centralized_critic: uses global information (state or all observations) in training.
        simultaneous: simultaneous-move games (every agent acting at once).
        needs_state: needs the game's global state whatever its config.
        needs_graph: needs the game's entity graphs whatever its config.
        team: controls a whole team (trained on the team's reward), not single seats.
        own_rollouts: plays its own episodes (text views, whole games) instead of the
            step loop ``act`` / ``observe`` / ``update`` (LLM teams).
        partial_seats: honours ``Learner.seat_mask`` (trains where a frozen opponent fills
            some of its seats in some copies), which league members need.
        needs_text: acts on text views (LLM teams); natively batched games have none.
        why_not: why the learner lacks a capability, by its name (``{"turn_based": ...}``);
            refusals quote it, so the user learns why, not only what.
    """

    discrete: bool
    continuous: bool
    on_policy: bool
    turn_based: bool
    centralized_critic: bool
    simultaneous: bool = True
    needs_state: bool = False
    needs_graph: bool = False
    team: bool = False
    own_rollouts: bool = False
    partial_seats: bool = False
    needs_text: bool = False
    why_not: dict[str, str] = field(default_factory=dict, compare=False)

    def reason(self, capability: str) -> str:
        """`` (why)`` when ``why_not`` says why ``capability`` is missing, else ``""``."""
        why = self.why_not.get(capability)
        return f" ({why})" if why else ""

    def check(self, spec: GameSpec, agents: Sequence[str], learner: str) -> None:
        """Raise ``ValueError`` when ``spec`` needs something this learner lacks."""
        if not spec.simultaneous and not self.turn_based:
            raise ValueError(
                f"{learner} supports simultaneous-move games only; {spec.name} is turn-based"
                + self.reason("turn_based"))
        kinds = {spec.action_spaces[a].kind for a in agents}
        for kind, ok in (("discrete", self.discrete), ("continuous", self.continuous)):
            if kind in kinds and not ok:
                raise ValueError(f"{learner} does not support {kind} actions ({spec.name})")
        if len(kinds) > 1:
            raise ValueError(
                f"{learner}: agents {list(agents)} of {spec.name} mix discrete and continuous "
                "actions; give each kind its own learner"
            )


class Policy(abc.ABC):
    """A frozen snapshot that acts for one or more seats."""

    meta: PolicyMeta

    @abc.abstractmethod
    def act(self, agent: str, vs: VecStep, greedy: bool = False) -> np.ndarray:
        """Actions of ``agent`` in every copy: ``[B]`` int64 or ``[B, D]`` float32.

        Entries for copies where ``agent`` does not act are legal-looking placeholders.
        """

    def action_probs(self, agent: str, vs: VecStep) -> np.ndarray:
        """``[B, N]`` action probabilities (stochastic discrete policies only)."""
        raise NotImplementedError(f"{self.meta.kind} policies have no action probabilities")

    def reseed(self, seed: int) -> None:  # noqa: B027 - deterministic policies keep no stream
        """Restart the policy's own random stream (sampling, exploration) from ``seed``.

        Policies never draw from the global torch / numpy random state; a match job or a
        league generation reseeds the policies it seats, so what a cached policy played
        before does not change what it plays next."""

    @abc.abstractmethod
    def payload(self) -> dict[str, Any]:
        """Tensors and plain values that rebuild this policy with ``from_payload``."""

    @classmethod
    @abc.abstractmethod
    def from_payload(cls, meta: PolicyMeta, payload: dict[str, Any]) -> Policy:
        """Rebuild a policy saved by :meth:`payload`."""

    def save(self, path: str | os.PathLike) -> Path:
        """Write the policy to ``path`` (atomically: a crash leaves no half file)."""
        data = {"format": POLICY_FORMAT, "meta": self.meta.to_dict(), "payload": self.payload()}
        return atomic_torch_save(data, path)


def _space_text(space: dict[str, Any] | ActionSpace) -> str:
    sp = dataclasses.asdict(space) if isinstance(space, ActionSpace) else space
    if sp.get("kind") == "discrete":
        return f"{sp.get('n')} actions"
    return f"a box of shape {tuple(sp.get('shape', ()))}"


def misfit(meta: PolicyMeta, spec: GameSpec, agent: str) -> str | None:
    """Why a policy of ``meta`` cannot play seat ``agent`` of ``spec`` (None: it can): the
    observation shape it reads (a policy that reads observations) or its actions differ from
    the game's for that seat. A seat the policy does not hold is its own ``act``'s to refuse
    or fill (a GNN actor plays an unseen seat of a role it knows). Same shapes on a game of
    another name pass (a variant, a renamed game): what plays is then the caller's choice.

    One line naming both sides: without it a narrower observation was padded up to the
    trained width and played silently (a 3-player Kuhn policy on 2-player Kuhn), a wider one
    failed in numpy's broadcast, another action count in torch.
    """
    if agent not in meta.agents or agent not in spec.action_spaces:
        return None
    mine, theirs = meta.action_spaces[agent], dataclasses.asdict(spec.action_spaces[agent])
    same_actions = mine.get("kind") == theirs["kind"] and (
        mine.get("n") == theirs["n"] if theirs["kind"] == "discrete"
        else tuple(mine.get("shape", ())) == tuple(theirs["shape"]))
    obs_mine, obs_theirs = tuple(meta.obs_shapes[agent]), tuple(spec.obs_shapes[agent])
    if same_actions and (obs_mine == obs_theirs or "obs" not in meta.inputs):
        return None
    return (f"the {meta.kind} policy for seat {agent!r} was trained on {meta.game} (observation "
            f"shape {obs_mine}, {_space_text(mine)}) but {spec.name} gives {agent!r} "
            f"observation shape {obs_theirs}, {_space_text(theirs)}; play it on the game it "
            "was trained on")


def check_fits(where: str, seats: dict[str, Policy] | Sequence[tuple[str, Policy]],
               spec: GameSpec) -> None:
    """Refuse, in one line starting with ``where``, the first seat whose policy cannot play
    it on ``spec`` (:func:`misfit`); ``seats``: seat -> policy (or pairs)."""
    for agent, policy in (seats.items() if isinstance(seats, dict) else seats):
        meta = getattr(policy, "meta", None)
        why = misfit(meta, spec, agent) if isinstance(meta, PolicyMeta) else None
        if why is not None:
            raise ValueError(f"{where}: {why}")


_POLICIES: dict[str, type[Policy]] = {}
P = TypeVar("P", bound=type[Policy])


def policy_class(kind: str) -> type[Policy] | None:
    """The Policy class registered as ``kind`` (None: no imported module registers it)."""
    return _POLICIES.get(kind)


def register_policy(kind: str) -> Callable[[P], P]:
    """Register a Policy class so :func:`load_policy` can rebuild files of that kind.

    Raises:
        ValueError: another class holds ``kind`` (a redefinition of the same module and
            qualified name, a notebook cell run again, replaces it: ``games.registry``'s rule
            for every registry); it replaced the class files of that kind load with, silently.
    """
    from games.registry import defined_at, redefinition

    def deco(cls: P) -> P:
        if kind in _POLICIES and not redefinition(_POLICIES[kind], cls):
            raise ValueError(f"policy kind {kind!r} is already registered by "
                             f"{defined_at(_POLICIES[kind])}; register yours under another kind")
        _POLICIES[kind] = cls
        return cls

    return deco


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> Path:
    """``torch.save`` to a temporary file, then rename over ``path`` (a link at either name
    is replaced, never written through)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, lambda fh: torch.save(obj, fh))


def _first_line(err: BaseException) -> str:
    """The first sentence of an error's first line (torch's zip errors run on for 400 chars)."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text.split(". ")[0][:200]


def _not_torch(path: Path) -> str | None:
    """What a file torch cannot read is, when it is plainly no torch file (empty, text, or
    other bytes than a zip's or a pickle's start); None when it may be a cut torch file."""
    with open(path, "rb") as fh:
        head = fh.read(64)
    if not head:
        return "truncated or not a torch file (it is empty)"
    if head[:2] == b"PK" or head[:1] == b"\x80":
        return None  # a zip (torch.save) or a pickle (torch's legacy format), maybe cut
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:  # (a multi-byte character cut at byte 64 is still text)
        text = head[:-3].decode("utf-8", "replace") if len(head) == 64 else ""
    if text and "\ufffd" not in text and all(c.isprintable() or c in "\t\r\n" for c in text):
        return f"not a torch file but text, starting {text.splitlines()[0][:40]!r}"
    return f"not a torch file (it starts with bytes {head[:8].hex(' ')})"


def safe_torch_load(
    path: str | os.PathLike,
    what: str = "checkpoint",
    error: type[CheckpointError] = CheckpointError,
) -> dict[str, Any]:
    """``torch.load(weights_only=True)``; one-line errors (of type ``error``) name the file."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p.name for p in path.glob("*.pt"))
        raise error(f"{what} {path} is a folder; " + (
            f"give one of its files: {' '.join(files[:5])}{' ...' if len(files) > 5 else ''}"
            if files else "give a .pt file (it holds none)"))
    if not path.is_file():
        raise error(not_a_file(path, what))
    check_torch_zip(path, f"{what} {path}", error)  # no entry inflates past the file's size
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unpickling failure means a bad file
        # A truncated zip says "[Errno 22] Invalid argument" or "failed finding central
        # directory": name the likely cause, then torch's own words (or what the file is:
        # torch says only "101" of a text file).
        why = _not_torch(path) or f"truncated or not a torch file ({_first_line(err)})"
        raise error(f"cannot read {what} {path}: {why}") from None
    if not isinstance(data, dict):
        raise error(f"{what} {path} does not hold a dict")
    check_tensors(data, f"{what} {path}", error)
    return data


def check_tensors(data: Any, what: str, error: type[Exception] = CheckpointError) -> None:
    """Refuse loaded tensors that claim far more memory than the file holds (one-line
    ``error`` naming ``what``): a file chooses its tensors' shapes and strides, so a few bytes
    expanded with stride 0, or many views of one storage, would pass for gigabytes of weights
    (``build_checked`` sizes a module by them; casting or copying one allocates it whole).
    Tensors must be dense, none may overlap itself, and all of them together may view at most
    four times their storages' bytes plus :data:`MAX_BUILD_SLACK_BYTES` (tied weights: 2x).
    Each must hold values (no meta tensor) of a dtype in :data:`LOADED_DTYPES`: torch's sum
    has no float8 kernel, and a meta tensor's values cannot be read, so the finiteness check
    after this one raised torch's traceback on either."""
    stack, seen, storages, viewed = [(data, "")], set(), {}, 0
    while stack:
        x, where = stack.pop()
        if isinstance(x, torch.Tensor):
            if x.layout != torch.strided:
                raise error(f"{what}: holds a {x.layout} tensor; only dense tensors are read")
            if x.is_meta or x.dtype not in LOADED_DTYPES:
                kind = "meta" if x.is_meta else str(x.dtype).removeprefix("torch.")
                raise error(f"{what}: {where or 'its tensor'} is a {kind} tensor; accepted: "
                            "tensors with values, floating (16 to 64 bits), integer or bool")
            nbytes, stored = x.numel() * x.element_size(), x.untyped_storage().nbytes()
            if nbytes > stored:
                raise error(f"{what}: a tensor of shape {list(x.shape)} overlaps itself "
                            f"({nbytes} bytes viewed in {stored} stored)")
            storages[x.untyped_storage().data_ptr()], viewed = stored, viewed + nbytes
        elif isinstance(x, dict | list | tuple | set) and id(x) not in seen:
            seen.add(id(x))  # a pickle may nest a container in itself
            stack.extend(reversed(list(_children(x, where))))
    have = sum(storages.values())
    if viewed > 4 * have + MAX_BUILD_SLACK_BYTES:
        raise error(f"{what}: its tensors view {viewed / 2**20:.0f} MiB of "
                    f"{have / 2**20:.0f} MiB stored")


def _children(x: dict | list | tuple | set, where: str) -> Iterator[tuple[Any, str]]:
    """The tensors and containers in ``x`` (at path ``where``) with their paths, such as
    ``payload['actors']['0.head.0.weight']``; numbers and strings hold no tensor."""
    items = x.items() if isinstance(x, dict) else enumerate(x)
    for k, v in items:
        if isinstance(v, torch.Tensor | dict | list | tuple | set):
            yield v, f"{where}[{short_repr(k, 60)}]" if where or not isinstance(k, str) else k
        if isinstance(x, dict) and isinstance(k, torch.Tensor | tuple):
            yield k, f"{where}[key {short_repr(k, 60)}]"


LOADED_DTYPES = frozenset({
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.uint8, torch.int8,
    torch.int16, torch.int32, torch.int64, torch.bool,
    torch.complex64, torch.complex128})  # complex: refused after, as not real, in its own words
"""The dtypes of tensors a loaded file may hold: those the project saves (weights, moments
and counters in floats, RNG states in uint8, counts in int64) and casts alike."""


M = TypeVar("M", bound=torch.nn.Module)
MAX_BUILD_SLACK_BYTES = 64 * 2**20
"""What a loaded module may hold beyond twice its saved weights (non-persistent buffers)."""


def build_checked(build: Callable[[], M], weights: Any, what: str) -> M:
    """``build()`` holding ``weights``, once a dry run on the meta device shows it fits them.

    A snapshot chooses the sizes its loader builds (hidden widths, layers, vocabulary); this
    check means a crafted file can make the loader allocate no more than about what the file
    itself holds: the module's state-dict names and shapes must equal ``weights``' and its
    parameters and buffers may take at most twice their bytes plus
    :data:`MAX_BUILD_SLACK_BYTES`. That dry run's module is then allocated and loaded: no
    second build and no random initialisation of weights the load overwrites
    (:func:`_materialized`; a module it cannot vouch for is built again inside
    :func:`marl.networks.weights_to_load`, without the orthogonal initialisation). ``weights``
    are loaded into it here, so no caller sees it before they are.

    Raises:
        PolicyLoadError: ``weights`` is not a state dict of tensors, or does not fit.
    """
    if not isinstance(weights, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()
    ):
        raise PolicyLoadError(f"{what}: weights are not a dict of named tensors")
    # weights_to_load first: it keeps the default device the weights load to
    with weights_to_load(), _dry_run_device(), torch.random.fork_rng(devices=[]):
        probe = build()
    expected = {k: tuple(v.shape) for k, v in probe.state_dict().items()}
    given = {k: tuple(v.shape) for k, v in weights.items()}
    if expected != given:
        diff = set(expected) ^ set(given) or {k for k in expected if expected[k] != given[k]}
        k = sorted(diff)[0]
        found = "missing" if k not in given else f"saved {list(given[k])}"
        needed = "not built" if k not in expected else f"built {list(expected[k])}"
        raise PolicyLoadError(
            f"{what}: weights do not match the saved configuration at {k!r} ({needed}, {found})"
        )
    tensors = {id(t): t for t in (*probe.parameters(), *probe.buffers())}.values()
    need = sum(t.numel() * t.element_size() for t in tensors)
    stored = {v.untyped_storage().data_ptr(): v.untyped_storage().nbytes()
              for v in weights.values()}  # what the file holds: views of one storage count once
    have = min(sum(v.numel() * v.element_size() for v in weights.values()), sum(stored.values()))
    if need > 2 * have + MAX_BUILD_SLACK_BYTES:
        raise PolicyLoadError(
            f"{what}: the saved configuration asks for {need / 2**20:.0f} MiB, far more than "
            f"the {have / 2**20:.0f} MiB of weights saved with it"
        )
    module = _loaded_dry_run(probe, weights)
    if module is None:  # code this package does not know, or state the meta device lost
        with weights_to_load():
            module = build()
        module.load_state_dict(weights)  # every parameter: the names were checked equal above
    return module


_NO_VALUES = frozenset({
    *(getattr(torch.nn.init, name) for name in (
        "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
        "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
        "orthogonal_", "sparse_")),
    torch.Tensor.uniform_, torch.Tensor.normal_})
"""Initialisations a dry run on the meta device skips: a meta tensor holds no values, and
each one's meta kernel runs as Python decompositions (half a 64x64 MLP's dry run)."""

try:
    from torch.utils._device import DeviceContext as _DeviceContext
except ImportError:  # a torch without it: the plain meta device, initialisations and all
    _DeviceContext = None


def _dry_run_device() -> Any:
    """``torch.device("meta")`` as a context, skipping the initialisations of meta tensors
    (:data:`_NO_VALUES`)."""
    return torch.device("meta") if _DeviceContext is None else _MetaNoInit("meta")


if _DeviceContext is not None:
    class _MetaNoInit(_DeviceContext):
        def __torch_function__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            if func in _NO_VALUES:
                x = args[0] if args else (kwargs or {}).get("tensor")
                if isinstance(x, torch.Tensor) and x.is_meta:
                    return x
            return super().__torch_function__(func, types, args, kwargs)


_KNOWN_MODULES = ("torch.", "torch_geometric.", "marl.")
"""Packages whose module classes keep all their tensors as parameters and buffers (checked
for ``marl``'s, torch_geometric's GATv2/Transformer convolutions and torch's layers): a
module built of these alone on the meta device is the module ``build()`` makes, once its
tensors are allocated (:func:`_materialized`)."""


def _is_meta(value: Any) -> bool:
    """A meta tensor or the meta device, or a list or tuple holding one (as nn.GRU's
    ``_flat_weights``); an attribute's value seen as it is (its dicts are hooks)."""
    if isinstance(value, list | tuple):
        return any(_is_meta(v) for v in value if not isinstance(v, list | tuple))
    if isinstance(value, torch.Tensor):
        return value.is_meta
    return isinstance(value, torch.device) and value.type == "meta"


def _loaded_dry_run(probe: M, weights: dict[str, torch.Tensor]) -> M | None:
    """``probe`` (built on the meta device, its state dict's names and shapes those of
    ``weights``) holding ``weights`` (``load_state_dict(assign=True)``), or None when that
    may not be the module a real build makes (the caller then builds it): a class from outside
    :data:`_KNOWN_MODULES` (a user's encoder, a transformers model), a parameter or buffer
    under two names (tied weights: ``load_state_dict(assign=True)`` gives each name its own),
    a buffer the state dict does not hold left on the meta device (a value the build computed,
    lost: :func:`marl.networks.config_tensor` makes one for real), or the meta device left in
    an attribute. Each weight is first given the module's dtype and the default device, and a
    storage of its own unless it already has one, as copying it into a built module did.

    Why: a snapshot's load built every module twice (this dry run, then for real: a GNN
    encoder's torch_geometric layers were most of a load) and drew nn.Linear's random init
    for every real weight before the file's weights overwrote it."""
    if not all(type(m).__module__.startswith(_KNOWN_MODULES) for m in probe.modules()):
        return None
    tied = (len(list(probe.named_parameters(remove_duplicate=False)))
            + len(list(probe.named_buffers(remove_duplicate=False))))
    if tied != len(list(probe.parameters())) + len(list(probe.buffers())):
        return None  # a tensor under two names: assigning each name its own would untie them
    state = probe.state_dict(keep_vars=True)
    if any(b.is_meta for name, b in probe.named_buffers(remove_duplicate=False)
           if name not in state):
        return None
    device, seen, own = torch.get_default_device(), set(), {}
    for name, value in weights.items():
        v = value.to(device=device, dtype=state[name].dtype).detach()
        storage = v.untyped_storage()
        if (not v.is_contiguous() or v.storage_offset() or storage.data_ptr() in seen
                or storage.nbytes() != v.numel() * v.element_size()):
            v = v.clone(memory_format=torch.contiguous_format)  # a view: its own storage
        seen.add(v.untyped_storage().data_ptr())
        own[name] = v
    probe.load_state_dict(own, assign=True)
    if any(t.is_meta for t in (*probe.parameters(), *probe.buffers())) or any(
            _is_meta(v) for m in probe.modules() for v in vars(m).values()):
        return None
    return probe


def policy_bytes(policy: Policy) -> bytes:
    """``policy``'s file (:meth:`Policy.save`) as bytes, to send to another process."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return policy.save(Path(tmp) / "policy.pt").read_bytes()


def policy_from_bytes(data: bytes) -> Policy:
    """The policy of :func:`policy_bytes`' bytes, loaded (and checked) as :func:`load_policy`
    loads a file: ``weights_only`` underneath, the payload treated as untrusted."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "policy.pt"
        path.write_bytes(data)
        return load_policy(path)


def _not_a_policy(path: Path, data: dict[str, Any]) -> str:
    """Why ``data`` (read from ``path``) is no policy file, naming what it is when it is a
    training checkpoint (a run's ``checkpoints/ckpt_<step>.pt``, or ``Learner.save``'s file)
    and where the run's policies are."""
    run_ckpt = path.parent.name == "checkpoints" or "step" in data or "members" in data
    if "learner" in data and not run_ckpt:
        return (f"{path} is not a selfplay policy file but a learner checkpoint (Learner.save; "
                "learner.load(path) restores it); learner.policy().save(path) writes a policy")
    if not ("learner" in data or "members" in data):
        return f"{path} is not a selfplay policy file"
    run = path.parent.parent if path.parent.name == "checkpoints" else None
    newest: dict[str, Path] = {}  # member -> its newest snapshot
    for snap in sorted((run / "snapshots").glob("*/v[0-9]*.pt")) if run else ():
        newest[snap.parent.name] = snap
    found = [str(p.relative_to(run)) for p in newest.values()]
    shown = (f": {', '.join(found[:3])}{' ...' if len(found) > 3 else ''}" if found
             else " (none written yet: a single run writes its snapshot when training ends)")
    return (f"{path} is not a selfplay policy file but a training checkpoint: resume its run with "
            f"selfplay-train <the run's overrides> resume=true hydra.run.dir={run or '<run>'}; "
            f"a run's policies are its snapshots, <run>/snapshots/<member>/vNNNN.pt{shown}")


def load_policy(path: str | os.PathLike) -> Policy:
    """Load a policy file written by :meth:`Policy.save`, whatever its kind.

    Raises:
        PolicyLoadError: the file is missing, truncated, not a policy file, or its metadata
            or payload is malformed or asks to build more than it holds (one line naming it).
    """
    data = safe_torch_load(path, "policy", PolicyLoadError)
    if data.get("format") != POLICY_FORMAT or "meta" not in data or "payload" not in data:
        raise PolicyLoadError(_not_a_policy(Path(path), data))
    try:
        meta = PolicyMeta.from_dict(data["meta"])
    except (ValueError, TypeError) as err:
        raise PolicyLoadError(f"{path}: {_first_line(err)}") from None
    if meta.kind not in _POLICIES:
        from marl.registry import policy_module  # the registry knows which module saves it

        module = policy_module(meta.kind)
        if module is not None:
            importlib.import_module(module)
    if meta.kind not in _POLICIES:
        raise PolicyLoadError(
            f"{path}: unknown policy kind {meta.kind!r}; known: {sorted(_POLICIES)} (a "
            "package's kinds load once it is imported: import llm_agents for 'llm'; a kind of "
            "your own registers when the module that defines it with @register_policy is "
            "imported)"
        )
    if not isinstance(data["payload"], dict):
        raise PolicyLoadError(f"{path}: {meta.kind} policy payload is not a dict")
    bad = nonfinite_tensor(data["payload"])  # else NaN actions, or torch's error mid-match
    if bad is not None:
        raise PolicyLoadError(f"{path}: {meta.kind} policy holds {bad}; a policy's weights "
                              "must be finite real numbers")
    try:
        with torch.random.fork_rng(devices=[]):  # building modules must not move the global RNG
            return _POLICIES[meta.kind].from_payload(meta, data["payload"])
    except PolicyLoadError as err:
        raise PolicyLoadError(f"{path}: {err}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as err:
        # A payload of the wrong shape fails somewhere inside from_payload; say where.
        what = f"missing entry {err}" if isinstance(err, KeyError) else _first_line(err)
        raise PolicyLoadError(f"{path}: malformed {meta.kind} policy payload: {what}") from err


class Learner(abc.ABC):
    """Trains the seats ``agents`` of a game; see the module docstring for the loop."""

    agents: tuple[str, ...]
    device: torch.device

    @abc.abstractmethod
    def act(self, vs: VecStep) -> dict[str, np.ndarray]:
        """Exploratory actions of every controlled agent (``[B]`` or ``[B, D]`` each)."""

    reads_tensors: bool = False
    """True when ``act``/``observe`` take VecSteps of torch tensors (``VectorGame(tensors=
    "auto")`` on a natively batched game keeps the rollout on the game's device)."""

    seat_mask: np.ndarray | None = None
    """``[B, A]`` bool: copies where this learner really plays each of its seats (None: all).
    Where False, another policy's action replaces the learner's and it is not trained on."""

    @abc.abstractmethod
    def observe(self, vs: VecStep) -> None:
        """Record the outcome of the last ``act`` (rewards, end flags, next observations)."""

    @abc.abstractmethod
    def ready(self) -> bool:
        """True when enough data was collected for :meth:`update`."""

    @abc.abstractmethod
    def update(self) -> dict[str, float]:
        """One training iteration; returns metrics (``losses/...``, ``charts/...``)."""

    @abc.abstractmethod
    def policy(self) -> Policy:
        """A frozen snapshot of the current policy (independent of later updates)."""

    def start_episodes(self) -> None:  # noqa: B027 (a no-op unless a learner keeps a rollout)
        """Forget an unfinished rollout: the next :meth:`act` sees new game copies (a league
        member's next generation builds new games, and a checkpoint holds no rollout, so a
        resumed run and an uninterrupted one must both start from an empty one)."""

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: weights, optimizer, normalizers, RNG, counters."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""

    def save(self, path: str | os.PathLike) -> Path:
        """Write :meth:`state_dict` to ``path`` (atomically) to resume training with
        :meth:`load`; a policy to play is ``learner.policy().save(path)``."""
        return atomic_torch_save({"format": POLICY_FORMAT, "learner": self.state_dict()}, path)

    def load(self, path: str | os.PathLike) -> None:
        """Restore a file of :meth:`save` into this learner (built for the same game and
        config); a file that is no learner checkpoint, or holds NaN or inf, is refused."""
        data = safe_torch_load(path, "learner checkpoint")
        if "learner" not in data:
            raise CheckpointError(f"{path} is not a learner checkpoint")
        bad = nonfinite_tensor(data["learner"])
        if bad is not None:
            raise CheckpointError(f"learner checkpoint {path} holds {bad}; its tensors must "
                                  "be finite real numbers")
        self.load_state_dict(data["learner"])


def derive_seed(seed: int, *keys: str | int) -> int:
    """A 31-bit seed for the stream ``keys`` of ``seed``: a child of the
    ``numpy.random.SeedSequence(seed)`` tree, keyed by name (stable across runs and
    independent of the order streams are asked for)."""
    spawn = tuple(k if isinstance(k, int) else zlib.crc32(k.encode()) for k in keys)
    seq = np.random.SeedSequence(int(seed) % 2**128, spawn_key=spawn)
    return int(seq.generate_state(1, np.uint32)[0] >> 1)


def seed_from_state(state: Any) -> int:
    """A 63-bit seed that restarts a torch generator from a saved state of another kind of
    device (a CUDA generator's 16 bytes do not fit a CPU one): the SHA-256 of its bytes, so
    every resume from one checkpoint restarts alike and other checkpoints restart otherwise
    (a sum of the bytes mapped seed 42 at offsets 4, 1024 and 262144 to one seed)."""
    data = torch.as_tensor(state).to(torch.uint8).cpu().numpy().tobytes()
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "little") >> 1


def rng_state() -> dict[str, Any]:
    """Torch and numpy global RNG states as tensors/plain values (weights_only-safe)."""
    np_state = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "numpy_keys": torch.from_numpy(np_state[1].astype(np.int64)),
        "numpy_pos": int(np_state[2]),
    }


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    keys = state["numpy_keys"].numpy().astype(np.uint32)
    np.random.set_state(("MT19937", keys, state["numpy_pos"], 0, 0.0))


def resolve_device(device: str | torch.device) -> torch.device:
    """``"cpu"``, ``"cuda"``, ``"cuda:1"`` or ``"auto"`` (CUDA when available).

    Raises:
        ValueError: one line for any other device (``"mps"``, ``"gpu"``: torch's own errors
            named neither what was wrong nor what is accepted) or CUDA on a machine without.
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    text = str(device)
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):  # populations.config_checks.DEVICE
        raise ValueError(unknown_device(text))
    dev = torch.device(text)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but CUDA is not available; use 'cpu'")
    return dev
