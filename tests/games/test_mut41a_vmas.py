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
