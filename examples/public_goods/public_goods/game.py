"""A user's game written only against the public ``games`` API: a repeated public-goods
game with a steward.

Three players, two roles, two teams. Each round the two **citizens** (team ``village``)
each put 0..``endowment`` tokens into a common pot while the **steward** (team
``steward``) decides, at the same time, to ``share`` or to ``skim`` it. The pot is
multiplied by ``multiplier``; shared, the citizens split 90 % of it and the steward keeps a
10 % fee; skimmed, the steward keeps half. A citizen's reward is what it kept plus its
part of the pot, so each token it gives costs 1 and returns ``0.45 * multiplier`` to itself
(less than 1 with the default multiplier 2): a social dilemma, repeated for ``rounds``
rounds, in which everyone sees the last round's contributions and the steward's choice.
"""

from __future__ import annotations

import numpy as np

import games

CITIZENS = ("citizen_0", "citizen_1")
STEWARD = "steward"


@games.register("public_goods")
class PublicGoods(games.Game):
    """The game above; ``games.make("public_goods", rounds=5, endowment=2, multiplier=2.0)``."""

    def __init__(self, rounds: int = 5, endowment: int = 2, multiplier: float = 2.0) -> None:
        if rounds < 1 or endowment < 1 or not multiplier > 0:
            raise games.GameError(
                f"public_goods: rounds and endowment must be >= 1 and multiplier > 0, got "
                f"rounds={rounds}, endowment={endowment}, multiplier={multiplier}")
        self.rounds, self.endowment, self.multiplier = rounds, endowment, float(multiplier)
        agents = (*(games.AgentSpec(c, role="citizen", team="village") for c in CITIZENS),
                  games.AgentSpec(STEWARD, role="steward", team="steward"))
        width = rounds + 3  # round one-hot, both last contributions, last skim
        self.spec = games.GameSpec(
            name="public_goods",
            agents=agents,
            obs_shapes={a.id: (width,) for a in agents},
            action_spaces={**{c: games.ActionSpace("discrete", n=endowment + 1) for c in CITIZENS},
                           STEWARD: games.ActionSpace("discrete", n=2)},
            max_steps=rounds,
            simultaneous=True,
            state_shape=(width,),  # what everyone sees: centralized critics may use it
        )

    def _reset(self, seed: int | None) -> None:  # no chance: seeds change nothing
        self.round = 0
        self.last = np.zeros(2, dtype=np.float32)  # last contributions / endowment
        self.skimmed = 0.0

    def _step(self, actions: dict) -> games.Transition:
        given = np.array([actions[c] for c in CITIZENS], dtype=np.float32)
        pot = self.multiplier * float(given.sum())
        skim = actions[STEWARD] == 1
        each = (0.25 if skim else 0.45) * pot
        rewards = {c: float(self.endowment - g + each) for c, g in zip(CITIZENS, given,
                                                                        strict=True)}
        rewards[STEWARD] = (0.5 if skim else 0.1) * pot
        self.round += 1
        self.last, self.skimmed = given / self.endowment, float(skim)
        over = self.round == self.rounds
        return games.Transition(rewards, {a: over for a in self.spec.agent_ids},
                                {a: False for a in self.spec.agent_ids})

    def acting_agents(self) -> tuple[str, ...]:
        return () if self.round == self.rounds else self.spec.agent_ids

    def state(self) -> np.ndarray:
        obs = np.zeros(self.rounds + 3, dtype=np.float32)
        obs[min(self.round, self.rounds - 1)] = 1.0
        obs[self.rounds:self.rounds + 2] = self.last
        obs[-1] = self.skimmed
        return obs

    def observe(self, agent: str) -> np.ndarray:
        obs = self.state()
        if agent == CITIZENS[1]:  # own contribution first, for either citizen
            obs[self.rounds:self.rounds + 2] = self.last[::-1]
        return obs

    def legal_actions(self, agent: str) -> list[int]:
        return list(range(self.spec.action_spaces[agent].n))

    def action_text(self, agent: str, action: int) -> str:
        if agent == STEWARD:
            return "skim" if action else "share"
        return f"give {action}"

    def text_observation(self, agent: str) -> str:
        last = ("" if self.round == 0 else
                f" Last round the citizens gave {[int(x) for x in self.last * self.endowment]}"
                f" and the steward chose to {'skim' if self.skimmed else 'share'}.")
        role = ("steward: share or skim the pot" if agent == STEWARD else
                f"citizen: give 0 to {self.endowment} tokens to the pot")
        return f"Round {self.round + 1} of {self.rounds}. You are {agent}, a {role}.{last}"
