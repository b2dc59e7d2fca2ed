"""A ``selfplay-train -m`` sweep's jobs checked before the first starts
(:func:`check_sweep_jobs`, run by :class:`populations.cli.ConfigCheck` when the multirun
starts): a job that can never run (its algo cannot play its game, a league's members,
PSRO's oracle, a game's arguments or module) failed only when the sweep reached it, after
the jobs before it had trained.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

from populations.cli_common import missing_option_hint, one_line
from populations.command_line import CLIError
from populations.sweep_values import element_text
from populations.train_overrides import prepare

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from games import Game
    from populations.experiment import ExperimentConfig

NOT_PAIRING = ("seed", "frames", "eval_episodes", "torch_threads", "checkpoint_every_s",
               "progress", "keep_going", "resume", "resume_override", "logger", "hydra")
"""Settings (and sections) that decide nothing :func:`check_sweep_jobs` checks: jobs that
differ in these only are checked once (``-m algo=mappo,maddpg seed=0,1,2``: two checks)."""
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def check_sweep_jobs(config: DictConfig) -> None:
    """Refuse a sweep (``-m``) before its first job when some of its jobs can never run:
    their algo cannot play their game, a league's members, PSRO's oracle, a game's arguments
    or module (:func:`populations.experiment.check_experiment`'s checks, which use the game,
    not the learners: each distinct game is built once and closed after; PSRO's learner oracle
    is built once). Such a job failed only when the sweep reached it, after the jobs before it
    had trained (``-m algo=mappo,maddpg game.name=openspiel/dots_and_boxes``: maddpg's jobs,
    after mappo's), and under
    ``keep_going=true`` each failed on its own. Each distinct pairing (the jobs' overrides
    other than :data:`NOT_PAIRING`) is composed as Hydra composes the job and checked once;
    one :class:`CLIError` line names the failing jobs, their swept overrides and why. A
    sweeper other than Hydra's basic one is left to its jobs."""
    import copy

    from hydra._internal.core_plugins.basic_sweeper import (
        BasicSweeper,  # private: the sweeper's own job list (pyproject pins hydra-core 1.3)
    )
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import open_dict

    from populations.experiment import check_experiment

    if config.hydra.sweeper.get("_target_") != BASIC_SWEEPER:
        return
    params = config.hydra.sweeper.get("params") or {}
    loader = GlobalHydra.instance().config_loader()
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(
        [f"{k}={v}" for k, v in params.items()] + list(config.hydra.overrides.task))
    swept = {o.get_key_element(): o for o in parsed if o.is_sweep_override()}
    jobs = [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]
    pairings: dict[tuple[str, ...], list[int]] = {}
    for num, job in enumerate(jobs):
        # a learner's own seed (vdn.seed=1) is refused unless it equals seed=: then the seed
        # decides whether the job runs (-m vdn.seed=1 seed=0,1: job 1 runs, job 0 cannot)
        seeded = any(_key(o).endswith(".seed") for o in job)
        pairings.setdefault(tuple(o for o in job if _pairs(o) or (seeded and _key(o) == "seed")),
                            []).append(num)
    failed: dict[str, list[tuple[list[int], str]]] = {}
    with contextlib.closing(_Games()) as built:  # -m algo=mappo,ippo: the game built once
        for pairing, nums in pairings.items():
            try:
                job_cfg = loader.load_sweep_config(config, list(jobs[nums[0]]))
                task = copy.deepcopy(job_cfg)
                with open_dict(task):
                    del task["hydra"]
                exp = prepare(task, list(job_cfg.hydra.overrides.task), check=False,
                              hydra=job_cfg.hydra)
                check_experiment(exp, built.of(exp))
            except Exception as err:  # noqa: BLE001 - what the job would fail with, one line
                named = " ".join(_as_typed(o, swept) for o in pairing
                                 if o.split("=", 1)[0] in swept)
                text = one_line(err)  # game=openspiel/kuhn_poker: game.name= plays it
                failed.setdefault(text + missing_option_hint(text), []).append((nums, named))
    if not failed:
        return

    def jobs_of(groups: list[tuple[list[int], str]]) -> str:
        if sum(len(n) for n, _ in groups) == len(jobs):
            return f"all {len(jobs)} jobs of the sweep" if len(jobs) > 1 else "the sweep's job"
        return ", ".join(f"job{'s' if len(n) > 1 else ''} {', '.join(map(str, n))}"
                         + (f" ({named})" if named else "") for n, named in groups)

    why = "; ".join(f"{jobs_of(groups)} cannot run: {text}" for text, groups in failed.items())
    refused = sum(len(n) for groups in failed.values() for n, _ in groups)
    drop = f": drop {'it' if refused == 1 else 'them'} from the sweep"
    raise CLIError(f"{why}; no job was started" + ("" if refused == len(jobs) else drop))


def _as_typed(line: str, swept: dict[str, Any]) -> str:
    """A job's ``key=value`` of a swept key (``swept``: key -> its override) as the command
    line typed the value (``mappo.lr=1e-3``, where Hydra's job says ``mappo.lr=0.001``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        value = OverridesParser.create().parse_override(line).value()
    except Exception:  # noqa: BLE001 - Hydra's own text, as the job names it
        return line
    found = element_text(swept[line.split("=", 1)[0]], value)
    return line if found is None else f"{line.split('=', 1)[0]}={found}"


class _Games:
    """The games of a sweep's pairings: each distinct one (its name and arguments) has its
    arguments checked (:func:`~populations.config_checks.check_game_kwargs`, which builds and
    steps a copy of its own) and is built once, for every pairing that plays it; a game that
    cannot be built raises its error for each. :meth:`close` closes the built ones (a game
    may hold a renderer or a subprocess)."""

    def __init__(self) -> None:
        self._built: dict[str, Game | Exception] = {}

    def of(self, exp: ExperimentConfig) -> Game:
        """``exp``'s game, built on its first call."""
        import games
        from populations.config_checks import check_game_kwargs

        key = json.dumps([exp.game.name, exp.game.kwargs], sort_keys=True, default=repr)
        if key not in self._built:
            try:
                if exp.game.kwargs:
                    check_game_kwargs(exp.game.name, dict(exp.game.kwargs))
                self._built[key] = games.make(exp.game.name, **exp.game.kwargs)
            except Exception as err:  # noqa: BLE001 - each pairing of it fails with it
                self._built[key] = err
        found = self._built[key]
        if isinstance(found, Exception):
            raise found
        return found

    def close(self) -> None:
        for game in self._built.values():
            if not isinstance(game, Exception):
                with contextlib.suppress(Exception):  # the check's verdict stands
                    game.close()


def _key(override: str) -> str:
    """An override's dotted key (``+vdn.seed=1``: ``vdn.seed``)."""
    return override.split("=", 1)[0].lstrip("+~")


def _pairs(override: str) -> bool:
    """Whether a job's ``key=value`` can change what :func:`check_sweep_jobs` checks."""
    return _key(override).split(".")[0] not in NOT_PAIRING
