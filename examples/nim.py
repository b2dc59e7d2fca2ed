"""A complete user game written only against the public ``games`` API: Nim.

Two players take turns removing 1-3 stones from a pile; whoever takes the last stone
wins (+1, the other -1). Run ``python examples/nim.py`` to check it and play once.
"""

import numpy as np

import games


@games.register("nim")
class Nim(games.Game):
    def __init__(self, stones: int = 10, max_take: int = 3) -> None:
        if stones < 1 or max_take < 1:
            raise games.GameError(f"stones and max_take must be >= 1, got {stones}, {max_take}")
        self.stones, self.max_take = stones, max_take
        players = ("player_0", "player_1")
        self.spec = games.GameSpec(
            name="nim",
            agents=tuple(games.AgentSpec(p, role=p, team=p) for p in players),
            obs_shapes={p: (stones + 1,) for p in players},
            action_spaces={p: games.ActionSpace("discrete", n=max_take) for p in players},
            max_steps=stones,
            zero_sum=True,
        )

    def _reset(self, seed):  # no randomness: every episode starts from the full pile
        self.pile, self.turn = self.stones, 0

    def _step(self, actions):
        (agent,) = actions
        self.pile -= actions[agent] + 1  # action k takes k + 1 stones
        over = self.pile == 0
        rewards = {p: 0.0 for p in self.spec.agent_ids}
        if over:  # the mover took the last stone
            rewards = {p: 1.0 if p == agent else -1.0 for p in self.spec.agent_ids}
        self.turn = 1 - self.turn
        flags = {p: over for p in self.spec.agent_ids}
        return games.Transition(rewards, flags, {p: False for p in flags})

    def acting_agents(self):
        return () if self.pile == 0 else (self.spec.agent_ids[self.turn],)

    def observe(self, agent):
        obs = np.zeros(self.stones + 1, dtype=np.float32)
        obs[self.pile] = 1.0  # one-hot pile size
        return obs

    def legal_actions(self, agent):
        return list(range(min(self.max_take, self.pile)))

    def action_text(self, agent, action):
        return f"take {action + 1}"

    def text_observation(self, agent):
        most = min(self.max_take, self.pile)  # what legal_actions allows
        left = f"{self.pile} stone{'s' if self.pile != 1 else ''} left"
        return f"You are {agent}. {left}; take {'1' if most == 1 else f'1 to {most}'}."


if __name__ == "__main__":
    print(games.check_game(games.make("nim", stones=7)))
    game = games.make("nim")
    ts = game.reset(seed=0)
    while not ts.done:
        agent = ts.acting[0]
        print(game.text_observation(agent), "->", game.legal_action_texts(agent)[-1])
        ts = game.step({agent: game.parse_action(agent, game.legal_action_texts(agent)[-1])})
    print("rewards:", ts.rewards)
