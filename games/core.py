"""The game contract every learner, LLM agent and population speaks.

One interface covers simultaneous-move and turn-based games, chance, imperfect
information, teams, numeric learners and LLM agents:

* :class:`GameSpec` describes the game once: agents (id, role, team), observation and
  action shapes, zero-sum, maximum episode length.
* :meth:`Game.reset` / :meth:`Game.step` return a :class:`TimeStep`: which agents must
  act now, each acting agent's float32 observation and legal-action mask, the rewards
  every agent received from the last transition, and per-agent terminated / truncated.
* Text views for LLM agents (:meth:`Game.text_observation`,
  :meth:`Game.legal_action_texts`, :meth:`Game.parse_action`), an optional global state
  for centralized critics and an optional :class:`EntityGraph` for GNN encoders are
  queried on demand so numeric learners never pay for them.

``games`` never imports torch: everything here is numpy and plain Python.

Writing a game means subclassing :class:`Game` and implementing ``_reset``, ``_step``,
``acting_agents``, ``observe``, ``legal_actions`` and ``text_observation``; the base
class validates actions (an illegal action raises :class:`IllegalActionError` and
never changes the game) and assembles time steps. Building one, it checks each acting agent's
observation shape, that a discrete-action agent has a legal action and that each reward is
one real number (NaN passes, for the trainers' guard to report) (:class:`GameContractError`),
and an exception of the game's own code comes out of
``reset``/``step`` as a :class:`GameCodeError` naming the game, the step, the method and the
line that raised it (a :class:`GameError`, so the command lines report it in one line).
Callers that ask the game outside ``reset``/``step`` (VectorGame's final observations and
global states, its text views and graphs; ``check_game``) do so through
:meth:`Game.observe_checked`, :meth:`Game.state_checked` and :meth:`Game.guarded`, which hold
them to the same checks and messages.

The errors and the one-line text of a game's own exception live in :mod:`games.errors`, the
matcher behind :meth:`Game.parse_action` in :mod:`games.action_text`; this module offers their
names too, as it always did.
"""

from __future__ import annotations

import abc
import functools
import inspect
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from games.action_text import action_key, action_matches, last_action_tag
from games.errors import (
    EpisodeTooLongError,
    GameCodeError,
    GameContractError,
    GameError,
    IllegalActionError,
    InvalidAction,
    UnknownGameError,
    raised_text,
    where_raised,
)

__all__ = [  # the errors live in games.errors, the action-text matcher in games.action_text:
    # offered here as they always were
    "Action",
    "ActionSpace",
    "AgentSpec",
    "EntityGraph",
    "EpisodeTooLongError",
    "Game",
    "GameCodeError",
    "GameContractError",
    "GameError",
    "GameSpec",
    "IllegalActionError",
    "InvalidAction",
    "TimeStep",
    "Transition",
    "UnknownGameError",
    "action_key",
    "action_matches",
    "choice_index",
    "last_action_tag",
    "raised_text",
    "where_raised",
]

Action = int | np.ndarray
"""A discrete action id, or a float32 vector for continuous-action agents."""


@dataclass(frozen=True)
class AgentSpec:
    """One seat of a game.

    Attributes:
        id: stable agent id (``player_0``, ``adversary_0``, ``speaker_0``).
        role: what the agent is (``player_0``, ``adversary``, ``speaker``); role-conditioned
            advantage normalization groups by it, and parameter sharing may split by it.
        team: the side the agent plays for; agents of one team share a population member.
    """

    id: str
    role: str
    team: str


@dataclass(frozen=True)
class ActionSpace:
    """Discrete (``n`` actions, legal masks) or continuous (a box of ``shape``).

    A box's ``low`` and ``high`` are each one number for every dimension, or one number per
    dimension (a sequence as long as a 1-D box, nested as ``shape`` otherwise; kept as a
    tuple of floats): VMAS's ``kinematic_bicycle`` accelerates in [-1, 1] and steers in
    [-0.52, 0.52], ``ActionSpace("continuous", shape=(2,), low=(-1, -0.52), high=(1, 0.52))``.
    :meth:`bounds` gives both as arrays of ``shape`` either way.
    """

    kind: str  # "discrete" | "continuous"
    n: int = 0
    shape: tuple[int, ...] = ()
    low: float | tuple[float, ...] = 0.0  # one number, or one per dimension
    high: float | tuple[float, ...] = 1.0

    def __post_init__(self) -> None:
        """Refuse a space no learner can act in, in one line naming the bad value (a misspelt
        kind was a TypeError in check_game and a KeyError traceback in selfplay-eval;
        ``"box"`` passed as continuous; ``low > high`` reached numpy's words; a per-dimension
        box of another length reached the learners)."""
        if self.kind not in ("discrete", "continuous"):
            raise GameError(f"ActionSpace kind={self.kind!r}; accepted: 'discrete' (with n) or "
                            "'continuous' (with shape, low, high)")
        if self.discrete:
            n = self.n
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
                raise GameError(f"ActionSpace('discrete', n={n!r}); accepted: an integer n >= 1 "
                                "(the number of actions)")
            return
        shape = self.shape
        if not isinstance(shape, tuple) or not shape or not all(
                isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 1
                for d in shape):
            raise GameError(f"ActionSpace('continuous', shape={shape!r}); accepted: a tuple of "
                            "integers >= 1, e.g. shape=(2,)")
        for name in ("low", "high"):
            value = getattr(self, name)
            if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray)
                                                    and value.ndim > 0):
                object.__setattr__(self, name, _per_dimension(name, value, shape))
        if not self.per_dimension:  # one number each: infinite bounds pass, as they always did
            try:
                ordered = bool(np.all(np.asarray(self.low, float) < np.asarray(self.high, float)))
            except (TypeError, ValueError):
                ordered = False
            if not ordered:
                raise GameError(f"ActionSpace('continuous', low={self.low!r}, "
                                f"high={self.high!r}); accepted: numbers with low < high")
            return
        low, high = self.bounds()
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise GameError(f"ActionSpace('continuous', low={self.low!r:.80}, "
                            f"high={self.high!r:.80}); accepted: finite numbers in a box with "
                            "bounds per dimension")
        bad = np.argwhere(~(low < high))
        if bad.size:  # low is not a number (a str beside a per-dimension high), or low >= high
            at = tuple(int(i) for i in bad[0])
            at_text = at[0] if len(at) == 1 else at
            raise GameError(f"ActionSpace('continuous', low={self.low!r}, high={self.high!r}); "
                            f"accepted: low < high in every dimension (dimension {at_text}: "
                            f"low={float(low[at])}, high={float(high[at])})")

    @property
    def discrete(self) -> bool:
        return self.kind == "discrete"

    @classmethod
    def box(cls, shape: Sequence[int], low: Any, high: Any) -> ActionSpace:
        """A continuous space of an adapter's box (gymnasium's, VMAS's): ``low``/``high``
        arrays (or numbers) broadcast to ``shape``, kept as one number where every dimension
        shares it (the space such a box always gave, which older snapshots recorded), else
        one per dimension."""
        shape = tuple(int(d) for d in shape)
        bounds = [np.broadcast_to(np.asarray(v, np.float64), shape) for v in (low, high)]
        low, high = (float(b.flat[0]) if b.size and np.all(b == b.flat[0]) else b
                     for b in bounds)
        return cls("continuous", shape=shape, low=low, high=high)

    @property
    def per_dimension(self) -> bool:
        """Whether a box's ``low`` or ``high`` gives one number per dimension."""
        return isinstance(self.low, tuple) or isinstance(self.high, tuple)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)``: a box's bounds as new float64 arrays of ``shape`` (one number
        repeated in every dimension); a GameError for a discrete space."""
        if self.discrete:
            raise GameError(f"ActionSpace('discrete', n={self.n}) has no box bounds")
        try:
            return (np.broadcast_to(np.asarray(self.low, np.float64), self.shape).copy(),
                    np.broadcast_to(np.asarray(self.high, np.float64), self.shape).copy())
        except (TypeError, ValueError) as err:  # a scalar of another type beside a sequence
            raise GameError(f"ActionSpace('continuous', low={self.low!r}, high={self.high!r}); "
                            "accepted: numbers with low < high") from err


def _per_dimension(name: str, value: Any, shape: tuple[int, ...]) -> tuple:
    """A per-dimension ``low``/``high`` of a box of ``shape`` as (nested) tuples of finite
    floats, else a one-line GameError naming it."""
    want = (f"{shape[0]} numbers (one per dimension)" if len(shape) == 1
            else f"numbers in an array of shape {tuple(int(d) for d in shape)}")
    said = f"ActionSpace('continuous', shape={shape!r}, {name}={value!r:.80})"
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.shape != tuple(int(d) for d in shape):
        raise GameError(f"{said}; accepted: one number, or {want}")

    def nest(x: Any) -> Any:
        return tuple(nest(v) for v in x) if isinstance(x, list) else float(x)

    return nest(arr.tolist())


@dataclass(frozen=True)
class GameSpec:
    """Static description of a game, identical for every episode."""

    name: str
    agents: tuple[AgentSpec, ...]
    obs_shapes: Mapping[str, tuple[int, ...]]
    action_spaces: Mapping[str, ActionSpace]
    max_steps: int
    zero_sum: bool = False
    simultaneous: bool = False
    state_shape: tuple[int, ...] | None = None
    has_entity_graph: bool = False

    @property
    def agent_ids(self) -> tuple[str, ...]:
        return tuple(a.id for a in self.agents)

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    def agent(self, agent_id: str) -> AgentSpec:
        for a in self.agents:
            if a.id == agent_id:
                return a
        raise GameError(f"unknown agent {agent_id!r} in {self.name}; agents: {self.agent_ids}")

    @property
    def roles(self) -> tuple[str, ...]:
        """Distinct roles, in order of first appearance."""
        return tuple(dict.fromkeys(a.role for a in self.agents))

    @property
    def teams(self) -> tuple[str, ...]:
        """Distinct teams, in order of first appearance."""
        return tuple(dict.fromkeys(a.team for a in self.agents))


@dataclass(frozen=True)
class EntityGraph:
    """Entities of a scene as a graph, for GNN encoders (``marl`` turns it into tensors).

    Node features have the same width whatever the number of agents, so a GNN trained at
    N agents runs unchanged at a larger N.

    Attributes:
        nodes: ``[V, F]`` float32 node features.
        edge_index: ``[2, E]`` int64 (source row, target row), no self loops.
        node_type: ``[V]`` int64 entity type ids (see the game's ``NODE_TYPES``).
        agent_node: ``{agent id: node row}``.
    """

    nodes: np.ndarray
    edge_index: np.ndarray
    node_type: np.ndarray
    agent_node: Mapping[str, int]


@dataclass
class TimeStep:
    """What a game returns from ``reset`` and ``step``.

    Attributes:
        acting: agents that must act now (empty once the episode is over).
        obs: float32 observation of each acting agent.
        legal: bool mask ``[n]`` of each acting discrete-action agent.
        rewards: reward of every agent for the last transition (0 after reset).
        terminated: per agent, the episode ended for it by the rules (no bootstrap).
        truncated: per agent, the episode was cut by a time limit (bootstrap).
        info: free-form per-step information.
    """

    acting: tuple[str, ...]
    obs: dict[str, np.ndarray]
    legal: dict[str, np.ndarray]
    rewards: dict[str, float]
    terminated: dict[str, bool]
    truncated: dict[str, bool]
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        """True when the episode is over for every agent."""
        return not self.acting


@dataclass
class Transition:
    """What ``Game._step`` reports: rewards and end flags for every agent."""

    rewards: dict[str, float]
    terminated: dict[str, bool]
    truncated: dict[str, bool]
    info: dict[str, Any] = field(default_factory=dict)


_REAL = (int, float, numbers.Real)  # numbers.Real holds numpy's scalars too

_FINAL = " at the end of its episode"  # observe_checked(final=True) says so in its messages
_FINAL_STATE = " at the end of the episode"

_CHOICE_ATOL = float(np.sqrt(np.finfo(np.float64).eps))  # numpy's choice: sum(p) == 1 within


def choice_index(rng: np.random.Generator, p: np.ndarray) -> int:
    """``rng.choice(len(p), p=p)``: the same index from the same one uniform draw, by its
    own steps (cumulative sum, scaled by its last entry, searched from the right) without
    its checks of the arguments, which cost as much again (~25 us a draw: a Kuhn deal is
    two, an LLM's scored action one, and a GRPO learning test makes ~100k of each).
    Probabilities ``choice`` refuses (negative, NaN, a sum off 1 by more than its
    tolerance) go to it, which raises as before; float32 ``p`` is summed in float64, as
    ``choice`` converts it."""
    q = np.asarray(p, dtype=np.float64)
    cdf = q.cumsum()
    if not (q >= 0).all() or not abs(cdf[-1] - 1.0) <= _CHOICE_ATOL:  # (NaN compares false)
        return int(rng.choice(len(p), p=p))
    cdf /= cdf[-1]
    return int(cdf.searchsorted(rng.random(), side="right"))


def _plain_action(action: Any) -> Any:
    """``action`` as a message shows it: a numpy scalar as its Python value (``1.5``, not
    ``np.float64(1.5)``)."""
    return action.item() if isinstance(action, np.generic) else action


_AGENT_METHODS = ("observe", "legal_actions", "legal_mask", "text_observation", "action_text",
                  "legal_action_texts", "parse_action", "final_legal_mask")
"""Methods whose first argument is an agent id: :class:`Game` refuses an unknown one before
the game's code runs, for every game alike (OpenSpiel said ``tuple.index(x): x not in tuple``,
PettingZoo and VMAS a KeyError, a matrix game observed for nobody)."""


def _agent_checked(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of a game (first argument an agent id) refusing an id that is not one of
    ``spec.agent_ids`` in one line naming it and the game's agents (a :class:`GameError`)."""
    params = list(inspect.signature(method).parameters)
    keyword = params[1] if len(params) > 1 else None

    @functools.wraps(method)
    def checked(self: Game, *args: Any, **kwargs: Any) -> Any:
        try:  # asked for every acting agent at every step: one dict lookup
            known = args[0] in self.spec.obs_shapes
        except (IndexError, AttributeError, TypeError):
            known = _known_agent(self, args[0] if args else kwargs.get(keyword, _NO_AGENT))
        if not known:
            self.spec.agent(args[0] if args else kwargs[keyword])  # raises, naming it
        return method(self, *args, **kwargs)

    checked._checks_agent = True  # type: ignore[attr-defined]
    return checked


_NO_AGENT = object()


def _marking_closed(close: Callable[..., Any]) -> Callable[..., Any]:
    """A subclass's ``close`` that marks the game closed whatever it does."""

    @functools.wraps(close)
    def marked(self: Game, *args: Any, **kwargs: Any) -> Any:
        try:
            return close(self, *args, **kwargs)
        finally:
            self._closed = True

    marked._marks_closed = True  # type: ignore[attr-defined]
    return marked


def _closed_error(game: Game, call: str) -> GameError:
    return GameError(f"{game.spec.name}: {call}() after close(); make a new game")


def _known_agent(game: Game, agent: Any) -> bool:
    """:func:`_agent_checked`'s slow path: an agent given by keyword, a game with no spec yet
    (one asking its own methods in ``__init__``) or an unhashable id."""
    spec = getattr(game, "spec", None)
    if agent is _NO_AGENT or not isinstance(spec, GameSpec):
        return True  # nothing to check: the method says what it misses
    try:
        return agent in spec.obs_shapes
    except TypeError:  # unhashable
        return False


class Game(abc.ABC):
    """Base class of every game. Subclasses set ``self.spec`` in ``__init__``.

    The methods that take an agent id (:data:`_AGENT_METHODS`) refuse an id the spec does not
    name, in one line naming it and the game's agents, before the game's code runs (a
    subclass's own are wrapped when it is defined)."""

    spec: GameSpec

    _closed = False  # close() was called: reset and step refuse

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in _AGENT_METHODS:
            method = cls.__dict__.get(name)
            if inspect.isfunction(method) and not getattr(method, "_checks_agent", False):
                setattr(cls, name, _agent_checked(method))
        close = cls.__dict__.get("close")
        if inspect.isfunction(close) and not getattr(close, "_marks_closed", False):
            cls.close = _marking_closed(close)  # a subclass's close need not call super

    # ----------------------------------------------------------------- to implement
    @abc.abstractmethod
    def _reset(self, seed: int | None) -> None:
        """Start a new episode; ``seed=None`` continues the game's own RNG stream."""

    @abc.abstractmethod
    def _step(self, actions: dict[str, Action]) -> Transition:
        """Apply already-validated actions of exactly the acting agents."""

    @abc.abstractmethod
    def acting_agents(self) -> tuple[str, ...]:
        """Agents that must act now; empty when the episode is over."""

    @abc.abstractmethod
    def observe(self, agent: str) -> np.ndarray:
        """float32 observation of ``agent`` with shape ``spec.obs_shapes[agent]``; asked also
        once the agent's episode ended (its final observation, which learners bootstrap a
        truncated agent from), so it must work at a terminal state."""

    @abc.abstractmethod
    def legal_actions(self, agent: str) -> Sequence[int]:
        """Sorted legal action ids of a discrete-action agent that must act now."""

    @abc.abstractmethod
    def text_observation(self, agent: str) -> str:
        """What ``agent`` knows now, as text for an LLM."""

    # ------------------------------------------------------------ optional overrides
    def action_text(self, agent: str, action: int) -> str:
        """Text of one action id (override for readable names)."""
        return f"action {action}"

    def state(self) -> np.ndarray | None:
        """Global float32 state for centralized critics, if the game has one (of shape
        ``spec.state_shape``, at every step and at the episode's end)."""
        return None

    def entity_graph(self, agent: str | None = None) -> EntityGraph | None:
        """Entities as a graph (positions relative to ``agent`` when given), if defined."""
        return None

    def close(self) -> None:  # noqa: B027  (optional hook, not abstract)
        """Release resources (renderers, subprocesses). A closed game's reset and step refuse
        (its spec still tells what it was)."""
        self._closed = True

    def final_legal_mask(self, agent: str) -> np.ndarray | None:
        """bool ``[n]`` mask of the actions a discrete-action ``agent`` has at the state where
        its episode ended (VectorGame's ``final_legal``: a truncated agent's bootstrap takes
        its max over them, as over ``legal`` mid-episode); None: not known, every action
        counts. Override where the game knows the mask there but ``legal_actions`` answers only
        for an agent that must act now (a PettingZoo env's last ``action_mask``).

        By default, :meth:`legal_actions` asked at that state where it names at least one
        action; None where it names none (an agent not to move there, a terminal state) or
        raises (the contract asks it only of an agent that must act, so a game may assume
        one).
        """
        try:
            ids = list(self.legal_actions(agent))
        except Exception:  # noqa: BLE001  (outside the contract: no mask known there)
            return None
        n = self.spec.action_spaces[agent].n
        if not ids or not all(isinstance(a, (int, np.integer)) and 0 <= a < n for a in ids):
            return None
        mask = np.zeros(n, dtype=bool)
        mask[ids] = True
        return mask

    # ------------------------------------------------------------------- provided
    def legal_mask(self, agent: str) -> np.ndarray:
        """bool ``[n]`` mask of the legal actions of ``agent``."""
        return self._mask_of(agent, list(self.legal_actions(agent)))

    def _mask_of(self, agent: str, legal: list) -> np.ndarray:
        """bool ``[n]`` mask of the action ids ``legal`` of ``agent``."""
        n = self.spec.action_spaces[agent].n
        mask = np.zeros(n, dtype=bool)
        try:
            mask[legal] = True
            if legal and min(legal) < 0:  # numpy wraps -1 to the last action, silently
                raise IndexError
        except IndexError:  # else a bare IndexError from the first reset (openspiel/chat_game)
            bad = [a for a in legal if not (isinstance(a, (int, np.integer)) and 0 <= a < n)]
            detail = (f"legal actions {bad} of {agent} are outside its {n} actions (ids "
                      f"0..{n - 1}); the game cannot be played")
            # a broken contract at this step (check_game names its seed and step), said as
            # "<game>: ..." (make refuses such a game so, before any episode: openspiel/chat_game)
            err = GameContractError(self.spec.name, f"step {self._contract_steps}", detail)
            err.args = (f"{self.spec.name}: {detail}",)
            raise err from None
        return mask

    def legal_action_texts(self, agent: str) -> list[str]:
        """Texts of the legal actions, in the order of :meth:`legal_actions`."""
        return [self.action_text(agent, a) for a in self.legal_actions(agent)]

    def parse_action(self, agent: str, text: str) -> int:
        """Turn an LLM's text into a legal action id.

        Accepts the text of a legal action (spacing ignored; case too where that names one
        action: :func:`action_matches`), optionally wrapped in ``<action>...</action>``; the
        last tag wins when there are several.

        Raises:
            InvalidAction: naming the text and the legal action texts, or the actions it
                names once case is ignored when it names several.
        """
        legal = list(self.legal_actions(agent))
        texts = [self.action_text(agent, a) for a in legal]
        if not isinstance(text, str):  # None, bytes, an int: a TypeError from the tag reader
            raise InvalidAction(f"{agent} in {self.spec.name}: cannot parse {repr(text)[:80]} as "
                                f"an action (not a str); legal: {texts}")
        found = action_matches(text, texts)
        if len(found) == 1:
            return int(legal[found[0]])
        shown = text if len(text) <= 80 else text[:77] + "..."
        if found:
            raise InvalidAction(
                f"{agent} in {self.spec.name}: {shown!r} names several actions once case is "
                f"ignored: {[texts[i] for i in found]}; write one exactly"
            )
        raise InvalidAction(
            f"{agent} in {self.spec.name}: cannot parse {shown!r} as an action; "
            f"legal: {texts}"
        )

    _contract_steps = 0  # steps taken in this episode (for the messages)

    def reset(self, seed: int | None = None) -> TimeStep:
        """Start an episode. Same seed, same episode; ``None`` continues the RNG stream.

        Raises:
            GameCodeError: the game's own code raised (naming the method and its line).
        """
        if seed is not None and (isinstance(seed, bool | np.bool_) or not isinstance(
                seed, numbers.Integral) or seed < 0):  # else the game's RNG raised, as its bug
            raise GameError(f"{self.spec.name}: reset(seed={seed!r:.60}); accepted: None or an "
                            "integer >= 0")
        if self._closed:
            raise _closed_error(self, "reset")
        self._contract_steps = 0
        try:
            self._reset(seed)
            zeros = {a: 0.0 for a in self.spec.agent_ids}
            false = {a: False for a in self.spec.agent_ids}
            return self._timestep(Transition(zeros, false, dict(false)))
        except GameError:
            raise
        except Exception as err:  # a bug in the game: one line naming its method and line
            raise GameCodeError(self.spec.name, f"reset(seed={seed})", err) from err

    def step(self, actions: Mapping[str, Action]) -> TimeStep:
        """Apply one action per acting agent.

        Raises:
            IllegalActionError: an action is missing, extra, or illegal; the game is
                left unchanged.
            GameContractError: a reward is not one real number, an observation has another
                shape than ``spec.obs_shapes``, or an acting agent has no legal action.
            GameCodeError: the game's own code raised (naming the method and its line).
        """
        t = self._contract_steps
        if self._closed:
            raise _closed_error(self, "step")
        if not isinstance(actions, Mapping):  # else a TypeError said as a bug of the game
            raise IllegalActionError(
                f"{self.spec.name}: step({actions!r:.60}); accepted: a dict of agent id -> "
                f"action, agents {self.spec.agent_ids}")
        try:
            acting = self.acting_agents()
            if not acting:
                raise GameError(f"{self.spec.name}: step() after the episode ended; call reset()")
            if set(actions) != set(acting):
                raise IllegalActionError(
                    f"{self.spec.name}: expected actions for {list(acting)}, got {sorted(actions)}"
                )
            checked = {a: self._check_action(a, actions[a]) for a in acting}
            tr = self._step(checked)
            self._contract_steps = t = t + 1
            return self._timestep(tr)
        except GameError:
            raise
        except Exception as err:  # a bug in the game: one line naming its method and line
            raise GameCodeError(self.spec.name, f"step {t}", err) from err

    def _check_action(self, agent: str, action: Action) -> Action:
        space = self.spec.action_spaces[agent]
        if space.discrete:
            try:
                a = int(action)  # type: ignore[arg-type]
                ok = a == action
            except (TypeError, ValueError):
                ok = False
            legal = self.legal_actions(agent)
            if not ok or a not in legal:
                shown = a if ok else _plain_action(action)
                raise IllegalActionError(
                    f"{self.spec.name}: illegal action {shown!r} for {agent}; "
                    f"legal: {[int(x) for x in legal]}"
                )
            return a
        vec = np.asarray(action, dtype=np.float32)
        if vec.shape != space.shape or not np.all(np.isfinite(vec)):
            raise IllegalActionError(
                f"{self.spec.name}: action for {agent} must be a finite float vector of "
                f"shape {space.shape}, got {action!r}"
            )
        # one number each (every box before per-dimension bounds): no arrays to build
        low, high = space.bounds() if space.per_dimension else (space.low, space.high)
        outside = (vec < low - 1e-6) | (vec > high + 1e-6)
        if outside.any():
            box = f"[{space.low}, {space.high}]"
            if space.per_dimension:  # the dimension it left, with that dimension's bounds
                at = tuple(int(i) for i in np.argwhere(outside)[0])
                box = (f"its box in dimension {at[0] if len(at) == 1 else at} "
                       f"([{low[at]:g}, {high[at]:g}])")
            raise IllegalActionError(
                f"{self.spec.name}: action {vec.tolist()} for {agent} is outside {box}")
        return vec

    def _timestep(self, tr: Transition) -> TimeStep:
        for a, r in tr.rewards.items():
            if type(r) is not float:  # the common case costs one type test per agent
                self._check_reward(a, r)
        acting = self.acting_agents()
        spec = self.spec
        shapes, spaces = spec.obs_shapes, spec.action_spaces
        own_mask = type(self).legal_mask is Game.legal_mask
        obs, legal = {}, {}
        for a in acting:
            o = obs[a] = self.observe(a)
            if getattr(o, "shape", None) != shapes[a]:
                self._check_obs_shape(a, o)
            if spaces[a].discrete:
                if own_mask:  # the legal ids are at hand: an empty list costs nothing to see
                    ids = list(self.legal_actions(a))
                    empty = not ids
                    mask = self._mask_of(a, ids)
                else:
                    mask = self.legal_mask(a)
                    if getattr(mask, "shape", None) != (spaces[a].n,):  # a (1,) one was
                        self._check_mask_shape(a, mask)  # broadcast into every action
                    empty = np.count_nonzero(mask) == 0
                if empty:  # else each consumer failed its own way (IndexError, a sampler's
                    # "a cannot be empty", an illegal action 1 with legal [])
                    raise GameContractError(spec.name, f"step {self._contract_steps}",
                                            f"{a} must act but has no legal action")
                legal[a] = mask
        return TimeStep(acting, obs, legal, tr.rewards, tr.terminated, tr.truncated, tr.info)

    def _check_mask_shape(self, agent: str, mask: Any) -> None:
        """Refuse an overridden ``legal_mask`` of another shape than ``[n]`` here, not where a
        batch stacks it: a ``(1,)`` mask was broadcast into every action, a longer one was
        numpy's "could not broadcast" or "Output array is the wrong shape", naming no game."""
        n = self.spec.action_spaces[agent].n
        if np.shape(mask) != (n,):
            kind = getattr(mask, "dtype", type(mask).__name__)  # check_game's words
            raise GameContractError(self.spec.name, f"step {self._contract_steps}",
                                    f"legal mask of {agent} is {kind} of shape "
                                    f"{np.shape(mask)}, expected bool of shape ({n},)")

    def _check_reward(self, agent: str, reward: Any) -> None:
        """Refuse a reward that is not one real number (a string, a bool, an array of several
        values) here, not where VectorGame sums returns: ``'1.0'`` was a numpy traceback naming
        no game, agent nor step. NaN and infinities pass: the trainers' guard reports them."""
        if isinstance(reward, _REAL) and not isinstance(reward, bool | np.bool_):
            return
        if isinstance(reward, np.ndarray) and reward.ndim == 0 and reward.dtype.kind in "iuf":
            return  # a 0-d array of numbers (what some PettingZoo games give)
        shown = repr(reward) if len(repr(reward)) <= 60 else repr(reward)[:57] + "..."
        shape = f" of shape {reward.shape}" if isinstance(reward, np.ndarray) else ""
        raise GameContractError(self.spec.name, f"step {self._contract_steps}",
                                f"reward of {agent} is {type(reward).__name__}{shape}, expected a "
                                f"float scalar (a real number): got {shown}")

    def _check_obs_shape(self, agent: str, obs: Any) -> None:
        """Refuse an observation of another shape than ``spec.obs_shapes[agent]`` here, not where
        a batch stacks it: numpy's "could not broadcast (8,) into (4,)" named no game, agent
        nor step, and a ``(1,)`` one was broadcast silently into every feature."""
        shape = self.spec.obs_shapes[agent]
        if getattr(obs, "shape", None) != shape and np.shape(obs) != tuple(shape):
            raise GameContractError(self.spec.name, f"step {self._contract_steps}",
                                    f"obs of {agent} has shape {np.shape(obs)}, expected "
                                    f"{tuple(shape)}")

    # ------------------------------------------- asked outside reset and step, held alike
    def guarded(self, method: Callable[..., Any], *args: Any, note: str = "") -> Any:
        """``method(*args)``, one of this game's own methods, asked outside :meth:`reset` and
        :meth:`step` (VectorGame's global states, text views and graphs): an exception of the
        game's code comes out as a :class:`GameCodeError` naming the game, the step, the call
        (``text_observation('p0')``, then ``note``) and the user's line, as theirs do; a
        :class:`GameError` passes unchanged."""
        try:
            return method(*args)
        except GameError:
            raise
        except Exception as err:  # a bug in the game: one line naming the call and its line
            name = getattr(method, "__name__", type(method).__name__)
            call = f"{name}({', '.join(map(repr, args))}){note}"
            raise GameCodeError(self.spec.name, f"step {self._contract_steps}", err, call
                                ) from err

    def observe_checked(self, agent: str, final: bool = False) -> np.ndarray:
        """``observe(agent)`` held to the contract as :meth:`step` holds it, for a caller
        outside reset and step: an exception of the game's code is a :class:`GameCodeError`,
        an observation of another shape than ``spec.obs_shapes`` a :class:`GameContractError`,
        each in one line naming the game, the step and the agent. ``final``: asked once the
        agent's episode ended (VectorGame's ``final_obs``, which learners bootstrap a
        truncated agent from; check_game asks it of every agent); an exception's message
        says so (the game's code may assume a running episode)."""
        o = self.guarded(self.observe, agent, note=_FINAL if final else "")
        if getattr(o, "shape", None) != self.spec.obs_shapes[agent]:
            self._check_obs_shape(agent, o)  # README's words: "<game> step N: obs of <agent> ..."
        return o

    def final_legal_checked(self, agent: str) -> np.ndarray:
        """:meth:`final_legal_mask` of a discrete-action ``agent`` held to the contract (see
        :meth:`observe_checked`): a bool ``[n]`` mask; every action where the game gives none
        (None, or a mask with no legal action). A mask of another shape is a
        :class:`GameContractError` naming the game, the step and the agent."""
        self.spec.agent(agent)  # an unknown id: one line naming it (else a KeyError here)
        n = self.spec.action_spaces[agent].n
        mask = self.guarded(self.final_legal_mask, agent, note=_FINAL)
        if mask is None:
            return np.ones(n, dtype=bool)
        mask = np.asarray(mask)
        if mask.shape != (n,):
            raise GameContractError(self.spec.name, f"step {self._contract_steps}",
                                    f"final_legal_mask('{agent}') has shape {mask.shape}, "
                                    f"expected ({n},)")
        mask = mask.astype(bool)
        return mask if mask.any() else np.ones(n, dtype=bool)

    def state_checked(self, final: bool = False) -> np.ndarray | None:
        """``state()`` held to the contract (see :meth:`observe_checked`): of shape
        ``spec.state_shape`` where the spec declares one."""
        s = self.guarded(self.state, note=_FINAL_STATE if final else "")
        shape = self.spec.state_shape
        if shape is not None and getattr(s, "shape", None) != shape and (
                s is None or np.shape(s) != tuple(shape)):
            got = "None" if s is None else f"shape {np.shape(s)}"
            fix = ": implement state() or drop state_shape" if s is None else ""
            raise GameContractError(self.spec.name, f"step {self._contract_steps}",
                                    f"state() returned {got}, expected spec.state_shape "
                                    f"{tuple(shape)}{fix}")
        return s

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec.name}>"


for _name in _AGENT_METHODS:  # the base class's own (the abstract ones: each subclass's)
    if not getattr(Game, _name).__dict__.get("__isabstractmethod__"):
        setattr(Game, _name, _agent_checked(getattr(Game, _name)))
