"""Config errors that name a setting by the dotted path a user types on the command line.

The schema's dataclasses check their own values and name a field the way their own code
spells it (``optim='bogus'``, ``MADDPGConfig.tau``, ``llm team 'solo'``), so the same check
reads right from Python; a user of ``selfplay-train`` wrote ``mappo.optim=bogus``. When a
composed config does not convert, :func:`refusal` finds the section whose dataclass refused
its values (the deepest one: ``mappo.net`` before ``mappo``) and :func:`at_path` puts that
section's path in front of the field its message names::

    optim='bogus' unknown; choose one of [...]    ->  mappo.optim='bogus' unknown; ...
    init='bogus' unknown; ...       (mappo.net)   ->  mappo.net.init='bogus' unknown; ...
    MADDPGConfig.tau=5.0; expected ...           ->  maddpg.tau=5.0; expected ...
    llm team 'solo' unknown; ...                  ->  llm.team='solo' unknown; ...

A message that names no field of its section gets the section's path in front
(``llm.grpo: kl estimator 'k9' unknown; ...``). Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omegaconf import DictConfig

_CONTEXT = re.compile(r"[\w ]+: ")  # "approx exploitability: frames must be..."
_UNKNOWN = re.compile(r"unknown (?P<what>(?:[a-z]\w* )?[A-Za-z_][\w.-]*) "
                      r"(?P<value>'[^']*'|\"[^\"]*\")(?P<rest>.*)", re.S)
_NAME = [re.compile(r"(?P<name>[A-Za-z_][\w.-]*)(?P<rest>.*)", re.S),  # "optim='bogus'..."
         re.compile(r"(?P<noun>[a-z]\w*) (?P<name>[A-Za-z_][\w.-]*)(?P<rest>.*)",  # "llm team"
                    re.S)]


def at_path(message: str, path: str, cls: type | None = None) -> str:
    """``message`` of the section at ``path`` (dataclass ``cls``) naming its field by the
    field's full dotted path; the top level (``path`` empty) already does."""
    if not path:
        return message
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    context, unknown = _CONTEXT.match(message), _UNKNOWN.fullmatch(message)
    bodies = [  # "unknown action mode 'x'; valid: ..." -> "action mode 'x' unknown; ..."
        f"{unknown['what']} {unknown['value']} unknown{unknown['rest']}" if unknown else "",
        message, message[context.end():] if context else ""]
    for body in bodies:
        for pattern in _NAME if body else ():
            found = pattern.fullmatch(body)
            if found is None:
                continue
            name, rest = found["name"], found["rest"]
            if name.startswith(path + "."):
                return message  # says it already (population.oracle=...)
            noun = found.groupdict().get("noun")
            field = _field(name, noun, path, cls, fields)
            if field is not None:
                if rest[:2] in (" '", ' "'):  # "llm team 'solo'" -> "llm.team='solo'"
                    rest = "=" + rest[1:]
                return f"{path}.{field}{_second_field(rest, path, fields)}"
    if cls is not None and message.startswith(cls.__name__ + ": "):
        return path + message[len(cls.__name__):]  # "MADDPGConfig: ..." -> "maddpg: ..."
    return f"{path}: {message}"


_COMPARED = re.compile(r"(?P<head>=\S+ (?:<=?|>=?|==|!=) )(?P<name>[A-Za-z_]\w*)(?==)")


def _second_field(rest: str, path: str, fields: set[str]) -> str:
    """``rest`` of a message comparing its field with another of the section (``=10 <
    batch_size=128: ...``) naming that one by its path too (``vdn.batch_size=128``): the
    line read ``vdn.buffer_size=10 < batch_size=128``, the second without its section."""
    found = _COMPARED.match(rest)
    if found is None or found["name"] not in fields:
        return rest
    return f"{found['head']}{path}.{found['name']}{rest[found.end():]}"


def _field(name: str, noun: str | None, path: str, cls: type | None,
           fields: set[str]) -> str | None:
    """The field of ``cls`` that ``name`` (after ``noun``) spells, if any: ``tau``,
    ``MADDPGConfig.tau``, ``exploit.every`` (of ``population.exploit``), ``kl estimator``,
    ``meta-solver``."""
    *owner, field = name.replace("-", "_").split(".")
    if owner and owner not in ([getattr(cls, "__name__", "")], path.split(".")[-len(owner):]):
        return None
    if noun is not None and not owner and f"{noun}_{field}" in fields:
        return f"{noun}_{field}"
    return field if field in fields else None


def refusal(cfg: DictConfig, path: str = "") -> tuple[str, type, Exception] | None:
    """The deepest section of ``cfg`` whose dataclass refuses its values, in the order
    ``OmegaConf.to_object`` builds them: its dotted path, dataclass and error (None: every
    section converts, or the refusal is OmegaConf's own, which names its key itself)."""
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    for key in cfg:
        node = cfg._get_node(key)
        if not isinstance(node, DictConfig) or node._is_none() or node._is_missing():
            continue
        cls = OmegaConf.get_type(node)
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            continue
        try:
            OmegaConf.to_object(node)
        except OmegaConfBaseException:
            return None
        except (ValueError, TypeError) as err:
            return refusal(node, f"{path}{key}.") or (f"{path}{key}", cls, err)
    return None


def refused_message(cfg: DictConfig, err: BaseException, one_line: Any) -> str:
    """The one-line message of ``err`` (raised converting ``cfg``) naming its setting's full
    path; ``one_line`` renders an exception as one line (``populations.cli_common.one_line``)."""
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(err, OmegaConfBaseException):  # its key is on a line one_line drops
        key = getattr(err, "full_key", None)
        return one_line(err) if not key or key in one_line(err) else f"{key}: {one_line(err)}"
    found = refusal(cfg)
    if found is None:
        return one_line(err)
    path, cls, inner = found
    return at_path(one_line(inner), path, cls)


_KEY = re.compile(r"(?P<key>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:=|: )")


def user_file_of(message: str, task: DictConfig, hydra: DictConfig) -> str | None:
    """The config file of the user's own (``--config-dir``, ``hydra.searchpath``; not a
    shipped one) that set the value ``message`` refuses (``mappo.lr=-1.0; expected ...``),
    as a path from the working folder where it lies under it: the last file of the run's
    composition (the primary config's defaults list in order, each group option's file and the
    options of its group it lists, then the primary config's own body) that sets that key to
    the value the composed ``task`` holds. None where the command line sets the key, the
    message names no key, or a shipped file, a ConfigStore preset or nothing sets it last."""
    from omegaconf import OmegaConf

    found = _KEY.match(message)
    if found is None:
        return None
    key = found["key"]
    given = {o.split("=", 1)[0].lstrip("+~").split("@")[0] for o in hydra.overrides.task}
    if key in given or OmegaConf.select(task, key, default=None) is None:
        return None
    sources = [(str(s.path), str(s.provider)) for s in hydra.runtime.config_sources
               if s.schema == "file" or s.provider == "main"]
    root = Path(str(hydra.runtime.cwd))
    last: tuple[Path | None, Any] = (None, None)

    def locate(relative: str) -> tuple[Path | None, bool]:
        """The file Hydra reads for ``relative`` (the first source holding it) and whether
        it is the user's."""
        for path, provider in sources:
            if provider == "main":  # the shipped configs (the package configs/)
                spec = importlib.util.find_spec(path)
                for folder in spec.submodule_search_locations or [] if spec else []:
                    if (Path(folder) / relative).is_file():
                        return Path(folder) / relative, False
            elif (Path(path) / relative).is_file():
                return Path(path) / relative, True
        return None, False

    def visit(group: str, option: str, seen: tuple[str, ...] = ()) -> None:
        nonlocal last
        file, own = locate(f"{group}/{option}.yaml" if group else f"{option}.yaml")
        if file is None or option in seen:
            return
        try:
            data = OmegaConf.load(file)
        except Exception:  # noqa: BLE001 - Hydra read it; a file it cannot is its to report
            return
        defaults = data.pop("defaults", None) if OmegaConf.is_dict(data) else None
        items = OmegaConf.to_container(defaults) if OmegaConf.is_list(defaults) else []
        if "_self_" not in items:
            items = [*items, "_self_"]
        for item in items:
            if item == "_self_":
                first = file.read_text().lstrip().splitlines()[:1]
                package = first[0].split("@package", 1)[1].strip() if first and \
                    first[0].startswith("#") and "@package" in first[0] else group
                prefix = "" if package in ("_global_", "") else package.replace("/", ".") + "."
                if key.startswith(prefix):
                    value = OmegaConf.select(data, key[len(prefix):], default=None)
                    if value is not None and not OmegaConf.is_config(value):
                        last = (file if own else None, value)
            elif isinstance(item, str) and group:  # another option of the same group
                visit(group, item, (*seen, option))

    choices = {g: o for g, o in hydra.runtime.choices.items() if not g.startswith("hydra/")}
    for group, option in reversed(list(choices.items())):  # Hydra lists them last first
        if isinstance(option, str):
            visit(group, option)
    visit("", str(hydra.job.config_name))
    file, value = last
    if file is None or value != OmegaConf.select(task, key, default=None):
        return None
    shown = os.path.relpath(file, root)
    return str(file) if shown.startswith("..") else shown
