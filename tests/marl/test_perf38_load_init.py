"""Loading a snapshot skips the orthogonal initialisation of the weights it overwrites
(most of a load's time: a league's policy-cache miss), while a module built to train from
scratch keeps exactly its initialisation."""

import threading

import pytest
import torch
from torch import nn

import games
from marl import registry
from marl.core import load_policy
from marl.maddpg import GroupedLinear
from marl.networks import mlp, weights_to_load

TAG = "pettingzoo/mpe2.simple_tag_v3"


@pytest.fixture
def ortho_calls(monkeypatch):
    """Counts torch's orthogonal initialisations (the real one still runs)."""
    calls = []
    real = nn.init.orthogonal_

    def counted(tensor, gain=1.0, generator=None):
        calls.append(tuple(tensor.shape))
        return real(tensor, gain, generator)

    monkeypatch.setattr(nn.init, "orthogonal_", counted)
    return calls


@pytest.mark.parametrize("algo", ["mappo", "maddpg", "qmix"])
def test_a_loaded_snapshot_draws_no_init_and_equals_the_saved_one(algo, tmp_path, ortho_calls):
    entry = registry.get(algo)
    policy = entry.cls(games.make(TAG).spec, entry.config(), seed=0).policy()
    path = policy.save(tmp_path / f"{algo}.pt")
    ortho_calls.clear()
    loaded = load_policy(path)
    assert ortho_calls == []
    saved, got = policy.payload(), loaded.payload()
    for key in ("actors", "actor", "qnet"):
        if key in saved:
            assert saved[key].keys() == got[key].keys()
            for name, tensor in saved[key].items():
                assert torch.equal(tensor.cpu(), got[key][name].cpu()), name


def _reference_mlp(seed: int) -> list[torch.Tensor]:
    """mlp(5, (7,), 3, out_gain=0.01) as written out: orthogonal weights, zero biases."""
    torch.manual_seed(seed)
    first, last = nn.Linear(5, 7), None
    nn.init.orthogonal_(first.weight, 2**0.5)
    nn.init.zeros_(first.bias)
    last = nn.Linear(7, 3)
    nn.init.orthogonal_(last.weight, 0.01)
    nn.init.zeros_(last.bias)
    return [first.weight, first.bias, last.weight, last.bias]


def _same(params, reference) -> bool:
    return all(torch.equal(a, b) for a, b in zip(params, reference, strict=True))


def test_fresh_builds_keep_their_init_outside_a_load():
    reference = _reference_mlp(3)
    torch.manual_seed(3)
    assert _same(list(mlp(5, (7,), 3, out_gain=0.01).parameters()), reference)
    with weights_to_load():
        built = []  # another thread's learner initialises as ever meanwhile
        thread = threading.Thread(target=lambda: built.append(
            (torch.manual_seed(3), list(mlp(5, (7,), 3, out_gain=0.01).parameters()))[1]))
        thread.start()
        thread.join()
        assert _same(built[0], reference)
    with pytest.raises(KeyError), weights_to_load():
        raise KeyError("a failed load")
    torch.manual_seed(3)  # after the blocks (one of them raised): as before
    assert _same(list(mlp(5, (7,), 3, out_gain=0.01).parameters()), reference)
    torch.manual_seed(4)
    grouped = GroupedLinear(2, 5, 7, 2**0.5).weight
    torch.manual_seed(4)
    expected = [nn.init.orthogonal_(torch.empty(7, 5), 2**0.5).T for _ in range(2)]
    assert torch.equal(grouped, torch.stack(expected))


@pytest.mark.parametrize("algo", ["mappo", "maddpg", "qmix"])
def test_a_learner_built_after_a_load_is_the_one_built_before(algo, tmp_path):
    entry, spec = registry.get(algo), games.make(TAG).spec

    def weights():
        torch.manual_seed(0)
        learner = entry.cls(spec, entry.config(), seed=0)
        return {f"{n}.{k}": v.clone() for n, m in vars(learner).items()
                if isinstance(m, nn.Module) for k, v in m.state_dict().items()}

    before = weights()
    load_policy(entry.cls(spec, entry.config(), seed=1).policy().save(tmp_path / "p.pt"))
    after = weights()
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_a_gru_snapshot_loads_without_init_too(tmp_path, ortho_calls):
    """The GRU core (rMAPPO's orthogonal init) skips it on load as the MLPs do."""
    from marl.actor_critic import NetConfig
    from marl.mappo import MAPPO, MAPPOConfig

    cfg = MAPPOConfig(net=NetConfig(recurrent=True, rnn_hidden=16))
    policy = MAPPO(games.make(TAG).spec, cfg, seed=0).policy()
    path = policy.save(tmp_path / "gru.pt")
    ortho_calls.clear()
    loaded = load_policy(path)
    assert ortho_calls == []
    for name, tensor in policy.payload()["actors"].items():
        assert torch.equal(tensor.cpu(), loaded.payload()["actors"][name].cpu()), name
