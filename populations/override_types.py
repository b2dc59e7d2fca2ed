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
