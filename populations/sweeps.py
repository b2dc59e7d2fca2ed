"""A ``selfplay-train -m`` sweep's folders: how its jobs' folders are named (the resolvers
``job_dirname`` and ``job_folder`` of ``configs/config.yaml``), the one folder the whole sweep
goes to (:func:`sweep_folder`, :func:`pin_sweep_folder`), which folder holds a resumed job
(:func:`refuse_renamed_job`), and the command that resumes a sweep
(:func:`sweep_resume_command`, :func:`sweep_stopped`). The resolver ``new_folder`` gives the
default run and sweep folders (``runs/<experiment>/<second>``) a name of their own, ``_1``
added where another run started in the same second
(:func:`populations.run_folder.new_folder`).

Importing it registers the resolvers (a config loaded outside ``selfplay-train`` resolves its
folders alike); Hydra and the run-folder code load in the functions that use them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from populations.command_line import (
    TRAIN,
    CLIError,
    absolute_config_dirs,
    hydra_value,
    override_values,
    resume_command,
    run_dir_override,
    shell_word,
    working_folder,
)

if TYPE_CHECKING:
    from omegaconf import DictConfig


_SWEPT: set[str] = set()
"""The keys this process's sweep gives more than one value (:func:`swept_keys`; set by
:func:`set_swept`, read by ``populations.loggers`` too)."""


def set_swept(overrides: Sequence[str]) -> None:
    """Record the keys the sweep that starts gives more than one value (its ``overrides``
    as Hydra holds them), in place of an earlier sweep's (tests run several in a process)."""
    _SWEPT.clear()
    _SWEPT.update(swept_keys(overrides))


def swept_keys(overrides: Sequence[str]) -> set[str]:
    """The keys (config groups) a sweep's ``overrides`` give more than one value
    (``seed=0,1``, ``lr=range(...)``, ``experiment=glob(*)``); ``seed=0`` alone is no sweep."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception:  # noqa: BLE001 - Hydra reports what it cannot parse itself
        return set()
    return {o.key_or_group for o in parsed if o.is_sweep_override() and (
        not override_values(o) or len({str(v) for v in override_values(o)}) > 1)}


def job_dirname(override_dirname: str, _root_: Any = None) -> str:
    """A sweep job's folder name from Hydra's ``override_dirname`` (the resolver
    ``job_dirname`` of ``configs/config.yaml``): a ``/`` in a value (``game.name=openspiel/x``,
    ``llm.model=/models/m``) nested the job a folder deeper, where the sweep's resume, its
    Ctrl-C hint and the dashboard did not look, so it becomes ``_``; the ``~game`` this CLI
    adds for ``game.name=`` is left out. A key left out of the names because a resume may
    change it (``exclude_keys``: ``experiment``, ``population.generations``...) stays in
    when the sweep gives it several values (:func:`_with_swept_keys`)."""
    items = [i for i in _with_swept_keys(override_dirname, _root_).split(",")
             if i != "~game=null"]
    return ",".join(items).replace("/", "_")


def _with_swept_keys(override_dirname: str, root: Any) -> str:
    """Hydra's ``override_dirname`` made again from the job's overrides (``root``: the job's
    whole config) with the excluded keys this sweep gives several values (:data:`_SWEPT`)
    kept: ``-m population.generations=1,2`` (or ``experiment=a,b``) made two job folders
    told apart by their numbers alone. Hydra's own rule otherwise (sorted ``key=value``
    items as typed); ``override_dirname`` itself when no such key is swept."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if not _SWEPT or root is None:
        return override_dirname
    try:
        conf = root.hydra.job.config.override_dirname
        excluded = [str(k) for k in conf.exclude_keys]
        kept = [k for k in excluded if k not in _SWEPT]
        if len(kept) == len(excluded):
            return override_dirname
        overrides = OverridesParser.create().parse_overrides(
            [str(o) for o in root.hydra.overrides.task])
        lines = sorted(str(o.input_line) for o in overrides if o.key_or_group not in kept)
        sep, kv = str(conf.get("item_sep", ",")), str(conf.get("kv_sep", "="))
        return sep.join(lines).replace("=", kv)
    except Exception:  # noqa: BLE001 - another config's layout: Hydra's own name
        return override_dirname


def job_folder(default: str, _root_: Any = None) -> str:
    """A sweep job's folder (the resolver ``job_folder`` of ``configs/config.yaml``):
    ``default`` (``<job number>_<overrides>``), or in a resumed sweep the folder in the
    sweep that already holds this job, found by its overrides whatever its number
    (:func:`populations.sweep_summary.find_job_folder`): a longer list (``seed=0,1,2``
    after ``seed=0,1``, seed the inner loop) numbers the jobs anew, and the finished ones
    trained again from frame 0 in new folders beside their own. Keys a resume may change
    (``exclude_keys``) are not compared, unless the sweep gives them several values."""
    from populations.sweep_summary import find_job_folder

    try:
        if _root_ is None or _root_.get("resume") is not True:
            return default
        sweep_dir = Path(str(_root_.hydra.sweep.dir))
        overrides = [str(o) for o in _root_.hydra.overrides.task]
        excluded = set(_root_.hydra.job.config.override_dirname.exclude_keys)
    except Exception:  # noqa: BLE001 - another config's layout: its own default name
        return default
    found = find_job_folder(sweep_dir, overrides, excluded - _SWEPT, default)
    return default if found is None else found.name


def new_folder(base: str) -> str:
    """The resolver ``new_folder`` of ``configs/config.yaml``'s ``hydra.run.dir`` and
    ``hydra.sweep.dir``: ``base`` (``runs/<experiment>/<second>``), or ``base_1``... where a
    folder or another process's run (sweep) started in the same second has it
    (:func:`populations.run_folder.new_folder`). Registered with ``use_cache``: resolved
    once per config (and its copies), so the folder Hydra makes, the one locked, and the one
    the resume command names are the same."""
    from populations.run_folder import new_folder as claimed

    return claimed(base)


def register_resolvers() -> None:
    """The resolvers ``hydra.run.dir``, ``hydra.sweep.dir`` and ``hydra.sweep.subdir`` of
    ``configs/config.yaml`` use (on import too: a config loaded outside ``selfplay-train``
    resolves its folders alike)."""
    from omegaconf import OmegaConf

    for name, resolver in (("job_dirname", job_dirname), ("job_folder", job_folder)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)
    if not OmegaConf.has_resolver("new_folder"):
        OmegaConf.register_new_resolver("new_folder", new_folder, use_cache=True)


register_resolvers()


def sweep_folder(config: DictConfig) -> Path:
    """The one folder of a sweep whose ``hydra.sweep.dir`` the command line does not give: the
    config's pattern as the sweep resolves it, with ``experiment`` the swept experiments joined
    by ``+`` where ``experiment=`` is swept (``multirun/kuhn_psro+psro_maddpg_oracle/<stamp>``;
    the sweep resolved it as ``default``). Hydra resolves the pattern again for each job, with
    the job's ``experiment``: a sweep over experiments went to one folder per experiment, and
    its multirun.yaml to a third one (see :func:`pin_sweep_folder`)."""
    import copy

    from omegaconf import OmegaConf, flag_override

    from populations.run_folder import release_claim

    folder = str(config.hydra.sweep.dir)  # the clock read once ($now is cached), for all
    swept = _swept_experiments(list(config.hydra.overrides.task))
    if swept:
        named = copy.deepcopy(config)  # the cache too: the same stamp
        # but not new_folder's: its cache is keyed by the unresolved text
        # (multirun/${experiment}/...), so it would give the default experiment's folder again
        OmegaConf.get_cache(named).pop("new_folder", None)
        with flag_override(named, ["struct", "readonly"], [False, False]):
            named.experiment = swept
            unused, folder = folder, str(named.hydra.sweep.dir)
        if unused != folder:  # multirun/default/<stamp>: not this sweep's (new_folder)
            release_claim(unused)
    return Path(folder)


def _swept_experiments(overrides: Sequence[str]) -> str | None:
    """``kuhn_psro+psro_maddpg_oracle`` for ``experiment=kuhn_psro,psro_maddpg_oracle`` among
    a sweep's overrides (``sweep`` for a glob or names that are no plain words); None when
    ``experiment`` is not swept."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType

    for o in OverridesParser.create().parse_overrides(list(overrides)):
        if o.key_or_group != "experiment" or o.package is not None or o.is_delete() or \
                o.value_type == ValueType.ELEMENT:
            continue
        values = override_values(o)
        if values and all(isinstance(v, str) and re.fullmatch(r"[\w.-]+", v) for v in values):
            name = "+".join(dict.fromkeys(values))
            return name if len(name) <= 120 else "sweep"
        return "sweep"
    return None


def pin_sweep_folder(config: DictConfig, folder: Path) -> None:
    """Give every job of the sweep ``folder`` as its ``hydra.sweep.dir`` (and multirun.yaml
    too): Hydra composes each job's config again from the sweep's ``hydra`` overrides and the
    job's own, resolving ``multirun/${experiment}/...`` with the job's experiment, so one
    sweep over ``experiment=`` was split across folders and its resume command (naming one of
    them) retrained the jobs of the others there from scratch."""
    from omegaconf import flag_override

    value = hydra_value(folder)
    with flag_override(config.hydra, ["struct", "readonly"], [False, False]):
        config.hydra.sweep.dir = str(folder)
        config.hydra.overrides.hydra.append(f"hydra.sweep.dir={value}")


def folder_given(config: DictConfig, key: str) -> bool:
    """Whether the command line gives ``key`` (``hydra.run.dir``, ``hydra.sweep.dir``). The
    overrides are read as typed: OmegaConf resolves a ``${...}`` in each as it is read, and
    ``hydra.sweep.dir=runs/${x}`` failed here with "Interpolation key 'x' not found"."""
    from omegaconf import OmegaConf

    typed = OmegaConf.to_container(config.hydra.overrides.hydra, resolve=False)
    return any(str(o).split("=", 1)[0].lstrip("+~") == key for o in typed)


def sweep_started(sweep_dir: Path) -> bool:
    """True when a job folder of the sweep holds a run (a resumed sweep, not a new one)."""
    return any((job / "settings.json").is_file() for job in sweep_dir.iterdir() if job.is_dir())


def refuse_renamed_job(sweep_dir: Path, num: int, run_dir: Path, settings: dict[str, Any],
                        overrides: Sequence[str] = (), flags: Sequence[str] = ()) -> None:
    """Refuse to start job ``num`` of a resumed sweep afresh in ``run_dir`` when another
    folder of the sweep, whatever its number, holds a run with these ``settings`` (but for
    those a resume may change, unless swept: :data:`_SWEPT`) that :func:`job_folder` did
    not take, its overrides being typed otherwise (a ``runner.*`` key, which the folder name
    holds, changed) or several folders matching (``population.generations=1,2`` resumed
    with one value): the job would train from frame 0 beside its own run. A job whose
    settings differ (the sweep list changed: ``seed=0,2`` after ``seed=0,1``) is another
    job and starts."""
    from populations.experiment import RESUME_MAY_CHANGE
    from populations.run_folder import flatten, settings_diff
    from populations.sweep_summary import job_folders

    free = [f for f in RESUME_MAY_CHANGE if not any(k == f or f"{k}." == f for k in _SWEPT)]
    mine = flatten(json.loads(json.dumps(settings)))

    def same_job(folder: Path) -> bool:
        try:
            saved = json.loads((folder / "settings.json").read_text())
        except (OSError, ValueError, RecursionError):
            return False  # unreadable: its own resume says so
        if not isinstance(saved, dict) or settings_diff(saved, settings, free):
            return False
        theirs = flatten(json.loads(json.dumps(saved)))
        both = set(theirs) & set(mine)  # none: not a run's settings
        return bool(both) and all(theirs[k] == mine[k] for k in both  # a swept runner.* key
                                  if any(k == s or k.startswith(f"{s}.") for s in _SWEPT))

    earlier = [p for p in job_folders(sweep_dir)
               if p != run_dir and (p / "settings.json").is_file() and same_job(p)]
    if len(earlier) > 1:
        first, second = (json.loads((p / "settings.json").read_text()) for p in earlier[:2])
        keys = sorted({d.split("=", 1)[0] for d in settings_diff(first, second)})
        raise CLIError(
            f"job {num} of the sweep ({run_dir.name}) could be any of {len(earlier)} folders "
            f"of the sweep, which differ only by {', '.join(keys) or 'nothing'} (settings a "
            f"resume may change, swept when they ran): {', '.join(p.name for p in earlier)}; "
            "resume the sweep with the list it started with, or one job alone with "
            "selfplay-train <its overrides> resume=true hydra.run.dir=<its folder>")
    if earlier:
        raise CLIError(
            f"job {num} of the sweep ran in {earlier[0]}, not in {run_dir.name} (job folders are "
            "named by the sweep's settings): resume the sweep with the settings it started "
            f"with, or that job alone with {resume_command(earlier[0], overrides, flags)}")


def sweep_resume_command(sweep_dir: Path, argv: Sequence[str]) -> str:
    """``selfplay-train -m <the sweep's overrides> resume=true hydra.sweep.dir=<sweep_dir>``
    from the command line ``argv`` that started (or resumed) the sweep. The folder is
    absolute, as a single run's (and relative ``--config-dir`` folders): pasted from another
    folder, ``hydra.sweep.dir=sw/int2`` as typed started a new sweep there."""
    skip = ("resume=", "hydra.sweep.dir=")
    args = [a for a in argv if a not in ("-m", "--multirun") and not a.startswith(skip)]
    folder = Path(os.path.abspath(os.path.join(working_folder(), sweep_dir)))
    return " ".join([TRAIN, "-m", *map(shell_word, absolute_config_dirs(args)), "resume=true",
                     run_dir_override(folder, "hydra.sweep.dir")])


def sweep_stopped(sweep_dir: Path | None, job: int | None, run_dir: Path | None = None,
                  created: bool = True, resumed: bool = False, argv: Sequence[str] = ()) -> str:
    """What a sweep's failed job adds to its error line (Hydra's launcher ends the sweep); a
    job run again without ``resume=true`` in the folder ``run_dir`` that holds its run (the
    same sweep command twice: 'already holds a run') says how the sweep goes on, or starts
    anew, not to fix the swept values, which were fine. ``argv``: the sweep's command line as
    typed (:func:`sweep_resume_command`)."""
    from populations.run_folder import holds_run

    if sweep_dir is None or job is None:
        return ""
    if not resumed and not created and run_dir is not None and holds_run(run_dir):
        return (f" (sweep job {job}: the sweep in {sweep_dir} has run; add resume=true to go "
                f"on with it, {sweep_resume_command(sweep_dir, argv)}, or give a new "
                "hydra.sweep.dir to start it again)")
    if not (sweep_dir.is_dir() and sweep_started(sweep_dir)):
        return f" (sweep job {job}; the jobs after it did not run)"
    return (f" (sweep job {job}; the jobs after it did not run: fix the swept values, then "
            f"{sweep_resume_command(sweep_dir, argv)})")
