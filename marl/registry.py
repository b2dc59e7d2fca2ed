"""The learner registry: one decorator adds a learner to every entry point.

A learner module registers its class once::

    @register_learner("mappo", config=MAPPOConfig, policy="mappo",
                      capabilities=Capabilities(discrete=True, ...))
    class MAPPO(Learner): ...

and ``selfplay-train algo=mappo``, leagues, PSRO oracles and :func:`marl.core.load_policy`
find it here: the name, the config dataclass (the schema of its ``algo`` preset), the
policy kind its snapshots are saved as, and the :class:`~marl.core.Capabilities` that
decide which games it may play (:func:`check_compatible`). A *preset* of a learner (IPPO is
MAPPO with local critics) is one more ``@register_learner`` line with a ``preset``
function that adjusts the shared config; it is not a special case anywhere else.

``marl`` registers its own learners when :func:`entries` is first called (the modules in
``BUILTIN_MODULES``). Other packages register theirs on import: ``llm_agents.learner``
registers ``llm_grpo``, and ``populations`` imports it; ``marl`` never imports them. A policy
kind may be declared by module name instead, so that loading a file of it imports the module
on demand: given to :func:`register_policy_module`, or in a ``POLICY_MODULES = {kind:
module}`` literal at the top of a package's ``__init__`` (:func:`declared_policy_module`:
read from the packages installed with ``marl`` without importing them, so a script that only
loads an LLM team's snapshot needs no ``import llm_agents``).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from games import GameSpec
from games.core import where_raised
from games.registry import defined_at, redefinition
from marl.configs import did_you_mean
from marl.core import Capabilities, CheckpointError

# marl's own learner modules: each registers its learners (and policy kinds) on import
BUILTIN_MODULES = ("marl.mappo", "marl.value_decomp", "marl.maddpg", "marl.tabular")


class IncompatibleError(ValueError):
    """A learner cannot play a game (one line: what is incompatible, what to change)."""


class LearnerBuildError(ValueError):
    """A registered learner's constructor (or factory) raised: a bug in the learner, reported
    as a user error (one line, exit 2, no half-made run folder where the entry points build it
    early) naming the algo, the error and the line of the learner's code; ``__cause__`` is the
    error itself (``HYDRA_FULL_ERROR=1`` shows its traceback)."""


GameCheck = Callable[[Any, GameSpec], "str | None"]


@dataclass(frozen=True)
class LearnerEntry:
    """One registered learner.

    Attributes:
        name: the ``algo`` name (``mappo``, ``ippo``, ``vdn``...).
        cls: the class built (a ``marl.core.Learner``; for ``own_rollouts`` learners the
            trainer class, e.g. ``llm_agents.MultiTurnGRPO``).
        config: its config dataclass (the schema of its experiment section).
        policy: the policy kind its snapshots are saved as (``load_policy`` looks it up).
        capabilities: what it supports (drives :func:`check_compatible` and test matrices).
        section: the experiment config field holding its settings (default: ``name``);
            presets of one learner share a section (``ippo`` reads ``mappo``).
        default: the section's default config (default: ``config()``).
        preset: adjusts the section's config for this entry (``ippo``: local critics).
        check: ``(config, spec) -> problem or None`` for requirements that depend on the
            config (``critic=state`` needs a global state, ``encoder=gnn`` entity graphs).
        factory: builds it when the class is not called as
            ``cls(spec, config, agents=, device=, seed=)`` (an LLM trainer also needs the
            game's name, keyword arguments and a work folder: ``**context``).
    """

    name: str
    cls: type
    config: type
    policy: str
    capabilities: Capabilities
    section: str
    default: Callable[[], Any]
    preset: Callable[[Any], Any] | None = None
    check: GameCheck | None = None
    factory: Callable[..., Any] | None = None

    def resolve(self, section_config: Any) -> Any:
        """This entry's config from its section's (the preset applied)."""
        return section_config if self.preset is None else self.preset(section_config)

    def build(self, spec: GameSpec, config: Any = None, agents: tuple[str, ...] | None = None,
              device: str = "cpu", seed: int = 0, **context: Any) -> Any:
        """A learner for ``agents`` of ``spec``; ``config`` is the *section's* config
        (None: the default), so presets apply here. Every learner takes its seed alike.

        An error that is not a user error (ValueError, OSError, CheckpointError: already one
        line) becomes :class:`LearnerBuildError`, here, so every caller (an experiment, a
        league member, a PSRO oracle for any player, an approximate-exploitability response)
        reports it alike (``README`` "Add your own learner": a class whose body is ``...``
        raised ``TypeError: MyLearner() takes no arguments`` in a traceback)."""
        try:
            cfg = self.resolve(self.default() if config is None else config)
            if self.factory is not None:
                return self.factory(spec, cfg, agents=agents, device=device, seed=seed,
                                    **context)
            return self.cls(spec, cfg, agents=agents, device=device, seed=seed)
        except (ValueError, OSError, CheckpointError):
            raise
        except Exception as err:
            why = " ".join(str(err).split()) or "no message"
            raise LearnerBuildError(
                f"learner {self.name} could not be built: {type(err).__name__}: {why} (at "
                f"{_learner_line(self, err)}); HYDRA_FULL_ERROR=1 shows the traceback"
            ) from err


def _learner_line(entry: LearnerEntry, err: BaseException) -> str:
    """``file:line`` of ``err`` in the learner's own code: the innermost frame in the file of
    its class (or factory); the class's definition when the call itself failed (a constructor
    that takes no arguments); else the innermost frame outside installed packages."""
    files = set()
    for obj in (entry.cls, entry.factory):
        with contextlib.suppress(TypeError, OSError):
            files.add(inspect.getsourcefile(obj) if obj is not None else None)
    frames = traceback.extract_tb(err.__traceback__)
    own = [f for f in frames if f.filename in files]
    if own:
        where = (own[-1].filename, own[-1].lineno)
    elif frames and frames[-1].filename == __file__:  # raised calling the class
        where = _class_line(entry.cls) or (frames[-1].filename, frames[-1].lineno)
    else:
        return where_raised(err)
    path, line = where
    rel = os.path.relpath(path) if path and not os.path.relpath(path).startswith("..") \
        else path
    return f"{rel}:{line}"


def _class_line(cls: type) -> tuple[str, int] | None:
    """The file of ``cls`` and the line of its ``class`` statement (after its decorators);
    None when its source cannot be found (a class made in a notebook or by ``type()``)."""
    try:
        path, (lines, start) = inspect.getsourcefile(cls), inspect.getsourcelines(cls)
    except (TypeError, OSError):
        return None
    at = next((i for i, text in enumerate(lines) if text.lstrip().startswith("class ")), 0)
    return (path, start + at) if path else None


_LEARNERS: dict[str, LearnerEntry] = {}
# policy kind -> module that registers its class (a learner's, or a run's random players)
_POLICY_MODULES: dict[str, str] = {"random": "marl.train"}
_builtins_loaded = False
C = TypeVar("C", bound=type)


def register_learner(
    name: str, *, config: type, policy: str, capabilities: Capabilities,
    section: str | None = None, default: Callable[[], Any] | None = None,
    preset: Callable[[Any], Any] | None = None, check: GameCheck | None = None,
    factory: Callable[..., Any] | None = None,
) -> Callable[[C], C]:
    """Class decorator registering a learner under ``name`` (see :class:`LearnerEntry`)."""
    if not dataclasses.is_dataclass(config):
        raise TypeError(f"learner {name!r}: config {config!r} is not a dataclass")

    def deco(cls: C) -> C:
        if name in _LEARNERS and not redefinition(_LEARNERS[name].cls, cls):
            raise ValueError(f"learner {name!r} is already registered by "
                             f"{defined_at(_LEARNERS[name].cls)}; register yours under another "
                             "name")
        _LEARNERS[name] = LearnerEntry(  # a notebook cell run again: its new class replaces
            name=name, cls=cls, config=config, policy=policy, capabilities=capabilities,
            section=section or name, default=default or config, preset=preset, check=check,
            factory=factory)
        _POLICY_MODULES.setdefault(policy, cls.__module__)
        return cls

    return deco


def _load_builtins() -> None:
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True
        for mod in BUILTIN_MODULES:
            importlib.import_module(mod)


def entries() -> dict[str, LearnerEntry]:
    """Every registered learner by name (marl's own, and those of imported packages)."""
    _load_builtins()
    return dict(_LEARNERS)


def registered_learners() -> dict[str, LearnerEntry]:
    """The learners registered so far, by name: those of the modules already imported, marl's
    own only once :func:`entries` (or anything that builds a learner) loaded them. Loads
    nothing (no torch): a hint for a command line's name reads it before training starts."""
    return dict(_LEARNERS)


def names() -> list[str]:
    return sorted(entries())


def get(name: str) -> LearnerEntry:
    """The entry of ``name``; an unknown name fails in one line listing the known ones."""
    found = entries().get(name)
    if found is None:
        raise ValueError(f"algo {name!r} unknown; choose one of {names()}"
                         f"{did_you_mean(name, names())}")
    return found


def played_greedy(kind: str) -> bool:
    """Whether a snapshot of policy ``kind`` is played by its argmax outside its own
    training (league matches and opponents, PSRO, evaluations): its kind is saved by
    off-policy learners only (VDN/QMIX epsilon-greedy, MADDPG's noise: exploration is part
    of training, not of the snapshot); on-policy and unknown kinds sample."""
    kinds = [e.capabilities.on_policy for e in entries().values() if e.policy == kind]
    return bool(kinds) and not any(kinds)


def policy_module(kind: str) -> str | None:
    """The module whose import registers policy ``kind``: a registered learner's, one given
    to :func:`register_policy_module`, else one a package declares
    (:func:`declared_policy_module`); None: nothing saves it."""
    _load_builtins()
    return _POLICY_MODULES.get(kind) or declared_policy_module(kind)


def register_policy_module(kind: str, module: str) -> None:
    """Name the module whose import registers policy ``kind``, without importing it:
    :func:`marl.core.load_policy` imports it when it first meets a file of that kind. A
    package above ``marl`` declares its kinds so (``populations`` the ``llm`` kind of
    ``llm_agents``): a process that plays no such file never loads that package. A kind that
    a registered learner already saves keeps its module."""
    _POLICY_MODULES.setdefault(kind, module)


def declared_policy_module(kind: str) -> str | None:
    """The module that registers ``kind`` as a package declares it: a top-level
    ``POLICY_MODULES = {kind: module}`` (``llm_agents`` declares ``llm``), read from an
    imported package, else from the ``__init__`` of a package installed with ``marl`` (parsed,
    not imported: a script that only loads an LLM team's snapshot imported no ``llm_agents``).
    ``marl`` names no package above it, so the package says it."""
    for name, mod in list(sys.modules.items()):
        names = getattr(mod, "__dict__", None) if "." not in name else None  # no __getattr__
        table = names.get("POLICY_MODULES") if isinstance(names, dict) else None
        if isinstance(table, dict) and isinstance(table.get(kind), str):
            return table[kind]
    return _installed_declarations().get(kind)


@functools.cache
def _installed_declarations() -> dict[str, str]:
    """Policy kind -> module, as the ``POLICY_MODULES`` literal of each top-level package of
    ``marl``'s own distribution declares it ({} where ``marl`` is not installed: run from a
    checkout, a kind loads once its package is imported). Read once, on the first file of a
    kind no imported module registers; nothing is imported."""
    import importlib.metadata  # for the first unknown kind only

    try:  # setuptools lists a distribution's packages in top_level.txt: read only those
        # (packages_distributions() reads every installed one's RECORD too: ~0.5 s)
        tops = (set((d.read_text("top_level.txt") or "").split())
                for d in importlib.metadata.distributions())
        mine = next((t for t in tops if "marl" in t), set())
    except Exception:  # noqa: BLE001 (broken metadata of another distribution: no declarations)
        return {}
    found: dict[str, str] = {}
    for package in sorted(mine - {"marl"}):
        found.update({k: v for k, v in _declared_in(package).items() if k not in found})
    return found


def _declared_in(package: str) -> dict[str, str]:
    """The ``POLICY_MODULES = {...}`` literal of ``package``'s ``__init__`` ({} without one)."""
    try:
        spec = importlib.util.find_spec(package)  # a top-level name: finds, imports nothing
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    except (ImportError, ValueError, TypeError, AttributeError, OSError, SyntaxError):
        return {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) and node.value else [])
        if any(isinstance(t, ast.Name) and t.id == "POLICY_MODULES" for t in targets):
            try:
                table = ast.literal_eval(node.value)
            except ValueError:
                return {}
            return {k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, str)
                    } if isinstance(table, dict) else {}
    return {}


def _problem(entry: LearnerEntry, spec: GameSpec, config: Any,
             text_views: bool = True) -> str | None:
    """Why ``entry`` cannot play ``spec`` (None: it can); ``text_views``: whether the game's
    copies can carry text views (a natively batched game's cannot)."""
    cap, game = entry.capabilities, spec.name
    if spec.simultaneous and not cap.simultaneous:
        return f"{entry.name} plays turn-based games only and {game} is simultaneous-move"
    if not spec.simultaneous and not cap.turn_based:
        return (f"{entry.name} plays simultaneous-move games only and {game} is turn-based"
                + cap.reason("turn_based"))
    kinds = {sp.kind for sp in spec.action_spaces.values()}
    for kind, ok in (("discrete", cap.discrete), ("continuous", cap.continuous)):
        if kind in kinds and not ok:
            return f"{entry.name} does not support the {kind} actions of {game}"
    if cap.needs_state and spec.state_shape is None:
        return f"{entry.name} needs a global state and {game} has none"
    if cap.needs_graph and not spec.has_entity_graph:
        return f"{entry.name} needs entity graphs and {game} has none"
    if cap.needs_text and not text_views:
        return f"{entry.name} acts on text views and {game} is natively batched without them"
    if entry.check is not None:
        cfg = entry.resolve(entry.default() if config is None else config)
        return entry.check(cfg, spec)
    return None


def compatible(name: str, spec: GameSpec, config: Any = None, text_views: bool = True) -> bool:
    """True when learner ``name`` (with its section's ``config``) can play ``spec``."""
    return _problem(get(name), spec, config, text_views) is None


@dataclass(frozen=True)
class Refusal:
    """Why learner ``algo`` cannot play ``game``, in parts (:func:`refusal`).

    Attributes:
        problem: what is incompatible, as one clause (a learner's ``check`` may end it with
            its hint, ``; use encoder=mlp``).
        note: its section's algos that play it with the section at its defaults, not as set,
            said after ``others`` in the list of algos that play it (``['ippo', 'mappo'] with
            mappo.* at its defaults``; "" if none; one that plays it as set is in ``others``).
        others: the other registered algos that play it (its section's with ``config``).
    """

    algo: str
    game: str
    problem: str
    note: str
    others: list[str]

    def line(self, problem: str | None = None, note: str | None = None,
             others: list[str] | None = None) -> str:
        """The one line :func:`check_compatible` raises (``problem``/``note``/``others``: in
        their place, for a caller that knows better, e.g. a league member's own mapping,
        whose fix is a setting: ``others=[]`` leaves out the list, which was made with that
        setting and would say its own algo cannot play the game)."""
        others = self.others if others is None else others
        note = self.note if note is None else note
        # one list: the section's algos at its defaults were said in a note before it, and
        # the list seemed to leave them out ("(ippo and mappo play it ...); algos that play
        # it: ['llm_grpo', 'qmix', 'vdn']")
        listed = ", and ".join([*([str(others)] if others else []), *([note] if note else [])])
        hint = f"; algos that play it: {listed}" if listed else ""
        problem = self.problem if problem is None else problem
        return f"algo={self.algo} cannot play {self.game}: {problem}{hint}"


def refusal(name: str, spec: GameSpec, config: Any = None,
            text_views: bool = True) -> Refusal | None:
    """Why ``name`` (with its section's ``config``) cannot play ``spec`` (None: it can): see
    :func:`check_compatible`."""
    entry = get(name)
    problem = _problem(entry, spec, config, text_views)
    if problem is None:
        return None
    # sorted: registration order depends on which modules a process imported first
    others = sorted(n for n, e in entries().items() if n != name and _problem(
        e, spec, config if e.section == entry.section else None, text_views) is None)
    # the section's own algos once its setting is changed (encoder=gnn_gru on kuhn: mappo and
    # ippo play it with an mlp encoder), said apart: as set, they fail the same way. One that
    # plays it as set is in the list, not here (mappo.net.critic=state on kuhn: ippo's preset
    # keeps its local critic; the note named ippo twice and read as if the list left mappo out)
    same = sorted(n for n, e in entries().items() if config is not None and entry.section and
                  e.section == entry.section and n not in others
                  and _problem(e, spec, None, text_views) is None)
    note = _defaults_note(entry, same, spec, config, text_views) if same else ""
    return Refusal(name, spec.name, problem, note, others)


def _defaults_note(entry: LearnerEntry, same: list[str], spec: GameSpec, config: Any,
                   text_views: bool) -> str:
    """The section's algos ``same`` that play ``spec`` once the settings of ``config`` that
    stop them are back at their defaults, naming those settings and what they were set to:
    ``['ippo', 'mappo'] with mappo.net.encoder='mlp' and mappo.net.critic='auto', their
    defaults (set to 'gnn' and 'gnn')`` (encoder=gnn on a game without graphs; its
    ``gnn_hidden`` plays as set, so it is not named). It said ``with mappo.* at its
    defaults``, which read as if the user's mappo settings were the defaults. Where the
    settings cannot be told apart (a config that is not a dataclass), that wording."""
    plain = f"{same} with {entry.section}.* at its defaults"
    try:
        given, default = _leaves(config), _leaves(entry.default())
        changed = [k for k, v in given.items() if k in default and default[k] != v]

        def plays(keys: list[str]) -> bool:  # every one of same, these keys at their defaults
            reset = _with_leaves(config, {k: default[k] for k in keys})
            return all(_problem(get(n), spec, reset, text_views) is None for n in same)

        if not changed or not plays(changed):
            return plain
        needed = list(changed)
        for key in changed:  # the fewest to name: a setting that plays as set is left out
            if plays([k for k in needed if k != key]):
                needed.remove(key)
    except Exception:  # noqa: BLE001 (a user's config or check: only for a hint)
        return plain
    if not needed:
        return plain
    values = [f"{entry.section}.{k}={default[k]!r}" for k in needed]
    was = [repr(given[k]) for k in needed]
    their = "its default" if len(needed) == 1 else "their defaults"
    return f"{same} with {_and(values)}, {their} (set to {_and(was)})"


def _and(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _with_leaves(config: Any, values: dict[str, Any]) -> Any:
    """``config`` with the dotted keys of ``values`` (``net.encoder``) replaced."""
    here = {k: v for k, v in values.items() if "." not in k}
    for field in {k.split(".", 1)[0] for k in values if "." in k}:
        inner = {k.split(".", 1)[1]: v for k, v in values.items()
                 if k.startswith(f"{field}.")}
        here[field] = _with_leaves(getattr(config, field), inner)
    return dataclasses.replace(config, **here)


def check_compatible(name: str, spec: GameSpec, config: Any = None,
                     text_views: bool = True) -> None:
    """Raise :class:`IncompatibleError` (one line) when ``name`` cannot play ``spec``: what is
    incompatible, and which registered algos would play it: those sharing ``name``'s config
    section (``ippo`` and ``mappo``) with ``config``, as the command line sets both (under
    ``encoder=gnn`` neither is offered), the others with their default settings."""
    found = refusal(name, spec, config, text_views)
    if found is not None:
        raise IncompatibleError(found.line())


def _leaves(config: Any, prefix: str = "") -> dict[str, Any]:
    """A config dataclass's values by dotted key (``net.critic``), nested ones flattened."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out.update(_leaves(value, f"{prefix}{f.name}."))
        else:
            out[f"{prefix}{f.name}"] = value
    return out


def preset_refusal(name: str, section_config: Any, where: str | None = None) -> str | None:
    """One line when the preset of learner ``name`` would replace a value of its section's
    ``section_config`` that differs from the section's default (``qmix.mixer=vdn``: the qmix
    preset trained QMIX while the settings recorded vdn; ``algo=ippo mappo.net.critic=state``:
    local critics), naming the algo that trains with it; None when it replaces nothing set.
    ``where``: the section's path in the message (default: the entry's section)."""
    entry = get(name)
    if entry.preset is None or not dataclasses.is_dataclass(section_config):
        return None
    try:
        given, fixed = _leaves(section_config), _leaves(entry.resolve(section_config))
        default = _leaves(entry.default())
    except Exception:  # noqa: BLE001 (a user's preset or config: the build says what fails)
        return None
    for key, value in given.items():
        if fixed.get(key, value) != value and default.get(key) != value:
            keeps = sorted(n for n, e in entries().items() if n != name and e.cls is entry.cls
                           and _keeps(e, section_config, key, value))
            hint = f"; use algo={keeps[0]}" if keeps else ""
            return (f"{where or entry.section}.{key}={value!r}: algo={name} fixes it to "
                    f"{fixed[key]!r}{hint}{_python_default(section_config, key, value, fixed)}")
    return None


def _python_default(section_config: Any, key: str, value: Any, fixed: dict[str, Any]) -> str:
    """Where ``value`` is the config class's own default (a section made in Python, as
    ``ValueDecompConfig(lr=1e-3)`` for algo=vdn, whose class defaults to the qmix mixer),
    how to spell the preset's value there: the user never typed ``value`` ("" otherwise)."""
    cls = type(section_config)
    try:
        default = _leaves(cls()).get(key)
    except Exception:  # noqa: BLE001 (a user's config class: only for a hint)
        return ""
    if default != value or "." in key:
        return ""
    return (f" (in Python {cls.__name__}() defaults to {key}={value!r}: give "
            f"{cls.__name__}({key}={fixed[key]!r}, ...))")


def _keeps(entry: LearnerEntry, config: Any, key: str, value: Any) -> bool:
    """Whether ``entry`` trains with ``key`` at ``value`` (its preset leaves it)."""
    try:
        return _leaves(entry.resolve(config)).get(key) == value
    except Exception:  # noqa: BLE001 (a user's preset: only for a hint)
        return False
