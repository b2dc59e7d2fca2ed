"""Image observations are flattened for the MLP/GNN encoders: say so, once, with the shape
(cooperative_pong's 280x480x3 frames made updates take a minute without a word)."""

import logging

import pytest

import games
from games import pettingzoo as pz

PONG = "pettingzoo/pettingzoo.butterfly.cooperative_pong_v6"


@pytest.fixture
def fresh(monkeypatch, caplog):
    monkeypatch.setattr(pz, "_warned_large", set(), raising=False)
    caplog.set_level(logging.WARNING, logger="games.pettingzoo")
    return caplog


def test_image_observations_get_one_warning_naming_shape_and_remedy(fresh):
    games.make(PONG)
    games.make(PONG)
    msgs = [r.getMessage() for r in fresh.records if "flattened" in r.getMessage()]
    assert len(msgs) == 1 and "\n" not in msgs[0]
    assert "280x480x3" in msgs[0] and "403200 features" in msgs[0] and "downscale" in msgs[0]


@pytest.mark.parametrize("name", ["pettingzoo/pettingzoo.sisl.pursuit_v5",  # 7x7x3 grid
                                  "pettingzoo/pettingzoo.classic.go_v5",  # 19x19x17 planes
                                  "pettingzoo/mpe2.simple_spread_v3"])
def test_small_observations_get_none(fresh, name):
    games.make(name)
    assert not [r for r in fresh.records if "flattened" in r.getMessage()]
