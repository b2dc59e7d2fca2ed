"""An actor encoder of the user's own (walk 23): ``register_encoder(name, build)`` in a module
``imports=[...]`` names, picked by ``mappo.net.encoder=NAME``, trained, saved in snapshots
that ``selfplay-eval --import`` reloads from the registry. Before, ``ENCODERS`` was the fixed
tuple ``("mlp", "gnn")``: ``mappo.net.encoder=attn`` was refused with no way to add one, and
``PPOPolicy.from_payload`` rebuilt the stock ``Actor`` whatever a learner had trained."""

from __future__ import annotations

import os
import sys

import pytest
import torch

import games
from games.registry import IMPORTS_ENV
from marl import encoders
from marl.actor_critic import NetConfig, PPOPolicy
from marl.core import PolicyLoadError, load_policy
from marl.encoders import EncoderError, register_encoder
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import train
from tests.populations.eval_cli_run import run_eval
from tests.populations.test_walk18_cli_more import TINY, _train

MODULE = "walk23_myenc"
SOURCE = '''
import torch
from torch import nn

from marl.encoders import register_encoder


class TokenAttention(nn.Module):
    """Each input feature a token: one self-attention layer, mean-pooled."""

    def __init__(self, in_dim, width):
        super().__init__()
        self.embed = nn.Linear(1, width)
        self.pos = nn.Parameter(torch.randn(in_dim, width) * 0.1)
        self.attn = nn.MultiheadAttention(width, 2, batch_first=True)
        self.out_dim = width

    def forward(self, x):
        t = self.embed(x.unsqueeze(-1)) + self.pos
        y, _ = self.attn(t, t, t, need_weights=False)
        return y.mean(1)


@register_encoder("walk23_attn")
def build(net, in_dim):
    return TokenAttention(in_dim, 8)


class Wide(nn.Module):  # no out_dim: its width is found on two zero rows
    def __init__(self, in_dim):
        super().__init__()
        self.lin = nn.Linear(in_dim, 12)

    def forward(self, x):
        return torch.relu(self.lin(x))


register_encoder("walk23_wide", lambda net, in_dim: Wide(in_dim))


class Flaky(nn.Module):
    def __init__(self, in_dim):
        super().__init__()
        self.lin = nn.Linear(in_dim, 8)
        self.out_dim = 8
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 2:
            raise RuntimeError(f"lost my weights at call {self.calls}")  # RAISES
        return self.lin(x)


@register_encoder("walk23_flaky")
def build_flaky(net, in_dim):
    return Flaky(in_dim)


@register_encoder("walk23_unbuilt")
def build_unbuilt(net, in_dim):
    raise KeyError("width")  # UNBUILT


class Summed(nn.Module):
    def __init__(self, in_dim):
        super().__init__()
        self.lin = nn.Linear(in_dim, 8)

    def forward(self, x):
        return self.lin(x).sum(0)  # [8], not [M, 8]


@register_encoder("walk23_summed")
def build_summed(net, in_dim):
    return Summed(in_dim)


class Narrow(nn.Module):
    def __init__(self, in_dim):
        super().__init__()
        self.lin = nn.Linear(in_dim, 8)
        self.out_dim = 6  # says 6, returns 8

    def forward(self, x):
        return self.lin(x)


@register_encoder("walk23_narrow")
def build_narrow(net, in_dim):
    return Narrow(in_dim)


register_encoder("walk23_not_module", lambda net, in_dim: "a module")
'''
LINE = {tag: next(i for i, line in enumerate(SOURCE.splitlines(), 1) if f"# {tag}" in line)
        for tag in ("RAISES", "UNBUILT")}
KUHN = "openspiel/kuhn_poker(players=2)"
TINY_LEAGUE = [*TINY, "population=self_play", "population.generations=1",
               "population.frames_per_generation=16"]


@pytest.fixture
def myenc(tmp_path, monkeypatch):
    """The module above, importable from ``tmp_path`` and imported; taken out of the
    registry after (and ``SELFPLAY_IMPORTS``, which the in-process CLI sets, restored)."""
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.chdir(tmp_path)  # errors name the user's file from the working folder
    monkeypatch.setattr(encoders, "_REGISTRY", dict(encoders._REGISTRY))
    for name in (IMPORTS_ENV, "PYTHONPATH"):  # import_user_modules sets them for workers
        monkeypatch.setenv(name, os.environ.get(name, ""))
    sys.modules.pop(MODULE, None)
    __import__(MODULE)
    try:
        yield tmp_path
    finally:
        sys.modules.pop(MODULE, None)


def _forget(monkeypatch) -> None:
    """As a fresh process that did not import the module: not registered, not importable
    from ``SELFPLAY_IMPORTS``."""
    monkeypatch.setattr(encoders, "_REGISTRY", {})
    monkeypatch.setenv(IMPORTS_ENV, "")
    sys.modules.pop(MODULE, None)


def test_a_registered_encoder_trains_and_selfplay_eval_reloads_its_snapshots(
        myenc, monkeypatch, capsys):
    # before: "bad config: mappo.net.encoder='walk23_attn' unknown; choose one of ['mlp', 'gnn']"
    run = myenc / "run"
    _forget(monkeypatch)  # the run's own imports=[...] registers it
    _train([f"imports=[{MODULE}]", *TINY_LEAGUE, "mappo.net.encoder=walk23_attn",
            f"hydra.run.dir={run}"], monkeypatch, myenc)
    capsys.readouterr()
    first, last = (run / "snapshots" / "main" / f"v000{v}.pt" for v in (0, 1))
    saved = torch.load(last, weights_only=False)["payload"]
    assert saved["net"]["encoder"] == "walk23_attn" and saved["encoder_module"] == MODULE
    weights = [torch.load(p, weights_only=False)["payload"]["actors"] for p in (first, last)]
    key = "0.encoder.inner.attn.in_proj_weight"  # the encoder's weights were trained
    assert not torch.equal(weights[0][key], weights[1][key])
    code, out, err = run_eval([str(first), str(last), "--db", str(myenc / "e.db"),
                               "--episodes", "2", "--import", MODULE], capsys)
    assert code == 0, err
    assert "main_v0001" in out and "main_v0000" in out, out
    policy = load_policy(last)
    assert type(policy.actors[0].encoder.inner).__name__ == "TokenAttention"

    _forget(monkeypatch)  # a snapshot names its encoder; only the registry rebuilds it
    code, out, err = run_eval([str(first), str(last), "--db", str(myenc / "f.db")], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == (
        f"selfplay-eval: {first}: its actors use the encoder 'walk23_attn', which is not "
        f"registered here; import the module that registers it (selfplay-eval --import "
        f"{MODULE}; selfplay-train imports=[...])")
    assert MODULE not in sys.modules  # quoted from the file, never imported from it


def test_an_unknown_encoder_is_refused_in_one_line_with_how_to_register_one(
        tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as stop:
        _train([*TINY, "mappo.net.encoder=walk23_nowhere", f"hydra.run.dir={tmp_path / 'r'}"],
               monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert err[-1] == (
        "selfplay-train: bad config: mappo.net.encoder='walk23_nowhere' unknown; choose one of "
        "['mlp', 'gnn']; an encoder of your own is registered by register_encoder "
        "(marl.encoders) when its module is imported: imports=[module] (selfplay-train), "
        "--import module (selfplay-eval)"), err
    assert not (tmp_path / "r").exists()


def test_an_encoder_that_raises_in_a_run_is_one_line_naming_it_and_its_line(
        myenc, monkeypatch, capsys):
    with pytest.raises(SystemExit) as stop:
        _train([f"imports=[{MODULE}]", *TINY, "mappo.net.encoder=walk23_flaky",
                f"hydra.run.dir={myenc / 'run'}"], monkeypatch, myenc)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert err[-1] == (
        f"selfplay-train: encoder walk23_flaky ({MODULE}.build_flaky) failed in forward: "
        f"RuntimeError: lost my weights at call 3 (at {MODULE}.py:{LINE['RAISES']} in "
        "forward); HYDRA_FULL_ERROR=1 shows the traceback"), err
    assert "Traceback" not in "\n".join(err)


def _learner(encoder: str, **net) -> MAPPO:
    spec = games.make(KUHN).spec
    return MAPPO(spec, MAPPOConfig(rollout_steps=4, epochs=1, minibatches=1,
                                   net=NetConfig(encoder=encoder, **net)))


@pytest.mark.parametrize("encoder, message", [
    ("walk23_unbuilt", rf"^encoder walk23_unbuilt \({MODULE}\.build_unbuilt\) failed when "
                       rf"built: KeyError: 'width' \(at {MODULE}\.py:{LINE['UNBUILT']} in "
                       r"build_unbuilt\); HYDRA_FULL_ERROR=1 shows the traceback$"),
    ("walk23_summed", rf"^encoder walk23_summed \({MODULE}\.build_summed\) returned a tensor "
                      r"of shape \[8\] for input \[2, 13\]; expected \[2, F\] with F >= 1$"),
    ("walk23_not_module", rf"^encoder walk23_not_module \({MODULE}\.<lambda>\) returned str, "
                          r"not a torch\.nn\.Module$"),
])
def test_an_encoder_that_fails_when_built_is_one_line_naming_it(myenc, encoder, message):
    with pytest.raises(EncoderError, match=message):
        _learner(encoder)


def test_an_output_of_the_wrong_width_is_one_line_at_its_first_call(myenc):
    learner = _learner("walk23_narrow")  # out_dim says 6: the head takes 6
    # rows: 2 copies x 2 seats of one shared network; 11 observation + 2 seat one-hot columns
    vg = games.VectorGame(KUHN, 2, seed=0)
    learner.start_episodes()
    with pytest.raises(EncoderError, match=rf"^encoder walk23_narrow \({MODULE}\.build_narrow\) "
                                           r"returned a tensor of shape \[4, 8\] for input "
                                           r"\[4, 13\]; expected \[4, 6\] \(rows x out_dim\)$"):
        learner.act(vg.reset())


@pytest.mark.parametrize("recurrent", [False, True])
def test_a_registered_encoder_trains_feed_forward_and_recurrent_and_reloads(
        myenc, tmp_path, recurrent):
    learner = _learner("walk23_wide", recurrent=recurrent, rnn_hidden=8)
    assert learner.actors[0].encoder.out_dim == 12  # found on two zero rows
    before = learner.actors[0].encoder.inner.lin.weight.detach().clone()
    train(learner, games.VectorGame(KUHN, 4, seed=0), frames=64, progress=False)
    assert not torch.equal(before, learner.actors[0].encoder.inner.lin.weight)
    policy = learner.policy()
    loaded = load_policy(policy.save(tmp_path / "p.pt"))
    assert isinstance(loaded, PPOPolicy) and loaded.net.encoder == "walk23_wide"
    vs = games.VectorGame(KUHN, 4, seed=1).reset()
    agent = next(a for a in learner.agents if vs.acting[a].any())
    assert torch.equal(policy.logits(agent, vs), loaded.logits(agent, vs))


def test_a_snapshot_whose_encoder_fails_to_build_is_a_load_error(myenc, tmp_path):
    path = _learner("walk23_wide").policy().save(tmp_path / "p.pt")

    def broken(net, in_dim):
        raise RuntimeError("cannot build today")

    encoders._REGISTRY["walk23_wide"] = encoders.Encoder("walk23_wide", broken, MODULE)
    with pytest.raises(PolicyLoadError, match=rf"^{path}: encoder walk23_wide \(.*broken\) "
                                              "failed when built: RuntimeError: cannot build"):
        load_policy(path)


def test_a_taken_name_is_refused_naming_who_holds_it(myenc):
    def mine(net, in_dim):
        return torch.nn.Linear(in_dim, 4)

    with pytest.raises(ValueError, match=r"^encoder 'mlp' is built in \(marl\.actor_critic\."
                                         "Actor\\); register yours under another name$"):
        register_encoder("mlp", mine)
    with pytest.raises(ValueError, match=rf"^encoder 'walk23_attn' is already registered by "
                                         rf"{MODULE}\.build; register yours under another "
                                         "name$"):
        register_encoder("walk23_attn", mine)
    assert register_encoder("walk23_mine")(mine) is mine
    assert register_encoder("walk23_mine", mine) is mine  # the same function again: accepted
    with pytest.raises(ValueError, match="an encoder name holds letters"):
        register_encoder("my encoder", mine)
    assert encoders.available_encoders()[:2] == ["mlp", "gnn"]
    assert "walk23_mine" in encoders.available_encoders()


def test_an_entry_point_registers_an_encoder(myenc, monkeypatch):
    """``[project.entry-points."selfplay.encoders"]``: loaded the first time a name is not
    found, as the games', learners' and loggers' groups are."""
    import importlib.metadata

    from games import registry

    _forget(monkeypatch)
    ep = importlib.metadata.EntryPoint(name="mine", value=MODULE, group=encoders.ENTRY_POINTS)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [ep] if group == encoders.ENTRY_POINTS else [])
    monkeypatch.setattr(registry, "_loaded_groups", set())
    assert NetConfig(encoder="walk23_attn").encoder == "walk23_attn"
