"""``VectorGame``: B copies of a game stepping together, with auto-reset.

Shape legend: ``B`` copies (envs), ``O`` observation width, ``N`` discrete actions,
``D`` continuous action width, ``S`` global state width.

Each step returns, per agent, arrays stacked over the B copies. In turn-based games
different copies may wait on different agents: ``acting[agent]`` says which copies need
that agent's action; entries for the others are zeros and their actions are ignored.

Copy ``b`` starts from ``reset(seed + b)``; later episodes continue the copy's own RNG
stream (``reset(None)``), so a VectorGame and B independent games driven with the same
seeds and actions produce the same trajectories.

A natively batched game (one with ``batched(num_envs, seed, with_state, with_graphs)``,
such as ``vmas/<scenario>``) is not copied: the VectorGame delegates to the batch it
builds, which steps all copies in one call on its device. Its VecSteps hold torch tensors
on that device with ``tensors=True``; otherwise they are converted to numpy once per step.
``tensors="auto"`` asks for tensors where the game is natively batched and numpy elsewhere
(what a launcher passes for a learner that reads both).

A stepped copy whose episode runs a step past ``spec.max_steps`` without ending raises
:class:`games.EpisodeTooLongError` at that step, naming the game, the copy and the step
(training ran to its end before, and evaluation, which waits for whole episodes, failed).

What a stepped game is asked outside its ``reset``/``step`` (final observations and states
where an episode ends, global states, text views, graphs) goes through the game's
``observe_checked``/``state_checked``/``guarded``: a game's own exception or a wrong shape is
one line naming the game, the step, the call and the user's line, as in ``reset``/``step``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from games.core import (
    EpisodeTooLongError,
    Game,
    GameContractError,
    GameError,
    GameSpec,
    IllegalActionError,
    TimeStep,
)
from games.graphs import graph_problem, warn_large_graph
from games.registry import make


@dataclass
class VecStep:
    """One step of B copies. Arrays are indexed ``[B, ...]``; dicts are keyed by agent id.

    From a natively batched game with ``VectorGame(..., tensors=True)`` the arrays are torch
    tensors on the game's device (same shapes; ``to_numpy`` converts them).

    Attributes:
        obs: ``[B, O]`` float32 observation of each agent (zeros where it does not act).
        legal: ``[B, N]`` bool legal mask of each discrete agent (False where it does not act).
        acting: ``[B]`` bool, copies waiting for this agent's action.
        rewards: ``[B]`` float32 reward of the last transition.
        terminated / truncated: ``[B]`` bool end flags of the last transition.
        done: ``[B]`` bool, the copy's episode ended at this step and it was reset: ``obs``
            and ``acting`` already belong to the next episode.
        final_obs: ``[B, O]`` last observation of each agent in copies where an episode
            ended now: the copy's (``done``), or one agent's alone (it terminated or was
            truncated while the others play on; the row holds the observation after the
            step of every agent still in the episode at it, zeros for one that left at an
            earlier step, as in ``obs``); zeros elsewhere. Truncated agents bootstrap from it.
        state / final_state: ``[B, S]`` global state (``None`` unless the VectorGame was
            built with ``with_state=True`` for a game that has one); ``final_state`` in the
            copies where ``final_obs`` is set (``None`` when there are none).
        final_legal: ``[B, N]`` bool legal mask of each discrete agent at the state where its
            episode ended, in the copies and rows where ``final_obs`` is set (the game's
            :meth:`~games.Game.final_legal_checked`: every action where the game gives no
            mask there, such as an agent not to move) in the rows of truncated agents; False
            elsewhere (a terminated agent, which never bootstraps; one that left at an earlier
            step). A truncated agent's bootstrap takes its max over it, as
            over ``legal`` mid-episode. ``None`` in a VecStep no VectorGame built.
        text / legal_text: per agent, ``B`` text observations and lists of legal action
            texts (``""`` / ``[]`` where the agent does not act; ``with_text=True``), for
            LLM and tabular policies.
        graph / final_graph: ``[B, V, F]`` entity-graph node features in absolute
            coordinates (``with_graphs=True``); row ``VectorGame.agent_node[agent]`` is
            that agent's node (also given as ``agent_node``). ``F`` is
            ``games.graphs.NODE_DIM`` (the layout ``NODE_FEATURES``) and ``V`` the first
            graph's: a stepped game whose graph breaks either is refused in one line.
        episode_return: ``[B]`` return of the episode that just ended (valid where ``done``):
            each agent's rewards up to its own end, as learners train on them (a reward
            after it breaks the contract: ``check_game`` refuses it).
        episode_length: ``[B]`` int64 steps of the episode that just ended.
        info: ``{b: info}`` for each copy ``b`` whose episode ended at this step (``done``):
            what the game reported with the episode's last transition (a stepped game's
            ``TimeStep.info``: ``{"success": ...}`` of a tool task, ``{"agents": {agent:
            {...}}}`` of a PettingZoo game; a VMAS batch's ``{"agents": {agent: {key:
            value}}}``, read from its device when first looked at). Empty on a step where
            no episode ended; :func:`episode_success` reads a success flag from one.
    """

    obs: dict[str, np.ndarray]
    legal: dict[str, np.ndarray]
    acting: dict[str, np.ndarray]
    rewards: dict[str, np.ndarray]
    terminated: dict[str, np.ndarray]
    truncated: dict[str, np.ndarray]
    done: np.ndarray
    final_obs: dict[str, np.ndarray]
    episode_return: dict[str, np.ndarray]
    episode_length: np.ndarray
    state: np.ndarray | None = None
    final_state: np.ndarray | None = None
    final_legal: dict[str, np.ndarray] | None = None
    graph: np.ndarray | None = None
    final_graph: np.ndarray | None = None
    agent_node: dict[str, int] | None = None
    text: dict[str, list[str]] | None = None
    legal_text: dict[str, list[list[str]]] | None = None
    info: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)


SUCCESS_KEYS = ("success", "is_success")  # what a game's info may call a finished task's flag


def episode_success(info: Mapping[str, Any]) -> bool | None:
    """Whether an episode succeeded, from the info of its last transition (``VecStep.info[b]``):
    its own ``success`` (``is_success``) entry, a tool task's or a user's game's; else, where
    agents report one in ``info["agents"]`` (PettingZoo, VMAS), whether every agent that does
    says so. None where nothing says (most games: mpe2, the VMAS scenarios)."""
    for key in SUCCESS_KEYS:
        if key in info:
            return bool(info[key])
    agents = info.get("agents")
    flags = [bool(own[k]) for own in agents.values() if isinstance(own, Mapping)
             for k in SUCCESS_KEYS if k in own] if isinstance(agents, Mapping) else []
    return all(flags) if flags else None


NATIVE_MAX_COPIES = 16_384  # a natively batched game plays at most this many episodes at once


def episode_copies(game: Game, episodes: int, num_envs: int) -> int:
    """How many copies to step to play ``episodes`` episodes of ``game``: every episode at
    once (up to ``NATIVE_MAX_COPIES``) on a natively batched game, where more copies cost
    almost nothing per step; ``min(num_envs, episodes)`` copies of a stepped game."""
    if callable(getattr(game, "batched", None)):
        return max(1, min(episodes, NATIVE_MAX_COPIES))
    return max(1, min(num_envs, episodes))


def _host(x: Any) -> Any:
    if hasattr(x, "detach"):  # a torch tensor (games stays importable without torch)
        return x.detach().cpu().numpy()
    if isinstance(x, dict):
        return {k: _host(v) for k, v in x.items()}
    return x


def to_numpy(vs: VecStep) -> VecStep:
    """A VecStep whose torch tensors are numpy arrays (one device-to-host copy per field)."""
    return VecStep(**{f: getattr(vs, f) if f in ("agent_node", "info") else _host(getattr(vs, f))
                      for f in vs.__dataclass_fields__})


def _per_copy(spec: GameSpec, actions: Mapping[str, Any]) -> Mapping[str, Any]:
    """``actions`` with each discrete agent's 1-D integer array as a list of Python ints,
    which index and convert faster copy by copy (``Game.step`` takes a discrete action as
    ``int(action)``: the same action, and the same messages where it is illegal); any other
    (a box's, floats, tensors, lists) as given."""
    out = dict(actions)
    spaces = spec.action_spaces
    for a, acts in actions.items():
        if type(acts) is np.ndarray and acts.ndim == 1 and acts.dtype.kind in "iu" and \
                spaces[a].discrete:
            out[a] = acts.tolist()
    return out


def _started(game: Game, ts: TimeStep, seed: int | None) -> TimeStep:
    """``ts``, the time step ``game.reset(seed)`` returned, unless no agent acts in it: the
    episode ended before it began (openspiel/oware with no seeds was made and failed at the
    first step with "step() after the episode ended; call reset()", which named no cause).

    Raises:
        GameContractError: naming the game (and its arguments, which its name holds).
    """
    if ts.acting:
        return ts
    raise GameContractError(game.spec.name, f"reset(seed={seed})",
                            "no agent acts: the episode ended before anyone acted; check its "
                            "arguments (a game whose random start may end an episode at once "
                            "must still give someone a turn: reset() returns a time step in "
                            "which an agent acts)")


def check_actions(spec: GameSpec, num_envs: int, actions: Mapping[str, Any],
                  acting_copies: Callable[[str], list[int]]) -> None:
    """Refuse, before any copy steps, actions that are not ``[B, ...]`` arrays (lists,
    tensors) of the spec's agents, one for every agent acting in some copy: a short array
    stepped copies 0-2 and raised IndexError at copy 3, leaving the copies apart (the
    next correct step was refused as "expected actions for ['player_1']"); a long one
    passed silently. ``acting_copies(agent)``: the copies where ``agent`` acts now (a
    VMAS batch: every copy)."""
    name, B, ids = spec.name, num_envs, spec.agent_ids
    if not isinstance(actions, Mapping):
        raise IllegalActionError(f"{name}: VectorGame.step({actions!r:.60}); accepted: a "
                                 f"dict of agent id -> an array of {B} actions (one per copy)")
    unknown = [a for a in actions if a not in spec.obs_shapes]
    if unknown:
        raise IllegalActionError(f"{name}: actions for unknown agents {unknown}; agents: "
                                 f"{ids}")
    for a, acts in actions.items():
        shape = getattr(acts, "shape", None)  # an array's or a tensor's
        if shape is None:
            try:
                shape = np.shape(acts)  # a list
            except ValueError:  # ragged
                shape = ()
        if not shape:
            raise IllegalActionError(f"{name}: actions[{a!r}] is {acts!r:.60}, expected an "
                                     f"array of {B} actions (one per copy)")
        if shape[0] != B:
            raise IllegalActionError(f"{name}: actions[{a!r}] holds {shape[0]} actions, "
                                     f"expected one per copy: {B} (num_envs)")
    for a in ids:
        if a not in actions:
            copies = acting_copies(a)
            if copies:
                shown = f"{copies[:8]}"[:-1] + (", ...]" if len(copies) > 8 else "]")
                raise IllegalActionError(f"{name}: no actions for {a}, which acts in copies "
                                         f"{shown}")


class VectorGame:
    """B copies of one game; ``step`` takes and returns arrays stacked over copies."""

    def __init__(
        self,
        game: str | Callable[[], Game],
        num_envs: int,
        seed: int | None = 0,
        with_state: bool = False,
        with_graphs: bool = False,
        with_text: bool = False,
        tensors: bool | str = False,
        **kwargs: Any,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, numbers.Integral) or \
                num_envs < 1:  # else '<' between str and int, or a float's range() TypeError
            raise GameError(f"num_envs must be >= 1 (an integer), got {num_envs!r:.60}")
        num_envs = int(num_envs)
        if seed is not None and (isinstance(seed, bool) or not isinstance(
                seed, numbers.Integral) or seed < 0):  # copy b starts from seed + b
            raise GameError(f"VectorGame seed={seed!r:.60}; accepted: None or an integer >= 0")
        if isinstance(game, Game) or not (isinstance(game, str) or callable(game)):
            raise GameError(f"VectorGame({game!r:.60}, ...): accepted: a game's name or a factory "
                            "that makes one copy, e.g. VectorGame('openspiel/kuhn_poker', 4) or "
                            "VectorGame(lambda: games.make('openspiel/kuhn_poker'), 4)")
        factory = (lambda: make(game, **kwargs)) if isinstance(game, str) else game
        self.factory: Callable[[], Game] = factory
        first = factory()
        self.native = None  # the game's own batch, when it steps all copies in one call
        native = callable(getattr(first, "batched", None))
        if tensors not in (True, False, "auto"):
            raise GameError(f"tensors={tensors!r}; expected True, False or 'auto'")
        self.tensors = native if tensors == "auto" else bool(tensors)
        if native:
            if with_text:
                raise GameError(f"{first.spec.name} is natively batched; with_text is not "
                                "supported (use games.make for one copy with text views)")
            self.native = first.batched(num_envs, seed=seed, with_state=with_state,
                                        with_graphs=with_graphs)
        elif self.tensors:
            raise GameError(f"tensors=True needs a natively batched game; {first.spec.name} "
                            "is stepped copy by copy (numpy)")
        self.games = [first] + [factory() for _ in range(num_envs - 1 if not self.native else 0)]
        self.spec: GameSpec = self.games[0].spec
        self.num_envs = num_envs
        self.seed = seed
        # Global states cost a full observation pass in MPE: only for centralized critics.
        self.with_state = with_state and self.spec.state_shape is not None
        if with_graphs and not self.spec.has_entity_graph:
            raise GameError(f"{self.spec.name} has no entity graph; with_graphs needs one")
        self.with_graphs = with_graphs
        self.with_text = with_text
        self.agent_node: dict[str, int] = {}
        self._node_shape: tuple[int, ...] = ()  # [V, F] of the first graph: every later one's
        if self.native is not None:
            self.agent_node = dict(self.native.agent_node) if with_graphs else {}
        elif with_graphs:
            self.games[0].reset(seed)
            first_graph = self.games[0].guarded(self.games[0].entity_graph)
            self._graph_refused(self.games[0], first_graph)
            self._node_shape = first_graph.nodes.shape
            self.agent_node = dict(first_graph.agent_node)
            warn_large_graph(self.spec.name, len(first_graph.nodes), len(first_graph.agent_node))
        self._ids = self.spec.agent_ids
        self._ret = {a: np.zeros(num_envs, np.float64) for a in self._ids}
        self._len = np.zeros(num_envs, np.int64)
        self._last: list[TimeStep] = []
        self._torn = ""  # why step() needs a reset after a step refused part-way
        self._closed = False
        # per copy, the agents whose own episode ended at an earlier step (the others play on)
        self._gone: list[set[str]] = [set() for _ in range(num_envs)]

    # ------------------------------------------------------------------ stepping
    def _refuse_closed(self) -> None:
        if self._closed:
            raise GameError(f"VectorGame of {self.spec.name} is closed; build a new one")

    def reset(self) -> VecStep:
        """Reset every copy (copy ``b`` with ``seed + b``)."""
        self._refuse_closed()
        if self.native is not None:
            return self._out(self.native.reset())
        seeds = [None if self.seed is None else self.seed + b for b in range(self.num_envs)]
        self._last = [_started(g, g.reset(s), s) for g, s in zip(self.games, seeds, strict=True)]
        self._torn = ""
        for a in self._ids:
            self._ret[a][:] = 0.0
        self._len[:] = 0
        self._gone = [set() for _ in range(self.num_envs)]
        return self._collect(self._last, np.zeros(self.num_envs, bool), {}, None)

    def step(self, actions: Mapping[str, np.ndarray]) -> VecStep:
        """Apply ``actions[agent][b]`` in every copy where ``agent`` acts; auto-reset."""
        self._refuse_closed()
        if self.native is not None:
            return self._out(self.native.step(actions))
        if not self._last:
            raise GameError(self._torn or "VectorGame.step() before reset()")
        self._check_actions(actions)
        out: list[TimeStep] = []
        done = np.zeros(self.num_envs, bool)
        final_obs: dict[str, np.ndarray] = {}
        final_legal: dict[str, np.ndarray] = {}
        final_state = None
        final_graph: list[np.ndarray | None] = [None] * self.num_envs
        ended: dict[int, Mapping[str, Any]] = {}  # copy -> its episode's last info
        per_copy = _per_copy(self.spec, actions)
        whole: list[int] = []  # copies where every agent is still in the episode
        for b, (g, prev) in enumerate(zip(self.games, self._last, strict=True)):
            try:
                ts = g.step({a: per_copy[a][b] for a in prev.acting})
            except Exception:  # an illegal action, a game's bug: copies 0..b-1 have stepped
                if b:
                    self._last = []
                    self._torn = (f"{self.spec.name}: VectorGame.step() after a step refused at "
                                  f"copy {b} (copies 0-{b - 1} had stepped); call reset()")
                raise
            gone = self._gone[b]  # an agent's return ends with its own episode, as learners
            if gone:  # train (a reward after it, a broken contract, is not counted)
                for a in self._ids:
                    if a not in gone:
                        self._ret[a][b] += ts.rewards.get(a, 0.0)
            else:  # added for all such copies at once below
                whole.append(b)
            self._len[b] += 1
            if ts.acting and self._len[b] > self.spec.max_steps:  # not done
                self._add_returns(whole, out + [ts])
                self._too_long(b)
            if ts.done:
                done[b] = True
                ended[b] = ts.info
                final_state = self._record_final(b, g, ts, final_obs, final_legal, final_state)
                if self.with_graphs:
                    final_graph[b] = self._graph_nodes(g)
                self._gone[b].clear()
            elif any(ts.terminated.values()) or any(ts.truncated.values()):
                # an agent left alone (the others play on): its last observation, which a
                # learner bootstraps from where it was truncated (vs.obs holds zeros there)
                final_state = self._record_final(b, g, ts, final_obs, final_legal, final_state)
                self._gone[b].update(a for a in self._ids
                                     if ts.terminated.get(a) or ts.truncated.get(a))
            out.append(ts)
        self._add_returns(whole, out)
        resets = {int(b): _started(self.games[b], self.games[b].reset(None), None)
                  for b in np.flatnonzero(done)}
        self._last = [resets.get(b, ts) for b, ts in enumerate(out)]
        vs = self._collect(self._last, done, final_obs, final_state, transitions=out,
                           final_legal=final_legal)
        vs.info = ended
        if self.with_graphs:
            vs.final_graph = np.stack(
                [f if f is not None else vs.graph[b] for b, f in enumerate(final_graph)]
            )
        for b in resets:
            for a in self._ids:
                self._ret[a][b] = 0.0
            self._len[b] = 0
        return vs

    def _add_returns(self, copies: list[int], steps: list[TimeStep]) -> None:
        """Add the rewards of ``steps`` to the returns of ``copies`` (each in one addition,
        as copy by copy before: the same sums), every agent still in their episodes."""
        if not copies:
            return
        whole = len(copies) == self.num_envs
        for a in self._ids:
            paid = np.array([steps[b].rewards.get(a, 0.0) for b in copies], np.float64)
            if whole:
                self._ret[a] += paid
            else:
                self._ret[a][copies] += paid

    def _check_actions(self, actions: Mapping[str, Any]) -> None:
        """:func:`check_actions` before any copy steps."""
        check_actions(self.spec, self.num_envs, actions,
                      lambda a: [b for b, ts in enumerate(self._last) if a in ts.acting])

    def _too_long(self, b: int) -> None:
        """Refuse copy ``b``'s step past ``spec.max_steps`` (an episode not ended by then):
        training went on to its end, and evaluation, which waits for whole episodes, stopped."""
        spec = self.spec
        raise EpisodeTooLongError(
            f"game {spec.name!r}: episode step {int(self._len[b])} of copy {b} ran past "
            f"spec.max_steps={spec.max_steps} without the episode ending; a game must end "
            "(terminate or truncate) every episode within max_steps")

    def _out(self, vs: VecStep) -> VecStep:
        """A native batch's tensor VecStep, converted to numpy unless ``tensors``."""
        return vs if self.tensors else to_numpy(vs)

    def _record_final(
        self,
        b: int,
        game: Game,
        ts: TimeStep,
        final_obs: dict[str, np.ndarray],
        final_legal: dict[str, np.ndarray],
        final_state: np.ndarray | None,
    ) -> np.ndarray | None:
        """Copy ``b``'s final observations and legal masks into ``final_obs`` /
        ``final_legal`` (filled in place; built at the first ended copy of the step); its
        final global state into ``final_state``, which is returned. A legal mask is asked
        only of an agent truncated there (it bootstraps over it); a terminated agent's row
        stays False, read as every action (on PettingZoo's board games each ask rebuilt the
        observation: 81 µs, 5-10% of a step)."""
        spec = self.spec
        if not final_obs:
            final_obs.update({a: np.zeros((self.num_envs, *spec.obs_shapes[a]), np.float32)
                              for a in self._ids})
            final_legal.update(self._no_legal())
        # asked outside reset/step, so held to the contract here: a user's observe that fails
        # only at a terminal state, or a wrong shape, is one line naming game, step and agent
        for a in self._ids:  # one that left at an earlier step keeps zeros, as in obs
            if a not in self._gone[b]:
                final_obs[a][b] = game.observe_checked(a, final=True)
                if a in final_legal and ts.truncated.get(a) and not ts.terminated.get(a):
                    final_legal[a][b] = game.final_legal_checked(a)
        if self.with_state:
            if final_state is None:
                final_state = np.zeros((self.num_envs, *spec.state_shape), np.float32)
            final_state[b] = game.state_checked(final=True)
        return final_state

    def _no_legal(self) -> dict[str, np.ndarray]:
        """``[B, N]`` False masks of the discrete agents (the ``legal`` layout)."""
        spaces = self.spec.action_spaces
        return {a: np.zeros((self.num_envs, spaces[a].n), bool) for a in self._ids
                if spaces[a].discrete}

    def _collect(
        self,
        steps: list[TimeStep],
        done: np.ndarray,
        final_obs: dict[str, np.ndarray],
        final_state: np.ndarray | None,
        transitions: list[TimeStep] | None = None,
        final_legal: dict[str, np.ndarray] | None = None,
    ) -> VecStep:
        B, spec = self.num_envs, self.spec
        transitions = transitions or steps
        obs, legal, acting = {}, {}, {}
        for a in self._ids:
            obs[a] = np.zeros((B, *spec.obs_shapes[a]), np.float32)
            acting[a] = np.zeros(B, bool)
            space = spec.action_spaces[a]
            if space.discrete:
                legal[a] = np.zeros((B, space.n), bool)
        if all(len(ts.obs) == len(self._ids) for ts in steps):
            # every agent acts in every copy (a simultaneous game's step): one stack per
            # agent, casting each row as the row by row assignments below do
            for a in self._ids:
                np.stack([ts.obs[a] for ts in steps], out=obs[a], casting="unsafe")
                acting[a][:] = True
                if a in legal:
                    np.stack([ts.legal[a] for ts in steps], out=legal[a], casting="unsafe")
        else:
            for b, ts in enumerate(steps):
                for a in ts.acting:
                    obs[a][b] = ts.obs[a]
                    acting[a][b] = True
                    if a in legal:
                        legal[a][b] = ts.legal[a]
        rewards = {
            a: np.array([t.rewards.get(a, 0.0) for t in transitions], np.float32)
            for a in self._ids
        }
        term = {a: np.array([t.terminated.get(a, False) for t in transitions]) for a in self._ids}
        trunc = {a: np.array([t.truncated.get(a, False) for t in transitions]) for a in self._ids}
        state = None
        if self.with_state:
            state = np.stack([g.state_checked() for g in self.games]).astype(np.float32)
        text = legal_text = None
        if self.with_text:
            text = {a: [""] * B for a in self._ids}
            legal_text = {a: [[] for _ in range(B)] for a in self._ids}
            for b, (g, ts) in enumerate(zip(self.games, steps, strict=True)):
                for a in ts.acting:
                    text[a][b] = g.guarded(g.text_observation, a)
                    if a in legal:
                        legal_text[a][b] = g.guarded(g.legal_action_texts, a)
        graph = None
        if self.with_graphs:
            graph = np.stack([self._graph_nodes(g) for g in self.games])
        if not final_obs:
            final_obs = {a: np.zeros((B, *spec.obs_shapes[a]), np.float32) for a in self._ids}
        return VecStep(
            obs=obs,
            legal=legal,
            acting=acting,
            rewards=rewards,
            terminated=term,
            truncated=trunc,
            done=done,
            final_obs=final_obs,
            episode_return={a: self._ret[a].astype(np.float32) for a in self._ids},
            episode_length=self._len.copy(),
            state=state,
            final_state=final_state,
            final_legal=final_legal or self._no_legal(),
            graph=graph,
            agent_node=self.agent_node or None,
            text=text,
            legal_text=legal_text,
        )

    def _graph_nodes(self, game: Game) -> np.ndarray:
        """``[V, F]`` nodes of ``game``'s entity graph now, of the first graph's shape."""
        graph = game.guarded(game.entity_graph)
        nodes = getattr(graph, "nodes", None)
        if getattr(nodes, "shape", None) != self._node_shape or \
                getattr(nodes, "dtype", None) != np.float32:
            self._graph_refused(game, graph)
        return nodes

    def _graph_refused(self, game: Game, graph: object) -> None:
        """Raise :class:`GameContractError` (one line naming the game and the step) when
        ``graph`` breaks the entity-graph layout (:func:`games.graphs.graph_problem`) or its
        node count differs from the first graph's (learners keep ``[V, F]`` buffers)."""
        problem = graph_problem(graph, self.spec.agent_ids)
        nodes = getattr(graph, "nodes", None)
        if problem is None and self._node_shape and nodes.shape != self._node_shape:
            problem = (f"entity graph has {nodes.shape[0]} nodes, its first had "
                       f"{self._node_shape[0]}; a game's graphs keep one number of nodes")
        if problem is not None:
            raise GameContractError(self.spec.name,
                                    f"step {getattr(game, '_contract_steps', 0)}", problem)

    def close(self) -> None:
        """Close every copy (a native batch: its game); reset and step refuse after it."""
        self._closed = True
        for g in self.games:
            g.close()
