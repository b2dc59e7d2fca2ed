"""``check_game``: the game contract's conformance checks, as a public function.

Like PettingZoo's ``api_test``, a user runs it on their own game::

    report = games.check_game(games.make("my_game"), episodes=50)

It plays random legal actions and checks, at every step: one acting agent at a time unless
the spec is ``simultaneous``, observations (shape, float32, finite), legal masks (bool,
match ``legal_actions``, at least one legal action), that illegal actions raise
:class:`IllegalActionError` and leave the game unchanged, text views (every legal action
text parses back to its action, garbage raises :class:`InvalidAction`), global state shapes,
entity graphs (``games.graphs.NODE_DIM`` node features, a row of ``agent_node`` for every
agent: :func:`games.graphs.graph_problem`), rewards for every agent (finite float scalars;
none but 0.0 to an agent whose own episode ended at an earlier step; episode returns summing
to zero in zero-sum games), episodes ending within ``max_steps``
with every agent terminated or truncated, the final observation and final legal mask
(``final_legal_mask``: ``[n]`` or None) of every agent (and the global state) where its
episode ends, as VectorGame asks them (``observe`` must work at a
terminal state), that the same seed with the same actions gives the identical trajectory,
and that ``reset(None)`` after a seeded episode continues the game's RNG (the episode after
it replays too).
Shape errors say which shape was expected. On long games it stops starting episodes once
those played hold ``step_budget`` steps (1,000 by default), with a ``UserWarning`` saying how
many were checked.
"""

from __future__ import annotations

import numbers
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from games.action_text import action_said, spaceless
from games.core import Game, TimeStep
from games.errors import (
    GameContractError,
    GameError,
    IllegalActionError,
    InvalidAction,
    method_of,
    raised_text,
)
from games.graphs import graph_problem

STEP_BUDGET = 1000  # check_game's default bound on the steps it plays (episodes start below it)


class GameCheckError(AssertionError):
    """A game broke its contract; the message says where and how."""


class EpisodeNotEndedError(GameCheckError):
    """An episode of the checks' random play had not ended at ``spec.max_steps``: training
    does not run through it (VectorGame refuses the next step, ``games.EpisodeTooLongError``),
    so a command line can refuse the run before it makes a folder (the other GameCheckErrors
    of a start check it leaves to training, which names them)."""


def _not_ended(where: str, steps: int, max_steps: int) -> str:
    return (f"{where}: the episode has not ended after {steps} steps, but "
            f"spec.max_steps={max_steps}; a game must end (terminate or truncate) every "
            "episode within max_steps")


@dataclass(frozen=True)
class CheckReport:
    """What ``check_game`` played: episodes, steps, and the mean return of each agent;
    ``budget_reached`` when it stopped before ``episodes`` because of its ``step_budget``."""

    episodes: int
    steps: int
    mean_returns: dict[str, float]
    budget_reached: bool = False


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise GameCheckError(msg)


def _check_spec(game: Game) -> None:
    spec = game.spec
    ids = spec.agent_ids
    _require(len(ids) > 0, f"{spec.name}: no agents (spec.agents is empty); a game needs one "
             "or more")  # "agent ids must be unique: ()" said nothing of it
    _require(len(set(ids)) == len(ids), f"agent ids must be unique: {ids}")
    _require(spec.max_steps > 0, f"max_steps must be positive, got {spec.max_steps}")
    for a in ids:
        _require(a in spec.obs_shapes, f"no observation shape for {a}")
        _require(a in spec.action_spaces, f"no action space for {a}")
        sp = spec.action_spaces[a]
        _require(not sp.discrete or sp.n > 0, f"{a} has a discrete space with no actions")


def _random_action(game: Game, agent: str, ts: TimeStep, rng: np.random.Generator):
    space = game.spec.action_spaces[agent]
    if space.discrete:
        return int(rng.choice(np.flatnonzero(ts.legal[agent])))
    low, high = space.bounds()  # [*shape] each: a box may bound each dimension its own way
    return rng.uniform(low, high).astype(np.float32)


def _check_timestep(game: Game, ts: TimeStep, where: str) -> None:
    spec = game.spec
    ids = set(spec.agent_ids)
    _require(set(ts.acting) <= ids, f"{where}: unknown acting agents {ts.acting}")
    _require(spec.simultaneous or len(ts.acting) <= 1,
             f"{where}: {list(ts.acting)} act at once, but spec.simultaneous is False (turns: "
             "one agent acts at a time); declare GameSpec(simultaneous=True)")
    _check_rewards(ts, spec.agent_ids, where)
    for a in ts.acting:
        _check_obs(game, a, ts.obs[a], where)
        text = game.text_observation(a)
        _require(isinstance(text, str) and text != "", f"{where}: empty text obs for {a}")
        if spec.action_spaces[a].discrete:
            _check_legal(game, ts, a, where)
    if spec.state_shape is not None:
        s = game.state()
        _require(s is not None, f"{where}: state() returned None, but spec.state_shape is "
                 f"{spec.state_shape}: implement state() or drop state_shape")
        _require(np.shape(s) == spec.state_shape, f"{where}: state has shape {np.shape(s)}, "
                 f"expected spec.state_shape {spec.state_shape}")
    if spec.has_entity_graph and ts.acting:
        g = game.entity_graph(ts.acting[0])
        problem = graph_problem(g, spec.agent_ids)  # the layout marl's GNN encoders read
        _require(problem is None, f"{where}: {problem}")
        v = g.nodes.shape[0]
        _require(
            g.edge_index.ndim == 2 and g.edge_index.shape[0] == 2,
            f"{where}: edge_index has shape {g.edge_index.shape}, expected [2, E]",
        )
        ok = g.edge_index.size == 0 or (g.edge_index.min() >= 0 and g.edge_index.max() < v)
        _require(bool(ok), f"{where}: edge_index out of range [0, {v})")
        _require(g.node_type.shape == (v,),
                 f"{where}: node_type has shape {g.node_type.shape}, expected ({v},) = [V]")


def _check_obs(game: Game, agent: str, obs: np.ndarray, where: str, note: str = "") -> None:
    """A numpy float32 array of ``spec.obs_shapes[agent]``, finite; ``note`` ends the messages."""
    _require(isinstance(obs, np.ndarray), f"{where}: obs of {agent} is {type(obs).__name__}, "
             f"expected a numpy float32 array{note}")
    _require(obs.dtype == np.float32, f"{where}: obs of {agent} is {obs.dtype}, not float32{note}")
    shape = game.spec.obs_shapes[agent]
    _require(obs.shape == shape, f"{where}: obs of {agent} has shape {obs.shape}, expected "
             f"{shape}{note}")
    _require(bool(np.all(np.isfinite(obs))), f"{where}: obs of {agent} is not finite{note}")


def _check_final(game: Game, seed: int, left: set[str]) -> None:
    """What VectorGame asks where an agent's episode ended (its ``final_obs``, which learners
    bootstrap a truncated agent from, its ``final_legal`` and ``final_state``): ``observe(a)``
    and, of a discrete-action agent, ``final_legal_mask(a)`` of every agent not
    ``left`` at an earlier step, and ``state()``, at the state the step left, held to the
    same checks as at every step (a user's observe that works only while the game runs
    passed check_game, then stopped a training run at its first episode's end)."""
    where = f"{game.spec.name} seed {seed} step {game._contract_steps}"
    spaces = game.spec.action_spaces
    for a in game.spec.agent_ids:
        if a not in left:
            _check_obs(game, a, game.observe_checked(a, final=True), where,
                       " (at the end of its episode: its final observation)")
            if spaces[a].discrete:  # VectorGame's final_legal: a mask of [n] or None
                game.final_legal_checked(a)
    if game.spec.state_shape is not None:
        game.state_checked(final=True)


def _check_rewards(ts: TimeStep, ids: tuple[str, ...], where: str) -> None:
    """Rewards, terminated and truncated name every agent; rewards are finite real scalars."""
    for field in ("rewards", "terminated", "truncated"):
        got = getattr(ts, field)
        _require(
            set(got) == set(ids),
            f"{where}: {field} must name every agent; expected {sorted(ids)}, got {sorted(got)}",
        )
    for a, r in ts.rewards.items():
        _require(
            isinstance(r, numbers.Real) and not isinstance(r, bool | np.bool_),
            f"{where}: reward of {a} is {type(r).__name__} of shape {np.shape(r)}, "
            "expected a float scalar",
        )
        _require(bool(np.isfinite(r)), f"{where}: reward of {a} is {r}, not finite")


AFTER_END = ("an agent whose episode ended (terminated or truncated at an earlier step) gets "
             "no more rewards: learners train on its rewards up to its own end, and "
             "VectorGame's episode_return counts those alone; give it 0.0")


def _check_after_end(ts: TimeStep, ended: set[str], where: str) -> None:
    """No reward to an agent of ``ended`` (its own episode ended at an earlier step)."""
    for a in sorted(ended, key=str):
        r = ts.rewards.get(a, 0.0)
        _require(r == 0, f"{where}: reward {float(r)} to {a}, whose episode has ended; "
                 f"{AFTER_END}")


def _check_legal(game: Game, ts: TimeStep, agent: str, where: str) -> None:
    mask = ts.legal[agent]
    n = game.spec.action_spaces[agent].n
    _require(
        isinstance(mask, np.ndarray) and mask.dtype == bool and mask.shape == (n,),
        f"{where}: legal mask of {agent} is {getattr(mask, 'dtype', type(mask).__name__)} of "
        f"shape {np.shape(mask)}, expected bool of shape ({n},)",
    )
    legal = list(game.legal_actions(agent))
    _require(legal == sorted(np.flatnonzero(mask).tolist()), f"{where}: mask != legal_actions")
    _require(len(legal) > 0, f"{where}: {agent} must act but has no legal action")
    texts = game.legal_action_texts(agent)
    _require(len(texts) == len(legal), f"{where}: one text per legal action expected")
    for action, text in zip(legal, texts, strict=True):
        _require(isinstance(text, str), f"{where}: text of action {action} of {agent} is "
                 f"{type(text).__name__} {text!r}, expected str")
        # an empty text parses from an empty reply: an LLM saying nothing would make a move
        _require(spaceless(text) != "", f"{where}: text of action {action} of {agent} is "
                 f"{text!r}, expected a non-empty text")
    _require(len(set(texts)) == len(texts), f"{where}: legal action texts not unique: {texts}")
    pairs = list(zip(legal, texts, strict=True))
    if _default_parsing(game):
        # Game.parse_action compares one normalised candidate with every legal action's
        # text, so parsing each of n texts costs n^2 action texts (hex: 121 actions, 29,000
        # per step). Every text parses back to its action exactly when the texts are unique
        # with whitespace removed (an exact match, case kept, wins: chess's bxc3 and Bxc3 are
        # two actions) and each text (bare or tagged) gives its own candidate: checked for all
        # in O(n); the first, middle and last are parsed for real.
        norm = [spaceless(t) for t in texts]
        first: dict[str, str] = {}
        for text, key in zip(texts, norm, strict=True):
            _require(key not in first, f"{where}: legal action texts {first.get(key)!r} and "
                     f"{text!r} are the same once spacing is ignored; parse_action cannot "
                     "tell them apart")
            first[key] = text
            _require(action_said(text) == key, f"{where}: {text!r} did not parse")
            tagged = f"I choose <action>{text}</action>"
            _require(action_said(tagged) == key, f"{where}: {tagged!r} did not parse")
        pairs = [pairs[i] for i in sorted({0, len(pairs) // 2, len(pairs) - 1})]
    for action, text in pairs:
        _require(game.parse_action(agent, text) == action, f"{where}: {text!r} did not parse")
        tagged = f"I choose <action>{text}</action>"
        _require(game.parse_action(agent, tagged) == action, f"{where}: {tagged!r} did not parse")
    try:
        game.parse_action(agent, "\x00 certainly not an action \x00")
    except InvalidAction:
        pass
    else:
        raise GameCheckError(f"{where}: garbage text parsed as an action for {agent}")


def _default_parsing(game: Game) -> bool:
    """Whether ``game`` parses action texts as :class:`Game` does (neither ``parse_action``
    nor ``legal_action_texts`` overridden)."""
    cls = type(game)
    return (cls.parse_action is Game.parse_action
            and cls.legal_action_texts is Game.legal_action_texts)


def _check_illegal(game: Game, ts: TimeStep, actions: dict, where: str) -> None:
    """Each kind of illegal joint action must raise and leave the game as it was."""
    spec = game.spec
    bad: list[dict] = []
    for a in ts.acting:
        space = spec.action_spaces[a]
        if space.discrete:
            illegal = np.flatnonzero(~ts.legal[a])
            wrong = int(illegal[0]) if illegal.size else space.n
            bad.append({**actions, a: wrong})
        else:
            # inside the box but for its last dimension, above that dimension's own high
            low, high = space.bounds()
            out = np.clip(np.zeros(space.shape), low, high)
            out.flat[-1] = high.flat[-1] + 1.0
            bad.append({**actions, a: out.astype(np.float32)})
    idle = [a for a in spec.agent_ids if a not in ts.acting]
    if idle:
        bad.append({**actions, idle[0]: 0})
    bad.append({})
    before = (game.acting_agents(), {a: game.observe(a).tobytes() for a in ts.acting})
    for joint in bad:
        try:
            game.step(joint)
        except IllegalActionError:
            pass
        else:
            raise GameCheckError(f"{where}: illegal joint action {joint} was accepted")
        after = (game.acting_agents(), {a: game.observe(a).tobytes() for a in ts.acting})
        _require(after == before, f"{where}: a rejected action changed the game")


def _play(game: Game, seed: int, check: bool, fresh: bool = True, limit: int | None = None
          ) -> tuple[list, dict[str, float], int]:
    """One episode of random legal play (actions drawn from ``seed``), started by
    ``reset(seed)``, or by ``reset(None)`` (the game's RNG continued) when not ``fresh``, cut
    after ``limit`` steps if given; returns (trajectory, returns, steps).

    Raises:
        GameCheckError: a broken contract, also an exception of the game's own code, named
            with the seed and the step.
    """
    return _named(game, seed, lambda: _episode(game, seed, check, fresh, limit))


def _named(game: Game, seed: int, play: Callable[[], Any]) -> Any:
    """``play()``, its errors as :func:`_play` says them: a GameCheckError naming the game, the
    seed and the step (a GameError of the game's own words unchanged)."""
    try:
        return play()
    except GameCheckError:
        raise
    except GameContractError as err:  # raised by reset/step: they know the step
        raise GameCheckError(f"{game.spec.name} seed {seed} {err.where}: {err.detail}") from err
    except GameError:
        raise  # the game's own words (an InvalidAction of a legal action's text, ...)
    except Exception as err:  # a method the checks call (text_observation, state, ...)
        where = f"{game.spec.name} seed {seed} step {game._contract_steps}"
        raise GameCheckError(f"{where}: {raised_text(err, method_of(err, (__file__,)))}"
                             ) from err


def _episode(game: Game, seed: int, check: bool, fresh: bool, limit: int | None = None
             ) -> tuple[list, dict[str, float], int]:
    """:func:`_play`'s episode, its errors as the game raised them."""
    rng = np.random.default_rng(seed)
    ts = game.reset(seed if fresh else None)
    traj: list = []
    returns = {a: 0.0 for a in game.spec.agent_ids}
    steps, ended = 0, set()  # agents terminated or truncated so far
    while not ts.done and (limit is None or steps < limit):
        where = f"{game.spec.name} seed {seed} step {steps}"
        if steps >= game.spec.max_steps:
            raise EpisodeNotEndedError(_not_ended(where, steps, game.spec.max_steps))
        if check:
            _check_timestep(game, ts, where)
        actions = {a: _random_action(game, a, ts, rng) for a in ts.acting}
        if check:
            _check_illegal(game, ts, actions, where)
        traj.append((ts.acting, {a: o.tobytes() for a, o in ts.obs.items()}))
        ts = game.step(actions)
        steps += 1
        before = set(ended)
        ended |= {a for a in {*ts.terminated, *ts.truncated}
                  if ts.terminated.get(a) or ts.truncated.get(a)}  # checked below
        if check and (ts.done or any(ts.terminated.values()) or any(ts.truncated.values())):
            _check_final(game, seed, before)  # where VectorGame records final observations
        if check and ts.done:  # the last time step is not seen by _check_timestep
            _check_rewards(ts, game.spec.agent_ids, f"{where} (episode end)")
            left = sorted(set(game.spec.agent_ids) - ended)
            _require(not left, f"{where} (episode end): {left} neither terminated nor truncated; "
                     "at the end every agent must be one or the other (truncated: a time limit, "
                     "learners bootstrap; terminated: by the rules)")
        if check:
            _check_after_end(ts, before, f"{where} (after the step)")
        traj.append(dict(ts.rewards))
        for a, r in ts.rewards.items():
            returns[a] += float(r)
        if game.spec.zero_sum and ts.done:  # returns, not each step's rewards: OpenSpiel's
            # repeated_leduc_poker pays one player a hand's result a step before the other
            total = sum(returns.values())
            _require(abs(total) < 1e-6,
                     f"{where} (episode end): zero-sum game returns sum to {total}")
    return traj, returns, steps


CONTINUED = 3  # episodes from reset(None) check_game compares after its first seeded one
CONTINUE_RNG = ("reset(None) must continue the random stream the seeded reset started "
                "(VectorGame resets finished copies with reset(None): runs with one seed would "
                "differ); in _reset, make a new RNG only when seed is not None and keep it "
                "across reset(None)")  # check_game's fix, and replay_problem's


def _continued(game: Game, seed: int, step_budget: int | None,
               episodes: int = CONTINUED, limit: int | None = None) -> list[list]:
    """Trajectories of up to ``episodes`` episodes, each started by ``reset(None)``, that
    follow the seeded episode just played (VectorGame resets finished copies so: they must
    replay as the seeded ones do). Beyond the first, they stop once they hold a tenth of
    ``step_budget`` steps: a game with little randomness may start one episode as the
    other run did, but long games (VMAS, ~100 steps of 5-15 ms) should not pay for three.
    ``limit``: each episode is cut after that many steps."""
    trajs, steps = [], 0
    for k in range(episodes):
        traj, _, n = _play(game, seed + k, check=False, fresh=False, limit=limit)
        trajs.append(traj)
        steps += n
        if episodes == CONTINUED and step_budget is not None and steps * 10 >= step_budget:
            break
    return trajs


def check_game(
    game: Game, episodes: int = 20, seed: int = 0, step_budget: int | None = STEP_BUDGET
) -> CheckReport:
    """Play ``episodes`` random episodes checking the contract; raise GameCheckError if broken.

    Every check runs at every step of every episode played; the first three episodes are
    also replayed from their seeds, and the first is followed by up to three episodes from
    ``reset(None)``, twice (the two must be equal). ``step_budget`` bounds the cost on long
    games: once the episodes played hold that many steps, no further episode starts (the one
    under way ends),
    a ``UserWarning`` says how many of ``episodes`` were checked, and the report's
    ``budget_reached`` is True (VMAS scenarios run ~100 steps of 5-15 ms, pursuit 500 steps
    of ~10 ms; checking all 20 took over a minute on a loaded 2-core machine). A defect that
    shows only in a later episode is then not seen: ``step_budget=None`` plays all."""
    if not isinstance(game, Game):
        raise GameError(f"check_game expects a games.Game, got {type(game).__name__}")
    if step_budget is not None and (
        isinstance(step_budget, bool) or not isinstance(step_budget, int) or step_budget < 1
    ):
        raise GameError(f"check_game: step_budget={step_budget!r}; accepted: an integer >= 1 "
                        "or None (no bound)")
    _check_spec(game)
    total = {a: 0.0 for a in game.spec.agent_ids}
    steps, played = 0, 0
    for e in range(episodes):
        if step_budget is not None and steps >= step_budget:
            break
        traj, returns, n = _play(game, seed + e, check=True)
        after = _continued(game, seed, step_budget) if e == 0 else None
        steps += n
        played += 1
        for a, r in returns.items():
            total[a] += r
        if e < 3:
            again, _, _ = _play(game, seed + e, check=False)
            _require(again == traj, f"{game.spec.name}: seed {seed + e} did not replay identically")
        if after is not None:
            _require(_continued(game, seed, step_budget, len(after)) == after,
                     f"{game.spec.name}: reset(seed={seed}), an episode, then episodes from "
                     f"reset(None) did not replay: {CONTINUE_RNG}")
    reached = played < episodes
    if reached:  # a warning, not a log record: a passing pytest test lists it in its summary
        warnings.warn(
            f"check_game({game.spec.name}): checked {played} of {episodes} episodes ({steps} "
            f"steps, every check at every step; {min(played, 3)} replayed from their seeds): "
            f"step_budget={step_budget} reached; step_budget=None checks all {episodes}",
            UserWarning, stacklevel=2)
    return CheckReport(played, steps, {a: r / max(played, 1) for a, r in total.items()},
                       budget_reached=reached)


REPLAY_STEPS = 8  # steps of each episode replay_problem plays (4 to 6 episodes: a few ms)


def user_game(name: str) -> bool:
    """Whether game ``name`` (``my_game(k=v)`` too) is registered by a module outside the
    framework's own packages: a user's (``imports=``, an entry point). The adapters'
    (``openspiel/...``) and built-in games are run through :func:`check_game` by the test
    suite; a user's is not, and :func:`replay_problem` is what ``selfplay-train`` asks of it."""
    from games.registry import OWN_PACKAGES, registered_factory

    factory = registered_factory(name.partition("(")[0])
    module = getattr(factory, "__module__", None)
    return isinstance(module, str) and module.split(".")[0] not in OWN_PACKAGES


def _first_difference(one: list, other: list) -> str:
    """Where two trajectories of :func:`_play` first differ, as a clause: entry ``2k`` holds
    step ``k``'s acting agents and observations, ``2k + 1`` the rewards that step returned."""
    for i, (a, b) in enumerate(zip(one, other, strict=False)):
        if a == b:
            continue
        step = i // 2
        if i % 2:
            agents = [x for x in sorted({*a, *b}, key=str) if a.get(x) != b.get(x)]
            return f"the rewards of step {step} differ ({agents[0]}: {a.get(agents[0])} vs " \
                   f"{b.get(agents[0])})"
        if a[0] != b[0]:
            return f"the acting agents at step {step} differ ({list(a[0])} vs {list(b[0])})"
        # the agents observed may differ too (one play observes an agent the other does not)
        agent = next(x for x in sorted({*a[1], *b[1]}, key=str) if a[1].get(x) != b[1].get(x))
        if agent not in a[1] or agent not in b[1]:
            return (f"the agents observed at step {step} differ ({sorted(a[1], key=str)} vs "
                    f"{sorted(b[1], key=str)})")
        return f"the observation of {agent} at step {step} differs"
    return f"one episode ended after {min(len(one), len(other)) // 2} steps, the other did not"


CHEAP_COPY_S = 0.05  # a game built faster is built twice: two new copies are compared


def replay_problem(make: Callable[[], Game], seed: int = 0, steps: int = REPLAY_STEPS
                   ) -> str | None:
    """What :func:`check_game`'s replay checks would find, cheaply: on a copy built by
    ``make``, ``reset(seed)`` and ``steps`` random legal steps, then ``reset(None)`` and
    ``steps`` more, played twice with the same actions; a second copy, when the first did
    not replay or took under :data:`CHEAP_COPY_S` to build, plays them once. None when all
    plays are the same, else one clause naming what was seen: two new copies that differ
    (runs with one seed differ: each builds its copies anew), or only one copy that did not
    replay its seed after it had played (state kept across resets, such as an episode
    counter: runs may replay, but ``check_game``'s contract does not hold). Run on a user's
    game when ``selfplay-train`` starts (4 to 6 short episodes); the game may still break
    its contract elsewhere, which ``check_game`` checks.

    Raises:
        GameCheckError: the game's own code raised (building, playing or closing a copy),
            or broke a contract the steps need.
    """
    def same_nan(traj: list) -> list:  # a NaN reward (its own error) is equal to itself
        return [{a: repr(r) for a, r in x.items()} if isinstance(x, dict) else x for x in traj]

    def plays(game: Game, times: int) -> list[tuple[list, list]]:
        out = []
        for _ in range(times):
            first, _, _ = _play(game, seed, check=False, limit=steps)
            after = _continued(game, seed, None, 1, limit=steps)[0]
            out.append((same_nan(first), same_nan(after)))
        return out

    def played(times: int) -> tuple[list[tuple[list, list]], float]:
        start = time.perf_counter()
        try:
            game = make()
        except GameCheckError:
            raise
        except Exception as err:  # noqa: BLE001 - the game's own code: one line
            raise GameCheckError(f"building the game raised {type(err).__name__}: {err}"
                                 ) from err
        built = time.perf_counter() - start
        try:
            return plays(game, times), built
        finally:
            try:
                game.close()
            except Exception as err:  # noqa: BLE001 - the game's own code: one line
                raise GameCheckError(f"close() raised {type(err).__name__}: {err}") from err

    (one, again), built = played(2)
    if one == again and built >= CHEAP_COPY_S:
        return None  # one copy replays; a second would cost another slow build
    [new] = played(1)[0]
    if new != one:  # two new copies, as two runs with one seed build theirs
        if new[0] != one[0]:
            return (f"reset(seed={seed}) on two new copies with the same actions did not "
                    f"replay: {_first_difference(one[0], new[0])}; a game must draw its "
                    "randomness from the seed reset() gives it (runs with one seed differ)")
        return (f"reset(seed={seed}), {steps} steps, then reset(None), on two new copies with "
                f"the same actions, did not replay: {_first_difference(one[1], new[1])}; "
                f"{CONTINUE_RNG}")
    if one == again:
        return None
    which, diff = (f"reset(seed={seed})", _first_difference(one[0], again[0])) \
        if one[0] != again[0] else \
        (f"reset(seed={seed}), {steps} steps, then reset(None)",
         _first_difference(one[1], again[1]))
    return (f"{which} on a copy that had played before did not replay: {diff}; two new copies "
            "do (so runs with one seed may replay: each builds its copies anew), but "
            "check_game asks one copy to replay its seed: keep no state across reset(seed) "
            "(such as an episode counter)")


WARN_STEPS = 200  # steps of random play start_warnings looks at (a few ms on a user's game)


def start_warnings(game: Game, seed: int = 0, steps: int = WARN_STEPS) -> list[str]:
    """What :func:`check_game` refuses but training runs through, seen in ``steps`` steps of
    random legal play (whole episodes from ``reset(seed)``, ``reset(seed + 1)``, ...; the
    last may be cut): agents acting together in a game whose spec is not ``simultaneous``,
    an observation that is not float32 (VectorGame converts it), a reward to an agent whose
    episode has ended (:data:`AFTER_END`: not counted in its return), an episode that ended
    with an agent neither terminated nor truncated (learners cannot tell a time limit from
    the rules' end). One clause per kind of problem, at its first sight; ``[]`` when none.
    Run on a user's game when ``selfplay-train`` starts (the run goes on, warned).

    Raises:
        GameCheckError: the game's own code raised, or broke a contract that
            ``reset``/``step`` enforce (named with the seed and the step, as check_game does).
        EpisodeNotEndedError: (a GameCheckError) an episode ran past ``spec.max_steps``
            without ending, which training does not run through (VectorGame refuses that
            step): a caller may refuse the run before it starts.
    """
    spec, found = game.spec, {}
    played, episode = 0, 0
    while played < steps:
        n = _named(game, seed + episode,
                   lambda e=episode, k=steps - played: _warnings_of(game, seed + e, k, found))
        played += max(n, 1)
        episode += 1
    order = ("together", "dtype", "after_end", "no_end")
    out = [found[k] for k in order if k in found]
    if out:
        out[-1] += f" (check_game refuses {spec.name} for it)" if len(out) == 1 else \
            f" (check_game refuses {spec.name} for each)"
    return out


def _warnings_of(game: Game, seed: int, limit: int, found: dict[str, str]) -> int:
    """One episode of :func:`start_warnings` (cut after ``limit`` steps); records in ``found``
    each kind of problem not yet there; returns the steps played."""
    spec, rng = game.spec, np.random.default_rng(seed)
    ts = game.reset(seed)
    ended: set[str] = set()
    steps = 0
    while not ts.done and steps < limit:
        where = f"seed {seed} step {steps}"
        if steps >= spec.max_steps:  # VectorGame refuses the next step: training stops
            # there (walk38a L4: a league kept a checkpoint and a resume command though it
            # trained nothing); 200 steps of it were run through before
            raise EpisodeNotEndedError(_not_ended(f"{spec.name} {where}", steps,
                                                  spec.max_steps))
        if not spec.simultaneous and len(ts.acting) > 1:
            found.setdefault("together", f"{where}: {list(ts.acting)} act at once, but "
                             "spec.simultaneous is False; declare GameSpec(simultaneous=True)")
        for a in ts.acting:
            dtype = getattr(ts.obs[a], "dtype", None)
            if dtype != np.float32:
                found.setdefault("dtype", f"{where}: obs of {a} is {dtype}, not float32 "
                                 "(VectorGame converts it; give float32)")
        ts = game.step({a: _random_action(game, a, ts, rng) for a in ts.acting})
        steps += 1
        for a in sorted(ended, key=str):
            if ts.rewards.get(a, 0.0) != 0:
                found.setdefault("after_end", f"{where}: reward {float(ts.rewards[a])} to {a}, "
                                 f"whose episode has ended; {AFTER_END}")
        ended |= {a for a in spec.agent_ids if ts.terminated.get(a) or ts.truncated.get(a)}
    left = sorted(set(spec.agent_ids) - ended, key=str)
    if ts.done and left and steps:
        found.setdefault("no_end", f"seed {seed} step {steps - 1}: the episode ended with "
                         f"{left} neither terminated nor truncated; at the end every agent "
                         "must be one or the other (truncated: a time limit, learners "
                         "bootstrap; terminated: by the rules)")
    return steps
