"""PSRO's populations and meta-mixtures (:mod:`populations.psro`): a :class:`Member` of a
player's population, a :class:`Mixture` of members drawn with the meta-strategy, the policy
that plays a mixture (:class:`SampledMixturePolicy`, a member drawn per copy and episode), and
the greedy play of off-policy members (:class:`GreedyPolicy`, which approximate
exploitability's frozen seats play too). All of them are importable from
:mod:`populations.psro` too."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from games import VecStep
from marl import registry
from marl.core import Policy, PolicyMeta


@dataclass
class Member:
    """One policy of a PSRO player's population.

    Attributes:
        name: unique name (``psro/<player>/<index>``).
        agent: the PSRO player it belongs to: a seat, or a team (``PSROConfig.players``).
        policy: the policy itself.
        matrix: ``[S, N]`` its behaviour strategy, on enumerable games (converted once).
        seats: the seats it plays (default: ``(agent,)``, the player is a seat).
    """

    name: str
    agent: str
    policy: Policy
    matrix: np.ndarray | None = None
    seats: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.seats:
            self.seats = (self.agent,)


@dataclass(frozen=True)
class Mixture:
    """A meta-mixture: ``members[k]`` drawn with probability ``weights[k]`` per episode."""

    members: tuple[Member, ...]
    weights: np.ndarray



class SampledMixturePolicy(Policy):
    """Plays a meta-mixture by drawing a member per copy at the start of every episode.

    Stateful: the draw of copy ``b`` lasts until ``vs.done[b]``, so :meth:`act` must be
    called on every step of a ``VectorGame`` (as ``marl.train.train`` does for opponents).
    A team's mixture (members playing several seats, ``Member.seats``) plays all of them
    with one draw per copy and episode: the seats' calls on one step share it.
    """

    def __init__(self, mixture: Mixture, agent: str, seed: int = 0) -> None:
        """``agent``: the seat, or the team whose seats (``mixture.members[0].seats``) the
        mixture plays."""
        self.mixture, self.agent = mixture, agent
        self.weights = np.asarray(mixture.weights, np.float64) / np.sum(mixture.weights)
        first = mixture.members[0].policy.meta
        seats = mixture.members[0].seats if agent == mixture.members[0].agent else (agent,)
        missing = [a for a in seats if a not in first.agents]
        if missing:
            raise ValueError(f"mixture members play {first.agents}, not {missing[0]!r}")
        inputs = tuple(dict.fromkeys(i for m in mixture.members for i in m.policy.meta.inputs))
        roles = tuple(first.roles[first.agents.index(a)] for a in seats)
        self.meta = dataclasses.replace(
            first, kind="meta_mixture", agents=tuple(seats), roles=roles, inputs=inputs
        )
        self.rng = np.random.default_rng(seed)
        self.current: np.ndarray | None = None  # [B] member index of each copy
        self.seen: VecStep | None = None  # the step drawn for (a team's seats share it)

    def _draw(self, vs: VecStep) -> np.ndarray:
        if len(self.meta.agents) > 1 and vs is self.seen:
            return self.current  # another seat of the team on the same step
        self.seen = vs if len(self.meta.agents) > 1 else None
        B = vs.done.shape[0]
        if self.current is None or len(self.current) != B:
            self.current = self.rng.choice(len(self.weights), size=B, p=self.weights)
        elif vs.done.any():
            fresh = self.rng.choice(len(self.weights), size=B, p=self.weights)
            self.current = np.where(vs.done, fresh, self.current)
        return self.current

    def act(self, agent: str, vs: VecStep, greedy: bool = False) -> np.ndarray:
        current = self._draw(vs)
        out = None  # the first member's actions: [B] discrete, [B, *shape] continuous
        for k in np.unique(current):
            acts = self.mixture.members[k].policy.act(agent, vs, greedy)
            if out is None:
                out = acts.clone() if isinstance(acts, torch.Tensor) else np.array(acts)
                continue
            rows = current == k
            if isinstance(acts, torch.Tensor):
                rows = torch.as_tensor(rows, device=acts.device)
            out[rows] = acts[rows]
        return out

    def action_probs(self, agent: str, vs: VecStep) -> np.ndarray:
        """Probabilities of the member each copy currently plays."""
        current = self._draw(vs)
        out = np.zeros(vs.legal[agent].shape)
        for k in np.unique(current):
            rows = current == k
            out[rows] = self.mixture.members[k].policy.action_probs(agent, vs)[rows]
        return out

    def payload(self) -> dict[str, Any]:
        raise NotImplementedError("a meta-mixture is saved as its members and weights")

    @classmethod
    def from_payload(cls, meta: PolicyMeta, payload: dict[str, Any]) -> Policy:
        raise NotImplementedError("a meta-mixture is rebuilt from its members and weights")


def plays_greedy(policy: Policy) -> bool:
    """Whether PSRO plays ``policy`` by its greedy actions: snapshots of off-policy learners
    (ε-greedy VDN/QMIX, MADDPG's Gumbel or noise exploration: ``on_policy=False`` in their
    capabilities) explore only while training, as ``selfplay-train`` evaluates them;
    on-policy and tabular policies are played by sampling. The league's rule
    (:func:`populations.approx_exploit.evaluated_greedy`: both are
    :func:`marl.registry.played_greedy` of the policy's kind)."""
    return registry.played_greedy(policy.meta.kind)


class GreedyPolicy(Policy):
    """Plays ``policy``'s greedy actions whatever :meth:`act` is asked: a PSRO member of an
    off-policy learner, in payoff estimates, meta-mixtures and exact tools alike, and a
    frozen seat of approximate exploitability (:func:`populations.approx_exploit.seat_policies`).

    Its :meth:`action_probs` are the greedy actions one-hot (``[B, N]``, discrete actions),
    so a deterministic member has a behaviour strategy and an exact NashConv.
    """

    def __init__(self, policy: Policy) -> None:
        self.policy, self.meta = policy, policy.meta

    def act(self, agent: str, vs: VecStep, greedy: bool = False) -> np.ndarray:
        return self.policy.act(agent, vs, greedy=True)

    def action_probs(self, agent: str, vs: VecStep) -> np.ndarray:
        actions = np.asarray(self.policy.act(agent, vs, greedy=True))
        if actions.ndim != 1:
            raise NotImplementedError(f"{self.meta.kind} plays continuous actions")
        out = np.zeros(vs.legal[agent].shape)
        out[np.arange(len(actions)), actions] = 1.0
        return out

    def reseed(self, seed: int) -> None:
        self.policy.reseed(seed)

    def payload(self) -> dict[str, Any]:
        return self.policy.payload()

    @classmethod
    def from_payload(cls, meta: PolicyMeta, payload: dict[str, Any]) -> Policy:
        raise NotImplementedError("a greedy member is saved as the policy it wraps")
