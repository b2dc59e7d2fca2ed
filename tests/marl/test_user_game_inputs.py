"""What a user's own game may hand the learners (found by a walk of the "bring your own
game" path): observations and states of any shape, and NaN rewards in seats the learner
does not hold (a fixed opponent's, an evaluation's random player's)."""

import dataclasses
import math

import numpy as np
import pytest
import torch

import games
from games.matrix import CLIMBING, MatrixGame
from marl.actor_critic import NetConfig
from marl.guards import NonFiniteError
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import RandomPolicy, evaluate, train

FLAT, GRID = "user_inputs/climbing_flat", "user_inputs/climbing_grid"


@games.register(FLAT)
def climbing_flat() -> MatrixGame:
    return MatrixGame(FLAT, CLIMBING, repeats=4)


@games.register(GRID)
class ClimbingGrid(MatrixGame):
    """The same game with its observations and state as 2 x 2 grids."""

    def __init__(self) -> None:
        super().__init__(GRID, CLIMBING, repeats=4)
        self.spec = dataclasses.replace(
            self.spec, obs_shapes={a: (2, 2) for a in self.spec.agent_ids}, state_shape=(2, 2))

    def observe(self, agent):
        return super().observe(agent).reshape(2, 2)

    def state(self):
        return super().state().reshape(2, 2)


@games.register("user_inputs/nan_opponent")
class NanOpponent(MatrixGame):
    """Climbing played 4 times; agent_1's reward is NaN from its copy's 3rd step on."""

    def __init__(self) -> None:
        super().__init__("user_inputs/nan_opponent", CLIMBING, repeats=4)
        self.count = 0

    def _step(self, actions):
        tr = super()._step(actions)
        self.count += 1
        if self.count >= 3:
            tr.rewards["agent_1"] = math.nan
        return tr


def _trained(name, net, algo="mappo"):
    spec = games.make(name).spec
    cfg = MAPPOConfig(rollout_steps=8, epochs=2, minibatches=2, net=NetConfig(**net))
    if algo == "ippo":
        cfg = dataclasses.replace(cfg, net=dataclasses.replace(cfg.net, critic="local"))
    learner = MAPPO(spec, cfg, seed=3)
    vg = games.VectorGame(name, 4, seed=0, **learner.vector_game_kwargs)
    train(learner, vg, 4 * 8 * 3, progress=False)
    return learner


@pytest.mark.parametrize("net", [{"critic": "state"}, {"critic": "concat"},
                                 {"critic": "local"}, {"recurrent": True}])
def test_two_dimensional_observations_train_as_their_flattened_game(net):
    """MAPPO flattens each copy's observation (and state): a game whose observations are
    2 x 2 grids trains exactly as the same game with flat observations of 4 (was: numpy's
    'could not broadcast input array from shape (4,2,2) into shape (4,2)')."""
    grid, flat = _trained(GRID, net), _trained(FLAT, net)
    for (name, p), (_, q) in zip(grid.actors[0].state_dict().items(),
                                 flat.actors[0].state_dict().items(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=0, msg=name)
    vg = games.VectorGame(GRID, 4, seed=5)
    vs = vg.reset()
    acts = grid.policy().act("agent_0", vs)  # a snapshot's policy reads grids too
    assert acts.shape == (4,)


def test_a_nan_reward_of_a_fixed_opponent_stops_training_in_one_line():
    """The learner checks only its own seats' rewards; a NaN in an opponent's seat went by
    silently and ended up in the run's evaluation rows."""
    spec = games.make("user_inputs/nan_opponent").spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=8), agents=("agent_0",), seed=0)
    vg = games.VectorGame("user_inputs/nan_opponent", 4, seed=0, **learner.vector_game_kwargs)
    with pytest.raises(NonFiniteError, match=r"non-finite reward \(nan\) in game "
                       r"'user_inputs/nan_opponent', agent 'agent_1', at frame 12"):
        train(learner, vg, 400, opponents={"agent_1": RandomPolicy(spec, seed=0)},
              progress=False)


def test_a_nan_reward_in_evaluation_is_an_error_not_a_nan_score():
    spec = games.make("user_inputs/nan_opponent").spec
    rnd = RandomPolicy(spec, seed=0)
    vg = games.VectorGame("user_inputs/nan_opponent", 4, seed=0)
    with pytest.raises(NonFiniteError, match=r"agent 'agent_1', at frame 12: evaluation "
                       r"stopped"):
        evaluate(vg, {a: rnd for a in spec.agent_ids}, 8)
    ok = evaluate(games.VectorGame(FLAT, 4, seed=0), {a: rnd for a in spec.agent_ids}, 8)
    assert all(np.isfinite(v) for v in ok.per_agent.values())
