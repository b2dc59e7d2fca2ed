"""The shipped ``configs/`` read without the schema (and torch): its config groups and their
options (:func:`group_options`), the shipped ``population=`` presets of each kind
(:func:`population_presets`), and what the group options a ``selfplay-train`` command line
chooses set (:func:`chosen_presets`), for the early checks of
:mod:`populations.train_overrides`.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any


@functools.cache
def population_presets() -> dict[str, list[str]]:
    """Population kind -> the shipped ``population=`` presets of that kind."""
    import yaml

    out: dict[str, list[str]] = {}
    for path in sorted((_configs_root() / "population").glob("*.yaml")):
        try:
            kind = (yaml.safe_load(path.read_text()) or {}).get("population", {}).get("kind")
        except (OSError, yaml.YAMLError, AttributeError):
            continue
        if isinstance(kind, str):
            out.setdefault(kind, []).append(path.stem)
    return out


def chosen_presets(overrides: Sequence[Any]) -> Any:
    """What the group options of ``configs/config.yaml``'s defaults list set, as the command
    line and an ``experiment=`` choose them, for the early section checks: merged in the
    defaults list's order with the experiment's own values last, and a command-line option
    beats the experiment's ``override /group: option``, as Hydra composes them. None (the
    schema decides, after torch) where it cannot be read so: a group option swept, appended,
    deleted, packaged or given twice, one with no file in ``configs/`` (a ConfigStore preset
    from ``imports=[...]``), a defaults list other than an experiment's overrides, a file that
    does not load (Hydra reports it)."""
    from hydra.core.override_parser.types import ValueType
    from omegaconf import OmegaConf

    from populations.config_checks import group_preset, section_schemas

    root = _configs_root()
    choices: dict[str, str] = {}
    for o in overrides:
        group = o.key_or_group.split("@")[0]
        if group not in group_names():
            continue
        if o.package is not None or o.input_line.startswith(("+", "~")) or group in choices \
                or o.value_type != ValueType.ELEMENT or not isinstance(o.value(), str):
            return None  # (-m population=fsp,self_play: each job's presets differ)
        choices[group] = o.value()

    def load(group: str, option: str, overrides_of: str = "") -> Any:
        path = root / group / f"{option}.yaml"
        text = path.read_text()  # OSError: no file (a ConfigStore preset)
        header = [line for line in text.splitlines() if line.startswith("#")][:20]
        package = next((line.split("@package", 1)[1].strip() for line in header
                        if "@package" in line), group)
        if package != "_global_":
            if package == group and group in section_schemas():  # llm=hf: the llm section
                return group_preset(root, group, option)
            if package.split(".")[0] in section_schemas():
                raise LookupError(package)
            return OmegaConf.create()
        data = OmegaConf.create(text)
        defaults = OmegaConf.to_container(data.pop("defaults", None) or OmegaConf.create([]))
        for item in defaults if isinstance(defaults, list) else [defaults]:
            name, choice = next(iter(item.items())) if isinstance(item, dict) and \
                len(item) == 1 else (item, None)
            if group == overrides_of and isinstance(name, str) and \
                    name.startswith("override /") and isinstance(choice, str):
                choices.setdefault(name.removeprefix("override /"), choice)  # the line wins
            elif item != "_self_":
                raise LookupError(item)
        return data

    try:
        primary = OmegaConf.to_container(OmegaConf.load(root / "config.yaml").defaults)
        order = [next(iter(item.items())) for item in primary if isinstance(item, dict)]
        experiment = choices.get("experiment", dict(order).get("experiment"))
        body = load("experiment", experiment, "experiment") if experiment else None
        out = OmegaConf.create()
        for group, default in order:
            option = choices.get(group, default)
            if group == "experiment" and body is not None:
                out.merge_with(body)
            elif option is not None:
                out.merge_with(load(group, option))
    except Exception:  # noqa: BLE001 - a ConfigStore preset, a defaults list, bad YAML
        return None
    return out


def _configs_root() -> Path:
    """The shipped ``configs`` package's folder (found without importing it)."""
    spec = importlib.util.find_spec("configs")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def group_names() -> set[str]:
    """The config groups of the shipped configs (their folders)."""
    return {d.name for d in _configs_root().iterdir() if d.is_dir()}


def group_options() -> dict[str, list[str]]:
    """Group -> options of the shipped configs, read without importing anything heavy."""
    spec = importlib.util.find_spec("configs")
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    return {d.name: sorted(p.stem for p in d.glob("*.yaml"))
            for d in sorted(root.iterdir()) if d.is_dir() and list(d.glob("*.yaml"))}
