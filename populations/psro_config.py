"""PSRO's settings (:class:`PSROConfig`) and what is decided from them before a run: who
PSRO's players are (:func:`psro_players`: seats, or teams of several seats), whether the
exact tools can serve the game with them (:func:`why_not_exact`: what ``payoffs="auto"``
and ``oracle="auto"`` decide by), and the one-line refusal of exact tools for a team
(:func:`check_exact_players`). :mod:`populations.psro` runs PSRO and re-exports these names.
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import games
from games import GameSpec
from marl.configs import did_you_mean
from populations.meta_solvers import available_meta_solvers, get_meta_solver, needs_full_game

RESPONSE_TARGETS = ("meta", "exploiter")
"""``PSROConfig.response_target`` values besides meta-solver names."""

PLAYERS = ("auto", "seats", "teams")
"""``PSROConfig.players`` values: who PSRO's players are (see the module docstring)."""


def psro_players(spec: GameSpec, players: str = "auto") -> dict[str, tuple[str, ...]]:
    """PSRO's players, each with the seats it plays: ``{seat: (seat,)}`` for ``"seats"``,
    ``{team: its seats}`` (in the game's team order) for ``"teams"``; ``"auto"`` is teams
    when the game has two or more teams and one of them has several seats, else seats.
    Teams of one seat each are the seats (named by them), whatever ``players`` says. A game
    of one team and several seats (hanabi, simple_spread) has its seats as players under
    ``"auto"``: each seat's population best-responds to the others' mixtures.

    Raises:
        ValueError: one line, for an unknown value, a game of one seat (no opponent to
            respond to: PSRO on it only picked among one player's own policies), or
            ``"teams"`` on a game of one team.
    """
    if players not in PLAYERS:
        raise ValueError(f"population.psro.players={players!r} unknown; choose one of "
                         f"{list(PLAYERS)}{did_you_mean(players, PLAYERS)}")
    if len(spec.agent_ids) < 2:
        raise ValueError(f"PSRO needs two or more players; {spec.name} has one seat "
                         f"({list(spec.agent_ids)}); accepted: a game of two or more seats; "
                         "population=none trains a one-player game")
    teams = {t: tuple(a.id for a in spec.agents if a.team == t) for t in spec.teams}
    if players == "teams" and len(teams) < 2:
        raise ValueError(f"population.psro.players='teams' needs two or more teams; "
                         f"{spec.name} has one ({spec.teams[0]!r}: {list(spec.agent_ids)}); "
                         "use players=seats")
    multi = any(len(seats) > 1 for seats in teams.values())
    if players == "seats" or not multi or len(teams) < 2:
        return {a: (a,) for a in spec.agent_ids}
    return teams


def one_team_note(spec: GameSpec) -> str | None:
    """The warning for PSRO on a game whose seats are all one team (vmas/dispersion, hanabi):
    its players are the seats (:func:`psro_players`), so each seat's population
    best-responds to its teammates' mixtures, which is no game between opponents (a league
    refuses such a game); None for a game of two or more teams."""
    if len(spec.teams) != 1:
        return None
    return (f"PSRO on {spec.name}: its {len(spec.agent_ids)} seats are one team "
            f"({spec.teams[0]!r}), so each seat's population best-responds to its teammates' "
            "mixtures, not to opponents; population=none trains the team's seats together")


EXACT_WHY = ("for PSRO's exact tools (payoffs='auto' or 'exact', an exact oracle, nash_conv: "
             "they need a small game of perfect recall)")
"""The reason :func:`exact_walk` gives a walk the Python API asks for without its own."""


def exact_walk(why: str) -> contextlib.AbstractContextManager[None]:
    """:func:`populations.exploitability.exact_check` for the walks of PSRO's exact tools
    built through the Python API (:class:`populations.psro.PSRO`, :func:`why_not_exact`,
    ``ExactBestResponse``): a game of imperfect recall is refused at its first sign, as
    selfplay-train's checks refuse it, not after the whole tree was walked. Inside a walk
    of a caller's own (selfplay-train's, whose reason names its keys) that reason stands."""
    from populations import exploitability as ex  # torch: PSROConfig is checked before it

    return contextlib.nullcontext() if ex.in_exact_check() else ex.exact_check(why)


def why_not_exact(game_obj: games.Game, seats_of: Mapping[str, Sequence[str]]) -> str | None:
    """Why exact payoffs and best responses cannot serve ``game_obj`` with these players
    (None: they can); what ``payoffs="auto"`` / ``oracle="auto"`` decide by.

    Raises:
        games.GameContractError: the game's own code failed while the exact tools walked it
            (:class:`games.GameCodeError`, one line naming the call and the user's line): a
            bug to fix, which sampled payoffs would meet too, not a reason to use them.
    """
    from games.openspiel import OpenSpielGame  # pyspiel: not for a config check or other games

    if not isinstance(game_obj, OpenSpielGame):
        return f"{game_obj.spec.name} is not an OpenSpiel game"
    team = next((p for p, seats in seats_of.items() if len(seats) > 1), None)
    if team is not None:
        return f"team {team!r} has several seats (exact tools are per seat)"
    from populations import exploitability as ex  # torch: PSROConfig is checked before it

    try:
        with exact_walk(EXACT_WHY):  # a forgetful game refused at its first sign
            ex.require_perfect_recall(ex.game_tree(game_obj))
    except games.GameContractError:  # a bug of the game's code (GameCodeError, a ValueError
        raise  # too): it stops the run in one line, not a reason to sample payoffs instead
    except ValueError as err:
        return str(err)
    return None


def check_exact_players(
    seats_of: Mapping[str, Sequence[str]], payoffs: str, exact_oracle: bool,
    uses_full_game: bool | Sequence[str], where: str = "PSRO", *, players: str | None = None,
    setting: Callable[[str, object], str] | None = None,
) -> None:
    """Refuse, in one line, exact tools for a team of several seats: an exact best response
    of such a team is a joint one (the team's seats coordinating), which the per-seat exact
    tools do not compute. The line names every setting to change, so that following it runs
    (a full-game meta-solver or target needs exact payoffs too): ``uses_full_game`` is
    :func:`full_game_settings`' fields (True: both may be), ``players`` the value set
    (``auto`` is said to have chosen teams), ``setting(name, value)`` names a setting as the
    caller's user writes it (default: ``population.psro.name=value`` where ``where`` is
    ``population.psro``, else ``name='value'``)."""
    teams = [p for p, seats in seats_of.items() if len(seats) > 1]
    if not teams:
        return
    used = [what for what, on in (("payoffs=exact", payoffs == "exact"),
                                  ("oracle=exact", exact_oracle),
                                  ("a full-game meta-solver/target", bool(uses_full_game)))
            if on]
    if not used:
        return
    keys = where == "population.psro"
    if setting is None:
        setting = ((lambda k, v: f"population.psro.{k}={v}") if keys
                   else (lambda k, v: f"{k}={v!r}"))
    full = (["meta_solver", "response_target"] if uses_full_game is True
            else list(uses_full_game or ()))
    fixes = [setting("payoffs", "sampled")] if payoffs == "exact" else []
    if exact_oracle:
        fixes.append("population.oracle=rl" if keys else "an RL oracle (RLOracle)")
    fixes += [setting(k, "prd" if k == "meta_solver" else "meta") for k in full]
    chose = f"{setting('players', 'auto')} chose teams: " if players == "auto" else ""
    raise ValueError(
        f"{where}: {chose}players=teams ({teams[0]!r} plays {list(seats_of[teams[0]])}) "
        f"cannot use {' and '.join(used)}: exact best responses and payoffs are per seat, "
        f"a team needs a joint one; use {' '.join(fixes)}, or {setting('players', 'seats')}")


@dataclass(frozen=True)
class PSROConfig:
    """PSRO settings."""

    meta_solver: str = "nash"  # output mixtures: name in populations.meta_solvers (nash, prd,
    # uniform, least_exploitable)
    response_target: str = "meta"  # what best responses answer: meta (the meta-strategy),
    # exploiter (least_exploitable's dual), or a meta-solver name
    payoffs: str = "exact"  # exact (enumerable OpenSpiel games) | sampled (simulation) |
    # auto (exact where it can be computed, see why_not_exact; else sampled)
    episodes_per_entry: int = 1000  # sampled payoffs: episodes per profile
    num_envs: int = 64  # sampled payoffs played through VectorGame: copies stepped together
    # (entries sampled in lockstep, populations.lockstep, step all their episodes at once)
    nash_conv: bool = True  # exact NashConv of the meta-mixture each iteration, when enumerable
    seed: int = 0  # seeds oracles, sampled payoffs and initial policies
    players: str = "auto"  # PSRO's players: seats | teams (a population per team, each
    # member playing all of its seats) | auto (teams when a team has several seats)
    stop_nash_conv: float | None = None  # stop after the first iteration whose exact NashConv
    # is <= this (None: run every iteration); needs nash_conv and an exact NashConv

    def __post_init__(self) -> None:
        stop = self.stop_nash_conv
        if stop is not None and (isinstance(stop, bool) or not isinstance(stop, int | float)
                                 or not stop >= 0):
            raise ValueError(f"population.psro.stop_nash_conv={stop!r} refused; accepted: a "
                             "number >= 0 (stop once NashConv is at most it) or null (off)")
        if stop is not None and not self.nash_conv:
            raise ValueError(f"population.psro.stop_nash_conv={stop!r} needs the NashConv "
                             "PSRO computes each iteration, which population.psro.nash_conv="
                             "false turns off; set nash_conv=true or stop_nash_conv=null")
        # episodes_per_entry=0 failed in the sampled-payoff bar (ZeroDivisionError); num_envs
        # is a size the run reads (a negative count failed with numpy's words after the run
        # folder, 2.5 in numpy's shapes)
        for name in ("episodes_per_entry", "num_envs"):  # 2.5 and True refused too
            n = getattr(self, name)
            if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
                raise ValueError(f"population.psro.{name}={n!r}; expected an integer >= 1")
        if self.players not in PLAYERS:
            raise ValueError(f"population.psro.players={self.players!r} unknown; choose one "
                             f"of {list(PLAYERS)}{did_you_mean(self.players, PLAYERS)}")
        if self.payoffs not in ("auto", "exact", "sampled"):
            raise ValueError(
                f"payoffs={self.payoffs!r} unknown; choose one of ['auto', 'exact', 'sampled']"
                f"{did_you_mean(self.payoffs, ('auto', 'exact', 'sampled'))}"
            )
        get_meta_solver(self.meta_solver)  # fail early on an unknown name
        targets = [*RESPONSE_TARGETS, *available_meta_solvers()]
        if self.response_target not in targets:
            raise ValueError(
                f"response_target={self.response_target!r} unknown; choose one of "
                f"{targets}"
                f"{did_you_mean(self.response_target, targets)}"
            )
        if self.uses_full_game and self.payoffs == "sampled":
            other = " and ".join(f"{k}={'prd' if k == 'meta_solver' else 'meta'!r}" for k in
                                 full_game_settings(self.meta_solver, self.response_target))
            raise ValueError(
                f"meta_solver={self.meta_solver!r} with response_target="
                f"{self.response_target!r} needs the exact full game; not "
                f"applicable with payoffs={self.payoffs!r} (use payoffs='exact', or {other} "
                "with sampled payoffs)"
            )

    @property
    def uses_full_game(self) -> bool:
        """Whether the meta-strategies or the response targets need the exact full game."""
        return bool(full_game_settings(self.meta_solver, self.response_target))


def full_game_settings(meta_solver: str, response_target: str) -> list[str]:
    """Which of ``meta_solver`` and ``response_target`` (by field name) need the exact full
    game (a full-game meta-solver such as ``least_exploitable``, or ``exploiter``)."""
    return [k for k, v in (("meta_solver", meta_solver), ("response_target", response_target))
            if v == "exploiter" or (v not in RESPONSE_TARGETS and needs_full_game(v))]


PAYOFFS_TOLD = 4
"""Sampled payoffs planned to play more than this many times the frames the best responses
train are told at start as dominating the run (:func:`payoff_plan`)."""


@dataclass(frozen=True)
class PayoffPlan:
    """The sampled payoff episodes a PSRO run plans, as its start lines tell them."""

    episodes: int  # over the run: episodes_per_entry for each entry of the final table
    entries: int  # entries of the final table: (1 + iterations) members per player
    line: str  # the start line: how many episodes, and from what
    warning: str | None  # when their frames will dominate the run (None: they will not)


def payoff_plan(players: int, iterations: int, episodes_per_entry: int,
                episode_frames: float, oracle_frames: int) -> PayoffPlan:
    """The payoff episodes of a PSRO run of ``iterations`` iterations on ``players`` players
    with sampled payoffs: the table grows by one member per player and iteration, and every
    new entry is sampled with ``episodes_per_entry`` episodes, so the run samples
    ``episodes_per_entry * (1 + iterations) ** players`` episodes (fewer if
    ``stop_nash_conv`` stops it early; a resume samples the iterations done again). With
    ``episode_frames`` frames an episode (:func:`random_episode_frames`), a warning when they
    play more than :data:`PAYOFFS_TOLD` times the ``oracle_frames`` the best responses train
    (``population.oracle_frames`` for each player and iteration; 0: an exact oracle, which
    trains nothing to compare with)."""
    entries = (1 + iterations) ** players
    episodes = episodes_per_entry * entries
    line = (f"PSRO: sampled payoffs play about {episodes:,} episodes over the run "
            f"(population.psro.episodes_per_entry={episodes_per_entry} for each of the "
            f"{entries:,} entries of the final table: {1 + iterations} members per player, "
            f"{players} players)")
    trained = oracle_frames * players * iterations
    played = int(episodes * episode_frames)
    warning = None
    if trained and played > PAYOFFS_TOLD * trained:
        warning = (f"PSRO: the sampled payoffs will play about {played:,} frames (about "
                   f"{episode_frames:.3g} an episode in random play), {played / trained:.0f}x "
                   f"the {trained:,} the best responses train (population.oracle_frames="
                   f"{oracle_frames} x {players} players x {iterations} iterations): most of "
                   "the run would go to payoffs; lower population.psro.episodes_per_entry")
    return PayoffPlan(episodes, entries, line, warning)


def random_episode_frames(game: str, game_kwargs: Mapping[str, object] | None = None,
                          episodes: int = 8, seed: int = 0) -> float:
    """Mean frames (steps of one copy) of ``episodes`` episodes of ``game`` in uniformly
    random play, stepped together: an estimate of a payoff episode's length for
    :func:`payoff_plan` (a game's ``max_steps`` is only a bound: 1,000 for hold'em)."""
    return float(random_episodes(game, game_kwargs, episodes, seed).frames_E.mean())


@dataclass(frozen=True)
class RandomEpisodes:
    """Episodes of uniformly random play, one per copy (:func:`random_episodes`)."""

    agents: tuple[str, ...]  # the game's seats, in the order of ``returns_EA``'s columns
    frames_E: Any  # [E] steps of each episode
    returns_EA: Any  # [E, A] each seat's return of each episode


def random_episodes(game: str, game_kwargs: Mapping[str, object] | None = None,
                    episodes: int = 8, seed: int = 0) -> RandomEpisodes:
    """The first episode of each of ``episodes`` copies of ``game`` in uniformly random play,
    stepped together (an episode cut at ``max_steps`` counts what it played)."""
    import numpy as np

    from marl.train import RandomPolicy  # torch: only where a run plans its payoffs

    vg = games.VectorGame(game, episodes, seed=seed, **dict(game_kwargs or {}))
    try:
        agents = tuple(vg.spec.agent_ids)
        policy = RandomPolicy(vg.spec, seed)
        vs = vg.reset()
        frames, done = np.zeros(episodes), np.zeros(episodes, dtype=bool)
        returns = np.zeros((episodes, len(agents)))
        for _ in range(vg.spec.max_steps):
            vs = vg.step({a: policy.act(a, vs) for a in agents})
            frames += ~done
            ended = np.asarray(vs.done, dtype=bool) & ~done
            for i, a in enumerate(agents):
                returns[ended, i] = np.asarray(vs.episode_return[a])[ended]
            done |= ended
            if done.all():
                break
        return RandomEpisodes(agents, frames, returns)
    finally:
        vg.close()


def _general_sum_in_play(game: str, game_kwargs: Mapping[str, object] | None,
                         seats_of: Mapping[str, Sequence[str]], seed: int) -> str | None:
    """Why ``nash`` cannot solve the payoffs of PSRO's ``seats_of`` on ``game``, a game that
    does not declare itself zero-sum, as seen in :func:`random_episodes` (None: their
    players' payoffs, a team's the mean over its seats, summed to one constant in every
    episode). Sampled payoffs are means of such episodes, so sums that vary leave their
    tables general-sum; exact ones could stay constant-sum only where every profile's
    expected sum is the same while its episodes' sums are not."""
    import numpy as np

    from populations.meta_solvers import is_constant_sum

    play = random_episodes(game, game_kwargs, seed=seed)
    ended = play.frames_E > 0
    payoffs_PE = np.stack([play.returns_EA[ended][:, [play.agents.index(a) for a in seats]]
                           .mean(1) for seats in seats_of.values()])
    if is_constant_sum(payoffs_PE):
        return None
    total = payoffs_PE.sum(0)
    return (f"is general-sum (its players' returns summed to {total.min():.3g} to "
            f"{total.max():.3g} in {payoffs_PE.shape[1]} random episodes)")


def settings_refusal(
    game_obj: games.Game, seats_of: Mapping[str, Sequence[str]], payoffs: str,
    meta_solver: str, response_target: str, setting: Callable[[str, object], str],
    chose: str | None = None, game: tuple[str, Mapping[str, object] | None] | None = None,
    seed: int = 0,
) -> str | None:
    """The one line refusing PSRO's settings on ``game_obj`` with these players, before any
    work, naming every setting that cannot run and the value that can (None: they can run as
    far as the game's kind and sides tell; the meta-solvers still check each table):
    ``payoffs='exact'`` on a game that is not OpenSpiel's; a full-game meta-solver or
    response target (``least_exploitable``, ``exploiter``) without an exactly known 2-player
    constant-sum game; ``nash`` (as either) with other than 2 players, or on a game that
    does not declare itself zero-sum and is general-sum in random play. ``payoffs`` is the
    value the run uses, ``chose`` why ``payoffs='auto'`` chose sampled (None: the user set
    it); ``setting(name, value)`` names a setting as the caller's user writes it
    (``population.psro.payoffs=sampled``); ``game``: the game's name and arguments for the
    random play (default: ``game_obj``'s name)."""
    from games.openspiel import OpenSpielGame  # pyspiel: not for a config check or other games

    spec = game_obj.spec
    problems: list[str] = []
    use: dict[str, str] = {}
    if payoffs == "exact" and not isinstance(game_obj, OpenSpielGame):
        problems.append(f"{setting('payoffs', 'exact')} needs an OpenSpiel game and "
                        f"{spec.name} is not one")
        use["payoffs"] = payoffs = "sampled"
    asked = {"meta_solver": meta_solver, "response_target": response_target}
    nash_said: list[str | None] = []

    def why_not_nash() -> str | None:  # asked at most once: it may play random episodes
        if not nash_said:
            nash_said.append(
                f"PSRO has {len(seats_of)} players" if len(seats_of) != 2 else
                None if spec.zero_sum else _general_sum_in_play(
                    *(game or (spec.name, None)), seats_of, seed))
        return nash_said[0]

    full = full_game_settings(meta_solver, response_target)
    why_full = _why_no_full_game(game_obj, seats_of, payoffs, setting, chose) if full else None
    if why_full:
        said = " and ".join(setting(k, asked[k]) for k in full)
        problems.append(f"{said} need{'s' if len(full) == 1 else ''} the exactly known "
                        f"full game of a 2-player zero-sum game, and {why_full}")
        for k in full:
            why = why_not_nash()
            use[k] = "meta" if k == "response_target" else "prd" if why else "nash"
    for k, v in asked.items():
        if k not in use and v == "nash" and why_not_nash():
            why = why_not_nash()
            said = why if why.startswith("PSRO ") else f"{spec.name} {why}"
            problems.append(f"{setting(k, 'nash')} needs a 2-player zero-sum (constant-sum) "
                            f"game and {said}")
            use[k] = "prd" if k == "meta_solver" else "meta"
    if not problems:
        return None
    return (f"PSRO cannot run on {spec.name} as set: {'; '.join(problems)}; use "
            f"{' '.join(setting(k, v) for k, v in use.items())}")


def _why_no_full_game(game_obj: games.Game, seats_of: Mapping[str, Sequence[str]],
                      payoffs: str, setting: Callable[[str, object], str],
                      chose: str | None) -> str | None:
    """Why the exactly known full game a full-game meta-solver or response target reads is
    not there (None: it is, or the exact tools' own walk refuses the game next)."""
    from populations import exploitability as ex  # torch: PSROConfig is checked before it
    from populations import sequence_form as sf

    if payoffs != "exact":
        if chose is None:
            return f"{setting('payoffs', payoffs)} samples the payoffs"
        chose = chose.replace(f"; {ex.SAMPLED_HINT}", "").replace(f"; {sf.RECALL_HINT}", "")
        return f"{setting('payoffs', 'auto')} chose sampled payoffs ({chose})"
    if len(seats_of) != 2:
        return f"PSRO has {len(seats_of)} players"
    try:
        with exact_walk(EXACT_WHY):
            tree = ex.game_tree(game_obj)  # cached: exact payoffs walk it next anyway
    except games.GameContractError:
        raise
    except ValueError:
        return None  # too large, forgetful: refused by exact payoffs in their own words
    try:
        sf.check_full_game(tree)
    except ValueError as err:
        return str(err).split(";")[0].replace(f" {sf.RECALL_HINT}", "")
    return None


def walk_reason_text(uses: list[tuple[str, str] | None]) -> str:
    """Why a PSRO run walks its game's tree, for the walk's first progress line: ``uses`` holds,
    for each exact tool asked for, the setting that asked (``population.psro.nash_conv=true``)
    and the one that skips it; ``None`` for a tool not asked for. The CLI (Hydra keys) and the
    Python API (``PSROConfig`` fields) name their settings, this says the rest."""
    asked = [u for u in uses if u is not None]
    if not asked:
        return "for PSRO's exact tools"
    return (f"for PSRO's exact tools ({', '.join(a for a, _ in asked)}: they need a small "
            f"game of perfect recall); {' '.join(s for _, s in asked)} "
            f"skip{'s' if len(asked) == 1 else ''} this walk")
