"""Warnings for ``selfplay-train`` settings a run does not read (:func:`unused_overrides`):
``frames=`` beside a population (it sizes ``population=none`` runs only), ``population.*``
keys of another population kind (:data:`READERS`), ``runner.*`` keys of Ray with
``runner=local`` (:data:`RAY_ONLY`) or of a league's Ray learners in another run
(:data:`LEAGUE_LEARNERS`), PSRO's sampled-payoff settings with exact payoffs
(:data:`SAMPLED_ONLY`), and learner settings no learner of the run reads. PSRO's
``population.oracle=auto`` and ``population.psro.payoffs=auto`` are judged with what they
choose. :class:`populations.cli.ConfigCheck` prints them before the run starts; the overrides
themselves are checked in :mod:`populations.train_overrides`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from populations.config_groups import population_presets

if TYPE_CHECKING:
    from populations.experiment import ExperimentConfig


def unused_overrides(exp: ExperimentConfig, overrides: Sequence[str]) -> list[str]:
    """Warnings for command-line settings this run does not read: ``frames=`` sizes a
    single-learner run only (a league trained 20k frames per member and generation after
    ``frames=1000``, silently), and learner settings no learner of the run reads
    (:func:`~populations.learner_sections.unread_settings`)."""
    from populations.learner_sections import unread_settings
    from populations.preset_notes import replaced_by_presets

    keys = {o.split("=", 1)[0].lstrip("+") for o in overrides if "=" in o}
    kind = exp.population.kind
    pop = exp.population  # PSRO's oracle=auto, payoffs=auto: judged with what they choose
    chosen = _chosen_oracle(exp)
    auto = chosen is not None and pop.oracle == "auto"
    auto_payoffs = chosen is not None and pop.psro.payoffs == "auto"
    exp = chosen or exp
    unread = unread_settings(exp, overrides, auto=auto)  # encoder=gnn beside
    # members [qmix, maddpg]
    if "runner.rollout_workers" in keys and kind != "none" and not _llm_member(exp):
        unread.append(f"runner.rollout_workers={exp.runner.rollout_workers} is not read with "
                      f"population.kind={kind}: rollout workers play a single MAPPO/IPPO "
                      "run's rollouts (population=none) and an LLM team's; this run trains "
                      "without them")
    unread += _unread_population_keys(exp, overrides, auto=auto, auto_payoffs=auto_payoffs)
    unread += _unread_runner_keys(exp, overrides)
    unread += replaced_by_presets(exp, overrides, auto=auto)  # ippo, mappo.net.critic=state
    if kind == "none" and exp.runner.kind == "ray" and not exp.runner.rollout_workers and \
            not _plays_own_episodes(exp.algo):  # it trained in this process, unsaid
        others = [o.lstrip("+") for o in overrides if o.lstrip("+").startswith("runner.")]
        also = f" ({', '.join(others)} unused too)" if others else ""
        unread.append(
            f"runner=ray is not used by a population=none run without runner.rollout_workers: "
            f"{exp.algo} trains and evaluates in this process{also}; runner.rollout_workers=N "
            "plays a MAPPO/IPPO run's rollouts on N Ray actors, and leagues (population="
            "self_play, fsp, pfsp) and PSRO play their matches on them")
    if "frames" not in keys or kind == "none":
        return unread
    pop = exp.population
    where = (f"population.frames_per_generation={pop.frames_per_generation} per member and "
             "generation" if kind == "league" else
             f"population.oracle_frames={pop.oracle_frames} per RL best response")
    return [f"frames={exp.frames} is not used with population.kind={kind} (it sizes "
            f"population=none runs); this run trains {where}", *unread]


def _chosen_oracle(exp: ExperimentConfig) -> ExperimentConfig | None:
    """A PSRO run's ``exp`` with the oracle and payoffs ``population.oracle=auto`` and
    ``population.psro.payoffs=auto`` choose for its game
    (:func:`populations.psro_run.resolve_auto`, as the run decides it next), for the
    warnings of settings they do not read; None for other runs, and where the game cannot be
    made (the run refuses it in its own words)."""
    pop = exp.population
    if pop.kind != "psro" or "auto" not in (pop.oracle, pop.psro.payoffs):
        return None
    import games
    from populations.psro_run import resolve_auto

    try:
        game = games.make(exp.game.name, **exp.game.kwargs)
    except Exception:  # noqa: BLE001 - check_experiment refuses it next, in one line
        return None
    try:
        return resolve_auto(exp, game, announce=False)
    except Exception:  # noqa: BLE001 - as above
        return None
    finally:
        game.close()


READERS = {"iterations": ("psro",), "oracle": ("psro",), "oracle_frames": ("psro",),
           "psro": ("psro",), "keep_checkpoints": ("league", "none")}
"""The population kinds that read a ``population.*`` setting, where not a league alone
(``kind``: all). ``keep_checkpoints`` sizes a league's and a single run's checkpoints; PSRO
keeps none (it resumes from its database)."""


RAY_ONLY = ("workers", "address", "learners", "learner_gpus", "max_learner_restarts")
"""``runner.*`` settings that only ``runner=ray`` reads (Ray actors, the cluster)."""
LEAGUE_LEARNERS = ("learners", "learner_gpus", "max_learner_restarts")
"""``runner.*`` settings of a league's Ray learner actors (no other run has them)."""


def _unread_runner_keys(exp: ExperimentConfig, overrides: Sequence[str]) -> list[str]:
    """A warning per ``runner.<key>=`` on the command line that this run does not read, as
    :func:`_unread_population_keys` says of ``population.*``: :data:`RAY_ONLY` keys with
    ``runner=local`` (``runner.workers=4 runner.address=host:1`` ran locally without a word),
    :data:`LEAGUE_LEARNERS` with ``runner=ray`` in a run that is no league. A single run on
    ``runner=ray`` without rollout workers is said whole in :func:`unused_overrides`."""
    kind, pop = exp.runner.kind, exp.population.kind
    if kind == "ray" and pop == "none" and not exp.runner.rollout_workers:
        return []  # "runner=ray is not used by a population=none run ..." names them all
    notes = []
    for o in overrides:
        key = o.split("=", 1)[0].lstrip("+")
        name = key.removeprefix("runner.")
        if "=" not in o or name == key:
            continue
        if kind == "local" and name in RAY_ONLY:
            notes.append(f"{o.lstrip('+')} is not used with runner.kind=local: only runner=ray "
                         "reads it")
        elif kind == "ray" and pop != "league" and name in LEAGUE_LEARNERS:
            presets = ", ".join(population_presets().get("league", []))
            notes.append(f"{o.lstrip('+')} is not used with population.kind={pop}: only a "
                         f"league's Ray learner actors read it (population={presets})")
    return notes


SAMPLED_ONLY = ("episodes_per_entry", "num_envs")
"""``population.psro.*`` settings that only sampled payoffs read (exact payoffs play none)."""


def _unread_population_keys(exp: ExperimentConfig, overrides: Sequence[str],
                            auto: bool = False, auto_payoffs: bool = False) -> list[str]:
    """A warning per ``population.<key>=`` on the command line that this run's kind does not
    read, naming the kinds that do (:data:`READERS`): ``population.generations=4`` in a
    single run (``population=none``) was ignored without a word, as ``population.iterations=``
    in a league and ``population.generations=`` in PSRO; PSRO's ``population.oracle_frames=``
    with the exact oracle, which trains nothing (``auto``: the oracle ``population.oracle=auto``
    chose), and its :data:`SAMPLED_ONLY` settings with exact payoffs, which play no episode
    (``auto_payoffs``: ``population.psro.payoffs=auto`` chose them); a league's
    ``population.exploit.*`` with ``population.exploit.every=0`` (no estimate runs)."""
    kind = exp.population.kind
    notes = []
    for o in overrides:
        key = o.split("=", 1)[0].lstrip("+")
        if "=" not in o or not key.startswith("population.") or key == "population.kind":
            continue
        if key.removeprefix("population.psro.") in SAMPLED_ONLY and kind == "psro" and \
                exp.population.psro.payoffs == "exact":
            how = "population.psro.payoffs=auto, which chose exact here" if auto_payoffs \
                else "population.psro.payoffs=exact"
            notes.append(f"{o.lstrip('+')} is not used with {how}: exact payoffs are computed "
                         "from the game tree, no episode is sampled; only "
                         "population.psro.payoffs=sampled reads it")
            continue
        if key == "population.oracle_frames" and kind == "psro" and \
                exp.population.oracle == "exact":
            how = "population.oracle=auto, which chose exact here" if auto else \
                "population.oracle=exact"
            notes.append(f"{o.lstrip('+')} is not used with {how}: exact best responses train "
                         "nothing; only an RL oracle (population.oracle=rl or a learner's "
                         "name) reads it")
            continue
        if key.startswith("population.exploit.") and key != "population.exploit.every" and \
                kind == "league" and not exp.population.exploit.every:
            notes.append(f"{o.lstrip('+')} is not used with population.exploit.every=0 (the "
                         "default): no estimate runs; population.exploit.every=N estimates "
                         "every N-th generation's snapshots with these settings")
            continue
        readers = READERS.get(key.split(".")[1], ("league",))
        if kind not in readers:
            presets = [f"population={p}" for r in readers for p in population_presets().get(r, [])]
            how = f" ({', '.join(presets)})" if presets else ""
            who = " or ".join(f"population.kind={r}" for r in readers)
            notes.append(f"{o.lstrip('+')} is not used with population.kind={kind}: only "
                         f"{who} reads it{how}")
    return notes


def _plays_own_episodes(algo: str) -> bool:
    """Whether the learner ``algo`` plays its own episodes (an LLM team: on Ray rollout
    workers with ``runner=ray``)."""
    from marl import registry

    entry = registry.entries().get(algo)
    return entry is not None and entry.capabilities.own_rollouts


def _llm_member(exp: ExperimentConfig) -> bool:
    """Whether a learner of this league plays its own episodes (an LLM team)."""
    from marl import registry
    from populations.member_specs import parse_members

    algos = [m.algo for m in parse_members(exp.population.members or [exp.algo])]
    entries = registry.entries()
    return exp.population.kind == "league" and any(
        a in entries and entries[a].capabilities.own_rollouts for a in algos)
