"""``finite_scanned``: a loader that refused NaN and inf in a state (naming its file) lets
the learner's ``load_state_dict`` pass that state, and the dicts inside it, without scanning
the same tensors again; any other state is still scanned and refused."""

import pytest
import torch

from marl.state_checks import finite_scanned, nonfinite_tensor, refuse_nonfinite


def test_refuse_nonfinite_passes_only_what_the_block_names():
    good = {"actors": {"w": torch.ones(3)}, "buffer": [torch.zeros(2)]}
    bad = {"w": torch.tensor([1.0, float("nan")])}
    assert nonfinite_tensor(good) is None
    with finite_scanned(good):
        refuse_nonfinite(good, "learner state")
        refuse_nonfinite(good["actors"], "actors")  # a part of it, as a member passes on
        with pytest.raises(ValueError, match=r"^learner state holds NaN in w; "):
            refuse_nonfinite(bad, "learner state")  # another state: scanned
    with pytest.raises(ValueError, match="holds NaN"):  # after the block: scanned again
        good["actors"]["w"][0] = float("nan")
        refuse_nonfinite(good, "learner state")
