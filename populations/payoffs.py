"""Payoff estimators of PSRO's empirical game: exact expected returns on enumerable
OpenSpiel games (:class:`ExactPayoffs`, sequence form) and means of sampled episodes
(:class:`SampledPayoffs`).

Sampled entries are played in lockstep over a memo of the game's histories
(:class:`populations.lockstep.LockstepSampler`: every episode of every entry of a block at
once) on sequential OpenSpiel games whose members' probabilities depend on their views
alone; other entries are played through ``VectorGame`` one profile at a time. Either way an
entry's value depends only on the run's seed and its profile, so a resumed run (which
recomputes its empirical game in other blocks) records the same payoffs.

A PSRO player is a seat or a team (``PSROConfig.players``): a team's member plays all of
its seats, and the team's payoff is the mean of its seats' returns.

Shape legend: ``P`` PSRO players (seats or teams), ``K_p`` members of player ``p``, ``Z``
terminal histories.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

import games
from games import GameSpec, VectorGame
from games.vector import episode_copies
from marl.core import derive_seed
from marl.progress import tqdm
from marl.train import evaluate
from populations import exploitability as ex
from populations.approx_exploit import policy_vector_kwargs
from populations.lockstep import LockstepSampler, MemoFull, NoProbabilities, memoryless
from populations.run_folder import stop_now, stop_requested

if TYPE_CHECKING:
    from populations.psro_mixtures import Member  # where it is defined (psro re-exports it)

log = logging.getLogger(__name__)


def resolve_game(
    game: str | games.Game | GameSpec, game_kwargs: Mapping[str, Any] | None = None
) -> tuple[str, dict[str, Any]]:
    """``(name, kwargs)`` for ``games.make``, from a name or from a game object or spec whose
    name rebuilds it (OpenSpiel names hold their parameters: ``goofspiel(num_cards=4)``).

    PSRO builds many copies of the game (payoff estimates, RL oracles), so a game object is
    accepted only where its name makes an equal one.

    Raises:
        TypeError: ``game`` is none of these, or its name does not rebuild it.
    """
    if isinstance(game, str):
        return game, dict(game_kwargs or {})
    spec = game.spec if isinstance(game, games.Game) else game
    if not isinstance(spec, GameSpec):
        raise TypeError(
            "game must be a name ('openspiel/kuhn_poker'), a games.Game or a GameSpec; got "
            f"{type(game).__name__}"
        )
    try:
        same = not game_kwargs and games.make(spec.name).spec == spec
    except (games.GameError, ValueError):
        same = False
    if not same:
        raise TypeError(
            f"cannot rebuild copies of the game {spec.name!r} from its name (its keyword "
            "arguments are not part of it); pass the name and game_kwargs instead"
        )
    return spec.name, {}



class PayoffEstimator(Protocol):
    """Fills blocks of the empirical payoff tensor."""

    def add_member(self, member: Member) -> None:
        """Register the next member of ``member.agent``'s population."""

    def block(self, index: Sequence[np.ndarray]) -> np.ndarray:
        """``[P, len(index[0]), ..., len(index[P-1])]`` payoffs of the profiles
        ``index[0] x ... x index[P-1]`` (member indices per seat)."""
        ...


class ExactPayoffs:
    """Exact expected payoffs on enumerable games (sequence form; needs member matrices)."""

    def __init__(self, tree: ex.GameTree) -> None:
        self.tree = tree
        self.reals: list[list[np.ndarray]] = [[] for _ in tree.agents]  # [Z] per member

    def add_member(self, member: Member) -> None:
        p = self.tree.player(member.agent)
        mat = member.matrix
        if mat is None:
            mat = ex.policy_matrix(self.tree, member.policy, member.agent)
        self.reals[p].append(ex.realization(self.tree, p, mat[None])[0])

    def block(self, index: Sequence[np.ndarray]) -> np.ndarray:
        reals = [
            np.stack(r)[np.asarray(i, np.int64)] for r, i in zip(self.reals, index, strict=True)
        ]
        return ex.payoff_block(self.tree, reals)


class SampledPayoffs:
    """Payoffs as mean returns over ``episodes`` simulated episodes per profile; a team's
    payoff is the mean over its seats.

    Args:
        game: a game name (or object / spec, :func:`resolve_game`).
        episodes: episodes per profile.
        num_envs: game copies stepped together where episodes are played through
            ``VectorGame`` (a natively batched game steps every episode at once instead).
        seed: the run's seed; each entry's draws derive from it and the profile.
        game_kwargs: keyword arguments of ``games.make``.
        lockstep: sample entries with :class:`~populations.lockstep.LockstepSampler` where
            it applies (False: always play through ``VectorGame``).
        players: PSRO's players and the seats each plays (``psro.psro_players``; default:
            every seat a player).
    """

    def __init__(
        self,
        game: str | games.Game | GameSpec,
        episodes: int = 1000,
        num_envs: int = 64,
        seed: int = 0,
        game_kwargs: Mapping[str, Any] | None = None,
        lockstep: bool = True,
        players: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.game, self.game_kwargs = resolve_game(game, game_kwargs)
        self.episodes, self.num_envs, self.seed = episodes, num_envs, seed
        probe = games.make(self.game, **self.game_kwargs)
        self.spec = probe.spec
        # a natively batched game (VMAS) plays all of a profile's episodes as copies of one
        # batch, as match jobs do; a stepped game keeps num_envs copies
        self.copies = (episode_copies(probe, episodes, num_envs)
                       if callable(getattr(probe, "batched", None)) else num_envs)
        self.players = {p: tuple(s) for p, s in (players or {a: (a,) for a in
                                                         self.spec.agent_ids}).items()}
        self.player_of = {a: p for p, seats in self.players.items() for a in seats}
        self.members: dict[str, list[Member]] = {p: [] for p in self.players}
        self.sampler: LockstepSampler | None = None
        if lockstep:
            try:
                self.sampler = LockstepSampler(self.game, self.game_kwargs)
            except ValueError as err:  # not a sequential OpenSpiel game: play episodes
                log.debug("sampled payoffs play episodes: %s", err)
        self.lockstep: dict[str, list[bool]] = {p: [] for p in self.players}
        # called with the episodes of each entry as it is sampled (a lockstep block's
        # entries: all of theirs at once); :func:`sampling` sets it
        self.on_entries: Callable[[int], None] | None = None

    def _sampled(self, episodes: int) -> None:
        if self.on_entries is not None:
            self.on_entries(episodes)

    def add_member(self, member: Member) -> None:
        self.members[member.agent].append(member)
        self.lockstep[member.agent].append(memoryless(member.policy))
        if self.sampler is not None:  # a team's member: the next member of each of its seats
            for a in self.players[member.agent]:
                self.sampler.add_member(self.spec.agent_ids.index(a), member.policy)

    def _by_player(self, seat_values: np.ndarray) -> np.ndarray:
        """``[P]`` per player (the mean over its seats) from ``[A]`` per seat."""
        ids = self.spec.agent_ids
        return np.asarray([np.mean([seat_values[ids.index(a)] for a in seats])
                           for seats in self.players.values()])

    def block(self, index: Sequence[np.ndarray]) -> np.ndarray:
        agents = tuple(self.players)
        out = np.zeros((len(agents), *(len(i) for i in index)))
        positions = list(itertools.product(*(range(len(i)) for i in index)))
        profiles = [tuple(int(index[p][j]) for p, j in enumerate(pos)) for pos in positions]
        fast = [
            self.sampler is not None
            and all(self.lockstep[a][k] for a, k in zip(agents, prof, strict=True))
            for prof in profiles
        ]
        chosen = [prof for prof, f in zip(profiles, fast, strict=True) if f]
        values = iter(())
        if chosen:
            assert self.sampler is not None
            seeds = [derive_seed(self.seed, "payoffs", *prof) for prof in chosen]
            # [M, A] member index per seat: each seat plays its player's member
            seat_profiles = np.asarray([[prof[agents.index(self.player_of[a])]
                                         for a in self.spec.agent_ids] for prof in chosen])
            try:
                values = iter(self._by_player(v) for v in
                              self.sampler.payoffs(seat_profiles, seeds, self.episodes))
            except MemoFull as err:  # the game is too large to memoize: play from now on
                log.warning("sampled payoffs: %s; playing episodes from now on", err)
                self.sampler = None
                return self.block(index)
            except NoProbabilities as err:
                player = self.player_of[self.spec.agent_ids[err.seat]]
                log.info("sampled payoffs: member %d of %s is played (%s)", err.member,
                         player, err)
                self.lockstep[player][err.member] = False
                return self.block(index)
            self._sampled(len(chosen) * self.episodes)
        for pos, prof, f in zip(positions, profiles, fast, strict=True):
            if not f:
                out[(slice(None), *pos)] = self.play(prof)
                self._sampled(self.episodes)
            else:
                out[(slice(None), *pos)] = next(values)
        return out

    def play(self, profile: Sequence[int]) -> np.ndarray:
        """``[P]`` mean returns of ``profile`` (member index per player) over ``episodes``
        episodes played through a ``VectorGame`` (``num_envs`` copies, or one batch of
        them all on a natively batched game), the members acting as they do anywhere."""
        players = tuple(self.players)
        chosen = {p: self.members[p][k].policy for p, k in zip(players, profile, strict=True)}
        for p, pol in chosen.items():  # each profile's own draws: a resumed run (fresh
            # policies) estimates the same payoffs as an uninterrupted one
            pol.reseed(derive_seed(self.seed, "payoffs", *profile, p))
        seats = {a: chosen[self.player_of[a]] for a in self.spec.agent_ids}
        seed = int(np.random.SeedSequence([self.seed, *profile]).generate_state(1)[0])
        # the copies carry what any member reads (graphs for a GNN, text for an LLM), as
        # match jobs' copies do
        vg = VectorGame(self.game, self.copies, seed=seed,
                        **policy_vector_kwargs(seats.values()), **self.game_kwargs)
        res = evaluate(vg, seats, self.episodes)
        return self._by_player(np.asarray([res.per_agent[a] for a in self.spec.agent_ids]))


@contextmanager
def sampling(estimator: PayoffEstimator, blocks: Sequence[Sequence[np.ndarray]], desc: str,
             progress: bool) -> Iterator[None]:
    """Around the sampling of ``blocks`` by ``estimator`` (nothing for exact payoffs): a
    progress bar of their episodes under ``progress`` (tqdm on stderr, the overall rate as
    the league's bars), and a CLI's stop request (Ctrl-C, SIGTERM) obeyed between entries.
    A stop drops the entries sampled so far and the resume samples every entry of
    ``blocks`` again (its warning says so): each entry's value depends only on the seed and
    its profile, so the resume samples the same values."""
    if not isinstance(estimator, SampledPayoffs):
        yield
        return
    entries = sum(math.prod(len(i) for i in index) for index in blocks)
    with tqdm(total=entries * estimator.episodes, desc=desc, unit="episode",
              disable=not progress, leave=False, dynamic_ncols=True, smoothing=0) as bar:
        done = [0]

        def sampled(episodes: int) -> None:
            bar.update(episodes)
            done[0] += episodes // estimator.episodes
            if stop_requested() and done[0] < entries:
                log.warning("stopped in %s after %d of %d entries; those %d are dropped and "
                            "the resume samples all %d again (from the same seeds: the same "
                            "values)", desc, done[0], entries, done[0], entries)
                stop_now()

        before, estimator.on_entries = estimator.on_entries, sampled
        try:
            yield
        finally:
            estimator.on_entries = before
