"""A VMAS batch's ``final_legal`` (mutation walk mut41a: every row True at every step passed
the suite; VecStep says False where no episode ended, as ``final_obs``'s zeros)."""

import numpy as np
import pytest

import games

pytest.importorskip("vmas")


def test_final_legal_is_true_only_in_the_copies_whose_episode_ended():
    vg = games.VectorGame("vmas/simple_spread", 2, seed=0, max_steps=2)
    vg.reset()
    acts = {a: np.zeros(2, np.int64) for a in vg.spec.agent_ids}
    vs = vg.step(acts)
    assert not vs.done.any()
    assert not any(m.any() for m in vs.final_legal.values())
    vs = vg.step(acts)
    assert vs.done.all() and all(m.all() for m in vs.final_legal.values())


def test_the_ego_view_of_a_vmas_graph_makes_velocities_relative_too():
    """Mutant: only positions made relative (``nodes[:, 0:2]``); at a reset every velocity
    is zero, so agents move first."""
    game = games.make("vmas/simple_spread")
    ts = game.reset(0)
    for _ in range(3):
        ts = game.step({a: 5 if i % 2 else 7 for i, a in enumerate(ts.acting)})
    absolute = game.entity_graph()
    assert np.abs(absolute.nodes[:, 2:4]).max() > 0.01
    me = absolute.agent_node["agent_0"]
    ego = game.entity_graph("agent_0")
    np.testing.assert_allclose(ego.nodes[:, 0:4], absolute.nodes[:, 0:4] - absolute.nodes[me, 0:4],
                               atol=1e-6)
