"""A league's members as ``population.members`` lists them.

An entry is a learner's registry name (``mappo``; ``mappo_exploiter`` for a main exploiter)
or a mapping that names the member and changes its learner's settings, so one league can
hold two members of one algo that differ (an MLP and a GNN MAPPO)::

    population:
      members:
        - mappo                                               # name: mappo
        - {name: gnn, algo: mappo, mappo: {net: {encoder: gnn, critic: gnn}}}

A mapping takes ``algo`` (required), ``name`` (letters, digits, ``_``, ``-``; it names the
member's snapshot folder) and the section of that learner (``mappo`` for mappo and ippo,
``qmix``, ``llm`` for an LLM team ...), whose values go over the run's own section
(``mappo.lr=...`` on the command line still reaches every MAPPO member that does not set
``lr``). Parsing here needs no torch; :func:`check_member_specs` and :func:`member_settings`
use the learner registry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from marl.registry import LearnerEntry

EXPLOITER = "_exploiter"  # "<algo>_exploiter": an AlphaStar main exploiter of the first member
MEMBER = "main"  # the name of a league's only member (populations.league re-exports it)
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}\Z")
_FIELDS = ("algo", "name")


@dataclass(frozen=True)
class MemberSpec:
    """One entry of ``population.members``.

    Attributes:
        listed: the algo as listed (``mappo``, ``mappo_exploiter``).
        name: the name the entry gives (None: the default, :func:`member_names`).
        changes: ``{section: {key: value}}`` over the run's section (empty: none).
        where: the entry in messages (``population.members[1]``).
    """

    listed: str
    name: str | None = None
    changes: Mapping[str, Any] | None = None
    where: str = "population.members"

    @property
    def algo(self) -> str:
        """The learner's registry name (an exploiter's algo without the suffix)."""
        return self.listed.removesuffix(EXPLOITER)

    @property
    def exploiter(self) -> bool:
        return self.listed.endswith(EXPLOITER)


def parse_members(members: Sequence[Any]) -> list[MemberSpec]:
    """``population.members`` as :class:`MemberSpec` s; ``ValueError`` in one line for an
    entry that is neither an algo's name nor a mapping of ``algo``, ``name`` and sections."""
    specs = []
    for i, m in enumerate(members):
        where = f"population.members[{i}]"
        if isinstance(m, str):
            specs.append(MemberSpec(m, where=where))
            continue
        if not isinstance(m, Mapping):
            raise ValueError(f"{where}={m!r}: a member is an algo's name (mappo) or a mapping "
                             "{name: ..., algo: ..., <algo's section>: {...}}")
        algo, name = m.get("algo"), m.get("name")
        if lost_name(m):
            raise ValueError(_by_index_line(members, i))
        if not isinstance(algo, str) or not algo:
            raise ValueError(f"{where}={_yaml(m)}: needs algo: <a learner's name>, e.g. "
                             "{name: gnn, algo: mappo, mappo: {net: {encoder: gnn}}}")
        if name is not None and (not isinstance(name, str) or not NAME.match(name)):
            raise ValueError(f"{where}.name={name!r}: expected a letter, then up to 63 "
                             "letters, digits, '_' or '-' (it names the member's folder)")
        changes = {k: v for k, v in m.items() if k not in _FIELDS}
        for key, value in changes.items():
            if not isinstance(value, Mapping):
                raise ValueError(f"{where}.{key}={value!r}: a learner's section takes settings "
                                 f"by key ({key}: {{lr: 0.001}}); the keys of a member are "
                                 f"{', '.join(_FIELDS)} and its learner's section")
        specs.append(MemberSpec(algo, name, changes or None, where))
    return specs


def lost_name(entry: Any) -> bool:
    """Whether a ``population.members`` entry is sections alone (``{mappo: {epochs: 2}}``),
    what ``population.members.0.mappo.epochs=2`` makes of a member given by its name: Hydra
    replaces the name by the mapping and keeps no trace of it."""
    return isinstance(entry, Mapping) and bool(entry) and "algo" not in entry and \
        "name" not in entry and all(isinstance(v, Mapping) for v in entry.values())


def _by_index_line(members: Sequence[Any], i: int) -> str:
    """The line for member ``i`` that is sections alone (``{mappo: {epochs: 2}}``): what
    ``population.members.0.mappo.epochs=2`` makes of a member given by its name (Hydra
    replaces the name by a mapping and keeps no trace of it, so which learner it was — mappo,
    ippo, mappo_exploiter — cannot be told here); the mapping form that sets it, with the
    other members as they are. ``selfplay-train`` gives the name back where the members list
    it composes holds it (:func:`populations.train_overrides.prepare`): this line is for the
    rest."""
    m = members[i]
    section = next(iter(m))
    entry = _yaml({"algo": section, **m})
    listed = ", ".join(entry if j == i else _yaml(other) for j, other in enumerate(members))
    keys = ".".join(_leaves(m)[0][0])
    return (f"population.members[{i}]={_yaml(m)} has no algo: an index override such as "
            f"population.members.{i}.{keys}=... replaces a member given by its name (the name "
            f"is lost); give that member as a mapping: population.members=[{listed}] "
            f"(algo: that member's learner)")


def _yaml(value: Any) -> str:
    """``value`` as an override writes it (``{algo: mappo, mappo: {epochs: 2}}``)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_yaml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)) or (isinstance(value, Sequence)
                                           and not isinstance(value, str)):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    return _value(value)


def _nearest_member(listed: str, allowed: Sequence[str]) -> str:
    """``; nearest: mappo_exploiter`` for a member spelt like ``allowed`` ones
    (``mapo_exploiter``), as ``algo=mapo`` names its nearest; "" where none is close."""
    import difflib

    close = difflib.get_close_matches(listed, list(allowed), n=3)
    return f"; nearest: {', '.join(close)}" if close else ""


def check_member_specs(specs: Sequence[MemberSpec], allowed: Sequence[str]) -> None:
    """Refuse, in one line, what the registry says no league can train: an algo not in
    ``allowed`` (``league_algos()``), a section that is not the member's learner's, two
    members with one name, exploiters without a main member or more than one."""
    from marl import registry

    entries = registry.entries()
    shown = [_shown_spec(s) for s in specs]
    for s in specs:
        if s.listed not in allowed:
            why = (f"{s.listed!r}: learner {s.algo!r} does not declare Capabilities(partial_"
                   "seats=True) (it must train only the seats it is given)"
                   if s.algo in entries else f"{s.listed!r} unknown")
            raise ValueError(f"members={shown}: {why}; choose from {list(allowed)}"
                             f"{_nearest_member(s.listed, allowed)}")
        section = entries[s.algo].section
        for key in s.changes or {}:
            if key != section:
                raise ValueError(f"{s.where}.{key}: not {s.algo}'s section; a member takes "
                                 f"{', '.join(_FIELDS)} and {section}: {{...}} (its settings)")
    if specs and all(s.exploiter for s in specs):
        # a main exploiter trains against the first main member: without one the league
        # refused only after Hydra made the run folder and torch built the learners
        mains = [a for a in allowed if not a.endswith(EXPLOITER)]
        raise ValueError(f"members={shown}: {specs[0].listed} needs a main member to exploit; "
                         f"add one of {mains}")
    exploiters = [s.listed for s in specs if s.exploiter]
    if len(exploiters) > 1:  # both exploit the first main member: one is enough
        main = next(s.listed for s in specs if not s.exploiter)
        raise ValueError(f"members={shown}: one <algo>_exploiter per league (it exploits "
                         f"the first main member, {main}); keep one of {exploiters}")
    names = member_names(specs)
    for i, name in enumerate(names):
        if name in names[:i]:
            j = names.index(name)
            raise ValueError(
                f"members={shown}: {specs[j].where} and {specs[i].where} are both named "
                f"{name!r}; give each its own name, e.g. {{name: {name}_2, algo: "
                f"{specs[i].listed}}}")


def member_names(specs: Sequence[MemberSpec]) -> list[str]:
    """Each member's name: the one it is given, else ``main`` for a league's only member,
    ``exploiter`` for a main exploiter, an LLM team's policy kind (``llm``), the algo."""
    from marl import registry

    entries = registry.entries()
    out = []
    for s in specs:
        entry = entries.get(s.algo)
        if s.name is not None:
            out.append(s.name)
        elif s.exploiter:
            out.append("exploiter")
        elif entry is not None and entry.capabilities.own_rollouts:
            out.append(entry.policy)
        else:
            out.append(MEMBER if len(specs) == 1 else s.algo)
    return out


def member_settings(base: Any, spec: MemberSpec, entry: LearnerEntry) -> Any:
    """The settings ``spec``'s learner trains with: the run's section ``base`` (its config
    dataclass, or a mapping for a learner of the user's own) with the member's changes over
    it, typed and checked as the command line's are (one line naming the key under
    ``population.members[i]``)."""
    changes = (spec.changes or {}).get(entry.section)
    if not changes:
        return base
    from populations.learner_sections import section_config

    try:
        return section_config(entry, changes, base=base)
    except ValueError as err:
        raise ValueError(f"{spec.where}.{err}") from None


@dataclass(frozen=True)
class OwnSetting:
    """A setting a member's mapping changes: its dotted ``path`` in the learner's section
    (``mappo.net.encoder``), the member's ``value`` and the run's (``MISSING``: none)."""

    path: str
    value: Any
    run: Any


MISSING = object()


def refused_settings(spec: MemberSpec, entry: LearnerEntry, base: Any,
                     refused: Callable[[Any], bool]) -> list[OwnSetting]:
    """The settings of ``spec``'s mapping that make its learner refused (``refused(config)``)
    where the run's section ``base`` is not: each one refused when it is the mapping's only
    change; all of them when only together they are; [] when ``base`` is refused itself
    (the run's settings are the cause, and the run-level hint is right)."""
    changes = (spec.changes or {}).get(entry.section)
    if not isinstance(changes, Mapping) or refused(base):
        return []
    found = [OwnSetting(f"{entry.section}.{'.'.join(path)}", value, _at(base, path))
             for path, value in _leaves(changes)]
    alone = []
    for own in found:
        only = MemberSpec(spec.listed, spec.name, {entry.section: _nested(
            own.path.split(".")[1:], own.value)}, spec.where)
        try:
            if refused(member_settings(base, only, entry)):
                alone.append(own)
        except ValueError:  # refused by its own check: not a setting this one makes wrong
            continue
    return alone or found


def refused_settings_hint(where: str, settings: Sequence[OwnSetting]) -> str:
    """``its own mappo.net.encoder=gnn does: set population.members[1].mappo.net.encoder=mlp
    (the run's) or leave it out of that member's mapping``."""
    own = " and ".join(f"{s.path}={_value(s.value)}" for s in settings)
    runs = [s for s in settings if s.run is not MISSING]
    many = len(settings) > 1
    use = (f"set {' and '.join(f'{where}.{s.path}={_value(s.run)}' for s in runs)} (the "
           f"run's) or " if runs else "")
    return (f"its own {own} {'do' if many else 'does'}: {use}leave {'them' if many else 'it'} "
            "out of that member's mapping")


def _leaves(values: Mapping[str, Any], path: tuple[str, ...] = ()
            ) -> list[tuple[tuple[str, ...], Any]]:
    out: list[tuple[tuple[str, ...], Any]] = []
    for key, value in values.items():
        if isinstance(value, Mapping) and value:
            out += _leaves(value, (*path, str(key)))
        else:
            out.append(((*path, str(key)), value))
    return out


def _nested(path: Sequence[str], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def _at(config: Any, path: Sequence[str]) -> Any:
    """The value at ``path`` in ``config`` (dataclasses and mappings); ``MISSING`` if none."""
    for key in path:
        if isinstance(config, Mapping):
            config = config.get(key, MISSING)
        else:
            config = getattr(config, key, MISSING)
        if config is MISSING:
            return MISSING
    return config


def _value(value: Any) -> str:
    """A value as an override writes it (``true``, ``null``, ``mlp``)."""
    if isinstance(value, bool):
        return str(value).lower()
    return "null" if value is None else str(value)


def _shown(m: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in m.items()) + "}"


def _shown_spec(s: MemberSpec) -> str:
    if s.name is None and not s.changes:
        return s.listed
    return _shown({**({"name": s.name} if s.name else {}), "algo": s.listed, **(s.changes or {})})
