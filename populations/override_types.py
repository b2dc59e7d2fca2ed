"""A section's value of the wrong type on ``selfplay-train``'s command line
(``population.iterations=1e3``, ``mappo.epochs=abc``), refused in the early checks' words
whatever the group options are.

:func:`populations.train_overrides.check_values` checks a section's values against the
presets the command line's group options set; where it cannot read them (``-m
population=psro,fsp``: a swept group; a key given twice; ``--config-dir``) it left the value
to Hydra, which refused a whole float with ``Error merging override
population.iterations=1e3; Value '1000.0' of type 'float' could not be converted to
Integer``: a value the user did not type, and no word of the integer to write. A setting's
type is the schema's alone, so :func:`refuse_mistyped` checks it there too, and the refusal
is the one the early check gives (``population.iterations=1e3; expected an integer (write
1000)``, or the integer's own range for ``1e20``). A value of the right type costs no torch
(a whole float's integer is checked by its section's rules, which may import it).

What the composed experiment refused after torch and the learners loaded (~2 s of CPU) is
found on the command line too, in its words: a key ``+`` adds to a section
(:func:`refuse_added_keys`: ``+mappo.lrr=1``), a knob of the Python API no experiment reads
(:func:`refuse_unread_knobs`: ``vdn.seed=5``), a top-level key no learner names
(:func:`refuse_unknown_sections`: ``+framez=3``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from populations.sweep_values import RANGE_VALUES, swept_line, typed_text


def refuse_mistyped(overrides: Sequence[Any]) -> None:
    """``ValueError`` (one line, as :func:`populations.config_checks.check_section_values`
    words it) for the first value of ``overrides`` (Hydra's parsed overrides, in the line's
    order) that a section's setting cannot take as its type (an integer setting given ``1e3``,
    ``1.5`` or ``abc``, a number setting given ``abc``); a swept key's values each. Lines
    Hydra treats otherwise are left to it: ``+`` (an existing key)/``~``, a package (``@``), an
    interpolation, a whole section (``population={...}``), an unknown key."""
    from hydra.core.override_parser.types import ValueType
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

    from populations.config_checks import check_section_values, section_schemas, writable

    schemas = section_schemas()
    nodes: dict[str, Any] = {}
    for o in overrides:
        key = o.key_or_group
        path = max((p for p in schemas if key.startswith(p + ".")), key=len, default=None)
        if path is None or o.package is not None or o.input_line.startswith(("~", "+")) and \
                not o.input_line.startswith("++") or \
                "${" in o.input_line:
            continue
        if o.value_type == ValueType.RANGE_SWEEP:
            values = list(itertools.islice(o.sweep_iterator(), RANGE_VALUES))
        elif o.value_type == ValueType.ELEMENT:
            values = [] if o.is_delete() else [o.value()]
        elif o.value_type in (ValueType.CHOICE_SWEEP, ValueType.SIMPLE_CHOICE_SWEEP):
            values = list(o.value().list)
        else:
            values = []
        if path not in nodes:
            cls, defaults = schemas[path]
            nodes[path] = writable(OmegaConf.structured(cls))
            for name, default in defaults.items():
                nodes[path][name] = default
        for value in values:
            trial = nodes[path].copy()
            try:
                OmegaConf.update(trial, key[len(path) + 1:], value, merge=True)
                continue
            except (ConfigAttributeError, ConfigKeyError):
                continue  # an unknown key: Hydra's words name it
            except OmegaConfBaseException:
                pass
            line = o.input_line if o.value_type == ValueType.ELEMENT else \
                f"{key}={typed_text(o, value)}" if o.value_type == ValueType.RANGE_SWEEP \
                else swept_line(o, value)
            # OmegaConf's words, or a whole float's integer refused by its own range
            check_section_values([(key, value, line)])


def expected_of(node: Any, path: str, sub: str, value: Any,
                checks_later: Callable[[], AbstractContextManager[Any]] = nullcontext,
                ) -> str | None:
    """What the setting ``path.sub`` of a section's ``node`` (an OmegaConf structured config)
    accepts, when ``value`` is of a type it cannot take, as the end of a one-line refusal:
    ``expected a list such as population.members=[mappo]`` for a list setting given no list,
    ``expected a list of integers such as mappo.net.hidden=[64,64]`` given a list whose items
    it cannot take (``[64,abc]``); for a number
    setting, the setting's own rule, found by handing the section's dataclass a number it
    refuses (NaN for a float, an integer below any bound for an integer): ``expected a finite
    number > 0`` for ``mappo.lr=fast``. None: nothing better than OmegaConf's words (the
    setting holds a mapping or text, or its rule accepted the probe). ``checks_later``: the
    context the section is built in (``llm_agents.settings.registry_checks_later``: the LLM
    section's registry checks, which import torch, wait; the early checks pass it)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException
    from omegaconf.nodes import FloatNode, IntegerNode

    key = f"{path}.{sub}"
    parent_sub, _, leaf = sub.rpartition(".")
    try:
        parent = OmegaConf.select(node, parent_sub) if parent_sub else node
        field = parent._get_node(leaf) if OmegaConf.is_dict(parent) else None
    except OmegaConfBaseException:
        return None
    if OmegaConf.is_list(field) and not isinstance(value, list | tuple):
        items = list(field) if len(field) else [value if isinstance(value, str | int | float)
                                                else "..."]  # the default as the example
        return f"expected a list such as {key}=[{','.join(map(str, items))}]"
    if OmegaConf.is_list(field):  # a list it cannot take: [64,abc] ("could not be converted")
        from populations.config_checks import FLAG_WORDS

        kind = {int: "integers", float: "numbers", bool: f"flags ({FLAG_WORDS})",
                str: "names"}.get(field._metadata.element_type)
        example = f"{key}=[{','.join(map(str, field))}]" if len(field) else f"{key}=[...]"
        return None if kind is None else f"expected a list of {kind} such as {example}"
    probe = float("nan") if isinstance(field, FloatNode) else \
        -(10**18) if isinstance(field, IntegerNode) else None
    if probe is None:
        return None
    kind = "a number" if isinstance(field, FloatNode) else "an integer"
    trial = node.copy()
    try:
        OmegaConf.update(trial, sub, probe, merge=True)
        with checks_later():
            OmegaConf.to_object(trial)
    except (ValueError, TypeError, OmegaConfBaseException) as err:
        text = str(err).strip().splitlines()[0] if str(err).strip() else ""
        head, sep, rule = text.partition("; expected ")
        if sep and re.search(rf"\b{re.escape(leaf)}=", head):  # this setting's own rule
            return f"expected {rule}"
    return f"expected {kind}"


# ----------------------------------------- what the composed experiment refuses, said early
# Refused by the composed config after torch and the learners loaded (~2 s of CPU); these
# find them on the command line first, in the same words. Each leaves to the composed config
# what it cannot read as Hydra will apply it (a sweep, an interpolation, a package, a key
# given twice).
def _plain(o: Any) -> bool:
    """Whether the override ``o`` sets one value as typed (no sweep, package, ``~``, ``+``
    or interpolation)."""
    from hydra.core.override_parser.types import ValueType

    return o.package is None and o.value_type == ValueType.ELEMENT and \
        not o.input_line.startswith(("+", "~")) and "${" not in o.input_line


def refuse_added_keys(overrides: Sequence[Any]) -> None:
    """``ValueError`` (one line) for ``+mappo.lrr=1``: a key added with ``+``/``++`` inside a
    section of the schema whose dataclass lacks it (the sections are closed; Hydra composed it
    and the experiment refused it), in the words of
    :func:`populations.train_overrides.to_experiment` and in its order (the schema's). Keys of
    a section's mappings (``+game.kwargs.N=3``, ``+population.exploit.learner.epochs=4``) are
    open; a top-level key is :func:`refuse_unknown_sections`'."""
    found = []
    for i, o in enumerate(overrides):
        if o.package is None and o.input_line.startswith("+") and not o.is_delete():
            place = _added_place(o.key_or_group)
            if place is not None:
                found.append((place[0], i, place[1]))
    if found:
        raise ValueError(min(found)[2])


def _added_place(key: str) -> tuple[tuple[int, ...], str] | None:
    """Where the composed config meets ``key``'s first part its dataclass lacks (field indices,
    an added key after the fields) and its refusal; None where every part is known or a part
    is not a dataclass's field (a mapping, a list: open; the top level)."""
    import dataclasses
    import typing

    from populations.config_checks import nearest_keys
    from populations.experiment_config import ExperimentConfig

    parts, cls, order = key.split("."), ExperimentConfig, []
    for i, part in enumerate(parts):
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # noqa: BLE001 - an annotation that does not resolve: the schema's
            return None
        names = [f.name for f in dataclasses.fields(cls)]
        if part not in names:
            if i == 0:
                return None
            path = ".".join(parts[:i])
            return ((*order, len(names)),
                    f"{path}.{part}: Key '{part}' not in '{cls.__name__}' (a '+' cannot add "
                    f"keys to the schema); {nearest_keys(part, names, path)}")
        order.append(names.index(part))
        cls = hints.get(part)
        if not dataclasses.is_dataclass(cls):
            return None
    return None


def refuse_unread_knobs(overrides: Sequence[Any], presets: Callable[[], Any]) -> None:
    """``ValueError`` (one line) for a knob of the Python API an experiment does not read
    (``vdn.seed=5``, ``llm.grpo.device=cuda``: :func:`populations.config_checks.unread_knob`),
    in ``ExperimentConfig``'s words and order. The run's ``seed``/``device`` is the command
    line's, else what its group options set (``presets()``: a config, or None when it cannot
    be read), else the schema's default."""
    if not any(o.key_or_group.endswith((".seed", ".device")) for o in overrides):
        return
    from populations.config_checks import knob_defaults, unread_knob

    knobs = knob_defaults()
    given: dict[str, list[Any]] = {}
    for o in overrides:
        if o.key_or_group in knobs:
            given.setdefault(o.key_or_group, []).append(o)
    for key in knobs:
        found = given.get(key, [])
        if len(found) != 1 or not _plain(found[0]):
            continue
        value = _knob_value(found[0].value(), key.endswith(".device"))
        if value is None:
            continue
        seed, device = _run_value(overrides, "seed", presets), \
            _run_value(overrides, "device", presets)
        if seed is _UNKNOWN or device is _UNKNOWN:
            return
        refused = unread_knob(key, value, seed, device)
        if refused:
            raise ValueError(refused)


_UNKNOWN = object()


def _knob_value(value: Any, text: bool) -> Any:
    """A knob's value as the schema types it (``'5'``: 5; a device: its text); None where the
    early check leaves it to the schema (its section's checks refuse the wrong type)."""
    if text:
        return value if isinstance(value, str) else None
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _run_value(overrides: Sequence[Any], key: str, presets: Callable[[], Any]) -> Any:
    """The run's top-level ``key`` (``seed``, ``device``) as the composed config will hold it,
    or :data:`_UNKNOWN` (swept, interpolated, given twice, a preset that cannot be read)."""
    import dataclasses

    from omegaconf import OmegaConf

    from populations.config_checks import typed_override
    from populations.experiment_config import ExperimentConfig

    found = [o for o in overrides if o.key_or_group.lstrip("+~") == key]
    if found:
        if len(found) != 1 or not _plain(found[0]):
            return _UNKNOWN
        try:
            return typed_override(key, found[0].value())
        except ValueError:
            return _UNKNOWN
    chosen = presets()
    if chosen is None:
        return _UNKNOWN
    try:
        value = OmegaConf.select(chosen, key, default=None)
    except Exception:  # noqa: BLE001 - an interpolation of a preset: the schema decides
        return _UNKNOWN
    if value is None:
        return next(f.default for f in dataclasses.fields(ExperimentConfig) if f.name == key)
    return value if isinstance(value, str | int) else _UNKNOWN


def _group(o: Any) -> bool:
    """``+extra=e1`` may append a config group a user's module or package stores (not in
    the schema: Hydra finds it), as may ``+a/b=c`` and a swept ``+extra=e1,e2``: left to
    Hydra. A bare key with a number, bool, list or mapping (``+framez=3``) is no group's."""
    key = o.key_or_group
    if "/" in key:
        return True
    if "." in key:
        return False
    from hydra.core.override_parser.types import ValueType

    if o.value_type != ValueType.ELEMENT or "${" in o.input_line:  # a sweep, interpolation
        return True
    return isinstance(o.value(), str)


def refuse_unknown_sections(overrides: Sequence[Any], presets: Callable[[], Any]) -> None:
    """``ValueError`` (one line) for ``+framez=3``: a top-level key added with ``+`` that is
    no key of the experiment nor a registered learner's section
    (:func:`populations.learner_sections.check_learner_sections`' words). A learner of the
    user's own registers with ``marl.registry`` (imported by then when the command line's
    ``imports`` or an installed package's entry point registered one: the registry is read);
    without it, the registered learners are marl's and the LLM team's, whose sections are the
    schema's (a test keeps them so). Left to the composed config where a learner may still
    register later: group options whose presets cannot be read or list ``imports``, a game
    module of the working folder."""
    tops = [o.key_or_group.split(".")[0] for o in overrides if o.package is None
            and o.input_line.startswith("+") and not o.is_delete() and not _group(o)]
    if not tops:
        return
    import dataclasses
    import sys

    from populations.cli_common import game_modules
    from populations.config_checks import nearest_keys
    from populations.experiment_config import ExperimentConfig

    known = [f.name for f in dataclasses.fields(ExperimentConfig)]
    unknown = [t for t in tops if t not in known and t != "hydra"]
    if not unknown:
        return
    if "marl.registry" in sys.modules:
        from marl import registry

        sections = [e.section for e in registry.entries().values()]
    else:
        chosen = presets()
        if chosen is None:
            return
        try:
            names = [chosen.get("game", {}).get("name"), *(
                o.value() for o in overrides if o.key_or_group == "game.name" and _plain(o))]
            if chosen.get("imports") or any(isinstance(n, str) and game_modules(n)
                                            for n in names):
                return
        except Exception:  # noqa: BLE001 - an interpolation of a preset: the schema decides
            return
        sections = []
    for top in unknown:
        if top not in sections:
            raise ValueError(f"{top}: not a key of the experiment nor the section of a "
                             f"registered learner; {nearest_keys(top, [*known, *sections], '')}")
