"""games36: contract checks found by a walker's own games (walk36a).

A game that runs past ``spec.max_steps`` is refused by VectorGame at that step (training ran
to its end before, evaluation failed); check_game's too-long message gives the numbers; a
reward to an agent whose episode ended is refused by check_game and not counted in
VectorGame's episode_return; legal actions outside the action space and a missing
``state()`` are check_game errors naming seed and step; mean returns are plain floats;
``start_warnings`` says what training would run through that check_game refuses.
"""

from __future__ import annotations

import numpy as np
import pytest

import games
from games.check import GameCheckError, check_game, start_warnings

IDS = ("w0", "w1")


class Walk(games.Game):
    """Two walkers acting together: ``w0`` terminates at step ``w0_end``, ``w1`` at step
    ``end``. ``after``: the reward ``w0`` gets at each step after its end; ``max_steps`` the
    spec's claim (below ``end``: the game runs past it)."""

    def __init__(self, end: int = 4, w0_end: int = 2, after: float = 0.0, max_steps: int = 10,
                 legal_out: bool = False, state_shape: tuple | None = None,
                 np_rewards: bool = False, together: bool = True, obs_dtype=np.float32,
                 no_flags: bool = False) -> None:
        self.end, self.w0_end, self.after = end, w0_end, after
        self.legal_out, self.np_rewards, self.obs_dtype = legal_out, np_rewards, obs_dtype
        self.no_flags = no_flags
        self.spec = games.GameSpec(
            "games36_walk", tuple(games.AgentSpec(a, "walker", "team") for a in IDS),
            {a: (2,) for a in IDS},
            {a: games.ActionSpace("discrete", n=2) for a in IDS}, max_steps,
            simultaneous=together, state_shape=state_shape)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        gone_before = self.t > self.w0_end
        rew = {"w0": self.after if gone_before else 1.0, "w1": 1.0}
        if self.np_rewards:
            rew = {a: np.float64(r) for a, r in rew.items()}
        term = {"w0": self.t >= self.w0_end, "w1": self.t >= self.end}
        if self.no_flags:
            term = {a: False for a in IDS}
        return games.Transition(rew, term, {a: False for a in IDS})

    def acting_agents(self):
        return tuple(a for a, e in zip(IDS, (self.w0_end, self.end), strict=True) if self.t < e)

    def observe(self, agent):
        return np.array([self.t, 0], self.obs_dtype)

    def text_observation(self, agent):
        return f"{agent} at {self.t}"

    def action_text(self, agent, action):
        return ["stay", "walk"][action]

    def legal_actions(self, agent):
        return [0, 5] if self.legal_out and self.t == 1 else [0, 1]


def _run(vg: games.VectorGame, steps: int) -> games.VecStep:
    vs = vg.reset()
    for _ in range(steps):
        vs = vg.step({a: np.zeros(vg.num_envs, np.int64) for a in IDS})
    return vs


# ------------------------------------------------------------------------------ M3
def test_vector_game_refuses_the_first_step_past_max_steps():
    # walk36a's longgame trained a whole run, then evaluation failed: it fails at the step
    vg = games.VectorGame(lambda: Walk(end=6, w0_end=2, max_steps=3), 2)
    _run(vg, 3)  # three steps: within max_steps (evaluation's check is at the third)
    with pytest.raises(games.EpisodeTooLongError, match=(
            r"^game 'games36_walk': episode step 4 of copy 0 ran past spec.max_steps=3 "
            r"without the episode ending; a game must end \(terminate or truncate\) every "
            r"episode within max_steps$")):
        vg.step({a: np.zeros(2, np.int64) for a in IDS})


def test_marl_train_raises_the_same_error_class():
    from marl.train import EpisodeTooLongError

    assert EpisodeTooLongError is games.EpisodeTooLongError
    assert issubclass(EpisodeTooLongError, ValueError)


def test_an_episode_of_exactly_max_steps_plays_on():
    vg = games.VectorGame(lambda: Walk(end=3, w0_end=2, max_steps=3), 2)
    vs = _run(vg, 7)  # episodes of 3 steps, reset, ...
    assert vs.episode_length.max() <= 3


def test_check_game_says_the_numbers_of_a_too_long_episode():
    with pytest.raises(GameCheckError, match=(
            r"^games36_walk seed 0 step 3: the episode has not ended after 3 steps, but "
            r"spec.max_steps=3; a game must end \(terminate or truncate\) every episode "
            r"within max_steps$")):
        check_game(Walk(end=6, max_steps=3), episodes=1)


# ------------------------------------------------------------------------------ M4
def test_check_game_refuses_a_reward_after_an_agents_own_end():
    with pytest.raises(GameCheckError, match=(
            r"^games36_walk seed 0 step 2 \(after the step\): reward -0.1 to w0, whose episode "
            r"has ended; an agent whose episode ended \(terminated or truncated at an earlier "
            r"step\) gets no more rewards")):
        check_game(Walk(after=-0.1), episodes=1)


def test_a_zero_reward_after_the_end_passes():
    report = check_game(Walk(after=0.0), episodes=2)
    assert report.mean_returns == {"w0": 2.0, "w1": 4.0}


def test_vector_game_returns_count_rewards_up_to_the_agents_own_end():
    vg = games.VectorGame(lambda: Walk(after=-0.1), 1)
    vs = vg.reset()
    for _ in range(4):
        vs = vg.step({a: np.zeros(1, np.int64) for a in IDS})
    assert vs.done[0]
    assert vs.episode_return["w0"][0] == pytest.approx(2.0)  # 1 + 1, not 1 + 1 - 0.1 - 0.1
    assert vs.episode_return["w1"][0] == pytest.approx(4.0)


# ------------------------------------------------------------------------------ L7, L8, L11
def test_legal_actions_outside_the_space_are_a_check_error_naming_the_step():
    with pytest.raises(GameCheckError, match=(
            r"^games36_walk seed 0 step 1: legal actions \[5\] of w0 are outside its 2 "
            r"actions \(ids 0..1\); the game cannot be played$")):
        check_game(Walk(legal_out=True), episodes=1)


def test_legal_actions_outside_the_space_keep_their_short_message_elsewhere():
    game = Walk(legal_out=True)
    game.reset(0)
    with pytest.raises(games.GameContractError) as info:
        game.step({a: 0 for a in IDS})
    assert str(info.value) == ("games36_walk: legal actions [5] of w0 are outside its 2 actions "
                               "(ids 0..1); the game cannot be played")
    assert info.value.where == "step 1"


def test_a_state_shape_without_state_says_what_to_do():
    with pytest.raises(GameCheckError, match=(
            r"^games36_walk seed 0 step 0: state\(\) returned None, but spec.state_shape is "
            r"\(3,\): implement state\(\) or drop state_shape$")):
        check_game(Walk(state_shape=(3,)), episodes=1)
    vg = games.VectorGame(lambda: Walk(state_shape=(3,)), 1, with_state=True)
    with pytest.raises(games.GameContractError, match=(
            r"state\(\) returned None, expected spec.state_shape \(3,\): implement state\(\) "
            r"or drop state_shape$")):
        vg.reset()


def test_mean_returns_are_plain_floats_for_numpy_rewards():
    report = check_game(Walk(np_rewards=True), episodes=2)
    assert all(type(r) is float for r in report.mean_returns.values())
    assert "np.float64" not in repr(report)


# ------------------------------------------------------------------------------ L5
def test_start_warnings_name_what_check_game_refuses():
    assert start_warnings(Walk()) == []
    [together] = start_warnings(Walk(together=False))
    assert together.startswith("seed 0 step 0: ['w0', 'w1'] act at once, but "
                               "spec.simultaneous is False; declare GameSpec(simultaneous=True)")
    [dtype] = start_warnings(Walk(obs_dtype=np.float64))
    assert dtype.startswith("seed 0 step 0: obs of w0 is float64, not float32")
    [after] = start_warnings(Walk(after=-0.1))
    assert after.startswith("seed 0 step 2: reward -0.1 to w0, whose episode has ended")
    [no_end] = start_warnings(Walk(no_flags=True))
    assert no_end.startswith("seed 0 step 3: the episode ended with ['w0', 'w1'] neither "
                             "terminated nor truncated")
    assert no_end.endswith("(check_game refuses games36_walk for it)")
    both = start_warnings(Walk(together=False, after=-0.1))
    assert len(both) == 2 and both[-1].endswith("(check_game refuses games36_walk for each)")


def test_start_warnings_name_the_seed_and_step_of_a_game_that_raises():
    class Raises(Walk):
        def _step(self, actions):
            if self.t == 1:
                raise RuntimeError("boom")
            return super()._step(actions)

    with pytest.raises(GameCheckError, match=r"^games36_walk seed 0 step 1: _step raised "
                                             r"RuntimeError: boom"):
        start_warnings(Raises())
