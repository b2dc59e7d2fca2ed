"""A continuous actor's box bounds (non-persistent buffers made by ``config_tensor``) load on
the device its weights load to: the dry run made them on the CPU while ``build_checked`` moved
the file's weights to ``torch.get_default_device()``, so under ``with torch.device("cuda")``
bounds and weights ended on two devices (review 40, L2). ``config_tensor`` now makes them on
the default device where the load began (:func:`marl.networks.weights_to_load` keeps it)."""

import dataclasses

import pytest
import torch

from marl import registry
from marl.core import load_policy
from marl.networks import config_tensor, weights_to_load
from tests.marl.exits_game import Exits


def _box_policy_file(path):
    entry = registry.get("mappo")
    cfg = entry.config()
    cfg = dataclasses.replace(cfg, net=dataclasses.replace(cfg.net, share="agent"))
    return entry.cls(Exits(continuous=True).spec, cfg, seed=0).policy().save(path)


def _devices(policy):
    mods = [m for m in vars(policy).values() if isinstance(m, torch.nn.Module)]
    bounds = [b for m in mods for name, b in m.named_buffers() if name.endswith("low_D")]
    assert bounds, "the actor has box bounds"
    return {t.device for m in mods for t in (*m.parameters(), *m.buffers())}


def test_config_tensors_go_where_the_load_began_not_to_the_cpu():
    """The code path itself: ``weights_to_load`` entered with the meta device as the default
    (standing for an accelerator, which this machine may lack) and a dry run inside it."""
    with torch.device("meta"), weights_to_load(), torch.device("meta"):
        assert config_tensor([1.0, 2.0], torch.float32).is_meta  # was made on the CPU
    with weights_to_load(), torch.device("meta"):
        bound = config_tensor([1.0, 2.0], torch.float32)
    assert bound.device == torch.device("cpu") and bound.tolist() == [1.0, 2.0]


def test_a_box_actor_loaded_under_a_cpu_default_keeps_one_device(tmp_path):
    path = _box_policy_file(tmp_path / "p.pt")
    with torch.device("cpu"):
        policy = load_policy(path)
    assert _devices(policy) == {torch.device("cpu")}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_box_actor_loaded_under_a_cuda_default_keeps_one_device(tmp_path):
    path = _box_policy_file(tmp_path / "p.pt")
    with torch.device("cuda"):
        policy = load_policy(path)
    assert {d.type for d in _devices(policy)} == {"cuda"}
