"""Keys of a league member given by its index on ``selfplay-train``'s command line
(``population.members.0.mappo.epochs=2``): Hydra sets them in the composed members list as
in any list, so a member given by its name (``mappo``) becomes ``{mappo: {epochs: 2}}``,
which :func:`members_named_back` gives its name back (``{algo: mappo, mappo: {epochs:
2}}``). :func:`members_by_index_last` puts these keys after the members list the command
line gives (Hydra applies overrides in order), and in a sweep hands them to each job: a
sweep's base config, composed without its swept keys, may hold no such member at all
(README, "Members with their own settings").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from populations.command_line import CLIError

if TYPE_CHECKING:
    from omegaconf import DictConfig

_BY_INDEX = re.compile(r"(\+{0,2}population\.members\.(\d+)(\.[^=]+)?)=")
"""An override of a member given by its index, a key under it (``population.members.0.mappo.
epochs=2``, a ``+`` form too) or the whole member (``population.members.0={algo: vdn}``);
group 1: its key, group 2: the index, group 3: the key under the member (None for the whole
member)."""


def by_index(override: str) -> bool:
    """Whether ``override`` (as typed) sets a key of a member given by its index."""
    return _BY_INDEX.match(override) is not None


def members_named_back(cfg: DictConfig, overrides: Sequence[str],
                       hydra: DictConfig | None) -> None:
    """``population.members.0.mappo.epochs=2`` on a member given by its name (``mappo``, by
    ``population.members=[mappo,vdn]`` or a preset): Hydra replaced the name by ``{mappo:
    {epochs: 2}}`` (mappo, ippo and mappo_exploiter read that section alike: the key does not
    tell which it was). The entry becomes its mapping form, ``{algo: mappo, mappo: {epochs:
    2}}``, with the name the members list in force holds there: the config Hydra composes from
    the same command without its index overrides; so too for any other key by index that
    leaves the entry without ``algo`` (``population.members.0.name=bob``), while a learner's
    setting put under the member (``population.members.0.epochs=2``) is refused, naming its
    section's form (:func:`_refuse_bare_settings`). Left as it is (refused in one line, naming
    the mapping form: :func:`populations.member_specs.parse_members`) where that list holds no
    name there, or no Hydra run is at hand to compose it."""
    from omegaconf import OmegaConf, open_dict

    members = cfg.get("population", {}).get("members")
    found = {int(m.group(2)) for o in overrides if (m := _BY_INDEX.match(o))}
    # a member given whole by its index (population.members.0={mappo: {...}}) was not named
    # by the list: no name to put back
    found -= {int(m.group(2)) for o in overrides
              if (m := _BY_INDEX.match(o)) and m.group(3) is None}
    lost = sorted(i for i in found if members is not None and i < len(members)
                  and OmegaConf.is_dict(members[i]) and "algo" not in members[i])
    listed = _members_composed([o for o in overrides if not _BY_INDEX.match(o)], hydra) \
        if lost else []
    for i in lost:
        if i < len(listed) and isinstance(listed[i], str):
            entry = OmegaConf.to_container(members[i])
            _refuse_bare_settings(i, listed[i], entry, overrides)
            with open_dict(cfg):
                members[i] = {"algo": listed[i], **entry}


def _refuse_bare_settings(i: int, listed: str, entry: dict[str, Any],
                          overrides: Sequence[str]) -> None:
    """``population.members.0.epochs=2`` on member 0 given by its name (``mappo``): a
    learner's setting put under the member, not under its section; refused in one line naming
    the section's form, ``population.members.0.mappo.epochs=2``."""
    from populations.member_specs import MemberSpec

    bare = [k for k, v in entry.items() if k != "name" and not isinstance(v, dict)]
    if not bare:
        return
    try:
        from marl import registry

        section = registry.entries()[MemberSpec(listed).algo].section
    except (ImportError, KeyError):
        section = MemberSpec(listed).algo
    key = bare[0]
    typed = next((o.lstrip("+") for o in overrides
                  if o.lstrip("+").startswith(f"population.members.{i}.{key}=")),
                 f"population.members.{i}.{key}={entry[key]}")
    value = typed.partition("=")[2]
    raise CLIError(f"bad config: {typed}: a learner's setting goes in the member's section: "
                   f"population.members.{i}.{section}.{key}={value}")


def _members_composed(overrides: Sequence[str], hydra: DictConfig | None) -> list[Any]:
    """``population.members`` as Hydra composes the run's config (``hydra``: its node, default
    Hydra's) with the task ``overrides``; empty where no Hydra run is at hand or it fails."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    if hydra is None and HydraConfig.initialized():
        hydra = HydraConfig.get()
    if hydra is None or not GlobalHydra.instance().is_initialized():
        return []
    try:
        composed = GlobalHydra.instance().config_loader().load_configuration(
            config_name=hydra.job.config_name, run_mode=RunMode.RUN,
            overrides=[*hydra.overrides.hydra, *overrides])
        members = OmegaConf.to_container(composed.population.members)
    except Exception:  # noqa: BLE001 - the refusal names the mapping form to type
        return []
    return members if isinstance(members, list) else []


_LIST = re.compile(r"\+{0,2}population\.members=")
"""An override of the whole members list (``population.members=[mappo,vdn]``)."""


def members_by_index_last(args: Sequence[str]) -> list[str]:
    """``selfplay-train``'s command line ``args`` with each key of a member given by its index
    (``population.members.0.mappo.epochs=2``) after the members list it sets
    (``population.members=[...]``): Hydra applies overrides in order, so one typed before the
    list set a member of the preset's list, which may have none ("list index out of range"),
    and the list then replaced it. In a sweep (``-m``), each such key with one value becomes
    a one-value sweep (``...=choice(2)``), which each job gets as typed: Hydra composes a
    sweep's base config without its swept keys, so ``-m 'population.members=[mappo,vdn],[ippo,
    vdn]' population.members.0.mappo.epochs=2`` set member 0 of the preset's list; each job's
    own list holds it. The jobs' overrides, folders and summary read as typed (a one-value
    sweep is no swept key: :func:`populations.sweeps.swept_keys`)."""
    args = list(args)
    lists = [i for i, a in enumerate(args) if _LIST.match(a)]
    if lists:
        late = [a for a in args[:lists[-1]] if _BY_INDEX.match(a)]
        args = [a for a in args[:lists[-1]] if not _BY_INDEX.match(a)] + [args[lists[-1]]] \
            + late + args[lists[-1] + 1:]
    if "-m" not in args and "--multirun" not in args:
        return args
    return [_per_job(a) for a in args]


def _per_job(arg: str) -> str:
    """``arg`` a one-value sweep (``population.members.0.mappo.epochs=choice(2)``) where it
    is a member's key by index with one value; as typed otherwise (a sweep already, or text
    Hydra's grammar refuses: Hydra says so itself)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    found = _BY_INDEX.match(arg)
    if found is None or not arg[found.end():]:
        return arg
    per_job = f"{found[1]}=choice({arg[found.end():]})"
    parser = OverridesParser.create()
    try:
        if parser.parse_override(arg).is_sweep_override():
            return arg
        parser.parse_override(per_job)
    except Exception:  # noqa: BLE001 - Hydra reports it in its own words
        return arg
    return per_job
