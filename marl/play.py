"""Acting with a saved policy outside the framework's loops.

A :class:`~marl.core.Policy` acts on a ``games.VecStep`` (B copies of its game, with the entity
graphs or global states it was trained to read), so a snapshot written by a run
(``<run>/snapshots/<member>/vNNNN.pt``) or by ``learner.policy().save(path)`` plays here:

* :func:`play` plays whole episodes and returns each one's return per seat;
* :class:`PolicyPlayer` steps B copies of the policy's game by hand (``reset`` / ``act`` /
  ``step``) on the VectorGame's own VecSteps, for a loop of your own;
* :class:`PettingZooActor` acts on one PettingZoo env's observation dict
  (``games.to_pettingzoo(games.make(recorded_game(policy)))``) for policies that read
  observations only (MLP and GRU encoders, VDN/QMIX, MADDPG).

``play`` and ``PolicyPlayer`` build the ``games.VectorGame`` with what the policy reads
(``policy.meta.inputs``: ``graph``, ``state``, ``text``) and fill the seats the policy does
not hold with the policies you give (``opponents``) or uniformly random ones; all three keep
a recurrent (GRU) policy's hidden states from step to step (restarted where an episode
begins).

    >>> from marl.play import play
    >>> result = play("runs/x/snapshots/mappo/v0000.pt", episodes=8)   # doctest: +SKIP
    >>> result.mean_return                                            # doctest: +SKIP
    {'agent_0': -21.3, 'agent_1': -21.3, 'agent_2': -21.3}
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from games import GameSpec, VecStep, VectorGame
from marl.core import Policy, check_fits, derive_seed, load_policy
from marl.train import RandomPolicy, check_episode_lengths

PolicyLike = Policy | str | os.PathLike


def _policy(policy: PolicyLike) -> Policy:
    return policy if isinstance(policy, Policy) else load_policy(policy)


def recorded_game(policy: PolicyLike) -> str:
    """The game ``policy`` records (``policy.meta.game``), once it is safe to make: a name read
    from a policy file is untrusted, and a ``pettingzoo/<module>:<function>`` name would
    import and call what the file says. Names :func:`games.registry.recorded_name_refusal`
    refuses (a file parameter, a module that is neither a PettingZoo game nor one named by
    ``imports=``/``--import``, or in Python the ``SELFPLAY_IMPORTS`` environment variable)
    raise; pass the game yourself then (``game=`` of :class:`PolicyPlayer`, or
    ``games.make(name)`` with a name you wrote).

    Raises:
        games.GameError: the recorded name is refused, or empty.
    """
    from games import GameError
    from games.registry import IMPORTS_ENV, printable, recorded_name_refusal

    pol = _policy(policy)
    name = pol.meta.game
    why = "which is empty" if isinstance(name, str) and not name.strip() else \
        recorded_name_refusal(name)
    if why:
        raise GameError(f"the {printable(str(pol.meta.kind))} policy records the game "
                        f"{printable(str(name))}, {why}: pass the game to play yourself "
                        "(game=..., e.g. the name you trained on: a game you name is played "
                        f"as given), or, in Python, list its module in {IMPORTS_ENV}=module")
    return name


def _played_greedy(pol: Policy, greedy: bool | None) -> bool:
    """``greedy``, or (None) the framework's rule for the policy's kind: off-policy learners'
    snapshots (VDN/QMIX, MADDPG) by their argmax, on-policy ones (MAPPO/IPPO) sampled."""
    if greedy is not None:
        return greedy
    from marl.registry import played_greedy

    return played_greedy(pol.meta.kind)


def _restart(pol: Policy, seed: int) -> None:
    """``pol``'s sampling stream from ``seed``, a recurrent one's hidden states empty."""
    pol.reseed(seed)
    reset_state = getattr(pol, "reset_state", None)
    if callable(reset_state):
        reset_state()


@dataclass
class PlayResult:
    """Episodes played by :func:`play`, in the order they ended.

    Attributes:
        returns: seat -> ``[E]`` return of each episode.
        lengths: ``[E]`` steps of each episode.
    """

    returns: dict[str, np.ndarray]
    lengths: np.ndarray

    @property
    def episodes(self) -> int:
        return len(self.lengths)

    @property
    def mean_return(self) -> dict[str, float]:
        """Seat -> mean return over the episodes (``marl.train.evaluate``'s ``per_agent``)."""
        return {a: float(r.mean()) for a, r in self.returns.items()}


class PolicyPlayer:
    """B copies of a policy's game, every seat played: the policy in its own seats, the
    ``opponents`` (or uniformly random policies) in the others.

    Args:
        policy: a loaded policy or the path of a policy file.
        num_envs: copies of the game stepped together (B).
        seed: copy ``b`` starts from ``seed + b``; :meth:`reset` restarts the sampling
            stream of every seat's policy (opponents' too) from it, each named by the first
            seat the policy holds (same seed, same episodes).
        opponents: seat -> policy; these seats are played by it even where ``policy`` holds
            them (e.g. a league snapshot against another), the rest of the policy's seats by
            ``policy``. A GNN policy plays seats it was not trained for (more agents) only
            where named here.
        greedy: every seat plays its argmax (True) or samples (False); None: as the
            framework's matches play each seat's policy (argmax for VDN/QMIX/MADDPG
            snapshots, sampling for MAPPO/IPPO).
        game: the game to play (default ``policy.meta.game``, kwargs included, once
            :func:`recorded_game` finds it safe to make: a file's name is untrusted);
            ``game_kwargs`` are passed on to it.

    Example::

        player = PolicyPlayer("spread.pt", num_envs=4)
        vs = player.reset()
        for _ in range(25):
            vs = player.step()   # or: vs = player.game.step(player.act(vs))
    """

    def __init__(
        self,
        policy: PolicyLike,
        num_envs: int = 8,
        seed: int = 0,
        opponents: Mapping[str, Policy] | None = None,
        greedy: bool | None = None,
        game: str | None = None,
        **game_kwargs: Any,
    ) -> None:
        self.policy = _policy(policy)
        meta = self.policy.meta
        inputs = set(meta.inputs)
        self.game = VectorGame(game or recorded_game(self.policy), num_envs, seed=seed,
                               with_graphs="graph" in inputs, with_state="state" in inputs,
                               with_text="text" in inputs, **game_kwargs)
        self.seed = seed
        self.seats = self._seats(self.game.spec, dict(opponents or {}))
        check_fits("PolicyPlayer", self.seats, self.game.spec)  # game= or opponents of another
        self.greedy = {a: _played_greedy(p, greedy) for a, p in self.seats.items()}
        self.vs: VecStep | None = None

    def _seats(self, spec: GameSpec, opponents: dict[str, Policy]) -> dict[str, Policy]:
        unknown = sorted(set(opponents) - set(spec.agent_ids))
        if unknown:
            raise ValueError(f"opponents name seats {unknown} that {spec.name} does not have; "
                             f"its seats: {list(spec.agent_ids)}")
        seats: dict[str, Policy] = {}
        for a in spec.agent_ids:
            if a in opponents:
                seats[a] = opponents[a]
            elif a in self.policy.meta.agents:
                seats[a] = self.policy
            else:  # each random seat its own (reseeded by reset: a stream of its own)
                seats[a] = RandomPolicy(spec)
        return seats

    def reset(self) -> VecStep:
        """Start every copy over (copy ``b`` from ``seed + b``), every policy's sampling
        stream from the seed and every recurrent policy from empty hidden states."""
        first: dict[int, str] = {}  # each policy's stream is named by the first seat it holds
        for a, pol in self.seats.items():
            first.setdefault(id(pol), a)
        for a in first.values():
            _restart(self.seats[a], derive_seed(self.seed, "play", a))
        self.vs = self.game.reset()
        return self.vs

    def act(self, vs: VecStep) -> dict[str, np.ndarray]:
        """Every seat's actions on ``vs`` (``[B]`` ids or ``[B, D]`` boxes each); a
        recurrent policy advances its hidden states by this step, so call it once per step."""
        return {a: pol.act(a, vs, greedy=self.greedy[a]) for a, pol in self.seats.items()}

    def step(self) -> VecStep:
        """Act on the last VecStep and step the game (``reset`` first)."""
        if self.vs is None:
            raise RuntimeError("PolicyPlayer.step() before reset()")
        self.vs = self.game.step(self.act(self.vs))
        return self.vs

    def close(self) -> None:
        self.game.close()


def play(
    policy: PolicyLike,
    episodes: int = 8,
    num_envs: int = 8,
    seed: int = 0,
    opponents: Mapping[str, Policy] | None = None,
    greedy: bool | None = None,
    game: str | None = None,
    **game_kwargs: Any,
) -> PlayResult:
    """Play ``episodes`` whole episodes of a policy on its own game (the first ``episodes``
    to end in ``num_envs`` copies, as ``marl.train.evaluate`` counts them); the arguments
    are :class:`PolicyPlayer`'s.

    Raises:
        ValueError: ``episodes`` < 1, or ``opponents`` names a seat the game lacks.
        marl.core.PolicyLoadError: ``policy`` is a path that holds no policy.
        marl.train.EpisodeTooLongError: the game never ended an episode.
    """
    if episodes < 1:
        raise ValueError(f"episodes={episodes}: expected an integer >= 1")
    player = PolicyPlayer(policy, num_envs, seed, opponents, greedy, game, **game_kwargs)
    spec = player.game.spec
    returns: dict[str, list[float]] = {a: [] for a in spec.agent_ids}
    lengths: list[int] = []
    try:
        player.reset()
        while len(lengths) < episodes:
            vs = player.step()
            check_episode_lengths(vs, spec, "marl.play.play")
            for b in np.flatnonzero(vs.done):
                lengths.append(int(vs.episode_length[b]))
                for a in spec.agent_ids:
                    returns[a].append(float(vs.episode_return[a][b]))
    finally:
        player.close()
    return PlayResult({a: np.array(r[:episodes]) for a, r in returns.items()},
                      np.array(lengths[:episodes]))


class PettingZooActor:
    """A policy's actions on one PettingZoo env's observations: the env of
    ``games.to_pettingzoo(games.make(recorded_game(policy)))``, whose observations (and
    ``action_mask``) are the ones the policy trained on.

    Only for policies that read observations alone (``policy.meta.inputs == ("obs",)``:
    MLP or GRU encoders, VDN/QMIX, MADDPG); a GNN policy reads entity graphs and a tabular
    or LLM one text views, which an observation dict does not carry: play those with
    :class:`PolicyPlayer`. Call :meth:`reset` with every ``env.reset`` (a GRU starts over).

    Example::

        env = games.to_pettingzoo(games.make(recorded_game(actor.policy)))
        obs, _ = env.reset(seed=0)                       # a ParallelEnv
        while env.agents:
            obs, rew, term, trunc, _ = env.step({**random_moves, **actor.act(obs)})
    """

    def __init__(self, policy: PolicyLike, greedy: bool | None = None, seed: int = 0) -> None:
        self.policy = _policy(policy)
        meta = self.policy.meta
        if set(meta.inputs) != {"obs"}:
            raise ValueError(
                f"this {meta.kind} policy reads {list(meta.inputs)}, not observations alone: a "
                f"PettingZoo observation dict carries no {sorted(set(meta.inputs) - {'obs'})}; "
                "play it on its game with marl.play.PolicyPlayer or marl.play.play")
        self.greedy = _played_greedy(self.policy, greedy)
        self.seed = seed
        self.reset()

    def reset(self) -> None:
        """A new episode: empty hidden states, the sampling stream from ``seed``."""
        self.t = 0
        _restart(self.policy, derive_seed(self.seed, "play", self.policy.meta.agents[0]))

    def act(self, observations: Mapping[str, Any]) -> dict[str, Any]:
        """Actions (an ``int``, or a float32 array for a box) of the policy's seats among
        ``observations`` (seat -> array, or ``{"observation", "action_mask"}``); other
        seats are left out.

        Raises:
            TypeError: ``observations`` names no seat: a bare array, or the
                ``{"observation", "action_mask"}`` dict of an AEC env's ``env.last()`` (was
                ``{}``, no action and no error); pass ``{env.agent_selection: obs}``.
        """
        meta = self.policy.meta
        if not isinstance(observations, Mapping) or (
                {"observation", "action_mask"} & set(observations)
                and not set(meta.agents) & set(observations)):
            got = (f"a dict with keys {sorted(map(str, observations))}"
                   if isinstance(observations, Mapping) else f"a {type(observations).__name__}")
            raise TypeError(f"PettingZooActor.act takes {{seat: observation}} (a ParallelEnv's "
                            f"observations, or {{env.agent_selection: obs}} of an AEC env's "
                            f"env.last()); got {got:.120}, which names no seat of "
                            f"{list(meta.agents)}")
        seats = [a for a in observations if a in meta.agents]
        if not seats:
            return {}
        vs = self._vecstep(observations, seats)
        out: dict[str, Any] = {}
        for a in seats:
            action = self.policy.act(a, vs, greedy=self.greedy)[0]
            out[a] = int(action) if meta.action_space(a).discrete else np.asarray(action)
        self.t += 1
        return out

    def _vecstep(self, observations: Mapping[str, Any], seats: list[str]) -> VecStep:
        """One copy (B = 1) of a VecStep: ``seats`` acting, nothing ended."""
        meta = self.policy.meta
        agents = meta.agents
        zeros = {a: np.zeros((1, *meta.obs_shapes[a]), np.float32) for a in agents}
        obs, legal = dict(zeros), {}
        for a in agents:
            space = meta.action_space(a)
            if space.discrete:
                legal[a] = np.zeros((1, space.n), bool)
        for a in seats:
            o = observations[a]
            mask = None
            if isinstance(o, Mapping):
                o, mask = o["observation"], o.get("action_mask")
            o = np.asarray(o, np.float32)
            if o.shape != tuple(meta.obs_shapes[a]):
                raise ValueError(f"{a}: an observation of shape {list(o.shape)}; the policy "
                                 f"trained on {meta.game} reads {list(meta.obs_shapes[a])}")
            obs[a] = o[None]
            if a in legal:
                legal[a][0] = True if mask is None else np.asarray(mask, bool)
        flags = {a: np.zeros(1, bool) for a in agents}
        return VecStep(
            obs=obs, legal=legal, acting={a: np.array([a in seats]) for a in agents},
            rewards={a: np.zeros(1, np.float32) for a in agents}, terminated=flags,
            truncated=flags, done=np.zeros(1, bool), final_obs=zeros,
            episode_return={a: np.zeros(1, np.float32) for a in agents},
            episode_length=np.array([self.t], np.int64),
        )
