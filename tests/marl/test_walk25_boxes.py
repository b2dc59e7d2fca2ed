"""Learners act inside boxes bounded per dimension (session 25, fix25d).

MAPPO's Gaussian actor and MADDPG's tanh actor map [-1, 1] onto the game's box. With
VMAS's ``kinematic_bicycle`` box collapsed to [-1, 1] in both dimensions, steering's
[-0.52, 0.52] got [-1, 1] and VMAS clamped half of it away; a box bounded per dimension
(``ActionSpace(low=(-1, -0.5), high=(1, 0.5))``) now maps each dimension onto its own
bounds, and snapshots record and check them (one number, as before, where every dimension
shares it).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import games
from games import VectorGame
from marl.actor_critic import Actor, NetConfig, SeatGroup, seat_groups
from marl.core import PolicyLoadError, load_policy
from marl.maddpg import MADDPG, MADDPGConfig
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import RandomPolicy
from tests.games.test_walk25_boxes import HIGH, IDS, LOW, Steer

EXTREMES = torch.tensor([[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0], [-5.0, 5.0]])  # unit coords


def _bicycle():
    game = games.make("vmas/kinematic_bicycle", continuous_actions=True)
    own = game._sim.env.action_space[0]  # VMAS's own box of bicycle_0
    return game.spec, own.low.astype(np.float32), own.high.astype(np.float32)


def _expected(low, high) -> np.ndarray:
    """:data:`EXTREMES` mapped onto the box: corners, middle, clipped corner."""
    low, high = np.float32(low), np.float32(high)
    return np.stack([low, high, low + (high - low) / 2, [low[0], high[1]]]).astype(np.float32)


def _steps(act, vg: VectorGame, steps: int) -> dict[str, np.ndarray]:
    """Every action ``act(vs)`` played on ``vg`` over ``steps`` steps, per agent ``[S*B, D]``."""
    vs, seen = vg.reset(), {a: [] for a in IDS}
    for _ in range(steps):
        actions = act(vs)
        for a in IDS:
            seen[a].append(np.asarray(actions[a]))
        vs = vg.step(actions)
    return {a: np.concatenate(x) for a, x in seen.items()}


def _inside(actions: np.ndarray) -> None:
    assert actions.shape[1] == 2
    assert (actions >= np.float32(LOW)).all() and (actions <= np.float32(HIGH)).all()


# ----------------------------------------------------------------------------- MAPPO
def test_actor_to_game_maps_the_unit_range_onto_each_dimension_of_kinematic_bicycle():
    spec, low, high = _bicycle()
    group = seat_groups(spec, ("bicycle_0",), "agent")[0]
    actor = Actor(NetConfig(), group, 9)
    np.testing.assert_array_equal(actor.to_game(EXTREMES).numpy(), _expected(low, high))


def test_actor_to_game_with_one_number_bounds_is_as_before():
    """A box of one number each maps as the scalar code did (the same float32 arithmetic)."""
    low, high = -0.3, 0.7  # a half width that float32 rounds
    actor = Actor(NetConfig(), SeatGroup("all", IDS, (0, 1), 4, 2, continuous=True, low=low,
                                         high=high), 9)
    unit = torch.randn(1000, 2, generator=torch.Generator().manual_seed(0)) * 1.5
    old = (low + (unit.clamp(-1, 1) + 1.0) * (0.5 * (high - low))).clamp(low, high).float()
    assert torch.equal(actor.to_game(unit), old)
    assert "low_D" not in actor.state_dict()  # the box is not saved with the weights


def test_mappo_acts_inside_each_dimension_and_reaches_its_bounds():
    learner = MAPPO(Steer().spec, MAPPOConfig(rollout_steps=4), seed=0)
    policy = learner.policy()
    seen = _steps(lambda vs: {a: policy.act(a, vs) for a in IDS}, VectorGame(Steer, 64, seed=0),
                  6)
    for a in IDS:
        _inside(seen[a])
        # std 0.5 in unit coordinates: some samples clip at each bound of each dimension
        assert np.isclose(seen[a].max(0), HIGH).all() and np.isclose(seen[a].min(0), LOW).all()


def test_a_per_dimension_snapshot_records_its_box_and_plays_as_saved(tmp_path):
    learner = MAPPO(Steer().spec, MAPPOConfig(rollout_steps=4), seed=0)
    policy = learner.policy()
    path = policy.save(tmp_path / "p.pt")
    data = torch.load(path, weights_only=True)
    group = data["payload"]["groups"][0]
    assert (group["low"], group["high"]) == ([-1.0, -0.5], [1.0, 0.5])
    loaded = load_policy(path)
    assert (loaded.groups[0].low, loaded.groups[0].high) == (LOW, HIGH)
    vs = VectorGame(Steer, 8, seed=1).reset()
    for a in IDS:
        np.testing.assert_array_equal(loaded.act(a, vs, greedy=True),
                                      policy.act(a, vs, greedy=True))


def _scalar_steer() -> games.GameSpec:
    import dataclasses

    spec = Steer().spec
    box = games.ActionSpace("continuous", shape=(2,), low=-1.0, high=1.0)
    return dataclasses.replace(spec, action_spaces={a: box for a in IDS})


def test_an_old_style_snapshot_of_one_number_bounds_still_loads(tmp_path):
    """A box of one number each is saved as every snapshot before per-dimension bounds was
    (python floats in the payload and the metadata), and such a file loads."""
    learner = MAPPO(_scalar_steer(), MAPPOConfig(rollout_steps=4), seed=0)
    path = learner.policy().save(tmp_path / "old.pt")
    data = torch.load(path, weights_only=True)
    group, meta = data["payload"]["groups"][0], data["meta"]["action_spaces"]["agent_0"]
    assert (group["low"], group["high"]) == (-1.0, 1.0) and type(group["low"]) is float
    assert (meta["low"], meta["high"]) == (-1.0, 1.0) and type(meta["low"]) is float
    loaded = load_policy(path)
    assert (loaded.groups[0].low, loaded.groups[0].high) == (-1.0, 1.0)
    # a payload writing that number once per dimension agrees with the metadata's number
    data["payload"]["groups"][0].update(low=[-1.0, -1.0], high=[1.0, 1.0])
    torch.save(data, tmp_path / "listed.pt")
    load_policy(tmp_path / "listed.pt")


@pytest.mark.parametrize("change, message", [
    (lambda g, m: g.update(low=[-1.0, -0.4]),
     r"'low' is \(-1.0, -0.4\) but the metadata's action space of 'agent_0' has "
     r"low=\(-1.0, -0.5\)"),
    (lambda g, m: g.update(low=-1.0),
     r"'low' is -1.0 but the metadata's action space of 'agent_0' has low=\(-1.0, -0.5\)"),
    (lambda g, m: g.update(high=[1.0]),
     r"'high' is \[1.0\]; accepted: a finite number, or 2 finite numbers \(one per dimension\)"),
    (lambda g, m: g.update(high=[1.0, float("nan")]), r"'high' is \[1.0, nan\]; accepted"),
    (lambda g, m: g.update(low=[-1.0, 0.5]),
     r"fields low=\(-1.0, 0.5\), high=\(1.0, 0.5\); accepted: low < high in every dimension"),
])
def test_a_snapshot_with_other_bounds_is_refused_in_one_line(tmp_path, change, message):
    learner = MAPPO(Steer().spec, MAPPOConfig(rollout_steps=4), seed=0)
    data = torch.load(learner.policy().save(tmp_path / "p.pt"), weights_only=True)
    change(data["payload"]["groups"][0], data["meta"]["action_spaces"])
    torch.save(data, tmp_path / "t.pt")
    with pytest.raises(PolicyLoadError, match=message) as err:
        load_policy(tmp_path / "t.pt")
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------------------- MADDPG
def test_maddpg_maps_the_unit_range_onto_each_dimension_of_kinematic_bicycle():
    spec, low, high = _bicycle()
    learner = MADDPG(spec, MADDPGConfig(), agents=("bicycle_0",), seed=0)
    unit_BAD = EXTREMES.clamp(-1, 1)[:, None, :]
    got = learner.head.to_game(unit_BAD)[:, 0]
    expected = _expected(low, high)
    expected[3] = [low[0], high[1]]
    np.testing.assert_array_equal(got, expected)


def test_maddpg_acts_inside_each_dimension(tmp_path):
    learner = MADDPG(Steer().spec, MADDPGConfig(exploration_noise=2.0), seed=0)
    seen = _steps(learner.act, VectorGame(Steer, 64, seed=0), 6)
    for a in IDS:
        _inside(seen[a])
        assert np.isclose(seen[a].max(0), HIGH).all() and np.isclose(seen[a].min(0), LOW).all()
    policy = learner.policy()
    loaded = load_policy(policy.save(tmp_path / "m.pt"))  # the box comes from the metadata
    assert torch.equal(loaded.head.low_AD, learner.head.low_AD.cpu())
    assert torch.equal(loaded.head.high_AD, learner.head.high_AD.cpu())
    _inside(loaded.act("agent_1", VectorGame(Steer, 8, seed=1).reset(), greedy=False))


def test_maddpg_stores_another_policys_box_actions_per_dimension():
    """Seats another policy held (``seat_mask``): its box actions are stored in the critics'
    unit coordinates, each dimension by its own bounds, and map back to what was played."""
    learner = MADDPG(Steer().spec, MADDPGConfig(), seed=0)
    learner.seat_mask = np.array([[True, False]] * 4)  # agent_1 held by another policy
    vs = VectorGame(Steer, 4, seed=0).reset()
    acts = learner.act(vs)
    played = {**acts, "agent_1": np.float32([[-1, -0.5], [1, 0.5], [0, 0.25], [0.5, -0.25]])}
    learner.played(played)
    unit = learner._pending["action"][:, 1]  # [B, D] what the critics will see
    assert unit.tolist() == [[-1.0, -1.0], [1.0, 1.0], [0.0, 0.5], [0.5, -0.5]]
    np.testing.assert_array_equal(learner.head.to_game(learner._pending["action"])[:, 1],
                                  played["agent_1"])


# ------------------------------------------------------------------------ random play
def test_random_play_covers_each_dimension_of_its_box():
    policy = RandomPolicy(Steer().spec, seed=0)
    seen = _steps(lambda vs: {a: policy.act(a, vs) for a in IDS}, VectorGame(Steer, 64), 4)
    for a in IDS:
        _inside(seen[a])
        assert (seen[a].max(0) > np.float32(HIGH) * 0.9).all()
