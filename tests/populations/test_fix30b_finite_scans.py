"""A league resume scanned each member's checkpointed tensors for NaN and inf twice:
``load_members`` (which names the file and the member) and then the learner's own
``load_state_dict`` (``refuse_nonfinite``). Now once; NaN is still refused, naming both."""

import pytest

import games
from marl import state_checks
from marl.core import CheckpointError
from marl.mappo import MAPPO, MAPPOConfig
from populations.league_state import load_members
from populations.members import LearnerMember


def _member():
    return LearnerMember("main", MAPPO(games.make("openspiel/kuhn_poker").spec, MAPPOConfig()))


def test_load_members_scans_each_tensor_once(tmp_path, monkeypatch):
    scans: dict[int, int] = {}
    real = state_checks._all_finite

    def counted(t):  # the real scan, counted per tensor
        scans[id(t)] = scans.get(id(t), 0) + 1
        return real(t)

    monkeypatch.setattr(state_checks, "_all_finite", counted)
    m = _member()
    state = m.state_dict()
    floats = [t for _, t in state_checks._tensors(state) if t.is_floating_point()]
    load_members(tmp_path / "ckpt_000002.pt", [m], {"main": state})
    assert floats and {id(t) for t in floats} <= set(scans)
    assert sorted(set(scans[id(t)] for t in floats)) == [1]  # before: [2]


def test_load_members_still_refuses_nan_naming_the_member(tmp_path):
    m = _member()
    state = m.state_dict()
    next(t for _, t in state_checks._tensors(state) if t.is_floating_point())[0] = float("nan")
    with pytest.raises(CheckpointError, match=r"holds NaN in .* of member 'main'"):
        load_members(tmp_path / "ckpt_000002.pt", [m], {"main": state})
