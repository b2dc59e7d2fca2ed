"""The settings of a learner as an experiment gives them: its section of
:class:`~populations.experiment.ExperimentConfig` (``mappo:`` for ``mappo`` and ``ippo``), or,
for a learner registered by the user's own module (README "Add your own learner"), the
section the command line adds (``+my_algo.lr=0.5``), built into the learner's config
dataclass and checked by it in one line before the run folder is made.

Hydra adds a key the schema lacks at its top level (``+my_algo.lr=0.5``; the sections inside
the schema are closed) and ``OmegaConf.to_object`` leaves it on the experiment as a plain
dict attribute; :func:`settings` types it, :func:`check_learner_sections` refuses such keys
that no registered learner names, and :func:`replaced` keeps them where the experiment is
rebuilt (``dataclasses.replace`` copies fields only).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from marl import registry
from marl.registry import LearnerEntry

if TYPE_CHECKING:
    from populations.experiment import ExperimentConfig


def settings(cfg: ExperimentConfig, entry: LearnerEntry) -> Any:
    """The section of ``cfg`` its registry entry names (``ippo``: ``mappo``). A learner
    registered by the user's own module has no field in this schema: its section comes from
    the command line (``+my_algo.lr=0.5``, which ``OmegaConf.to_object`` leaves on ``cfg`` as
    a dict: :func:`learner_sections`), built into its config dataclass over the entry's
    defaults and checked by it (:func:`section_config`); without one, the defaults. Presets
    are applied by the entry when it builds."""
    section = getattr(cfg, entry.section, None)
    if section is None:
        return entry.default()
    if isinstance(section, Mapping):
        return section_config(entry, section)
    if entry.section in learner_sections(cfg):  # +my_algo=5: a value, not settings
        keys = ", ".join(f.name for f in dataclasses.fields(entry.config))
        raise ValueError(f"{entry.section}={section!r}: a learner's section takes settings "
                         f"by key ({entry.section}.<key>=...; keys of {entry.section}: {keys})")
    return section


def learner_sections(cfg: ExperimentConfig) -> dict[str, Any]:
    """The keys ``cfg`` holds beyond the schema's fields: Hydra adds a key the schema lacks
    at its top level (``+my_algo.lr=0.5``) and ``OmegaConf.to_object`` sets it as an
    attribute; :func:`check_experiment` accepts only registered learners' sections."""
    fields = {f.name for f in dataclasses.fields(cfg)}
    return {k: v for k, v in vars(cfg).items() if k not in fields}


def replaced(cfg: ExperimentConfig, **changes: Any) -> ExperimentConfig:
    """``dataclasses.replace(cfg, **changes)`` keeping :func:`learner_sections` (replace
    builds a new instance from the fields only)."""
    new = dataclasses.replace(cfg, **changes)
    vars(new).update(learner_sections(cfg))
    return new


def section_config(entry: LearnerEntry, values: Mapping[str, Any], base: Any = None) -> Any:
    """``entry``'s config dataclass from its section's ``values`` (nested mappings for nested
    dataclasses) over ``base`` (default: the entry's defaults; a league member's changes go
    over the run's section, ``populations.member_specs``), typed and checked as the schema's
    own sections are: ``ValueError`` in one line naming the key by its path (``my_algo.lrr:
    Key 'lrr' not in 'MyConfig'; nearest: my_algo.lr``, ``my_algo.lr=fast: Value 'fast' ...``,
    the dataclass's own check: ``my_algo.lr=-1.0; expected ...``)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

    from populations.config_checks import unknown_key_message, writable
    from populations.config_paths import at_path, refusal

    path, default = entry.section, entry.default() if base is None else base
    try:
        node = writable(OmegaConf.structured(default))
    except (OmegaConfBaseException, ValueError):  # a field type OmegaConf cannot hold
        return _plain_section_config(path, default, values)
    from populations.config_checks import check_flag, is_flag

    for key, value in _flat(values):
        if is_flag(node, key):  # OmegaConf reads 2 as true (a member's value_norm: 2)
            check_flag(f"{path}.{key}", value)
        try:
            OmegaConf.update(node, key, value, merge=True)
        except (ConfigAttributeError, ConfigKeyError) as err:
            raise ValueError(unknown_key_message(node, path, key, err)) from None
        except OmegaConfBaseException as err:  # a word where a number goes
            raise ValueError(_mistyped(node, path, key, value, err)) from None
    try:
        return OmegaConf.to_object(node)
    except (ValueError, TypeError) as err:  # the dataclass's own checks (its __post_init__)
        where, owner, inner = refusal(node, path + ".") or (path, type(default), err)
        raise ValueError(at_path(_first_line(inner), where, owner)) from None


def _mistyped(node: Any, path: str, key: str, value: Any, err: Exception) -> str:
    """A value of a type the setting cannot take, in the words the schema's sections get
    (``populations.config_checks.check_section_values``): ``my_algo.rollout_steps=abc;
    expected an integer`` (or the setting's own rule), ``...=2e3; expected an integer (write
    2000)``, where OmegaConf's "Value 'abc' of type 'str' could not be converted to Integer"
    was said; OmegaConf's words only where nothing better is known."""
    from populations.config_checks import write_integer
    from populations.override_types import expected_of

    typed = f"{path}.{key}={value}"
    text = str(err).strip().splitlines()[0]
    if write_integer(value) and "converted to Integer" in text:
        return f"{typed}; expected an integer{write_integer(value)}"
    expected = expected_of(node, path, key, value) if value is not None else None
    return f"{typed}; {expected}" if expected is not None else f"{typed}: {text}"


def _plain_section_config(path: str, default: Any, values: Mapping[str, Any]) -> Any:
    """:func:`section_config` for a dataclass OmegaConf cannot type: its top-level keys
    checked by name, its values by the dataclass's own checks."""
    from populations.config_checks import nearest_keys
    from populations.config_paths import at_path

    names = [f.name for f in dataclasses.fields(default) if f.init]
    for key in values:
        if key not in names:
            raise ValueError(f"{path}.{key}: Key '{key}' not in '{type(default).__name__}'; "
                             f"{nearest_keys(str(key), names, path)}")
    try:
        return dataclasses.replace(default, **values)
    except (ValueError, TypeError) as err:
        raise ValueError(at_path(_first_line(err), path, type(default))) from None


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def _flat(values: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``{"net": {"width": 4}}`` as ``[("net.width", 4)]``: each value by its dotted key, so
    an unknown key is named in the dataclass it was looked up in."""
    out: list[tuple[str, Any]] = []
    for key, value in values.items():
        if isinstance(value, Mapping) and value:
            out += _flat(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def section_configs(cfg: ExperimentConfig) -> dict[str, Any]:
    """:func:`learner_sections` with each registered learner's built (its config dataclass,
    defaults filled in): what a run's ``settings.json`` records."""
    entries = {e.section: e for e in registry.entries().values()}
    return {k: settings(cfg, entries[k]) if k in entries else v
            for k, v in learner_sections(cfg).items()}


def check_learner_sections(cfg: ExperimentConfig) -> None:
    """Refuse a top-level key that no registered learner names as its section (``+framez=3``,
    ``+my_algoo.lr=0.5``: kept and never read), and check every registered learner's section
    the command line gives, also those this run does not train (as the schema's are)."""
    from populations.config_checks import nearest_keys

    sections = {e.section: e for e in registry.entries().values()}
    for key in learner_sections(cfg):
        entry = sections.get(key)
        if entry is None:
            known = [f.name for f in dataclasses.fields(cfg)]
            raise ValueError(f"{key}: not a key of the experiment nor the section of a "
                             f"registered learner; {nearest_keys(key, [*known, *sections], '')}")
        settings(cfg, entry)


SECTION_GROUPS = {"encoder": "mappo"}  # config groups that set a learner's section only


def unread_settings(cfg: ExperimentConfig, overrides: Sequence[str],
                    auto: bool = False) -> list[str]:
    """Warnings for learner settings on the command line that no learner of this run reads:
    a learner's section (``mappo.lr=``, ``encoder=gnn``: ``mappo.net``, ``+my_algo.lr=``) when
    none of the run's learners (``algo``; a league's ``population.members``; PSRO's oracle
    algo: ``rl`` and ``exact`` read none) uses it, and ``algo=`` beside
    ``population.members``, which names a league's learners. They were ignored without a
    word (``encoder=gnn`` with ``population.members=[qmix,maddpg]``). PSRO's ``oracle=auto``
    is decided with the game: not judged here; judged on ``cfg`` with the oracle it chose
    (:func:`populations.psro_run.resolve_auto`), ``auto=True`` says so in the warnings."""
    from populations.member_specs import parse_members

    pop, entries = cfg.population, registry.entries()
    if pop.kind == "psro":
        if pop.oracle == "auto":
            return []
        algos = [] if pop.oracle in ("exact", "rl") else [pop.oracle]
        who = f"population.oracle=auto, which chose {pop.oracle} here," if auto else \
            f"population.oracle={pop.oracle}"
    elif pop.kind == "league" and pop.members:
        algos = [m.algo for m in parse_members(pop.members)]
        who = f"population.members={list(pop.members)}"
    else:
        algos, who = [cfg.algo], f"algo={cfg.algo}"
    read = {entries[a].section for a in algos if a in entries}
    sections = {e.section for e in entries.values()}
    typed = [(o.split("=", 1)[0].lstrip("+~"), o) for o in overrides if "=" in o]
    notes = []
    if pop.kind == "league" and pop.members and any(k == "algo" for k, _ in typed):
        notes.append(f"algo={cfg.algo} is not used: {who} names the league's learners")
    for section, words in _typed_sections(typed).items():
        if section in sections and section not in read:
            notes.append(f"{', '.join(words)}: not read by this run ({who} uses no "
                         f"'{section}' settings)")
    return notes + _unread_frames(cfg, typed, algos, who)


FRAME_BUDGETS = {"none": "frames", "league": "population.frames_per_generation"}
"""The frame budget each population kind reads (PSRO's is its RL oracle's, never an LLM
team)."""


def _unread_frames(cfg: ExperimentConfig, typed: Sequence[tuple[str, str]],
                   algos: Sequence[str], who: str) -> list[str]:
    """The frame budget typed for a run whose learners are all LLM teams, which count GRPO
    iterations (``llm.iterations``), not frames: ``algo=llm_grpo frames=2000``, meant as a
    short run, trained the default 100 iterations without a word."""
    entries = registry.entries()
    key = FRAME_BUDGETS.get(cfg.population.kind)
    if key is None or not algos or not all(
            a in entries and entries[a].capabilities.own_rollouts for a in algos):
        return []
    every = "" if key == "frames" else " per member and generation"
    verb = "train" if len(algos) > 1 else "trains"
    return [f"{text.lstrip('+~')}: not read by this run ({who} {verb} llm.iterations="
            f"{cfg.llm.iterations} GRPO iterations{every}, not frames)"
            for k, text in typed if k == key]


def _typed_sections(typed: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """The learner section each typed override sets (``mappo.lr=1`` and ``encoder=gnn``:
    ``mappo``), with the overrides as typed."""
    out: dict[str, list[str]] = {}
    for key, text in typed:
        section = SECTION_GROUPS.get(key, key.split(".", 1)[0])
        out.setdefault(section, []).append(text)
    return out
