"""VectorGame's bookkeeping of agents that leave an episode alone, its action checks and its
copy counts (mutation walk mut41a: each test below failed with one mutation of
games/vector.py that the suite let pass).

``LeavesAlone``: two simultaneous agents; ``agent_0`` leaves at step 1 (terminated or
truncated, as built) while ``agent_1`` plays on to step 3. Each agent in the episode gets 1.0
a step; every observation is non-zero, so a zero row is VectorGame's own.
"""

import numpy as np
import pytest

from games import (
    ActionSpace,
    AgentSpec,
    Game,
    GameError,
    GameSpec,
    IllegalActionError,
    Transition,
    VectorGame,
    make,
)
from games.vector import episode_copies

IDS = ("agent_0", "agent_1")
LEAVE, END = 1, 3


class LeavesAlone(Game):
    def __init__(self, how: str = "terminated") -> None:
        self.spec = GameSpec(
            name="test/leaves_alone",
            agents=tuple(AgentSpec(a, "worker", "team") for a in IDS),
            obs_shapes={a: (2,) for a in IDS},
            action_spaces={a: ActionSpace("discrete", n=2) for a in IDS},
            max_steps=10,
            simultaneous=True,
        )
        self.how, self.t, self.live = how, 0, list(IDS)

    def _reset(self, seed):
        self.t, self.live = 0, list(IDS)

    def _step(self, actions):
        self.t += 1
        rewards = {a: 1.0 if a in self.live else 0.0 for a in IDS}
        over = self.t >= END
        ended = {a: over for a in IDS}
        left = {a: False for a in IDS}
        if self.t == LEAVE:
            left["agent_0"] = True
            self.live.remove("agent_0")
        if self.how == "terminated":
            term = {a: ended[a] or left[a] for a in IDS}
            return Transition(rewards, term, {a: False for a in IDS})
        return Transition(rewards, ended, left)  # agent_0 cut alone, the episode ends by its rules

    def acting_agents(self):
        return () if self.t >= END else tuple(self.live)

    def observe(self, agent):
        return np.array([self.t + 1, 1.0], np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def text_observation(self, agent):
        return f"step {self.t}"


def _zeros(vg, acting):
    return {a: np.zeros(vg.num_envs, np.int64) for a in vg.spec.agent_ids if acting[a].any()}


@pytest.mark.parametrize("how", ["terminated", "truncated"])
def test_an_agent_that_left_earlier_has_zero_final_obs_at_the_episode_end(how):
    """Mutants: the earlier-left check dropped in ``_record_final`` (its final observation
    asked again at the end), and a truncated agent not counted as gone (only terminated)."""
    vg = VectorGame(lambda: LeavesAlone(how), 1, seed=0)
    vs = vg.reset()
    vs = vg.step(_zeros(vg, vs.acting))  # agent_0 leaves alone
    assert not vs.done[0]
    assert vs.final_obs["agent_0"][0].tolist() == [2.0, 1.0]  # its last observation
    assert vs.final_obs["agent_1"][0].tolist() == [2.0, 1.0]  # still in: the row holds all
    while not vs.done[0]:
        vs = vg.step(_zeros(vg, vs.acting))
    assert not vs.final_obs["agent_0"][0].any()  # left at an earlier step: zeros, as in obs
    assert vs.final_obs["agent_1"][0].tolist() == [END + 1, 1.0]
    assert vs.episode_return["agent_0"][0] == LEAVE
    assert vs.episode_return["agent_1"][0] == END


def test_reset_forgets_the_agents_that_left_the_episode_it_cut():
    """Mutant: ``reset()`` kept the agents that left the cut episode: the next episode neither
    counted their returns nor recorded their final observations."""
    vg = VectorGame(LeavesAlone, 2, seed=0)
    vs = vg.reset()
    vg.step(_zeros(vg, vs.acting))  # agent_0 leaves in both copies; then the episode is cut
    vs = vg.reset()
    vs = vg.step(_zeros(vg, vs.acting))
    assert vs.final_obs["agent_0"].tolist() == [[2.0, 1.0]] * 2
    while not vs.done.all():
        vs = vg.step(_zeros(vg, vs.acting))
    assert vs.episode_return["agent_0"].tolist() == [LEAVE] * 2
    assert vs.episode_return["agent_1"].tolist() == [END] * 2


def test_an_array_longer_than_the_copies_is_refused():
    """Mutant: ``shape[0] < B`` (a long array passed silently, as before session 37)."""
    vg = VectorGame("matrix/climbing", 3, seed=0)
    vg.reset()
    with pytest.raises(IllegalActionError, match=r"actions\['agent_1'\] holds 4 actions, "
                                                 r"expected one per copy: 3"):
        vg.step({"agent_0": np.zeros(3, np.int64), "agent_1": np.zeros(4, np.int64)})


def test_a_step_refused_at_copy_1_says_so_until_reset():
    """Mutant: ``if b > 1`` (copy 0 had stepped, copy 1 not: the copies were apart, and the
    next step refused correct actions for the agent copy 0 no longer waited for)."""
    vg = VectorGame("openspiel/kuhn_poker", 3, seed=0)
    vg.reset()
    with pytest.raises(IllegalActionError):
        vg.step({"player_0": np.array([0, 5, 0])})
    with pytest.raises(GameError, match=r"after a step refused at copy 1 \(copies 0-0 had "
                                        r"stepped\); call reset\(\)$"):
        vg.step({"player_0": np.zeros(3, np.int64)})


def test_a_stepped_game_plays_no_more_copies_than_episodes():
    """Mutant: ``max(1, num_envs)``: 8 copies for 3 episodes of a stepped game."""
    game = make("openspiel/kuhn_poker")
    assert episode_copies(game, 3, 8) == 3
    assert episode_copies(game, 20, 8) == 8
    assert episode_copies(game, 0, 8) == 1
