"""``selfplay-train``'s overrides and composed config, checked: before the schema (and torch,
~1 s) loads (:func:`check_command_line`, :func:`check_values`), against the schema
(:func:`prepare`, :func:`to_experiment`); the warnings for settings the run does not read
(``unused_overrides``, re-exported here, its old home) are
:mod:`populations.unread_overrides`'s. :class:`populations.cli.ConfigCheck` runs them
before Hydra makes the run folder; a sweep's jobs are checked in
:mod:`populations.sweep_jobs`, and a member's keys given by its index
(``population.members.0.mappo.epochs=2``) are settled in :mod:`populations.member_overrides`.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from populations.cli_common import game_modules, import_user_modules, one_line
from populations.command_line import (
    CLIError,
    override_values,
    shadowed_presets,
)
from populations.config_groups import (
    chosen_presets,
    group_names,
    group_options,
)
from populations.member_overrides import by_index, members_named_back
from populations.override_types import (
    refuse_added_keys,
    refuse_mistyped,
    refuse_unknown_sections,
    refuse_unread_knobs,
)
from populations.sweep_values import RANGE_VALUES, swept_line, typed_text
from populations.unread_overrides import unused_overrides  # noqa: F401 - its old home

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from populations.experiment_config import ExperimentConfig


def replace_game_kwargs(cfg: DictConfig, overrides: Sequence[str]) -> None:
    """``game.kwargs={...}`` replaces the preset's arguments (Hydra merges dicts); later
    ``game.kwargs.KEY=...`` overrides apply on top."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf, open_dict

    kwargs: Any = None
    for o in OverridesParser.create().parse_overrides(list(overrides)):
        key = o.key_or_group
        if key == "game.kwargs":
            kwargs = OmegaConf.create({} if o.is_delete() else o.value() or {})
        elif kwargs is not None and key.startswith("game.kwargs."):
            sub = key.removeprefix("game.kwargs.")
            if o.is_delete():
                kwargs.pop(sub, None)
            else:
                OmegaConf.update(kwargs, sub, o.value(), merge=True)
    if kwargs is not None:
        with open_dict(cfg):
            cfg.game.kwargs = kwargs


# ------------------------------------------------------------- before the schema loads
class _Unparsed(Exception):
    """Arguments Hydra's own parser refuses (it reports them itself, later)."""


def hydra_args(argv: Sequence[str]) -> argparse.Namespace | None:
    """``argv`` (a ``selfplay-train`` command line) as Hydra's own flag parser reads it (its
    flags, and the overrides as typed); None where that parser refuses it (Hydra reports it
    itself, later)."""
    # private, no public equivalent: Hydra's own flag parser (--config-dir, -m, ...) is only
    # reachable here or through hydra.main, which runs the app (pyproject pins hydra-core 1.3)
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()

    def refuse(message: str) -> NoReturn:
        raise _Unparsed(message)

    parser.error = refuse  # type: ignore[method-assign]
    try:
        return parser.parse_args(list(argv))
    except _Unparsed:
        return None


def check_command_line(args: Sequence[str]) -> None:
    """Mistakes Hydra would report before using the schema, found before the schema (and
    torch, ~1 s) is imported, in Hydra's own words: an override its grammar cannot parse, and
    ``GROUP=OPTION`` naming an option no file in ``configs/GROUP/`` (nor an installed
    package's config store entry) provides. Skipped where other configs may provide it
    (``--config-dir``, ``--config-path``, ``hydra.searchpath``). Whatever the configs: a
    list given to a config group (:func:`_one_option_refusal`), ``~key`` of the schema
    (:func:`_deletion_refusal`) and ``game.kwargs=null``, each with what to write."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType

    parsed = hydra_args(args)
    if parsed is None:
        return
    if parsed.multirun and (parsed.cfg or parsed.info):  # Hydra: a ValueError's traceback
        raise CLIError(f"-m cannot be combined with {'--cfg' if parsed.cfg else '--info'}; "
                       "--cfg job prints one job's config: drop -m and give one value of each "
                       "swept key")
    _check_hydra_flags(parsed)
    overrides = OverridesParser.create().parse_overrides(parsed.overrides)  # grammar errors
    named_game = any(o.key_or_group == "game.name" and not o.is_delete() for o in overrides)
    for o in overrides:  # whatever the search path: the schema has no keys under algo
        wrong = _key_under_group(o) or _one_option_refusal(o) or \
            _deletion_refusal(o, named_game) or _null_kwargs_refusal(o)
        if wrong:
            raise CLIError(wrong)
    # before the options: their ConfigStore presets count, and their learners name the
    # preset a missing algo=<option> lacks (also where Hydra reports it: other configs)
    import_listed_modules(overrides)
    if parsed.config_path is None:  # --config-path replaces the shipped configs
        searchpath = [entry for o in overrides
                      if o.key_or_group == "hydra.searchpath" and not o.is_delete()
                      and isinstance(o.value(), list) for entry in o.value()]
        for line in shadowed_presets(parsed.config_dir, searchpath):
            print(line, file=sys.stderr)  # Hydra composes with the shipped one: say so
    if parsed.config_dir or parsed.config_path or parsed.config_name or any(
            o.key_or_group.startswith("hydra.searchpath") for o in overrides):
        return
    groups = group_options()
    for o in overrides:
        group = o.key_or_group
        value = None if o.is_delete() else o.value()
        if group in ("hydra.run.dir", "hydra.sweep.dir") and value in ("", None):
            raise CLIError(f"{group} is empty (an unset shell variable?), which writes the "
                           "run into this folder; give the run's folder")
        if group in ("hydra.run.dir", "hydra.sweep.dir") and isinstance(value, str) and \
                "\\${" in value:  # Hydra resolves the folder's name again (its logging)
            raise CLIError(f"{group}={value}: a folder name holding a literal '${{' cannot be "
                           "a run folder (Hydra resolves it as an interpolation); rename it")
        if group in ("hydra.run.dir", "hydra.sweep.dir") and isinstance(value, str) and \
                value.startswith("/"):  # $RUN/x with RUN unset: /x, made silently
            first = next((p for p in value.split("/") if p), "")
            if not first:
                raise CLIError(f"{group}={value} is the filesystem's root (an unset shell "
                               "variable, as in $RUN/?); give the run's folder")
            if "$" not in first and not Path("/", first).is_dir():
                if not os.access("/", os.W_OK):  # Hydra could not make it either
                    raise CLIError(f"{group}={value}: /{first} does not exist and cannot be "
                                   "made here (an unset shell variable, as in $RUN/x?); give "
                                   "a folder under an existing one")
                print(f"note: {group}={value} makes the new top-level folder /{first} (if you "
                      "meant $VAR/..., VAR is unset)", file=sys.stderr)  # containers: /results
        if group in ("hydra.run.dir", "hydra.sweep.dir") and isinstance(value, str) and \
                "${" not in value:  # Hydra's makedirs: "[Errno 17] File exists: '...'"
            there = next((p for p in (Path(value), *Path(value).parents) if p.exists()), None)
            if there is not None and not there.is_dir():
                what = "sweep's" if group == "hydra.sweep.dir" else "run's"
                raise CLIError(f"{group}={value}: {there} is a file, not a folder; give the "
                               f"{what} folder")
        if group in groups and o.package is None and not o.is_delete() and \
                o.value_type == ValueType.ELEMENT and o.value() is None:  # Hydra: "Got NoneType"
            known = ", ".join(groups[group])
            raise CLIError(f"{o.input_line}: the config group {group} needs one of its "
                           f"options: {known}")
        if group == "imports" and isinstance(value, str):  # Hydra: "str is not a ListConfig"
            raise CLIError(f"imports={value} must be a list: imports=[{value}]")
        if group not in groups or o.package is not None or o.input_line.startswith(("+", "~")):
            continue
        options = [o.value()] if o.value_type == ValueType.ELEMENT else \
            list(o.value().list) if o.value_type in (ValueType.CHOICE_SWEEP,
                                                     ValueType.SIMPLE_CHOICE_SWEEP) else []
        for option in options:  # a sweep's too (-m algo=mappo,ipo: before the sweep folder)
            if not isinstance(option, str) or "/" in option or option in groups[group]:
                continue
            try:
                stored = [n.removesuffix(".yaml") for n in ConfigStore.instance().list(group)]
            except OSError:
                stored = []
            if option not in stored:
                known = ", ".join(sorted({*groups[group], *stored}))
                raise CLIError(f"In 'config': Could not find '{group}/{option}'; Available "
                               f"options in '{group}': {known}")  # reported() adds preset_hint
    check_values(overrides)


GPU_DEVICE_FILES = ("/dev/nvidia*", "/dev/dxg", "/dev/kfd", "/proc/driver/nvidia",
                    "/dev/nvhost-ctrl-gpu", "/dev/nvmap", "/etc/nv_tegra_release")
"""What a machine that torch may find a GPU on holds: an NVIDIA driver's devices, WSL's GPU
device, ROCm's (torch's ``cuda`` device on AMD), a Jetson's (L4T: an integrated GPU behind
``/dev/nvhost-*`` and ``/dev/nvmap``, no ``/dev/nvidia*``). None of them: CUDA is not
available."""


def gpu_driver_present(root: str = "") -> bool:
    """Whether a file of :data:`GPU_DEVICE_FILES` exists (under ``root``, a test's folder)."""
    import glob

    return any(glob.glob(root + pattern) for pattern in GPU_DEVICE_FILES)


def refuse_cuda_without_gpu(args: Sequence[str]) -> None:
    """``device=cuda`` or ``cuda:N`` on the command line (a sweep's values too) of a machine
    with no GPU driver: the one line ``marl.core.resolve_device`` says, before torch and the
    game load (it came after both, behind the run's first log lines, where ``device=gpu`` is
    refused before them). A machine with a driver is left to torch, which knows its GPUs."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = hydra_args(args)
    if parsed is None or gpu_driver_present():
        return
    for o in OverridesParser.create().parse_overrides(parsed.overrides):
        if o.key_or_group != "device" or o.package is not None:
            continue
        for value in override_values(o):
            if isinstance(value, str) and re.fullmatch(r"cuda(:\d+)?", value):
                raise CLIError(f"device {value!r} requested but CUDA is not available (this "
                               "machine has no GPU driver); use 'cpu' (or 'auto')")


def _key_under_group(override: Any) -> str | None:
    """``algo.adv_norm=median``, a key under a config group that is no section (``algo``,
    ``experiment``, ``encoder``: Hydra said "Cannot convert 'dict' to string"): what the group
    picks and the sections that hold the key (``mappo.adv_norm=median``); None for others."""
    group, dot, rest = override.key_or_group.partition(".")
    if not dot or group in ("game", "hydra") or override.is_delete() or group not in group_names():
        return None
    from populations.config_checks import section_schemas

    schemas = section_schemas()
    if group in schemas:  # llm.model=..., population.kind=...: a section of its own
        return None
    value = override.input_line.partition("=")[2]
    found = []
    for section, (cls, _) in schemas.items():
        try:
            top = cls()
        except Exception:  # noqa: BLE001 - a section needing arguments holds no default keys
            continue
        subs = [("", top)] + [(f"{f.name}.", getattr(top, f.name)) for f in
                              dataclasses.fields(top) if dataclasses.is_dataclass(
                                  getattr(top, f.name))]  # fmt: skip
        for sub, obj in subs:  # mappo.adv_norm, llm.grpo.adv_norm
            for name in rest.split("."):
                obj = getattr(obj, name, _Missing) if dataclasses.is_dataclass(obj) else _Missing
            if obj is not _Missing:
                found.append(f"{section}.{sub}{rest}={value}")
    options = ", ".join(group_options().get(group, []))
    where = (f"it goes in a section: {found[0]}"
             + (f" (or {', '.join(found[1:])})" if found[1:] else "")) if found else \
        f"settings go in the sections ({', '.join(f'{n}.*' for n in schemas)})"
    return (f"{override.input_line}: '{group}' is a config group ({group}=<option> picks one "
            f"of {options}), not a section with keys; {where}")


class _Missing:
    """No such key (see :func:`_key_under_group`)."""


def _one_option_refusal(override: Any) -> str | None:
    """``algo=[mappo,vdn]``: a list given to a shipped config group. Hydra loads every option
    listed and the last one's values win, so the run trained vdn without a word; each group
    of the schema fills one section (or, ``experiment``, the whole config) and takes one
    option. What to write instead; None for other overrides."""
    from hydra.core.override_parser.types import ValueType

    group = override.key_or_group
    if override.package is not None or override.is_delete() or group not in group_names() \
            or override.value_type != ValueType.ELEMENT or not isinstance(override.value(), list):
        return None
    picked = [str(v) for v in override.value()]
    some = " or ".join(f"{group}={v}" for v in picked[:3]) or f"{group}=<option>"
    sweep = f"; or train each in turn: -m {group}={','.join(picked)}" if len(picked) > 1 else ""
    return (f"{override.input_line}: the config group {group} takes one option (a list loads "
            f"each one and the last one's settings win); write {some}{sweep}")


def _null_kwargs_refusal(override: Any) -> str | None:
    """``game.kwargs=null``: OmegaConf said "field 'game.kwargs' is not Optional" and no more;
    a game's arguments are a mapping, ``{}`` for none."""
    if override.key_or_group != "game.kwargs" or override.is_delete() or \
            override.package is not None or override.value() is not None:
        return None
    return (f"{override.input_line}: a game's arguments are a mapping, not null; write "
            "game.kwargs={} for none (the game's own defaults)")


def _deletion_refusal(override: Any, named_game: bool) -> str | None:
    """``~seed``, ``~algo``, ``~mappo.lr``: deleting a setting of the schema or a group's
    option. A top-level setting or a group quietly fell back to the schema's default (``~seed``
    trained seed 0, ``~game`` the schema's game without its preset's arguments); a section's
    setting failed in OmegaConf's words ("MAPPOConfig (DictConfig) does not support
    deletion"). Refused with what to write instead. Left alone: a key inside a dict setting
    (``~game.kwargs.N`` drops one argument, as does a key of ``population.exploit.learner``),
    ``~game`` beside ``game.name=`` (a game without a preset: this CLI writes it itself,
    :func:`populations.command_line.game_overrides`), keys the schema does not know (Hydra
    or the schema reports them)."""
    from populations.config_checks import TOP_LEVEL_TYPES, section_schemas

    key = override.key_or_group
    if not override.is_delete() or override.package is not None:
        return None
    if key in group_names():
        if key == "game" and named_game:
            return None
        options = ", ".join(group_options().get(key, []))
        return (f"~{key}: a config group's option cannot be deleted (the run would take the "
                f"schema's defaults without a word); write {key}=<option> ({options}), or "
                "leave it out")
    top, _, rest = key.partition(".")
    if not rest and top in section_schemas():  # ~mappo: the section's defaults, silently
        return (f"~{key}: a section cannot be deleted (the run would take the schema's "
                f"defaults without a word); set its keys ({key}.<key>=<value>), or leave it")
    if not rest:
        if key not in (*TOP_LEVEL_TYPES, "imports"):
            return None
        return (f"~{key}: a setting cannot be deleted (the run would take the schema's "
                f"default without a word); write {key}=<value>")
    if top == "game":
        obj: Any = {"name": "", "kwargs": {}}  # GameConfig's fields (populations.experiment_config)
    elif top in section_schemas():
        try:
            obj = section_schemas()[top][0]()
        except Exception:  # noqa: BLE001 - a section needing arguments: the schema reports it
            return None
    else:
        return None
    for i, name in enumerate(rest.split(".")):
        if isinstance(obj, dict):
            if i == 0 and top == "game" and name in obj:  # GameConfig's own fields
                obj = obj[name]
                continue
            return None  # a key inside a dict setting: deleting it drops it
        if not dataclasses.is_dataclass(obj) or not hasattr(obj, name):
            return None
        obj = getattr(obj, name)
    instead = f"{key}={{}}" if key == "game.kwargs" else f"{key}=<value>"
    return (f"~{key}: a setting of the {top} section cannot be deleted; write {instead} "
            "(selfplay-train ... --cfg job shows its value)")


def _check_hydra_flags(parsed: argparse.Namespace) -> None:
    """Hydra's flags that it refuses with a traceback (a ValueError, exit 1), in one line:
    two commands (``-r --info``, ``--cfg job --info``), ``--resolve`` without ``--cfg``, and
    ``--experimental-rerun`` (any file: Hydra would unpickle it)."""
    commands = [flag for flag, given in (
        ("--run", parsed.run), ("-m", parsed.multirun), ("--cfg", parsed.cfg is not None),
        ("--info", parsed.info is not None), ("--shell-completion", parsed.shell_completion))
        if given]
    if len(commands) > 1:
        raise CLIError(f"{' and '.join(commands)} cannot be combined: give one of --run, -m, "
                       "--cfg, --info, --shell-completion")
    if parsed.resolve and parsed.cfg is None:
        raise CLIError("--resolve resolves what --cfg prints: give it with --cfg job, --cfg "
                       "hydra or --cfg all")
    if parsed.experimental_rerun is not None:
        # Hydra unpickles the file (pickle.load runs any code a crafted one holds), and our
        # runs write no config.pickle to rerun: refused whatever the file
        raise CLIError(f"--experimental-rerun {parsed.experimental_rerun!r}: not supported "
                       "(Hydra unpickles the file, which runs any code it holds, and selfplay "
                       "runs write no .hydra/config.pickle); continue a run with "
                       "resume=true hydra.run.dir=<run>")


def import_listed_modules(overrides: Sequence[Any]) -> None:
    """Import the command line's ``imports=[...]`` now (the run imports them again): one that
    fails is refused before torch loads, and the games and config presets (ConfigStore) they
    register are known to the checks. The working folder leaves ``sys.path`` again after:
    Hydra has not loaded its ``configs`` package yet, and a project's own ``configs/`` there
    would be taken for it (the run puts the folder back, after Hydra)."""
    from hydra.core.override_parser.types import ValueType

    for o in overrides:
        if o.key_or_group != "imports" or o.package is not None or o.is_delete() or \
                o.value_type != ValueType.ELEMENT:
            continue
        modules = o.value()
        if isinstance(modules, list) and all(isinstance(m, str) for m in modules):
            cwd = os.getcwd()
            added = cwd not in sys.path
            try:
                import_user_modules(modules)
            finally:
                if added and cwd in sys.path:
                    sys.path.remove(cwd)


def check_values(overrides: Sequence[Any]) -> None:
    """Common bad values on the command line (``num_envs=0``, ``seed=abc``, ``device=gpu``,
    an unknown ``game.name``), refused before the schema and torch load, in the words the
    schema's own checks use (:mod:`populations.config_checks`, ``games.make``)."""
    from hydra.core.override_parser.types import ValueType

    from populations.config_checks import (
        TOP_LEVEL_TYPES,
        check_rollout_share,
        check_run_values,
        check_section_values,
        section_schemas,
        typed_override,
        write_integer,
    )

    names, schemas, sections = [], None, {}
    for o in overrides:
        key = o.key_or_group
        first = key.split("@")[0].split(".")[0]  # mappo.lr=-1: mappo (mappo={...} too)
        if first not in ("game", "hydra", "imports", *TOP_LEVEL_TYPES) and (
                "." in key or key not in group_names()):
            schemas = section_schemas() if schemas is None else schemas  # imports marl.configs
            # (a member's key by its index: the schema's, with the member's name put back)
            if first in schemas and not by_index(o.input_line):
                sections.setdefault(first, []).append(o)
        elif key == "llm" and o.package is None:  # llm=hf alone: its preset is checked too
            sections.setdefault("llm", [])
        if o.package is not None or o.input_line.startswith(("+", "~")):
            continue
        values = [v for v in override_values(o) if not (isinstance(v, str) and "${" in v)]
        if key == "game.name":
            names += [v for v in values if isinstance(v, str)]
        elif key == "game.kwargs":  # Hydra: "Error merging override ...; Cannot assign int..."
            for value in values:
                if value is not None and not isinstance(value, dict):
                    raise CLIError(f"bad config: game.kwargs={typed_text(o, value)}; expected a "
                                   "mapping of the game's arguments such as game.kwargs={N:3} "
                                   "(one argument: game.kwargs.N=3)")
        elif key in TOP_LEVEL_TYPES:
            if o.value_type == ValueType.RANGE_SWEEP:  # -m frames=range(1e4,3e4,1e4): floats
                values = list(itertools.islice(o.sweep_iterator(), RANGE_VALUES))
            for value in values:
                try:
                    check_run_values({key: typed_override(key, value)})
                except ValueError as err:  # frames=1e4: named as typed, not as 10000.0
                    text = str(err)
                    if write_integer(value) and text.startswith(f"{key}={value};"):
                        text = f"{key}={typed_text(o, value)}" + text[len(f"{key}={value}"):]
                    raise CLIError(f"bad config: {text}") from None
                except TypeError:  # a list or a dict: OmegaConf names it
                    continue
    unknown = _unknown_games(names)
    if unknown:
        import games

        games.make(unknown[0])  # raises UnknownGameError listing the registered games
    share = {o.key_or_group: [v for v in override_values(o)
                              if not (isinstance(v, str) and "${" in v)]
             for o in overrides if o.key_or_group in (
                 "num_envs", "runner.rollout_workers", "population.kind", "mappo.net.recurrent",
                 "game.kwargs.continuous_actions")
             and o.package is None and not o.input_line.startswith(("+", "~"))}
    presets = chosen_presets(overrides) if sections or share else None
    if presets is not None and ("num_envs" in share or "runner.rollout_workers" in share):
        try:  # rollout workers: the learners and copies they take, in the run's words
            check_rollout_share({k: [typed_override(k, v) if k in TOP_LEVEL_TYPES else v
                                     for v in vs] for k, vs in share.items()}, presets)
        except ValueError as err:
            raise CLIError(f"bad config: {err}") from None
    order = list(section_schemas()) if sections else []  # the schema's order
    jobs = [(section, items) for section, found in sorted(
        sections.items(), key=lambda kv: order.index(kv[0])) if presets is not None
            for items in _section_jobs(found)]
    unread = [o for section, found in sections.items()  # (-m population=psro,fsp: presets
              if section not in {s for s, _ in jobs} for o in found]  # unread) types alone
    later = []
    with _torch_refused():  # first every check that needs no torch (a good population.* value
        for section, items in jobs:  # before mappo.lr=-1 imported it via the learner registry)
            try:
                check_section_values(items, presets, section)
            except _NeedsTorch:
                later.append((section, items))
            except ValueError as err:
                raise CLIError(f"bad config: {err}") from None
    # a list's element by index (population.members.1.mappo.lr=...): the schema's empty
    # list holds none to type it against (it said "list index out of range"); Hydra sets it
    unread = [o for o in unread if not re.search(r"\.\d+(\.|$)", o.key_or_group)]
    mistyped_later = False
    try:  # the types Hydra refuses as it composes, before what the experiment refuses
        with _torch_refused():
            refuse_mistyped(unread)
    except _NeedsTorch:
        mistyped_later = True
    except ValueError as err:
        raise CLIError(f"bad config: {err}") from None
    _refuse_composed(overrides, functools.cache(  # the presets, read once if not yet
        lambda: presets if sections or share else chosen_presets(overrides)))
    for section, items in later:  # last: their registry checks import torch
        try:
            check_section_values(items, presets, section)
        except ValueError as err:
            raise CLIError(f"bad config: {err}") from None
    try:
        if mistyped_later:
            refuse_mistyped(unread)
    except ValueError as err:
        raise CLIError(f"bad config: {err}") from None


def _refuse_composed(overrides: Sequence[Any], presets: Callable[[], Any]) -> None:
    """What the composed experiment refuses after torch and the learners load (~2 s of CPU),
    said before them in its words (:mod:`populations.override_types`), in the order
    the composed config checks them: a key ``+`` adds to a section (``+mappo.lrr=1``), a knob
    no experiment reads (``vdn.seed=5``), a top-level key no learner names (``+framez=3``).
    Before the section checks that import torch (``vdn.mixer=abc``: the mixer registry)."""
    try:
        refuse_added_keys(overrides)
        refuse_unread_knobs(overrides, presets)
    except ValueError as err:
        raise CLIError(f"bad config: {err}") from None
    try:
        refuse_unknown_sections(overrides, presets)
    except ValueError as err:  # check_experiment's words: no "bad config"
        raise CLIError(str(err)) from None


class _NeedsTorch(BaseException):
    """An import of torch refused by :func:`_torch_refused` (a BaseException: no library's
    ``except Exception`` or ``except ImportError`` takes it for a missing package)."""


@contextmanager
def _torch_refused() -> Iterator[None]:
    """While inside, importing torch (not loaded yet) raises :class:`_NeedsTorch`; the module
    that imported it is left unloaded, as after any failed import, and loads again later."""
    import importlib.abc

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
            if name == "torch" or name.startswith("torch."):
                raise _NeedsTorch(name)

    finder = Refuse()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def _section_jobs(overrides: Sequence[Any]) -> list[list[tuple[str, Any, str]]]:
    """One section's overrides (``mappo.lr=-1 mappo.net.hidden=[32]``) as each job of the line
    applies them: ``(key, value, input_line)`` in the line's order, once per value of a swept
    key (``-m mappo.lr=0,0.1``). No job where the early check cannot apply them as Hydra does
    (the schema decides, after torch: a false refusal is worse than a late one): two swept
    keys, a range, a key given twice, ``+``/``++``/``~`` lines, an interpolation (``${...}``),
    a package (``@``), the whole section (``mappo={...}``)."""
    from hydra.core.override_parser.types import ValueType

    keys = [o.key_or_group for o in overrides]
    swept = [o for o in overrides if o.value_type != ValueType.ELEMENT]
    if len(set(keys)) < len(keys) or len(swept) > 1 or any(
            o.package is not None or o.input_line.startswith(("+", "~")) or
            "${" in o.input_line or "." not in o.key_or_group for o in overrides) or any(
            o.value_type not in (ValueType.CHOICE_SWEEP, ValueType.SIMPLE_CHOICE_SWEEP)
            for o in swept):
        return []
    values = list(swept[0].value().list) if swept else [None]
    return [[(o.key_or_group, value if o in swept else o.value(), o.input_line if o not in
              swept else swept_line(o, value)) for o in overrides] for value in values]


def _unknown_games(names: Sequence[str]) -> list[str]:
    """``names`` that are neither an adapter's prefix nor registered (by the shipped games,
    installed packages, or the command line's ``imports``, imported before)."""
    from games.registry import PREFIXES, registered

    names = [n for n in names if not n.startswith(PREFIXES)]
    if not names:
        return []
    known = registered()
    return [n for n in names if n not in known]


# ------------------------------------------------------------------------ the config
def register_schema() -> None:
    """Store the schema ``configs/config.yaml`` composes over (its ``defaults: - schema``)."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from populations.config_checks import writable
    from populations.experiment_config import ExperimentConfig, registry_checks_later

    # the sections' defaults, without their registry checks (torch and the learners: ~2 s CPU
    # of every --cfg job and hydra.compose): those run on the values the run composed, when
    # OmegaConf.to_object builds each section again (to_experiment)
    with registry_checks_later():
        schema = writable(OmegaConf.structured(ExperimentConfig))
    # open while presets merge, for a learner of the user's own (its section my_algo: {...}
    # in a preset): populations.learner_sections types it and refuses a key no registered
    # learner names; the sections stay closed by their types. Hydra closes the root before
    # the command line applies: a key the schema lacks, typed, still needs a "+".
    OmegaConf.set_struct(schema, False)
    # a game's keyword arguments are open: game.kwargs.num_cards=4 needs no "+"
    OmegaConf.set_struct(schema.game.kwargs, False)
    # and an LLM team's prompts per role: llm.role_prompts={reader: ..., writer: ...} (the
    # keys are the game's roles, checked with the game: llm_agents.settings)
    OmegaConf.set_struct(schema.llm.role_prompts, False)
    # and the best responses' learner settings (population.exploit.learner.epochs=4; the
    # keys of the exploit algo's section, checked by ExploitEvery in one line)
    OmegaConf.set_struct(schema.population.exploit.learner, False)
    # and a league's members, plain YAML: population.members.1.mappo.epochs=2 sets a key the
    # member's mapping lacks, no "+" (learner_sections checks it: a typo names its nearest)
    OmegaConf.set_struct(schema.population.members, False)
    ConfigStore.instance().store(name="schema", node=schema)


def to_experiment(cfg: DictConfig) -> ExperimentConfig:
    """The typed experiment of a composed config (without its ``hydra`` node); a value a
    section refuses is reported by its dotted path (``mappo.net.init='x' unknown; ...``)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from populations.config_paths import refused_message
    from populations.experiment_config import ExperimentConfig

    try:
        exp = OmegaConf.to_object(cfg)
    except dataclasses.FrozenInstanceError:  # +mappo.lrr=1 added a key the schema lacks
        raise CLIError(f"bad config: {_added_key(cfg) or _ADDED}") from None
    except (ValueError, TypeError, OmegaConfBaseException) as err:  # named by its dotted path
        raise CLIError(f"bad config: {refused_message(cfg, err, one_line)}") from None
    added = _added_key(cfg, top=False)  # +population.foo=1: a mutable section took it silently
    if added:
        raise CLIError(f"bad config: {added}")
    assert isinstance(exp, ExperimentConfig)
    return exp


_ADDED = "a key the schema does not have was added (check '+' overrides)"


def _added_key(cfg: DictConfig, path: str = "", top: bool = True) -> str:
    """``mappo.lrr: Key 'lrr' not in 'MAPPOConfig'; nearest: mappo.lr``: the first key of
    ``cfg`` its node's dataclass lacks (added by a ``+``/``++`` override; the sections are
    closed), as an unknown key is named elsewhere; ``""`` if none. ``top=False``
    leaves out the top level's own keys (a learner of the user's own: learner_sections)."""
    from omegaconf import DictConfig, OmegaConf

    from populations.config_checks import nearest_keys

    cls = OmegaConf.get_type(cfg)
    names = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) \
        and top else None
    for key in cfg:
        full = f"{path}.{key}" if path else str(key)
        if names is not None and key not in names:
            return (f"{full}: Key '{key}' not in '{cls.__name__}' (a '+' cannot add keys to "
                    f"the schema); {nearest_keys(str(key), names, path)}")
        child = cfg._get_node(key)
        if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
            found = _added_key(child, full)
            if found:
                return found
    return ""


def prepare(cfg: DictConfig, overrides: Sequence[str], check: bool = True,
            hydra: DictConfig | None = None) -> ExperimentConfig:
    """Import the user's modules, settle the game's arguments, validate (``check``: build the
    game too): the experiment to run, or a :class:`CLIError` / game error. ``hydra``: the
    run's Hydra node (default: Hydra's, when it is set), which says where a refused value of
    the user's own preset came from."""
    import_user_modules(list(cfg.get("imports") or []))
    name = cfg.get("game", {}).get("name")
    import_user_modules(game_modules(name), f"game.name={name}")
    replace_game_kwargs(cfg, overrides)
    members_named_back(cfg, overrides, hydra)
    try:
        exp = to_experiment(cfg)
    except CLIError as err:  # a value of the user's own preset: name its file
        raise CLIError(_in_user_file(str(err), cfg, hydra)) from None
    if check:
        from populations.experiment import check_experiment

        try:
            check_experiment(exp)  # unknown game, bad game arguments, an algo that cannot play it
        except ValueError as err:  # an argument of the user's own game preset: name its file
            file = _game_kwargs_file(str(err), cfg, overrides, hydra)
            if file is None:
                raise
            raise CLIError(f"{file}: {one_line(err)}") from err
    return exp


def _game_kwargs_file(message: str, cfg: DictConfig, overrides: Sequence[str],
                      hydra: DictConfig | None) -> str | None:
    """The file of the user's own config folder (``--config-dir``) that set the game argument
    ``message`` (a refusal of the game's arguments) names, as :func:`_in_user_file` names a
    section's: ``myconf/game/bad_game.yaml`` for ``bad parameter for openspiel/kuhn_poker:
    'playerz' unknown`` (the sections' refusals named their file, the game's did not). None
    where the command line gives the game's arguments or no file of the user's sets one."""
    from omegaconf import OmegaConf

    from populations.config_paths import user_file_of

    if any(o.split("=", 1)[0].lstrip("+~").startswith("game.kwargs") for o in overrides):
        return None
    if hydra is None:
        from hydra.core.hydra_config import HydraConfig

        hydra = HydraConfig.get() if HydraConfig.initialized() else None
    kwargs = OmegaConf.select(cfg, "game.kwargs", default=None)
    if hydra is None or not OmegaConf.is_dict(kwargs):
        return None
    for key in kwargs:
        value = kwargs[key]
        if OmegaConf.is_config(value) or not (f"{key!r}" in message or f"{key}=" in message):
            continue
        try:
            file = user_file_of(f"game.kwargs.{key}={value}; refused", cfg, hydra)
        except Exception:  # noqa: BLE001 - the refusal stands without its file
            file = None
        if file is not None:
            return file
    return None


def _in_user_file(message: str, cfg: DictConfig, hydra: DictConfig | None) -> str:
    """``bad config: <key>=<value>; ...`` with the file of the user's own config folder that
    set the value, as ``bad config: myconfigs/algo/my_algo.yaml: mappo.lr=-1.0; ...``
    (:func:`populations.config_paths.user_file_of`); ``message`` as it is otherwise."""
    from populations.config_paths import user_file_of

    head = "bad config: "
    if not message.startswith(head):
        return message
    if hydra is None:
        from hydra.core.hydra_config import HydraConfig

        hydra = HydraConfig.get() if HydraConfig.initialized() else None
    try:
        file = user_file_of(message[len(head):], cfg, hydra) if hydra is not None else None
    except Exception:  # noqa: BLE001 - the refusal stands without its file
        file = None
    return message if file is None else f"{head}{file}: {message[len(head):]}"


_CONFIG_FLAGS = (("config_path", "--config-path"), ("config_dir", "--config-dir"),
                 ("config_name", "--config-name"))


def config_flags(argv: Sequence[str]) -> list[str]:
    """What in ``argv`` (a ``selfplay-train`` command line as typed) chooses which config
    composes: Hydra's ``--config-path``/``-cp``, ``--config-dir``/``-cd`` and
    ``--config-name``/``-cn`` (by their long names, each followed by its value) and the
    ``hydra.searchpath`` overrides, as typed. Hydra keeps them out of the task's overrides; a
    resume command without them composes the packaged config (refused as 'other settings',
    or an option of the other config dir not found). Empty when Hydra cannot parse ``argv``
    (it reports that itself)."""
    parsed = hydra_args(argv)
    if parsed is None:
        return []
    flags = [word for attr, flag in _CONFIG_FLAGS if getattr(parsed, attr) is not None
             for word in (flag, getattr(parsed, attr))]
    return flags + [o for o in parsed.overrides
                    if o.split("=", 1)[0].lstrip("+~").startswith("hydra.searchpath")]
