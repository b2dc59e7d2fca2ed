"""A module with tied weights (one Parameter under two state-dict names) loads tied: the dry
run's ``load_state_dict(assign=True)`` gave each name a Parameter of its own, so a loaded
module had two parameters where the built one had one (review 40, L1)."""

import torch
from torch import nn

from marl.core import build_checked


def _tied() -> nn.Sequential:
    m = nn.Sequential(nn.Linear(4, 4, bias=False), nn.Linear(4, 4, bias=False))
    m[1].weight = m[0].weight
    return m


def test_tied_weights_stay_tied_after_build_checked():
    saved = _tied()
    loaded = build_checked(_tied, saved.state_dict(), "tied")
    assert loaded[0].weight is loaded[1].weight
    assert len(list(loaded.parameters())) == 1
    assert torch.equal(loaded[0].weight, saved[0].weight)
    assert not loaded[0].weight.is_meta
    x = torch.ones(2, 4)
    assert torch.equal(loaded(x), saved(x))


def test_untied_weights_of_one_storage_load_apart():
    """A file whose two names share one storage (a tied module's) loaded into an untied
    module: each weight its own tensor, as copying into a built module gave."""
    def build():
        return nn.Sequential(nn.Linear(4, 4, bias=False), nn.Linear(4, 4, bias=False))

    weights = _tied().state_dict()
    loaded = build_checked(build, weights, "untied")
    assert loaded[0].weight is not loaded[1].weight
    assert loaded[0].weight.data_ptr() != loaded[1].weight.data_ptr()
    assert torch.equal(loaded[0].weight, loaded[1].weight)
    assert len(list(loaded.parameters())) == 2
