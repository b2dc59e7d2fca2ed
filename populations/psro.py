"""Policy-Space Response Oracles (Lanctot et al., 2017, "A Unified Game-Theoretic Approach
to Multiagent Reinforcement Learning"), after OpenSpiel's ``psro_v2``.

Each PSRO *player* has a population of policies. A player is a seat of the game, or, with
``PSROConfig.players="teams"``, a team: each member of a team's population then plays every
seat of the team (drawn once per episode for all of them), and the team's payoff is the
mean of its seats' returns (with a shared team reward, that reward's return). ``"auto"``
(the default) takes teams when the game has two or more teams and one of them has more
than one seat (``vmas/simple_tag``: adversaries vs the good agent, a 2-player meta-game of
``K^2`` profiles instead of ``K^4``), else seats; on a game of one-seat teams both are the
same. PSRO needs two or more players: a game of one seat has no opponent to respond to and is
refused (:func:`psro_players`). One iteration is three steps:

1. **update agents**: for every player, an oracle computes a best response to the other
   players' meta-mixtures (their members drawn with the current meta-strategy) and the
   responses join the populations;
2. **update the empirical game**: the payoff tensor ``[P, K_0, ..., K_{P-1}]`` gains the
   entries involving new members (only those are computed);
3. **update meta-strategies**: a meta-solver (:mod:`populations.meta_solvers`, chosen by
   name) turns the payoff tensor into one distribution per player.

The meta-strategy is PSRO's output (its NashConv is reported) and, by default, what the
next best responses answer; ``PSROConfig.response_target`` can choose other targets.
With ``meta_solver="least_exploitable"`` (2-player zero-sum games with exact payoffs) the
output is, per seat, the mixture of its population least exploitable in the full game,
one linear program over the game's sequence form: Anytime PSRO's restricted distribution
(McAleer et al., 2022, "Anytime PSRO for Two-Player Zero-Sum Games"), exact. Its NashConv
never increases, as populations only grow. Best-response targets (``response_target``):

* ``"meta"``: the meta-strategy; with ``least_exploitable`` this is Anytime PSRO. Exact
  best responses can stall there: the best response to an opponent's least-exploitable
  mixture may already be in the population, and then nothing changes any more;
* a meta-solver name, e.g. ``"nash"``: that solver's mixtures (plain PSRO's best responses,
  reporting the least-exploitable mixtures of the same populations);
* ``"exploiter"``: each seat answers the opponent strategy that exploits that seat's
  population most (the dual solution of the seat's least-exploitable LP). This is double
  oracle on the game in which only that seat is restricted: until the seat's mixture is an
  equilibrium strategy, its new (pure) best response beats the exploiter where every
  member does not, so it is new and the method cannot stall as ``"meta"`` can.

Oracles: :class:`ExactBestResponse` (OpenSpiel's C++ tabular best response, for games
small enough to enumerate) and :class:`RLOracle` (trains a ``marl`` learner against the
meta-mixtures; for a team, one learner on all of the team's seats). The exact tools (exact
best responses and payoffs, exact NashConv) work on seats: a team of several seats needs a
joint best response they do not compute, so ``players="teams"`` takes sampled payoffs and
an RL oracle, and reports no exact NashConv. Payoffs: :class:`ExactPayoffs` (exact
expected returns in sequence form, :mod:`populations.exploitability`) or
:class:`SampledPayoffs` (simulated episodes, in lockstep over a memo of the game's
histories on OpenSpiel games; both in :mod:`populations.payoffs`). On enumerable
OpenSpiel games the exact NashConv of the meta-mixture is computed after every iteration.
A :class:`PSRORecorder` receives members, payoffs and per-iteration results (the league
database connects there); progress goes to ``logging``. The settings (:class:`PSROConfig`)
and what is decided from them before a run (players, exact or sampled) are in
:mod:`populations.psro_config`; the populations' members, meta-mixtures and the policies
that play them (:class:`SampledMixturePolicy`, :class:`GreedyPolicy`) in
:mod:`populations.psro_mixtures`: all importable from here too.

Example::

    psro = PSRO("openspiel/kuhn_poker", ExactBestResponse("openspiel/kuhn_poker"))
    for result in psro.run(10):
        print(result.iteration, result.nash_conv)
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

import games
from games import GameSpec, VectorGame
from games.openspiel import OpenSpielGame
from marl.core import Learner, Policy, PolicyMeta, derive_seed
from marl.train import RandomPolicy, train
from populations import exploitability as ex
from populations import sequence_form as sf
from populations.approx_exploit import side_text, training_vector_kwargs
from populations.meta_solvers import FullGame, is_constant_sum, solve_meta
from populations.payoffs import (  # noqa: F401 - PSRO's estimators, importable from here too
    ExactPayoffs,
    PayoffEstimator,
    SampledPayoffs,
    resolve_game,
    sampling,
)
from populations.psro_config import (  # noqa: F401 - PSRO's settings, importable from here too
    PLAYERS,
    RESPONSE_TARGETS,
    PSROConfig,
    check_exact_players,
    exact_walk,
    full_game_settings,
    psro_players,
    settings_refusal,
    why_not_exact,
)
from populations.psro_mixtures import (  # noqa: F401 - importable from here too
    GreedyPolicy,
    Member,
    Mixture,
    SampledMixturePolicy,
    plays_greedy,
)

log = logging.getLogger(__name__)

LARGE_TREE = 50_000
"""Information states from which PSRO logs that it builds its tables (a few seconds' work)."""


def no_stop_nash_conv(stop: float, why: str) -> str:
    """The one-line refusal of ``stop_nash_conv`` where PSRO computes no NashConv."""
    return (f"population.psro.stop_nash_conv={stop!r} needs the exact NashConv PSRO computes "
            f"each iteration, and this run has none: {why}; accepted: an enumerable OpenSpiel "
            "game of perfect recall played by seats with members that have action "
            "probabilities (payoffs=exact, or the exact tools serving the game), or "
            "stop_nash_conv=null")


def nash_conv_text(value: float | None, digits: int) -> str:
    """``value`` for a log line: "n/a" for None, and a float-error negative (|x| < 1e-12,
    e.g. -1e-17 at an exact equilibrium) as 0 rather than ``-0.00000``; display only."""
    if value is None:
        return "n/a"
    return f"{0.0 if abs(value) < 1e-12 else value:.{digits}f}"


# ------------------------------------------------------------------------ the recorder hook
@runtime_checkable
class PSRORecorder(Protocol):
    """Receives what PSRO produces (the league database implements this)."""

    def on_member(self, name: str, agent: str, policy: Policy) -> None:
        """A new member ``name`` joined the population of seat ``agent``."""

    def on_payoffs(self, payoffs: np.ndarray) -> None:
        """The empirical game grew: ``payoffs [P, K_0, ..., K_{P-1}]``."""

    def on_iteration(
        self,
        iteration: int,
        meta_strategy: Mapping[str, np.ndarray],
        nash_conv: float | None,
        seconds: float,
    ) -> None:
        """An iteration ended: meta-strategy per seat, exact NashConv of the meta-mixture
        (None where not computed) and the seconds the three steps took."""


class NullRecorder:
    """The default recorder: records nothing."""

    def on_member(self, name: str, agent: str, policy: Policy) -> None:
        pass

    def on_payoffs(self, payoffs: np.ndarray) -> None:
        pass

    def on_iteration(
        self,
        iteration: int,
        meta_strategy: Mapping[str, np.ndarray],
        nash_conv: float | None,
        seconds: float,
    ) -> None:
        pass


# ------------------------------------------------------------------------------- oracles
class Oracle(Protocol):
    """Computes a policy for ``agent`` that responds to the other seats' mixtures."""

    def best_response(self, agent: str, opponents: Mapping[str, Mixture], seed: int) -> Policy: ...


def _member_matrices(tree: ex.GameTree, mixture: Mixture) -> list[np.ndarray]:
    return [
        m.matrix if m.matrix is not None else ex.policy_matrix(tree, m.policy, m.agent)
        for m in mixture.members
    ]


class ExactBestResponse:
    """Exact best responses on enumerable OpenSpiel games, as :class:`TabularPolicy`
    (``game_kwargs``: the game's parameters, as for :class:`PSRO`)."""

    def __init__(self, game: str | games.Game | GameSpec,
                 game_kwargs: Mapping[str, Any] | None = None) -> None:
        if game_kwargs and not isinstance(game, str):
            raise ValueError(f"ExactBestResponse: game_kwargs={dict(game_kwargs)!r} go with a "
                             "game's name; a made game already has its parameters")
        if game_kwargs:  # an OpenSpiel game's name then holds them: kuhn_poker(players=3)
            game = games.make(game, **game_kwargs)
        with exact_walk("for ExactBestResponse (an exact best response needs a small game of "
                        "perfect recall); an RLOracle skips this walk"):
            self.tree = ex.game_tree(game)  # a forgetful game refused at its first sign
        ex.require_perfect_recall(self.tree)

    def best_response(self, agent: str, opponents: Mapping[str, Mixture], seed: int) -> Policy:
        tree = self.tree
        mats = {
            tree.player(q): ex.mixture_matrix(
                tree, tree.player(q), _member_matrices(tree, mix), mix.weights
            )
            for q, mix in opponents.items()
        }
        br = ex.best_response(tree, tree.player(agent), mats)
        return ex.tabular_policy(tree, {agent: br.matrix}, seed=seed)


LearnerFactory = Callable[[GameSpec, "str | tuple[str, ...]", int], Learner]
"""``(game spec, seat, seed) -> Learner`` controlling that one seat; for a team of several
seats (``PSROConfig.players="teams"``) the second argument is the tuple of its seats."""


def seat_tuple(agent: str | Sequence[str]) -> tuple[str, ...]:
    """A :data:`LearnerFactory`'s seat argument as a tuple of seats."""
    return (agent,) if isinstance(agent, str) else tuple(agent)


def mappo_learner(spec: GameSpec, agent: str | tuple[str, ...], seed: int) -> Learner:
    """Default RL oracle learner: PPO with a local critic (OpenSpiel games have no global
    state), on one seat or a team's seats."""
    from marl.actor_critic import NetConfig
    from marl.mappo import MAPPO, MAPPOConfig

    return MAPPO(spec, MAPPOConfig(net=NetConfig(critic="local")), agents=seat_tuple(agent),
                 seed=seed)


@dataclass(frozen=True)
class RLOracleConfig:
    """How long the RL oracle trains each best response."""

    frames: int = 20_000  # environment steps per best response
    num_envs: int = 16  # copies of the game stepped together


class RLOracle:
    """Approximate best responses: a fresh ``marl`` learner per player and iteration, trained
    against the other players' meta-mixtures (:class:`SampledMixturePolicy`).

    ``learner_factory`` builds it for that one seat, or a team's seats: the seats no
    opponent mixture plays; any registered learner fits through
    ``populations.psro_run.registry_learner`` (``learner_factory=registry_learner("vdn")``),
    refused beforehand by ``psro_run.check_oracle`` where it cannot play the game. The learner
    is driven only through the ``Learner`` protocol (``marl.train.train``) and its
    ``policy()`` snapshot joins the population."""

    def __init__(
        self,
        game: str | games.Game | GameSpec,
        config: RLOracleConfig | None = None,
        learner_factory: LearnerFactory = mappo_learner,
        game_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.game, self.game_kwargs = resolve_game(game, game_kwargs)
        self.config = config or RLOracleConfig()
        self.learner_factory = learner_factory
        self.spec = games.make(self.game, **self.game_kwargs).spec

    def best_response(self, agent: str, opponents: Mapping[str, Mixture], seed: int) -> Policy:
        # learner, each opponent seat and the game copies: children of the oracle's seed
        own = tuple(a for a in self.spec.agent_ids
                    if not any(a in m.members[0].seats for m in opponents.values()))
        seats: str | tuple[str, ...] = agent if own == (agent,) else own
        learner = self.learner_factory(self.spec, seats, derive_seed(seed, "learner"))
        for q, mix in opponents.items():  # members draw from the response's own streams
            for k, m in enumerate(mix.members):
                m.policy.reseed(derive_seed(seed, "member", q, k))
        # an opponent team's mixture plays each of its seats (one draw for all of them)
        opp = {
            a: pol
            for q, mix in sorted(opponents.items())
            for pol in [SampledMixturePolicy(mix, q, seed=derive_seed(seed, "opponent", q))]
            for a in pol.meta.agents
        }
        # the copies carry what the learner needs (MAPPO declares it; replay learners read
        # the global state where the game has one) and what the opponents' members read
        # (graphs for GNN members, text for LLM members)
        vg = VectorGame(self.game, self.config.num_envs, seed=derive_seed(seed, "game"),
                        **training_vector_kwargs(learner, opp), **self.game_kwargs)
        try:
            # a player named as PSRO's table names it: a seat by its name (side_text said
            # "team adversary (adversary_0)" of a one-seat team), a team as a team
            who = agent if own == (agent,) else side_text(self.spec, own)
            train(learner, vg, self.config.frames, opponents=opp, progress=False,
                  log_as=f"RL oracle: {who}")
        finally:
            vg.close()  # its num_envs games (a PettingZoo copy holds its renderer, pygame...)
        return learner.policy()


# ---------------------------------------------------------------------------------- PSRO
def new_entry_blocks(old: Sequence[int], new: Sequence[int]) -> list[list[np.ndarray]]:
    """Member indices per seat of blocks covering exactly the payoff entries that involve
    a member added since the tensor had shape ``old`` (now ``new``), each entry once.

    Block ``p``: seats before ``p`` at any index, seat ``p`` at its new indices, seats after
    ``p`` at their old indices.
    """
    blocks = []
    for p in range(len(new)):
        index = [
            np.arange(new[q])
            if q < p
            else np.arange(old[q], new[q])
            if q == p
            else np.arange(old[q])
            for q in range(len(new))
        ]
        if all(len(i) for i in index):
            blocks.append(index)
    return blocks


@dataclass(frozen=True)
class PSROIteration:
    """What one PSRO iteration produced.

    Attributes:
        iteration: 0 for the first call of :meth:`PSRO.iteration`.
        population: members per seat after the iteration.
        meta_strategy: the new meta-strategy per seat (the output mixtures).
        nash_conv: exact NashConv of the meta-mixture (None where not computed).
        seconds: wall time of the three steps.
        eval_seconds: wall time of the NashConv computation (not in ``seconds``).
    """

    iteration: int
    population: dict[str, int]
    meta_strategy: dict[str, np.ndarray]
    nash_conv: float | None
    seconds: float
    eval_seconds: float


def _oracle_without_probs(oracle: Oracle) -> str | None:
    """Why an RL oracle's members have no action probabilities (exact payoffs need them),
    for a learner factory of :func:`populations.psro_run.registry_learner`; None otherwise."""
    algo = getattr(getattr(oracle, "learner_factory", None), "algo", None)
    if not isinstance(algo, str):
        return None
    from populations.psro_run import without_probs  # it builds on this module

    return without_probs(algo)


class PSRO:
    """PSRO on ``game`` with ``oracle``; see the module docstring.

    Args:
        game: a game name for ``games.make`` (``"openspiel/kuhn_poker"``), or a
            ``games.Game`` / ``GameSpec`` whose name rebuilds it (:func:`resolve_game`).
        oracle: computes best responses (:class:`ExactBestResponse`, :class:`RLOracle`).
        config: meta-solver name, payoff mode, seed.
        recorder: receives members, payoffs and iteration results (default: nothing).
        initial: the first member of each seat (default: uniformly random play).
        game_kwargs: keyword arguments of ``games.make``.
        progress: a bar of sampled payoff episodes on stderr while an iteration fills the
            table (``payoffs="sampled"``: ``episodes_per_entry`` per entry).
        keys: how messages name the settings: ``""`` as :class:`PSROConfig`'s fields
            (``nash_conv=False``), ``"population.psro."`` as selfplay-train's keys
            (``population.psro.nash_conv=false``).
    """

    def __init__(
        self,
        game: str | games.Game | GameSpec,
        oracle: Oracle,
        config: PSROConfig | None = None,
        recorder: PSRORecorder | None = None,
        initial: Mapping[str, Policy] | None = None,
        game_kwargs: Mapping[str, Any] | None = None,
        progress: bool = False,
        keys: str = "",
    ) -> None:
        self.config = cfg = config or PSROConfig()
        self.progress, self.keys = progress, keys
        game, game_kwargs = resolve_game(game, game_kwargs)
        self.game = game
        self.oracle = oracle
        self.recorder: PSRORecorder = recorder or NullRecorder()
        # the meta-solver is asked by name in step 3 (solve_meta); PSROConfig refused an
        # unknown name when it was made
        game_obj = games.make(game, **dict(game_kwargs or {}))
        self.spec = game_obj.spec
        # PSRO's players (seats, or teams) and the seats each plays
        self.seats_of = psro_players(self.spec, cfg.players)
        why = None  # why payoffs=auto chose sampled: it rules out exact NashConv too
        walk = self._walk_reason()  # its walks (exact_walk) refuse a forgetful game at once
        payoffs, no_probs = cfg.payoffs, None
        if cfg.payoffs == "auto":
            with exact_walk(walk):
                why = why_not_exact(game_obj, self.seats_of)
            no_probs = None if why else _oracle_without_probs(oracle)
            payoffs = "sampled" if why or no_probs else "exact"
        # every setting that cannot run, in one line, before any work (and before PSROConfig
        # is remade: it refused a full-game meta-solver with the payoffs auto chose)
        check_exact_players(self.seats_of, payoffs, isinstance(oracle, ExactBestResponse),
                            full_game_settings(cfg.meta_solver, cfg.response_target),
                            players=cfg.players, setting=self.setting)
        refused = settings_refusal(game_obj, self.seats_of, payoffs, cfg.meta_solver,
                                   cfg.response_target, self.setting,
                                   (why or no_probs) if cfg.payoffs == "auto" else None,
                                   (game, game_kwargs),
                                   cfg.seed)
        if refused:
            raise ValueError(refused)
        if cfg.payoffs == "auto":
            self.config = cfg = dataclasses.replace(cfg, payoffs=payoffs)
            log.info("PSRO: payoffs=auto is %s%s%s", cfg.payoffs,
                     ", no exact NashConv" if why and cfg.nash_conv else "",
                     f" ({why or no_probs})" if why or no_probs else "")
        self.players: tuple[str, ...] = tuple(self.seats_of)
        self.agents = self.players  # the name PSRO's players had when they were seats
        teams = any(len(seats) > 1 for seats in self.seats_of.values())
        self.tree: ex.GameTree | None = None
        self.no_exact: str | None = None  # why a tree was dropped (a member without probs)
        if teams:
            self.no_exact = "players are teams of several seats (exact tools are per seat)"
            if cfg.nash_conv and not why:
                log.info("PSRO: no exact NashConv on %s: %s", game, self.no_exact)
        elif isinstance(game_obj, OpenSpielGame) and cfg.payoffs == "exact":
            with exact_walk(walk):
                self.tree = ex.game_tree(game_obj)
            ex.require_perfect_recall(self.tree)
        elif isinstance(game_obj, OpenSpielGame) and cfg.nash_conv and why:
            self.no_exact = why  # the tree why_not_exact was refused: said above
        elif isinstance(game_obj, OpenSpielGame) and cfg.nash_conv:
            try:
                with exact_walk(walk):
                    self.tree = ex.game_tree(game_obj)
                ex.require_perfect_recall(self.tree)
            except games.GameContractError:  # a bug of the game's code (a ValueError too),
                raise  # one line: a bug to fix, not a reason to leave NashConv out
            except ValueError as err:
                self.tree, self.no_exact = None, str(err)
                # its payoffs are sampled already (and its oracle not exact, which would
                # have refused the game): the hint to sample them is no advice here
                why = str(err).replace(f"; {sf.RECALL_HINT}", "").replace(
                    f"; {ex.SAMPLED_HINT}", "")
                off = self.setting("nash_conv", False)
                log.warning("PSRO: no exact NashConv for %s: %s (payoffs are sampled; %s "
                            "leaves this check out)", game, why, off)
        if cfg.payoffs == "exact":
            if self.tree is None:
                raise ValueError(
                    f"{self.setting('payoffs', 'exact')} needs an OpenSpiel game; {game!r} is "
                    f"not one; use {self.setting('payoffs', 'sampled')}")
            self.estimator: PayoffEstimator = ExactPayoffs(self.tree)
            if cfg.uses_full_game:
                ex.check_full_game(self.tree)
        else:
            self.estimator = SampledPayoffs(
                game, cfg.episodes_per_entry, cfg.num_envs, cfg.seed, game_kwargs,
                players=self.seats_of,
            )
        if cfg.stop_nash_conv is not None and self.tree is None:
            raise ValueError(no_stop_nash_conv(
                cfg.stop_nash_conv,
                self.no_exact or why or f"{self.spec.name} is not an OpenSpiel game"))
        if isinstance(oracle, ExactBestResponse) and oracle.tree.name != self.spec.name:
            raise ValueError(f"the exact oracle solves {oracle.tree.name}, PSRO plays "
                             f"{self.spec.name}; give ExactBestResponse the same game_kwargs")
        self.members: dict[str, list[Member]] = {a: [] for a in self.players}
        self.payoffs = np.zeros((len(self.players), *([0] * len(self.players))))
        self.meta_strategy: dict[str, np.ndarray] = {}
        self.meta_ran = cfg.meta_solver  # the meta-solver the last iteration ran (auto: its choice)
        self.targets: dict[str, dict[str, Mixture]] = {}  # player -> what it best-responds to
        self.iterations = 0
        states = sum(len(info) for info in self.tree.players) if self.tree is not None else 0
        if states >= LARGE_TREE and any(not (initial or {}).get(a) for a in self.players):
            # seconds on hex(board_size=3)'s 290,890 states: a line, so the wait is not silent
            log.info("PSRO: building the initial uniform policies over %d information states",
                     states)
        for agent in self.players:
            self._add_member(agent, (initial or {}).get(agent) or self._uniform(agent))
        self.update_empirical_game()
        self.update_meta_strategies()

    def _walk_reason(self) -> str:
        """Why this PSRO walks the game's tree, and the settings that skip the walk (in
        :meth:`setting`'s words): said on the first progress line of a long one, as
        selfplay-train's :func:`populations.psro_run.walk_reason`."""
        cfg = self.config
        uses = [(self.setting("payoffs", cfg.payoffs), self.setting("payoffs", "sampled"))
                if cfg.payoffs in ("auto", "exact") else None,
                (self.setting("nash_conv", True), self.setting("nash_conv", False))
                if cfg.nash_conv else None,
                (self.setting("stop_nash_conv", cfg.stop_nash_conv),
                 self.setting("stop_nash_conv", None))
                if cfg.stop_nash_conv is not None else None]
        from populations.psro_config import walk_reason_text

        return walk_reason_text(uses)

    def setting(self, name: str, value: object) -> str:
        """``name=value`` as this PSRO's messages name a setting (``keys``): a Python field
        (``nash_conv=False``) or selfplay-train's key (``population.psro.nash_conv=false``)."""
        if not self.keys:
            return f"{name}={value!r}"
        text = str(value).lower() if isinstance(value, bool) else value
        return f"{self.keys}{name}={text}"

    def _uniform(self, agent: str) -> Policy:
        if self.tree is not None:
            return ex.tabular_policy(
                self.tree, {agent: ex.uniform_matrix(self.tree, agent)}, seed=self.config.seed
            )
        # its own seats only, as the exact tools' member: a file of every seat was refused
        # by selfplay-eval's seatings of a run's members (one side per player)
        meta = PolicyMeta.from_spec("random", self.spec, tuple(self.seats_of[agent]))
        return RandomPolicy(meta, seed=self.config.seed)

    def _add_member(self, agent: str, policy: Policy) -> Member:
        name = f"psro/{agent}/{len(self.members[agent])}"
        seats = self.seats_of[agent]
        missing = [a for a in seats if a not in policy.meta.agents]
        if missing:
            raise ValueError(f"PSRO: the policy for {agent!r} ({policy.meta.kind}) plays "
                             f"{list(policy.meta.agents)}, not {missing}; a member of "
                             f"{agent!r} must play {list(seats)}")
        played = GreedyPolicy(policy) if plays_greedy(policy) else policy
        member = Member(name, agent, played, self._matrix(played, agent), seats)
        self.members[agent].append(member)
        self.estimator.add_member(member)
        self.recorder.on_member(name, agent, policy)
        return member

    def _matrix(self, policy: Policy, agent: str) -> np.ndarray | None:
        """The member's behaviour strategy on an enumerable game. A policy without action
        probabilities (a value-based oracle's greedy Q policy) has none: with sampled
        payoffs the run goes on without exact NashConv from then on."""
        if self.tree is None:
            return None
        try:
            return ex.policy_matrix(self.tree, policy, agent)
        except ValueError as err:
            if self.config.payoffs == "exact":
                raise ValueError(f"payoffs='exact' needs every member's action probabilities "
                                 f"({err}); use payoffs='sampled'") from None
            log.warning("PSRO: no exact NashConv for %s from now on: %s", self.game, err)
            self.tree, self.no_exact = None, str(err)
            return None

    # ------------------------------------------------------------------ the three steps
    def update_agents(self) -> dict[str, Member]:
        """Step 1: a best response per player (seat or team) to its targets (by default
        the others' meta-mixtures; see ``PSROConfig.response_target``)."""
        responses = {}
        for p, agent in enumerate(self.players):
            # the run's oracle/<iteration>/<seat> stream (seed + 1000 * it + p made seats'
            # game copies overlap: seat 1 replayed seat 0's copies shifted by one)
            seed = derive_seed(self.config.seed, "oracle", self.iterations + 1, p)
            responses[agent] = self.oracle.best_response(agent, self.targets[agent], seed)
        return {a: self._add_member(a, pol) for a, pol in responses.items()}

    def update_empirical_game(self, desc: str | None = None) -> np.ndarray:
        """Step 2: grow the payoff tensor by the entries involving new members (``desc``:
        the progress bar's label; default: the iteration's)."""
        old = self.payoffs.shape[1:]
        new = tuple(len(self.members[a]) for a in self.players)
        grown = np.full((len(self.players), *new), np.nan)
        grown[(slice(None), *(slice(0, k) for k in old))] = self.payoffs
        blocks = new_entry_blocks(old, new)
        # a bar of sampled episodes; a CLI's stop request is obeyed between entries
        desc = desc or ("PSRO initial payoffs" if max(new) == 1
                        else f"PSRO iteration {self.iterations} payoffs")
        with sampling(self.estimator, blocks, desc, self.progress):
            for index in blocks:
                grown[(slice(None), *np.ix_(*index))] = self.estimator.block(index)
        self.payoffs = grown
        self.recorder.on_payoffs(grown)
        return grown

    def update_meta_strategies(self) -> dict[str, np.ndarray]:
        """Step 3: solve the empirical game with the configured meta-solver, and set the
        next best responses' targets."""
        full = self.full_game() if self.config.uses_full_game else None
        # checked: a solver's exception or bad output (NaN, wrong count) is one line naming it
        dists = solve_meta(self.config.meta_solver, self.payoffs, full, self.players)
        self.meta_ran = self.config.meta_solver  # auto: the one it chose for these payoffs
        if self.meta_ran == "auto":
            self.meta_ran = "nash" if len(self.players) == 2 and is_constant_sum(
                self.payoffs) else "prd"
        self.meta_strategy = dict(zip(self.players, dists, strict=True))
        self.targets = self._response_targets(full)
        return self.meta_strategy

    def _response_targets(self, full: FullGame | None) -> dict[str, dict[str, Mixture]]:
        target, agents = self.config.response_target, self.players
        if target == "exploiter":
            assert full is not None and self.tree is not None
            out = {}
            for p, agent in enumerate(agents):
                opp = agents[1 - p]
                mat = ex.realization_behaviour(
                    self.tree, 1 - p, full.least_exploitable(p).exploiter
                )
                policy = ex.tabular_policy(self.tree, {opp: mat}, seed=self.config.seed)
                member = Member(f"psro/{opp}/exploiter", opp, policy, mat)
                out[agent] = {opp: Mixture((member,), np.ones(1))}
            return out
        dists = (
            self.meta_strategy
            if target == "meta"
            else dict(zip(agents, solve_meta(target, self.payoffs, full, agents), strict=True))
        )
        mixtures = {a: self.mixture(a, dists) for a in agents}
        return {a: {q: mix for q, mix in mixtures.items() if q != a} for a in agents}

    def full_game(self) -> FullGame:
        """The sequence-form full game behind the current empirical game (exact payoffs,
        2-player zero-sum games)."""
        if not isinstance(self.estimator, ExactPayoffs):
            raise ValueError("the full game is known only with payoffs='exact'")
        return ex.full_game(self.estimator.tree, [np.stack(r) for r in self.estimator.reals])

    # -------------------------------------------------------------------------- driving
    def iteration(self, total: int | None = None) -> PSROIteration:
        """One PSRO iteration (the three steps), then the exact NashConv when available.
        ``total``: the iterations the run plans, which its log line counts against
        (``PSRO iteration 2 (3/10): ...``, as a league's ``generation 3/10 done``)."""
        start = time.perf_counter()
        self.update_agents()
        self.update_empirical_game()
        self.update_meta_strategies()
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        nash_conv = self.nash_conv() if self.config.nash_conv and self.tree is not None else None
        result = PSROIteration(
            iteration=self.iterations,
            population={a: len(m) for a, m in self.members.items()},
            meta_strategy=dict(self.meta_strategy),
            nash_conv=nash_conv,
            seconds=seconds,
            eval_seconds=time.perf_counter() - start,
        )
        self.iterations += 1
        self.recorder.on_iteration(result.iteration, result.meta_strategy, nash_conv, seconds)
        log.info(
            "PSRO iteration %d%s: population %s, NashConv %s, %.3fs%s%s",
            result.iteration,
            "" if total is None else f" ({self.iterations}/{total})",
            list(result.population.values()),
            nash_conv_text(nash_conv, 6),
            seconds,
            "" if nash_conv is None else f" (+{result.eval_seconds:.3f}s computing NashConv)",
            f"; meta_solver=auto ran {self.meta_ran}" if self.config.meta_solver == "auto"
            else "",
        )
        return result

    def restore(self, populations: Mapping[str, Sequence[Policy]], iterations: int) -> None:
        """Continue a run from its saved members: append ``populations[player]`` (the
        members after the initial one, in order) to each player, rebuild the empirical game and the
        meta-strategies, and make the next iteration number ``iterations``. Best-response
        seeds derive from the iteration number, so the continuation matches an uninterrupted
        run with deterministic oracles."""
        if self.iterations or any(len(m) != 1 for m in self.members.values()):
            raise ValueError("PSRO.restore needs a fresh PSRO (only the initial members)")
        counts = {a: len(populations.get(a, ())) for a in self.players}
        if set(counts.values()) != {iterations}:
            raise ValueError(f"PSRO.restore: {iterations} iterations need {iterations} saved "
                             f"members per player after the first; got {counts}")
        for agent in self.players:
            for policy in populations[agent]:
                self._add_member(agent, policy)
        self.update_empirical_game(f"PSRO payoffs of the {iterations} "
                                   f"iteration{'s' if iterations != 1 else ''} resumed")
        self.update_meta_strategies()
        self.iterations = iterations

    def run(self, iterations: int) -> list[PSROIteration]:
        """``iterations`` calls of :meth:`iteration`, fewer when one :meth:`converged`."""
        total = self.iterations + iterations
        results: list[PSROIteration] = []
        for _ in range(iterations):
            results.append(self.iteration(total))
            if self.converged(results[-1].nash_conv, results[-1].iteration):
                break
        return results

    def converged(self, nash_conv: float | None, iteration: int, announce: bool = True) -> bool:
        """Whether iteration ``iteration``'s NashConv is at most ``stop_nash_conv`` (the run
        stops there; ``announce``: log that it does). False when either is unset (NashConv
        is None where it is not computed: a member without action probabilities)."""
        stop = self.config.stop_nash_conv
        if stop is None or nash_conv is None or not nash_conv <= stop:
            return False
        if announce:
            log.info("PSRO converged: NashConv %s <= %s after iteration %d; stopping "
                     "(population.psro.stop_nash_conv)", float(nash_conv), stop, iteration)
        return True

    def mixture(self, agent: str, strategy: Mapping[str, np.ndarray] | None = None) -> Mixture:
        """Seat ``agent``'s current meta-mixture (or its mixture under ``strategy``)."""
        weights = (self.meta_strategy if strategy is None else strategy)[agent]
        return Mixture(tuple(self.members[agent]), weights)

    def _exact_tree(self) -> ex.GameTree:
        if self.tree is None:
            why = self.no_exact or "it is not an enumerable OpenSpiel game"
            raise ValueError(f"no exact tools on {self.game!r}: {why}")
        return self.tree

    def mixture_matrices(self) -> dict[int, np.ndarray]:
        """``{player: [S, N]}`` behaviour strategies equivalent to the meta-mixtures."""
        tree = self._exact_tree()
        return {
            p: ex.mixture_matrix(
                tree, p, [m.matrix for m in self.members[a]], self.meta_strategy[a]
            )
            for p, a in enumerate(self.players)
        }

    def mixture_policy(self) -> Policy:
        """The meta-mixtures of every seat as one exact :class:`TabularPolicy`."""
        tree = self._exact_tree()
        mats = self.mixture_matrices()
        return ex.tabular_policy(
            tree, {tree.agents[p]: m for p, m in mats.items()}, seed=self.config.seed
        )

    def nash_conv(self) -> float:
        """Exact NashConv of the current meta-mixture."""
        tree = self._exact_tree()
        return ex.exploitability(tree, self.mixture_matrices()).nash_conv
