"""``load_policy`` on files a user may hand it: truncated, with malformed metadata or
payload, or asking to build far more than they hold -- one ``PolicyLoadError`` (a
``CheckpointError`` and a ``ValueError``), one line naming the file."""

import numpy as np
import pytest
import torch
from torch import nn

import games
from marl.actor_critic import NetConfig
from marl.core import CheckpointError, PolicyLoadError, build_checked, load_policy
from marl.mappo import MAPPO, MAPPOConfig

SPREAD = "pettingzoo/mpe2.simple_spread_v3"


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    spec = games.make(SPREAD, N=2).spec
    learner = MAPPO(spec, MAPPOConfig(net=NetConfig(hidden=(256, 256))), seed=0)
    return learner.policy().save(tmp_path_factory.mktemp("policy") / "mappo.pt")


def _one_line_naming(err, path) -> None:
    text = str(err.value)
    assert str(path) in text and "\n" not in text and len(text) < 400, text


def test_truncated_files_raise_one_error_type_naming_the_file(policy_file, tmp_path):
    raw = policy_file.read_bytes()
    causes = set()
    for i in range(20):  # cut anywhere: in the header, the tensors, the zip directory
        path = tmp_path / f"cut{i}.pt"
        path.write_bytes(raw[: len(raw) * i // 20])
        with pytest.raises(PolicyLoadError, match="truncated or not a torch file") as err:
            load_policy(path)
        _one_line_naming(err, path)
        causes.add("Errno 22" in str(err.value))
    assert causes == {True, False}  # both of torch's ways of failing were met
    assert issubclass(PolicyLoadError, CheckpointError) and issubclass(PolicyLoadError, ValueError)


@pytest.mark.parametrize("change, message", [
    (lambda m: m.pop("agents"), r"metadata lacks fields \['agents'\]"),
    (lambda m: m.pop("kind"), r"metadata lacks fields \['kind'\]"),
    (lambda m: m.update(roles="adversary"), r"field 'roles' is malformed"),
    (lambda m: m.update(roles=["x"]), r"field 'roles' is malformed"),
    (lambda m: m.update(obs_shapes={"agent_0": [18]}), r"'obs_shapes' lacks seats \['agent_1'\]"),
    (lambda m: m.update(obs_shapes=[18]), r"field 'obs_shapes' is malformed"),
    (lambda m: m.update(action_spaces={"agent_0": {"n": 5}, "agent_1": {}}),
     r"field 'action_spaces' is malformed"),
    (lambda m: m.update(step="7"), r"field 'step' is malformed"),
    (lambda m: m.update(colour="red"), r"unknown fields \['colour'\]"),
    (lambda m: m.update(kind="nope"), r"unknown policy kind 'nope'"),
])
def test_malformed_metadata_is_one_line_naming_the_file(policy_file, tmp_path, change, message):
    data = torch.load(policy_file, weights_only=True)
    change(data["meta"])
    path = tmp_path / "bad_meta.pt"
    torch.save(data, path)
    with pytest.raises(PolicyLoadError, match=message) as err:
        load_policy(path)
    _one_line_naming(err, path)


@pytest.mark.parametrize("change, message", [
    (lambda p: p.pop("groups"), r"malformed mappo policy payload: missing entry 'groups'"),
    (lambda p: p.update(net={"hidden": [8], "colour": 1}), r"malformed mappo policy payload"),
    (lambda p: p.update(actors={"0.x": torch.zeros(2)}), r"mappo actors: weights do not match"),
])
def test_malformed_payloads_are_one_line_naming_the_file(policy_file, tmp_path, change, message):
    data = torch.load(policy_file, weights_only=True)
    change(data["payload"])
    path = tmp_path / "bad_payload.pt"
    torch.save(data, path)
    with pytest.raises(PolicyLoadError, match=message) as err:
        load_policy(path)
    _one_line_naming(err, path)


def test_not_a_policy_file(tmp_path):
    path = tmp_path / "dict.pt"
    torch.save({"format": 1, "learner": {}}, path)
    with pytest.raises(PolicyLoadError, match="is not a selfplay policy file"):
        load_policy(path)
    with pytest.raises(PolicyLoadError, match="policy file not found"):
        load_policy(tmp_path / "missing.pt")


class _Masked(nn.Module):
    """A small weight and a non-persistent ``[n, n]`` buffer (like a causal mask)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(4))
        self.register_buffer("mask", torch.ones(n, n), persistent=False)


def test_build_checked_refuses_modules_far_larger_than_their_weights():
    weights = {"w": torch.ones(4)}
    small = build_checked(lambda: _Masked(8), weights, "small")
    assert small.mask.shape == (8, 8) and small.mask.device.type == "cpu"
    # 10^6 x 10^6 floats (4 TB) would be allocated by the constructor; the dry run on the
    # meta device measures it without allocating
    with pytest.raises(PolicyLoadError, match=r"huge: .* asks for 3814697 MiB, far more than"):
        build_checked(lambda: _Masked(10**6), weights, "huge")
    with pytest.raises(PolicyLoadError, match=r"at 'w' \(built \[4\], saved \[5\]\)"):
        build_checked(lambda: _Masked(8), {"w": torch.ones(5)}, "shape")
    with pytest.raises(PolicyLoadError, match=r"at 'v' \(not built, saved \[4\]\)"):
        build_checked(lambda: _Masked(8), {**weights, "v": torch.ones(4)}, "extra")
    with pytest.raises(PolicyLoadError, match="not a dict of named tensors"):
        build_checked(lambda: _Masked(8), {"w": [1.0]}, "list")


def _learner(kind: str):
    from marl.maddpg import MADDPG
    from marl.value_decomp import ValueDecomp

    if kind == "mappo":
        return MAPPO(games.make(SPREAD, N=2).spec, seed=0), ("net", "hidden")
    if kind == "maddpg":
        return MADDPG(games.make(SPREAD, N=2).spec), ("hidden",)
    return ValueDecomp(games.make("matrix/climbing").spec), ("hidden",)


@pytest.mark.parametrize("kind", ["mappo", "maddpg", "vdn"])
def test_classic_policies_build_only_what_their_weights_hold(kind, tmp_path):
    """Hidden widths are read from the file: 2^16 x 2^16 layers (16 GB; the widest the
    configs accept since f67c5bd, 2^20 being refused by the config first) are measured on the
    meta device and refused, instead of allocated."""
    learner, key = _learner(kind)
    path = learner.policy().save(tmp_path / "ok.pt")
    assert load_policy(path).meta.kind == learner.policy().meta.kind  # round trip still works
    data = torch.load(path, weights_only=True)
    owner = data["payload"]
    for k in key[:-1]:
        owner = owner[k]
    owner[key[-1]] = [2**16, 2**16]
    torch.save(data, tmp_path / "huge.pt")
    with pytest.raises(PolicyLoadError, match="weights do not match the saved configuration"):
        load_policy(tmp_path / "huge.pt")


def test_random_policies_load_back(tmp_path):
    """A PSRO run's first members are random policies saved as snapshots; selfplay-eval on
    one said "unknown policy kind 'random'" (the kind was saved, never registered)."""
    from marl import registry
    from marl.train import RandomPolicy

    spec = games.make("openspiel/kuhn_poker").spec
    path = RandomPolicy(spec, seed=3).save(tmp_path / "v0000.pt")
    assert registry.policy_module("random") == "marl.train"  # found by kind in a fresh process
    loaded = load_policy(path)
    assert isinstance(loaded, RandomPolicy) and loaded.meta == RandomPolicy(spec).meta
    vg = games.VectorGame("openspiel/kuhn_poker", 4, seed=0)
    vs = vg.reset()
    agent = next(a for a in spec.agent_ids if vs.legal[a].any())
    actions = loaded.act(agent, vs)
    assert vs.legal[agent][np.arange(4), actions].all()


def test_a_text_file_or_a_folder_is_named_for_what_it_is(tmp_path):
    """Torch says only "101" of a text file, and a folder was "file not found"."""
    text = tmp_path / "text.pt"
    text.write_text("hello world\n")
    with pytest.raises(PolicyLoadError, match="not a torch file but text, starting 'hello world'"):
        load_policy(text)
    (tmp_path / "snaps").mkdir()
    with pytest.raises(PolicyLoadError, match=r"is a folder; give a \.pt file \(it holds none\)"):
        load_policy(tmp_path / "snaps")
    for name in ("v0001.pt", "v0000.pt", "v0000.json"):
        (tmp_path / "snaps" / name).write_bytes(b"")
    with pytest.raises(PolicyLoadError, match="snaps is a folder; give one of its files: "
                       "v0000.pt v0001.pt$") as err:
        load_policy(tmp_path / "snaps")
    _one_line_naming(err, tmp_path / "snaps")
