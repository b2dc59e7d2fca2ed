"""The typed experiment ``selfplay-train`` composes over (:class:`ExperimentConfig`, with
:class:`GameConfig`) and its own sections, all importable without torch: what population it
runs (:class:`PopulationConfig`: none, a self-play league, PSRO), how often a league estimates
its exploitability (:class:`ExploitEvery`) and where matches run (:class:`RunnerConfig`); the
learners' sections are their config dataclasses (:mod:`marl.configs`,
:mod:`llm_agents.settings`). ``selfplay-train`` builds the sections from the command line's
``population.*`` and ``runner.*`` values before torch loads (``populations.config_checks``),
and Hydra's schema is made from :class:`ExperimentConfig` without torch, so composing a config
(``--cfg job``, ``hydra.compose``) loads no learner. The checks that need the learner registry
(``algo``, ``oracle``, ``members``, ``exploit.algo``) import it last, when the others passed,
at the instance's creation. :mod:`populations.experiment` and :mod:`populations.approx_exploit`
re-export these names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from llm_agents import settings as llm_settings
from llm_agents.settings import LLMConfig
from marl import configs as marl_configs
from marl.configs import (
    COUNT,
    COUNTED,
    RATE,
    MADDPGConfig,
    MAPPOConfig,
    ValueDecompConfig,
    check_number,
    did_you_mean,
    registry_check,
)
from populations.config_checks import (
    MAX_SIZES,
    NUM_ENVS,
    TOP_LEVEL_TYPES,
    backend_fits,
    check_run_values,
)
from populations.loggers import LoggerConfig
from populations.matchmaking import MatchmakingConfig
from populations.member_specs import EXPLOITER, MemberSpec, check_member_specs, parse_members
from populations.psro_config import PSROConfig

if TYPE_CHECKING:
    from populations.approx_exploit import ApproxConfig

MODES = ("none", "league", "psro")
MAX_ROUNDS = 10**6
"""The most ``population.generations`` (league snapshots) and ``population.iterations``
(PSRO): each is a checkpointed snapshot (a league evaluates every new one against its past
ones; PSRO adds a row and a column of matches to its payoff table), so a million is far past
any run that ends (``generations=10**20`` was taken and its bar read 2/10**20)."""
POPULATION_SIZES: dict[str, tuple[int, str]] = {
    "generations": (MAX_ROUNDS, "10**6 snapshots, each checkpointed and evaluated"),
    "frames_per_generation": MAX_SIZES["frames"],
    "iterations": (MAX_ROUNDS, "10**6 PSRO iterations, each adding matches to the payoff "
                               "table"),
    "oracle_frames": MAX_SIZES["frames"]}
"""The largest value of each of :class:`PopulationConfig`'s sizes and why: a frame count takes
``frames``' bound (:data:`populations.config_checks.MAX_SIZES`), as a whole run's frames."""
KEEP_CHECKPOINTS = 3
"""The newest checkpoints a league or a single run keeps on disk, by default
(``population.keep_checkpoints``, the league CLI's ``--keep-checkpoints``)."""


def check_keep_checkpoints(keep: Any) -> None:
    """Refuse, in one line, a ``keep_checkpoints`` that is not an integer >= 1: 0 deleted each
    checkpoint as it was written, and 2.5 or True broke the first save's pruning."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ValueError(f"keep_checkpoints={keep!r}; expected an integer >= 1 (the newest "
                         "checkpoints kept on disk)")


def check_copies(num_envs: int, game: Any, key: str = "num_envs") -> None:
    """Refuse more than :data:`populations.seeds.BLOCK` (65,536) copies of a ``game`` that is
    not natively batched, in one line naming ``key``: each copy is a Python object stepped in
    turn (``num_envs=100000000`` filled the memory for minutes, then the run was killed with
    no word), and copy ``b`` is seeded ``s + b``, so copies past one seed block would replay
    other streams' seeds. A natively batched game (VMAS: one tensor batch, on a GPU millions
    of copies) may take any number."""
    from populations.seeds import BLOCK

    if num_envs > BLOCK and not callable(getattr(game, "batched", None)):
        raise ValueError(
            f"{key}={num_envs}: at most {BLOCK} copies of {game.spec.name}, which steps copy "
            f"by copy (one game object each, and copies past {BLOCK} would reuse other "
            "streams' seeds); only natively batched games (vmas/...) take more")


def league_algos() -> list[str]:
    """What ``population.members`` may list: every registered learner that can share its
    game copies with frozen opponents (or plays its own episodes, like an LLM team), and an
    ``<algo>_exploiter`` of each of those that trains through the step loop."""
    import llm_agents.learner  # noqa: F401 - registers llm_grpo
    from marl import registry

    out = []
    for name, e in sorted(registry.entries().items()):
        if e.capabilities.partial_seats:
            out += [name, name + EXPLOITER]
        elif e.capabilities.own_rollouts:
            out.append(name)
    return out


@dataclass(frozen=True)
class ExploitEvery:
    """Approximate NashConv of a league's new snapshots while it trains
    (``population.exploit.every=N``).

    Every ``every``-th generation (versions 0, N, 2N, ...) each member's new snapshot that
    holds every seat gets :func:`approx_nash_conv` with this budget, recorded in the
    ``exploitability`` table as ``selfplay-eval --exploit`` records it (the dashboard shows it
    per snapshot) and logged as ``approx_nash_conv/<member>``. It is for games too large to
    enumerate; on small OpenSpiel games ``population.nash_conv`` gives the exact value sooner.

    Attributes:
        every: generations between estimates (0: never).
        algo, frames, seeds, eval_episodes: as in :class:`ApproxConfig` (one seed by default:
            the interval then covers evaluation noise only, and says so).
        learner: settings of ``algo``'s learner section over its defaults (not the run's
            section: a league's tuning need not suit a best response), e.g.
            ``population.exploit.learner: {epochs: 4, minibatches: 2}`` for ippo (the keys
            of ``mappo:``); empty: the learner's defaults. Checked like the run's sections,
            in one line naming ``population.exploit.learner.<key>``.
    """

    every: int = 0
    algo: str = "ippo"
    frames: int = 20_000
    seeds: int = 1
    eval_episodes: int = 500
    learner: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 0:
            raise ValueError(f"exploit.every={self.every!r}; expected an integer >= 0 "
                             "(generations between estimates; 0: never)")
        given = any(getattr(self, f.name) != f.default for f in fields(self)
                    if f.name not in ("every", "learner"))
        if self.every or given:  # a mistyped algo or budget is refused though estimates may
            self.config()        # not run (every=0): a bad algo, budget or learner key, one line
        elif self.learner:  # a mistyped key is refused whether or not estimates run
            self.learner_config()

    def config(self, seed: int = 0, device: str = "cpu") -> ApproxConfig:
        from populations.approx_exploit import ApproxConfig  # torch: imported when needed

        return ApproxConfig(algo=self.algo, frames=self.frames, seeds=self.seeds,
                            eval_episodes=self.eval_episodes, seed=seed, device=device,
                            learner_config=self.learner_config())

    def learner_config(self) -> Any:
        """``learner`` as ``algo``'s config dataclass over its defaults (None: no settings);
        ``ValueError`` in one line naming the key (``population.exploit.learner.epochs=x;
        expected an integer``)."""
        if not self.learner:
            return None
        from marl import registry
        from populations.learner_sections import section_config

        where = "population.exploit.learner"
        if not isinstance(self.learner, dict):
            raise ValueError(f"{where}={self.learner!r}: takes {self.algo}'s settings by key "
                             f"({where}: {{lr: 0.001}})")
        entry = registry.get(self.algo)  # one line listing the registered algos when unknown
        try:
            config = section_config(entry, self.learner)
        except ValueError as err:  # named as the user wrote it, not as the run's section
            raise ValueError(str(err).replace(f"{entry.section}.", f"{where}.")) from None
        # a setting the algo's preset replaces (learner: {mixer: vdn} for qmix, net.critic
        # for ippo) would be recorded but not trained: this section is the user's own, refused
        why = registry.preset_refusal(self.algo, config, where)
        if why:
            raise ValueError(why.replace(" algo=", " population.exploit.algo="))
        return config


@dataclass
class PopulationConfig:
    """What population runs: none (one learner), a self-play league, or PSRO."""

    kind: str = "none"  # none | league | psro
    generations: int = 6  # league: snapshots after the first
    frames_per_generation: int = 20_000  # league: training frames per snapshot
    opponent_prob: float = 0.5  # league: share of copies with a past snapshot as opponent
    eval_window: int = 0  # league: evaluate against the last k snapshots (0: all)
    members: list[Any] = field(default_factory=list)  # league: its members (empty: [algo]):
    # registered algos (mappo, ippo, llm_grpo...), <algo>_exploiter (AlphaStar main exploiter
    # of the first member; see league_algos()) or {name, algo, <its section>: {...}}, a named
    # member with its own settings (populations.member_specs)
    nash_conv: bool = False  # league: log each snapshot's exact NashConv (small OpenSpiel)
    exploit: ExploitEvery = field(default_factory=ExploitEvery)  # league: approximate
    # NashConv of new snapshots every exploit.every generations (any game; 0: never)
    sync: bool = True  # league, runner=ray: members wait for each other every generation
    # (false: a member that finishes publishes and trains on at once; populations.league)
    exploiter_reset_win_rate: float = 0.7  # league, mappo_exploiter: restart after this
    # win rate against the main member's newest snapshot
    matchmaking: MatchmakingConfig = field(default_factory=MatchmakingConfig)
    keep_checkpoints: int = KEEP_CHECKPOINTS  # league and none: newest checkpoints kept on
    # disk (a league's with replay buffers can be hundreds of MB each); PSRO keeps none (it
    # resumes from league.db)
    iterations: int = 20  # psro: iterations
    oracle: str = "exact"  # psro: auto (exact where it can be computed, else rl) | exact |
    # rl (MAPPO, local critics, default settings) | a
    # registered algo trained through the step loop (ippo, vdn, maddpg...: its own section)
    oracle_frames: int = 20_000  # psro rl oracle: frames per best response
    psro: PSROConfig = field(default_factory=PSROConfig)

    def __post_init__(self) -> None:
        if self.kind not in MODES:
            raise ValueError(f"population kind {self.kind!r} unknown; choose one of {list(MODES)}"
                             f"{did_you_mean(self.kind, MODES)}")
        # generations: a league publishes at least one snapshot after the first (0 passed
        # here and was refused after the run folder was made, as -1 said ">= 0")
        # (2.5 and True were taken too, and failed or ran as 1 later)
        for name, (top, why) in POPULATION_SIZES.items():
            check_number(name, getattr(self, name), **COUNT)
            # 10**20 was taken and never finished (frames, num_envs, eval_episodes had bounds)
            check_number(name, getattr(self, name), **COUNT, at_most=top, why=why)
        check_number("eval_window", self.eval_window, **COUNTED)
        if not 0.0 <= self.opponent_prob <= 1.0:
            raise ValueError(f"opponent_prob={self.opponent_prob}; expected a value in [0, 1]")
        # a win rate is in [0, 1] and the exploiter restarts at rate >= this: 2 never restarted
        # it, 0 restarted it after every generation (NaN: never), with no word either way
        check_number("exploiter_reset_win_rate", self.exploiter_reset_win_rate, **RATE)
        check_keep_checkpoints(self.keep_checkpoints)  # before the run folder is made
        specs = parse_members(self.members)  # names and shapes: no torch
        # last: the registry knows the learners once torch and their modules are imported
        registry_check(self, lambda: self._check_registered(specs))

    def _check_registered(self, specs: list[MemberSpec]) -> None:
        import llm_agents.learner  # noqa: F401 - registers llm_grpo
        from marl import registry
        from populations.psro_run import ORACLE_NAMES, oracle_algos

        oracles = [*ORACLE_NAMES, *oracle_algos()]
        # a registered learner that plays its own episodes (llm_grpo) is refused once the
        # game is known (psro_run.check_oracle), with the oracles that game accepts
        if self.oracle not in oracles and self.oracle not in registry.entries():
            raise ValueError(f"population.oracle={self.oracle!r} is not a PSRO oracle; "
                             f"choose one of {oracles}{did_you_mean(self.oracle, oracles)}")
        check_member_specs(specs, league_algos())


MAX_ACTORS = 1024
"""The most Ray actors one kind of ``runner.*`` starts (``workers``, ``learners``,
``rollout_workers``): each is a process with its own torch; more than the cluster's CPUs only
queue, and Ray refuses counts from 10**14 after starting (~47 s)."""
ACTORS = {"at_most": MAX_ACTORS, "why": "Ray actors, each a process with its own torch"}


@dataclass
class RunnerConfig:
    """Where evaluation matches run."""

    kind: str = "local"  # local | ray
    workers: int = 2  # ray: actors
    address: str | None = None  # ray: cluster address (None: local ray.init())
    rollout_workers: int = 0  # population=none, MAPPO/IPPO: workers collecting training
    # rollouts (Ray actors with kind=ray, in this process with kind=local); 0: no workers
    learners: int = 0  # ray, league: learner actors training members at once (0: one each)
    learner_gpus: float | None = None  # ray, league: GPUs per learner actor (None: 1 on CUDA)
    max_learner_restarts: int = 2  # ray, league: replacements of a dead learner actor per job

    def __post_init__(self) -> None:
        if self.kind not in ("local", "ray"):
            raise ValueError(f"runner kind {self.kind!r} unknown; choose one of ['local', 'ray']"
                             f"{did_you_mean(self.kind, ('local', 'ray'))}")
        # 0: a league's Ray runner said 'RayRunner: num_workers=0' after the folder
        check_number("workers", self.workers, **COUNT)
        # refused by the league in its own words (ray_learners=...) after the run folder
        for name in ("rollout_workers", "learners", "max_learner_restarts"):
            check_number(name, getattr(self, name), **COUNTED)
        # then their most (the lower bounds keep their words): workers=10**20 was refused by
        # Ray itself after ~47 s, and workers=1000 started 1000 torch actors on 2 cores
        check_number("workers", self.workers, **COUNT, **ACTORS)
        check_number("learners", self.learners, **COUNTED, **ACTORS)
        check_number("rollout_workers", self.rollout_workers, **COUNTED, at_most=MAX_ACTORS,
                     why="workers, each stepping its own copies of the game")
        gpus = self.learner_gpus  # Ray refuses NaN, inf and shares below its 0.0001 unit
        if gpus is not None and not (gpus == 0 or 1e-4 <= gpus < float("inf")):
            raise ValueError(f"learner_gpus={gpus}; expected 0 or a finite number >= 0.0001 "
                             "(or null: 1 when device=cuda finds CUDA, else 0)")


@dataclass
class GameConfig:
    """Which game: a ``games.make`` spec and its keyword arguments."""

    name: str = "pettingzoo/mpe2.simple_spread_v3"
    kwargs: dict[str, Any] = field(default_factory=dict)  # presets in configs/game/ set them


@dataclass
class ExperimentConfig:
    """Everything ``selfplay-train`` runs; see ``configs/`` for named presets."""

    experiment: str = "default"  # name (run folders are grouped by it)
    imports: list[str] = field(default_factory=list)  # modules imported before the run (your
    # games, learners, meta-solvers: ``imports=[mypkg.games]``), importable from the cwd
    seed: int = 0  # root of the run's seed tree (populations.seeds): games, learners, matches
    algo: str = "mappo"  # a registered learner (marl.registry): mappo | ippo | vdn | qmix |
    # maddpg | llm_grpo | ...; its settings are the section its entry names (ippo: mappo)
    frames: int = 60_000  # population=none: training frames
    num_envs: int = NUM_ENVS  # game copies stepped together while training (32)
    eval_episodes: int = 32  # evaluation episodes (league: role-swapped pairs per snapshot pair)
    device: str = "cpu"  # cpu | cuda | cuda:N | auto
    torch_threads: int = 1  # intra-op threads (small networks are fastest on one)
    resume: bool = False  # continue the run in this folder from its last checkpoint
    resume_override: bool = False  # resume with other settings / start fresh on resume=true
    keep_going: bool = False  # a sweep (-m) runs its other jobs after one fails, lists the
    # failed ones at its end and exits 2 (without: it stops at the first); a single run: unused
    checkpoint_every_s: float = 300.0  # population=none: seconds between checkpoints of the
    # learner (taken after an update; 0: after every update), and one when training ends
    progress: bool = True  # progress bars and lines on the terminal
    game: GameConfig = field(default_factory=GameConfig)
    mappo: MAPPOConfig = field(default_factory=MAPPOConfig)
    vdn: ValueDecompConfig = field(default_factory=lambda: ValueDecompConfig(mixer="vdn"))
    qmix: ValueDecompConfig = field(default_factory=lambda: ValueDecompConfig(mixer="qmix"))
    maddpg: MADDPGConfig = field(default_factory=MADDPGConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)  # algo=llm_grpo: model, team, GRPO
    population: PopulationConfig = field(default_factory=PopulationConfig)
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)

    def __post_init__(self) -> None:
        if isinstance(self.game, str):  # the Python API's game="openspiel/kuhn_poker": that
            # game with its own defaults (run_experiment failed: no attribute 'kwargs')
            self.game = GameConfig(name=self.game)
        elif not hasattr(self.game, "name"):
            raise ValueError(f"game={self.game!r:.80}; expected a game name such as "
                             "'openspiel/kuhn_poker' or GameConfig(name=..., kwargs={...})")
        # the learner registry (torch and the learners' modules) loads here, when an experiment
        # is made, not when the schema is (composing a config, --cfg job: no torch)
        import llm_agents.learner  # noqa: F401 - registers llm_grpo
        from marl import registry

        registry.get(self.algo)  # one line listing the registered algos when unknown
        # frames, num_envs, ..., device: checked without torch (selfplay-train, before Hydra)
        check_run_values({name: getattr(self, name) for name in TOP_LEVEL_TYPES})
        for name, default in (("device", "auto"), ("seed", 0)):  # the Python API's knobs
            value = getattr(self.llm.grpo, name)
            if value not in (default, getattr(self, name)):  # the run passes its own: ignored
                raise ValueError(f"llm.grpo.{name}={value!r} is not read by an experiment: "
                                 f"the run's {name}= sets the LLM learner's too (give "
                                 f"{name}={value} instead)")
        # llm=vllm where vllm or CUDA is missing: one line before the model loads, as
        # selfplay-train's early check says it (bdd6c10)
        backend_fits(self.llm.backend)
        # PSROConfig.seed is the Python API's too: one seed tree per run, rooted at seed=
        # (it was recorded and ignored, so changing it only made a resume "other settings")
        psro_seed = self.population.psro.seed
        if psro_seed not in (PSROConfig().seed, self.seed):
            raise ValueError(f"population.psro.seed={psro_seed!r} is not read by an "
                             "experiment: the run's seed= seeds PSRO too (give "
                             f"seed={psro_seed} instead)")
        # the learners' own (ValueDecompConfig.seed, MADDPGConfig.seed: the Python API's):
        # a run seeds each learner from its tree's learner/<name> stream, so vdn.seed=5 gave
        # the run of vdn.seed=0
        for name in seeded_sections(self):
            value = getattr(self, name).seed
            if value not in (0, self.seed):
                raise ValueError(f"{name}.seed={value!r} is not read by an experiment: the "
                                 f"run's seed= seeds the learner too (give seed={value} "
                                 "instead)")


@contextmanager
def registry_checks_later() -> Iterator[list[tuple[Any, Callable[[], None]]]]:
    """Inside, every section of the experiment built (the learners' settings, the LLM's,
    :class:`PopulationConfig`) puts its registry checks, which import torch and the learners,
    on the yielded list (filled when the block ends) instead of running them, as
    :func:`marl.configs.registry_checks_later` and
    :func:`llm_agents.settings.registry_checks_later` do for their own: Hydra's schema is made
    from the sections' defaults so (``populations.train_overrides.register_schema``)."""
    later: list[tuple[Any, Callable[[], None]]] = []
    with marl_configs.registry_checks_later() as learners, \
            llm_settings.registry_checks_later() as llm:
        try:
            yield later
        finally:
            later += [*learners, *llm]


def seeded_sections(cfg: ExperimentConfig) -> list[str]:
    """The learner sections of the schema with a ``seed`` of their own (``vdn``, ``qmix``,
    ``maddpg``): the Python API's knob, which an experiment does not read."""
    return [f.name for f in dataclasses.fields(cfg)
            if dataclasses.is_dataclass(value := getattr(cfg, f.name))
            and not isinstance(value, type)
            and any(g.name == "seed" for g in dataclasses.fields(value))]
