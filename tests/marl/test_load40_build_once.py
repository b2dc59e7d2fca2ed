"""A snapshot's load builds each module once: the dry run on the meta device that checks the
file's sizes then takes the file's weights (``marl.core.build_checked``), so no module is
built a second time (a GNN encoder's torch_geometric layers were most of a load) and no real
weight draws an initialisation the file overwrites (nn.Linear's uniform init ran for each).
A loaded policy acts bit for bit as the saved one, for every learner kind, and a file whose
weights do not fit is still refused in one line."""

import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

import games
from games import VectorGame
from marl import registry
from marl.core import PolicyLoadError, build_checked, load_policy
from marl.gnn import GraphEncoder
from tests.marl.exits_game import Exits

TAG = "pettingzoo/mpe2.simple_tag_v3"
KINDS = ["mappo", "mappo_gnn", "mappo_gru", "mappo_box", "ippo", "maddpg", "maddpg_box", "vdn",
         "qmix"]


def _policy(kind: str):
    """A seed-0 learner's policy of ``kind`` and its game (a factory or a name)."""
    algo = kind.split("_")[0]
    entry = registry.get(algo)
    game = (lambda: Exits(continuous=True)) if kind.endswith("_box") else TAG
    cfg = entry.config()
    if algo in ("mappo", "ippo"):
        net = {"mappo_gnn": {"encoder": "gnn", "critic": "gnn"},
               "mappo_gru": {"recurrent": True, "rnn_hidden": 16},
               "mappo_box": {"share": "agent"}}.get(kind, {})  # boxes of 2 widths
        cfg = dataclasses.replace(cfg, net=dataclasses.replace(cfg.net, **net))
    spec = games.make(game).spec if isinstance(game, str) else game().spec
    return entry.cls(spec, cfg, seed=0).policy(), game


@pytest.mark.parametrize("kind", KINDS)
def test_a_loaded_policy_acts_as_the_saved_one(kind, tmp_path):
    saved, game = _policy(kind)
    loaded = load_policy(saved.save(tmp_path / f"{kind}.pt"))
    vg = VectorGame(game, 4, seed=3, with_graphs=kind == "mappo_gnn")
    vs = vg.reset()
    for policy in (saved, loaded):
        policy.reseed(5)
    for _ in range(6):  # a recurrent policy carries its memory from step to step
        actions = {}
        for agent in vg.spec.agent_ids:
            if kind.startswith(("mappo", "ippo")) and not kind.endswith("_box"):
                assert np.array_equal(saved.action_probs(agent, vs),
                                      loaded.action_probs(agent, vs)), agent
            for greedy in (True, False):
                a, b = saved.act(agent, vs, greedy), loaded.act(agent, vs, greedy)
                assert a.dtype == b.dtype and np.array_equal(a, b), (agent, greedy)
            actions[agent] = a
        vs = vg.step(actions)


@pytest.fixture
def real_inits(monkeypatch):
    """Shapes of the tensors off the meta device that Tensor.uniform_/normal_ filled (every
    random init of nn.Linear, nn.GRUCell, torch_geometric's layers; the real ones run)."""
    filled = []
    for name in ("uniform_", "normal_"):
        real = getattr(torch.Tensor, name)

        def counted(self, *args, _real=real, **kwargs):
            if not self.is_meta:
                filled.append(tuple(self.shape))
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    return filled


@pytest.mark.parametrize("kind", KINDS)
def test_a_load_initialises_no_real_weight(kind, tmp_path, real_inits):
    saved, _ = _policy(kind)
    path = saved.save(tmp_path / f"{kind}.pt")
    real_inits.clear()
    load_policy(path)
    assert real_inits == []


def test_a_gnn_snapshot_builds_each_graph_encoder_once(tmp_path, monkeypatch):
    saved, _ = _policy("mappo_gnn")
    path = saved.save(tmp_path / "gnn.pt")
    built = []
    real = GraphEncoder.__init__

    def counted(self, *args, **kwargs):
        real(self, *args, **kwargs)
        built.append(next(self.parameters()).device.type)

    monkeypatch.setattr(GraphEncoder, "__init__", counted)
    loaded = load_policy(path)
    groups = len(saved.payload()["groups"])  # one actor (and encoder) per seat group
    assert built == ["meta"] * groups  # was twice as many: the dry run, then for real
    assert all(p.device.type == "cpu" for p in loaded.actors.parameters())


def test_a_continuous_actor_keeps_its_box_bounds(tmp_path):
    """The box bounds are non-persistent buffers (not in the file): computed for real in the
    dry run, not left uninitialised."""
    saved, _ = _policy("mappo_box")
    loaded = load_policy(saved.save(tmp_path / "box.pt"))
    for a, b in zip(saved.actors, loaded.actors, strict=True):
        for name in ("low_D", "high_D", "half_D"):
            assert torch.equal(getattr(a, name), getattr(b, name)), name
            assert getattr(b, name).device.type == "cpu"


@pytest.mark.parametrize("kind", ["mappo", "mappo_gnn", "maddpg", "vdn"])
def test_weights_of_another_shape_are_still_refused_in_one_line(kind, tmp_path):
    saved, _ = _policy(kind)
    data = torch.load(saved.save(tmp_path / "p.pt"), weights_only=True)
    key = {"mappo": "actors", "mappo_gnn": "actors", "maddpg": "actor", "vdn": "qnet"}[kind]
    name = sorted(data["payload"][key])[-1]
    tensor = data["payload"][key][name]
    data["payload"][key][name] = torch.zeros(*tensor.shape[:-1], tensor.shape[-1] + 1)
    torch.save(data, tmp_path / "bad.pt")
    with pytest.raises(PolicyLoadError, match="weights do not match the saved configuration") \
            as err:
        load_policy(tmp_path / "bad.pt")
    assert "\n" not in str(err.value) and str(err.value).startswith(str(tmp_path / "bad.pt"))


def test_loaded_weights_are_the_module_dtype_and_own_their_memory():
    """A float64 file is cast (as copying into a built module cast it), and weights that are
    views of one storage, or not contiguous, become tensors of their own."""
    torch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4))
    sd = ref.state_dict()
    both = torch.cat([sd["0.weight"].T.reshape(-1).double(), sd["2.weight"].T.reshape(-1)])
    weights = {"0.weight": both[:12].view(3, 4).T, "0.bias": sd["0.bias"].double(),
               "2.weight": both[12:].view(4, 4).T, "2.bias": sd["2.bias"]}
    got = build_checked(lambda: nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4)),
                        weights, "mlp")
    ptrs = set()
    for name, p in got.state_dict().items():
        assert p.dtype == torch.float32 and p.is_contiguous() and torch.equal(p, sd[name])
        assert p.untyped_storage().nbytes() == p.numel() * 4 and p.storage_offset() == 0
        ptrs.add(p.untyped_storage().data_ptr())
    assert len(ptrs) == 4 and all(p.requires_grad for p in got.parameters())


@pytest.mark.parametrize("make", [lambda: nn.GRU(3, 5, num_layers=2),
                                  lambda: nn.LSTM(3, 5)], ids=["gru", "lstm"])
def test_a_torch_rnn_built_once_runs_on_its_loaded_weights(make):
    """nn.GRU/nn.LSTM keep their weights in a list (``_flat_weights``) too."""
    torch.manual_seed(1)
    ref = make()
    got = build_checked(make, ref.state_dict(), "rnn")
    x = torch.randn(4, 2, 3)
    assert torch.equal(ref(x)[0], got(x)[0])


class _Scaled(nn.Module):
    """A module of code build_checked does not know: its constant is not in the state dict."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.scale = torch.full((2,), 3.0)  # a plain attribute, lost on the meta device

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.scale


def test_a_module_of_unknown_code_is_built_for_real():
    torch.manual_seed(2)
    ref = _Scaled()
    got = build_checked(_Scaled, ref.state_dict(), "scaled")
    assert not got.scale.is_meta
    x = torch.randn(3, 2)
    assert torch.equal(ref(x), got(x))
