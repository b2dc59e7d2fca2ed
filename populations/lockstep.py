"""Sampled payoffs of many PSRO profiles at once on OpenSpiel games: every episode of every
entry of a payoff block stepped together, over a memo of the game's histories.

Playing an episode through :class:`games.VectorGame` costs about 130 µs on Kuhn poker (the
game adapter's per-copy Python: chance resolution, views, rewards and masks at every step),
and sampled PSRO plays ``episodes`` episodes for each of its ``(K + 1)^P`` entries. Here:

* :class:`HistoryMemo` expands each history the episodes reach once, through pyspiel: its
  kind, the player to move, the chance distribution, the returns of a terminal history,
  and the acting player's *views* (information-state tensor, legal mask, text and
  legal-action texts: what a ``VectorGame(..., with_text=True)`` shows, from the game
  adapter's own code). A step of an episode is then array look-ups.
* A member's action probabilities are computed once per distinct view, by one batched
  ``action_probs`` call on the views first met at a step (:func:`memoryless` policies only:
  their probabilities depend on the views alone, as the exact tools assume too).
* All episodes of all entries of a block advance together as ``[E]`` arrays. Each entry
  draws from its own generator (one uniform per running episode per step), so its payoffs
  depend only on its seed and profile, not on the block it is computed in: a resumed PSRO,
  which recomputes the empirical game in other blocks, gets the same values.

Episodes are still sampled one at a time from the game's chance distribution and the
policies' probabilities, so an entry is a mean of ``episodes`` independent returns with the
same distribution as playing them through ``VectorGame``; only the bookkeeping is shared.
The memo holds the histories met, so it suits games whose played part fits in memory
(``max_cells``: node count times the widest action/chance-outcome range); past that,
:class:`MemoFull` tells the caller to play episodes instead.

Shape legend: ``E`` episodes of a block, ``M`` entries (profiles), ``P`` players, ``N``
distinct actions, ``C`` chance outcomes, ``A = max(N, C)``, ``S`` views of one player.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pyspiel

import games
from games import VecStep
from games.openspiel import OpenSpielGame
from marl.core import Policy
from marl.train import EpisodeTooLongError

log = logging.getLogger(__name__)

MAX_CELLS = 1 << 24
"""Default memo budget: histories times ``A`` (16M cells: 64 MB of child indices)."""

KEEP_STATES = 100_000
"""Histories whose pyspiel state is kept to expand their children; later ones are rebuilt
from their actions when a child is first reached (a state can take kilobytes)."""

TERMINAL, CHANCE, DECISION = 0, 1, 2


class MemoFull(RuntimeError):
    """The memo cannot go on (past its ``max_cells`` budget, or a chance outcome id outside
    ``max_chance_outcomes()``): play episodes instead."""


class NoProbabilities(RuntimeError):
    """Member ``member`` of seat ``seat`` has no action probabilities."""

    def __init__(self, seat: int, member: int, why: str) -> None:
        super().__init__(why)
        self.seat, self.member = seat, member


def views_batch(
    spec: games.GameSpec,
    agent: str,
    obs: np.ndarray,
    legal: np.ndarray,
    texts: Sequence[str],
    legal_text: Sequence[Sequence[str]],
) -> VecStep:
    """A synthetic VecStep of ``B`` copies in which only ``agent`` acts, seeing ``obs [B, O]``,
    ``legal [B, N]``, ``texts`` and ``legal_text`` (as a ``VectorGame(..., with_text=True)``
    shows them); the other agents see zeros and do not act."""
    B, agents = len(obs), spec.agent_ids
    views = {a: np.zeros((B, *spec.obs_shapes[a]), np.float32) for a in agents}
    masks = {a: np.zeros((B, spec.action_spaces[a].n), bool) for a in agents}
    acting = {a: np.zeros(B, bool) for a in agents}
    views[agent], masks[agent], acting[agent] = obs, legal, np.ones(B, bool)
    text = {a: [""] * B for a in agents}
    legal_texts: dict[str, list[list[str]]] = {a: [[] for _ in range(B)] for a in agents}
    text[agent] = list(texts)
    legal_texts[agent] = [list(t) for t in legal_text]
    zeros = {a: np.zeros(B, np.float32) for a in agents}
    false = {a: np.zeros(B, bool) for a in agents}
    return VecStep(
        obs=views,
        legal=masks,
        acting=acting,
        rewards=zeros,
        terminated=false,
        truncated={a: np.zeros(B, bool) for a in agents},
        done=np.zeros(B, bool),
        final_obs={a: np.zeros_like(o) for a, o in views.items()},
        episode_return={a: np.zeros(B, np.float32) for a in agents},
        episode_length=np.zeros(B, np.int64),
        text=text,
        legal_text=legal_texts,
    )


def normalized_probs(probs: np.ndarray, legal: np.ndarray, what: str) -> np.ndarray:
    """``probs [B, N]`` restricted to the ``legal [B, N]`` actions and renormalized
    (uniform where a policy puts no mass on legal actions, with a warning naming ``what``)."""
    out = np.where(legal, np.nan_to_num(np.clip(probs, 0.0, None)), 0.0)
    mass = out.sum(1, keepdims=True)
    bad = mass[:, 0] <= 0
    if bad.any():
        log.warning("%s has no mass on legal actions at %d states; uniform there", what,
                    int(bad.sum()))
        out[bad] = legal[bad]
        mass = out.sum(1, keepdims=True)
    return out / mass


def memoryless(policy: Policy) -> bool:
    """Whether ``policy``'s action probabilities are a function of the views alone, so they
    can be computed once per view: not recurrent (a GRU state per copy), not reading the
    global state or graphs (the memo keeps the acting player's views only), with
    ``action_probs``, and not an LLM (whose generate-mode probabilities are a sampled
    estimate, not what ``act`` draws from)."""
    inner = getattr(policy, "policy", policy)  # a greedy wrapper's policy
    if getattr(inner, "memory", None) is not None or inner.meta.kind == "llm":
        return False
    if set(policy.meta.inputs) - {"obs", "text"}:
        return False
    return type(policy).action_probs is not Policy.action_probs


def pick(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``[B]`` index drawn from each row of ``probs [B, W]`` with uniforms ``u [B]`` (inverse
    CDF; an action of probability 0 is never drawn)."""
    cdf = np.cumsum(probs, 1)
    idx = (cdf <= (u * cdf[:, -1])[:, None]).sum(1)
    return np.minimum(idx, probs.shape[1] - 1)


class _Views:
    """The distinct views of one player met so far (``S`` of them)."""

    def __init__(self) -> None:
        self.index: dict[bytes, int] = {}
        self.obs: list[np.ndarray] = []
        self.legal: list[np.ndarray] = []
        self.texts: list[str] = []
        self.legal_text: list[list[str]] = []

    def __len__(self) -> int:
        return len(self.texts)


class HistoryMemo:
    """The histories of an OpenSpiel game that episodes reached, expanded once each.

    Arrays over histories (nodes; node 0 is the initial state): ``kind`` (terminal, chance,
    decision), ``player`` to move, ``aux`` (a decision node's view index for its player, a
    chance node's row of ``chance``), ``child [n, A]`` (-1 until reached), ``value [n, P]``
    (returns of terminal histories), ``parent`` / ``via`` (the history it extends, by which
    action) and ``chance [c, C]`` (outcome probabilities by action id). The pyspiel states of
    the first :data:`KEEP_STATES` histories are kept to expand their children; later ones are
    replayed from their actions.

    Raises:
        ValueError: simultaneous-move games (their joint actions are not handled here).
    """

    def __init__(self, game: OpenSpielGame, max_cells: int = MAX_CELLS) -> None:
        if game.spec.simultaneous:
            raise ValueError(f"{game.spec.name} is a simultaneous-move game")
        self.game, self.pg = game, game.pyspiel_game
        self.P = self.pg.num_players()
        self.N = self.pg.num_distinct_actions()
        self.C = max(self.pg.max_chance_outcomes(), 1)
        self.A = max(self.N, self.C)
        self.max_nodes = max(1, max_cells // self.A)
        self.max_len = self.pg.max_history_length()
        self.views = [_Views() for _ in range(self.P)]
        self.n = 0
        self.kind = np.zeros(0, np.int8)
        self.player, self.aux = np.zeros(0, np.int32), np.zeros(0, np.int64)
        self.child = np.zeros((0, self.A), np.int32)
        self.parent, self.via = np.zeros(0, np.int32), np.zeros(0, np.int32)
        self.value = np.zeros((0, self.P))
        self._grow(256)
        self.chance = np.zeros((0, self.C))
        self._chance_rows: list[np.ndarray] = []
        self.states: list[pyspiel.State] = []
        self._expand()

    def _grow(self, cap: int) -> None:
        """Room for ``cap`` nodes (the arrays keep their rows; new rows are unset)."""
        def grown(old: np.ndarray, fill: float) -> np.ndarray:
            new = np.full((cap, *old.shape[1:]), fill, old.dtype)
            new[: len(old)] = old
            return new

        self.kind = grown(self.kind, TERMINAL)
        self.player, self.aux = grown(self.player, -1), grown(self.aux, -1)
        self.child, self.value = grown(self.child, -1), grown(self.value, 0.0)
        self.parent, self.via = grown(self.parent, -1), grown(self.via, -1)

    def _expand(self, parent: int = -1, via: int = -1) -> int:
        """Add ``parent``'s child after action ``via`` (the initial history when ``parent``
        is -1) as a node; its index.

        Raises:
            games.GameCodeError: a user's pyspiel game raised in its own code (``child``,
                ``is_terminal``, ``returns``, ``chance_outcomes``, ``current_player``):
                one line naming the game, the call, the history and the user's line.
        """
        try:
            state = self.pg.new_initial_state() if parent < 0 else self.state(parent).child(via)
            return self._add(state, parent, via)
        except (MemoFull, games.GameError, pyspiel.SpielError):
            raise
        except Exception:  # a game written in Python raised: asked again, its call is named
            # (nothing is asked on the way: a memo that works pays nothing for this)
            at = self.history(parent)
            self.game.replay_node(self.pg, at)  # the parent's calls, child(via) among them
            if parent >= 0:
                self.game.replay_node(self.pg, [*at, via])  # the child's own
            raise

    def history(self, n: int) -> list[int]:
        """The actions from the initial history to node ``n`` (none for ``n`` = -1)."""
        path = []
        while n > 0:
            path.append(int(self.via[n]))
            n = int(self.parent[n])
        return path[::-1]

    def _add(self, state: pyspiel.State, parent: int = -1, via: int = -1) -> int:
        """Append the history ``state`` (``parent``'s child after action ``via``) as a
        node; its index."""
        if self.n >= self.max_nodes:
            raise MemoFull(f"{self.game.spec.name}: more than {self.max_nodes} histories met")
        if self.n == len(self.kind):
            self._grow(min(2 * self.n, self.max_nodes))
        i = self.n
        self.n += 1
        self.parent[i], self.via[i] = parent, via
        if i < KEEP_STATES:
            self.states.append(state)
        if state.is_terminal():
            self.kind[i], self.value[i] = TERMINAL, state.returns()
        elif state.is_chance_node():
            row = np.zeros(self.C)
            for a, prob in state.chance_outcomes():
                if not 0 <= a < self.C:  # outside OpenSpiel's convention: play instead
                    raise MemoFull(f"{self.game.spec.name}: chance outcome {a} is not below "
                                   f"max_chance_outcomes()={self.C}")
                row[a] = prob
            self.kind[i], self.aux[i] = CHANCE, len(self._chance_rows)
            self._chance_rows.append(row / row.sum())
        else:
            p = state.current_player()
            self.kind[i], self.player[i], self.aux[i] = DECISION, p, self._view(p, state)
        return i

    def _view(self, p: int, state: pyspiel.State) -> int:
        """Index of the view player ``p`` has at ``state`` (the game adapter's own views)."""
        agent = self.game.spec.agent_ids[p]
        g = self.game
        g.set_state(state)
        # the game's code (a user's pyspiel game's observer) asked outside reset/step: its bug
        # is one line naming the game, the call, the history and the user's line
        at = f" at history {state.history()}"
        obs, legal = g.guarded(g.observe, agent, note=at), g.guarded(g.legal_mask, agent, note=at)
        text = g.guarded(g.text_observation, agent, note=at)
        key = obs.tobytes() + legal.tobytes() + text.encode()
        views = self.views[p]
        s = views.index.get(key)
        if s is None:
            s = views.index[key] = len(views)
            views.obs.append(obs)
            views.legal.append(legal)
            views.texts.append(text)
            views.legal_text.append(g.guarded(g.legal_action_texts, agent, note=at))
        return s

    def state(self, n: int) -> pyspiel.State:
        """The pyspiel state of node ``n`` (kept, or replayed from the initial state)."""
        if n < len(self.states):
            return self.states[n]
        path = []
        while n >= len(self.states):
            path.append(int(self.via[n]))
            n = int(self.parent[n])
        state = self.states[n].clone()
        for a in reversed(path):
            state.apply_action(a)
        return state

    def chance_probs(self, nodes: np.ndarray) -> np.ndarray:
        """``[B, C]`` outcome probabilities of chance ``nodes``."""
        if len(self.chance) < len(self._chance_rows):
            self.chance = np.asarray(self._chance_rows)
        return self.chance[self.aux[nodes]]

    def step(self, nodes: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """``[B]`` children of ``nodes`` after ``actions``, expanding those not yet met."""
        child = self.child[nodes, actions]
        miss = child < 0
        if miss.any():
            for code in np.unique(nodes[miss] * self.A + actions[miss]):
                n, a = divmod(int(code), self.A)
                self.child[n, a] = self._expand(n, a)
            child = self.child[nodes, actions]
        return child


class LockstepSampler:
    """Mean returns of profiles of members, their episodes stepped together (module doc).

    Args:
        game: an OpenSpiel game name for ``games.make``.
        game_kwargs: its keyword arguments.
        max_cells: the memo's budget (:class:`MemoFull` past it).

    Raises:
        ValueError: the game is not a sequential OpenSpiel game.
    """

    def __init__(self, game: str, game_kwargs: dict | None = None,
                 max_cells: int = MAX_CELLS) -> None:
        made = games.make(game, **(game_kwargs or {}))
        if not isinstance(made, OpenSpielGame):
            raise ValueError(f"{game} is not an OpenSpiel game")
        self.memo = HistoryMemo(made, max_cells)
        self.spec = made.spec
        P, N = self.memo.P, self.memo.N
        self.policies: list[list[Policy]] = [[] for _ in range(P)]
        self.tables: list[list[np.ndarray]] = [[] for _ in range(P)]  # [S, N] per member
        self.known: list[list[np.ndarray]] = [[] for _ in range(P)]  # [S] bool per member
        self._N = N

    def add_member(self, seat: int, policy: Policy) -> None:
        """Append ``policy`` as the next member of seat ``seat``."""
        self.policies[seat].append(policy)
        self.tables[seat].append(np.zeros((0, self._N)))
        self.known[seat].append(np.zeros(0, bool))

    def _probs(self, p: int, k: int, views: np.ndarray) -> np.ndarray:
        """``[B, N]`` probabilities of member ``k`` of seat ``p`` at view indices ``views``,
        computing those not yet known with one ``action_probs`` call."""
        seen = self.memo.views[p]
        table, known = self.tables[p][k], self.known[p][k]
        if len(table) < len(seen):  # views met since: room for them
            table = np.concatenate([table, np.zeros((len(seen) - len(table), self._N))])
            known = np.concatenate([known, np.zeros(len(seen) - len(known), bool)])
        new = np.unique(views[~known[views]])
        if new.size:
            agent, policy = self.spec.agent_ids[p], self.policies[p][k]
            legal = np.asarray([seen.legal[s] for s in new])
            vs = views_batch(self.spec, agent, np.asarray([seen.obs[s] for s in new]), legal,
                             [seen.texts[s] for s in new], [seen.legal_text[s] for s in new])
            try:
                probs = np.asarray(policy.action_probs(agent, vs), np.float64)
            except NotImplementedError as err:
                raise NoProbabilities(p, k, str(err)) from None
            table[new] = normalized_probs(probs[:, : self._N], legal,
                                          f"{self.spec.name}: policy {policy.meta.kind}")
            known[new] = True
        self.tables[p][k], self.known[p][k] = table, known
        return table[views]

    def payoffs(self, profiles: np.ndarray, seeds: Sequence[int], episodes: int) -> np.ndarray:
        """``[M, P]`` mean returns of ``episodes`` episodes of each profile
        (``profiles [M, P]`` member index per seat; ``seeds[m]`` seeds entry ``m``'s draws).

        Raises:
            MemoFull: the memo's budget ran out (nothing is returned).
            NoProbabilities: a member has no ``action_probs``.
            EpisodeTooLongError: an episode outlived the game's longest history.
        """
        memo, M = self.memo, len(profiles)
        entry = np.repeat(np.arange(M), episodes)  # [E]
        members = np.asarray(profiles, np.int64)[entry]  # [E, P]
        gens = [np.random.default_rng(int(s)) for s in seeds]
        node = np.zeros(len(entry), np.int64)  # every episode at the initial history
        total = np.zeros((M, memo.P))
        alive = np.arange(len(entry))
        for _ in range(memo.max_len + 1):
            n = node[alive]
            kind = memo.kind[n]
            end = kind == TERMINAL
            if end.any():
                for q in range(memo.P):
                    total[:, q] += np.bincount(entry[alive[end]], memo.value[n[end], q], M)
                alive, n, kind = alive[~end], n[~end], kind[~end]
            if not alive.size:
                return total / episodes
            # one uniform per running episode from its entry's own stream (alive is sorted,
            # so each entry's episodes are contiguous and in order)
            counts = np.bincount(entry[alive], minlength=M)
            u = np.concatenate([gens[m].random(c) for m, c in enumerate(counts) if c])
            action = np.zeros(alive.size, np.int64)
            chance = np.flatnonzero(kind == CHANCE)
            if chance.size:
                action[chance] = pick(memo.chance_probs(n[chance]), u[chance])
            decide = np.flatnonzero(kind == DECISION)
            seat = memo.player[n[decide]]
            for p in np.unique(seat):
                rows = decide[seat == p]
                who = members[alive[rows], p]
                for k in np.unique(who):
                    r = rows[who == k]
                    action[r] = pick(self._probs(int(p), int(k), memo.aux[n[r]]), u[r])
            node[alive] = memo.step(n, action)
        raise EpisodeTooLongError(
            f"game {self.spec.name!r}: an episode passed the game's longest history "
            f"({memo.max_len} actions) in sampled payoffs")
