"""The note ``selfplay-train`` prints for a learner setting the run's learner replaces with
its preset (:attr:`marl.registry.LearnerEntry.preset`) in a section it shares with another
learner: ``algo=ippo mappo.net.critic=state`` trained local critics (IPPO's preset) while
``settings.json`` recorded ``critic: state``, without a word. A shared section is not
refused (``populations.experiment.check_presets``): ``encoder=gnn`` sets the ``mappo``
critic for both MAPPO and IPPO; a setting typed on the command line, or in a league member's
own mapping, is noted, as the other settings a run does not read
(``populations.train_overrides.unused_overrides``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from populations.experiment import ExperimentConfig


def replaced_by_presets(exp: ExperimentConfig, overrides: Sequence[str],
                        auto: bool = False) -> list[str]:
    """A note per ``<section>.<key>=`` in ``overrides`` (also inside a mapping typed whole,
    ``mappo.net={critic: state}``) that every learner of the run reading that shared section
    replaces (a single run's ``algo``; PSRO's oracle named by its learner,
    ``population.oracle=ippo``, ``auto``: chosen by ``population.oracle=auto``; a league's
    members that train with the run's section), and per league member's own setting its
    learner replaces."""
    from marl import registry
    from populations.experiment import league_member_specs
    from populations.learner_sections import settings

    kind, oracle = exp.population.kind, exp.population.oracle
    setting = "algo"
    if kind == "none":
        entry = registry.get(exp.algo)
        users = [(None, entry, settings(exp, entry))]
    elif kind == "psro" and oracle in registry.entries():  # exact, rl: no section read
        entry = registry.get(oracle)
        try:
            users = [(None, entry, settings(exp, entry))]
        except ValueError:  # refused where the oracle is checked, in its own words
            return []
        setting = "population.oracle"
    elif kind == "league":
        try:
            users = [(spec, entry, config) for spec, _, entry, config in league_member_specs(exp)]
        except ValueError:  # refused where the league is checked, in its own words
            return []
    else:
        return []
    notes = []
    for key in _typed_keys(overrides):
        section, _, sub = key.partition(".")
        readers = [(entry, config) for spec, entry, config in users  # a member's own value
                   if entry.section == section and sub not in _own(spec, section)]  # wins
        found = [_replaced(entry, config, sub, setting) for entry, config in readers]
        if readers and sub and all(found):
            note = f"{key}={found[0]}{_reads(readers[0][0], readers[0][1], sub, setting)}"
            if auto and setting != "algo":  # the user typed auto: say what it chose
                note = note.replace(f" {setting}={oracle}:",
                                    f" {setting}=auto, which chose {oracle} here:", 1)
            notes.append(note)
    for spec, entry, config in users:  # a member's own mapping: {algo: ippo, mappo: {...}}
        for sub in _own(spec, entry.section):
            found = _replaced(entry, config, sub)
            if found:
                notes.append(f"{spec.where}.{entry.section}.{sub}={found}")
    return notes


def _typed_keys(overrides: Sequence[str]) -> list[str]:
    """The dotted keys ``overrides`` set, in order, once each: ``mappo.net.critic=state`` its
    key, a mapping typed whole (``mappo.net={critic: state}``, ``mappo={net: {...}}``) each
    key it holds (``mappo.net.critic``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    keys: dict[str, None] = {}
    for o in overrides:
        if "=" not in o:
            continue
        key = o.split("=", 1)[0].lstrip("+~")
        try:
            (parsed,) = parser.parse_overrides([o])
            value = None if parsed.is_delete() else parsed.value()
        except Exception:  # noqa: BLE001 - Hydra refuses it in its own words
            value = None
        if isinstance(value, dict) and value:
            keys.update(dict.fromkeys(f"{key}.{sub}" for sub in _leaves(value)))
        else:
            keys[key] = None
    return list(keys)


def _own(spec: Any, section: str) -> dict[str, Any]:
    """The values league member ``spec`` (None: a single run's learner) sets in ``section``
    by dotted key; those of the run's section beneath are not read for it."""
    own = (spec.changes or {}).get(section) if spec is not None else None
    return _leaves(own) if isinstance(own, dict) else {}


def _replaced(entry: Any, config: Any, sub: str, setting: str = "algo") -> str | None:
    """``'state' is not used with algo=ippo: its preset fixes it to 'local' (...)`` when
    ``entry``'s preset replaces ``config``'s value at dotted key ``sub``; else None.
    ``setting`` names what chose the learner (``population.oracle``: PSRO's oracle)."""
    if entry.preset is None or entry.section == entry.name or \
            not dataclasses.is_dataclass(config):
        return None  # a section of its own: populations.experiment.check_presets refuses
    try:
        given, fixed = _leaves(config), _leaves(entry.resolve(config))
    except Exception:  # noqa: BLE001 (a user's preset: the build says what fails)
        return None
    if sub not in given or fixed.get(sub, given[sub]) == given[sub]:
        return None
    why = (entry.preset.__doc__ or "").strip().split("\n\n")[0]
    why = " ".join(why.partition(": ")[2].split()).rstrip(".")
    return (f"{given[sub]!r} is not used with {setting}={entry.name}: its preset fixes it to "
            f"{fixed[sub]!r}" + (f" ({why})" if why else ""))


def _reads(entry: Any, config: Any, sub: str, setting: str = "algo") -> str:
    """``; algo=mappo reads it``: the learners of ``entry``'s class that train with the
    value at ``sub`` (their preset keeps it), chosen by ``setting``."""
    from marl import registry

    value = _leaves(config).get(sub)
    keeps = []
    for name, other in registry.entries().items():
        if name == entry.name or other.cls is not entry.cls:
            continue
        try:
            if _leaves(other.resolve(config)).get(sub) == value:
                keeps.append(name)
        except Exception:  # noqa: BLE001 (a user's preset: only for a hint)
            continue
    return f"; {' or '.join(f'{setting}={n}' for n in sorted(keeps))} reads it" if keeps \
        else ""


def _leaves(config: Any, prefix: str = "") -> dict[str, Any]:
    """A config dataclass's (or a mapping's) values by dotted key (``net.critic``)."""
    items = vars(config).items() if dataclasses.is_dataclass(config) else config.items()
    out: dict[str, Any] = {}
    for key, value in items:
        if dataclasses.is_dataclass(value) or isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out
