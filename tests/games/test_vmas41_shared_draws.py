"""(M2, walk41b) A VMAS batch's copies start from independent layouts.

Some scenarios draw part of a layout once for all copies when all are reset
(``reset_world_at(None)``): passage's gap and which agent starts where are one
``torch.randperm`` for the batch. An evaluation's 32 episodes were then one layout played
32 times (its interval far too narrow: -1505 +- 46 with seed 0, -1757 +- 62 with seed 7),
and a training batch saw one layout. Those scenarios (``DRAWS_SHARED``) reset each copy on
its own, or past ``RESET_GROUPS`` copies (here 64: 32 groups) each group of copies
(tests/games/test_vmas41b_grouped_reset.py); the check here (entity positions after a
reset of all copies against resets of each copy alone) runs over every scenario, so the
list is complete and each entry needed.
"""

import pytest
import torch
from vmas.simulator.environment.environment import Environment, local_seed

import games
from games.vmas import SCENARIOS
from games.vmas_reset import DRAWS_SHARED, draws_shared, shared_in_batch

# an order drawn per copy, holding in 20-80% of the copies, is the same in all 64 with a
# chance under 1e-6 (and the seeds are fixed: a pass is not luck that can change)
B, BAND = 64, 0.2
# smaller settings of slow resets (as tests/games/test_vmas_reset.py): the same reset code
KWARGS = {"vmas/sampling": {"grid_spacing": 0.25},
          "vmas/pollock": {"n_agents": 4, "n_lines": 3, "n_boxes": 3}}
# road_traffic's reset of all copies is its own Python loop over the copies (each copy its
# own draws), ~0.2 s a copy: not run here
SLOW = {"vmas/road_traffic"}
FOOTBALL = {"spawn_in_formation": True, "randomise_formation_indices": True}


def _sim(name: str, num_envs: int = B, seed: int = 0, **kwargs):
    kwargs = {**KWARGS.get(name, {}), **kwargs}
    return games.VectorGame(name, num_envs, seed=seed, tensors=True, **kwargs).native.sim


def _layout(sim) -> torch.Tensor:
    """``[B, 2V]``: every agent's and landmark's position."""
    world = sim.env.world
    return torch.cat([e.state.pos for e in world.agents + world.landmarks], 1).clone()


def _each_alone(sim) -> torch.Tensor:
    """The layout after resetting every copy on its own (VMAS's ``env_index=i``)."""
    with sim.rng(), local_seed(Environment.vmas_random_state):
        for i in range(sim.num_envs):
            sim.env.scenario.env_reset_world_at(i)
    return _layout(sim)


def _vmas_batch_reset(sim) -> torch.Tensor:
    with sim.rng():
        sim.env.reset()
    return _layout(sim)


@pytest.mark.parametrize("name", sorted(DRAWS_SHARED) + ["vmas/football"])
def test_listed_scenarios_draw_part_of_the_layout_once_in_vmas_reset_of_all(name):
    kwargs = FOOTBALL if name == "vmas/football" else {}
    sim = _sim(name, **kwargs)
    assert sim.each_copy
    assert shared_in_batch(_vmas_batch_reset(sim), _each_alone(sim), BAND)


@pytest.mark.parametrize("name", [f"vmas/{s}" for s in SCENARIOS
                                  if f"vmas/{s}" not in SLOW])
def test_a_reset_of_all_copies_draws_every_copy_on_its_own(name):
    """Fails before: passage, ball_passage, give_way, ... share draws across copies."""
    sim = _sim(name)
    sim.reset()  # through the game layer (VectorGame's reset)
    assert shared_in_batch(_layout(sim), _each_alone(sim), BAND) == [], (
        f"{name}: a reset of all copies draws part of the layout once for the batch; add it "
        "to games.vmas_reset.DRAWS_SHARED")


def test_football_shares_its_formation_only_when_shuffled():
    assert not draws_shared("vmas/football", {})
    assert not draws_shared("vmas/football", {"randomise_formation_indices": True})
    assert draws_shared("vmas/football", FOOTBALL)
    assert not draws_shared("vmas/ball_passage", {"fixed_passage": True})
    sim = _sim("vmas/football", **FOOTBALL)
    sim.reset()
    assert shared_in_batch(_layout(sim), _each_alone(sim), BAND) == []


def _gap_x(sim) -> torch.Tensor:
    """passage: the x of the block that lets agents through, per copy."""
    gap = next(lm for lm in sim.env.world.landmarks if lm.name.startswith("passage")
               and not lm.collide)
    return gap.state.pos[:, 0].clone()


def test_passage_copies_ended_together_draw_their_own_gaps():
    """Fails before: 40 ended copies (one call of VMAS's reset of all) all got one gap."""
    vg = games.VectorGame("vmas/passage", 64, seed=0, tensors=True)
    vg.reset()
    sim = vg.native.sim
    assert len(set(_gap_x(sim).tolist())) > 1
    vg.step({a: torch.zeros(64, dtype=torch.long) for a in vg.spec.agent_ids})
    ended = torch.arange(40)
    before = _layout(sim)
    sim.reset_at(ended)
    assert len(set(_gap_x(sim)[:40].tolist())) > 1
    assert torch.equal(_layout(sim)[40:], before[40:])
    assert (sim.env.steps[:40] == 0).all() and (sim.env.steps[40:] == 1).all()


def test_passage_layouts_replay_with_the_seed():
    a, b, c = (games.VectorGame("vmas/passage", 16, seed=s, tensors=True) for s in (3, 3, 4))
    obs = [vg.reset().obs for vg in (a, b, c)]
    for agent in a.spec.agent_ids:
        assert torch.equal(obs[0][agent], obs[1][agent])
        assert not torch.equal(obs[0][agent], obs[2][agent])
    assert torch.equal(_gap_x(a.native.sim), _gap_x(b.native.sim))
    # the 16 copies' gaps: several of passage's block positions, not one
    assert len(set(_gap_x(a.native.sim).tolist())) > 2
