"""MAPPO/IPPO on continuous actions: a diagonal Gaussian actor (``marl.actor_critic``).

Known values against ``torch.distributions``, actions inside the box however wide the
policy, a learning margin over random play on a small continuous game, ``selfplay-train``
on VMAS with MLP, GRU and GNN actors, snapshots that reload to the same actions, and a
continuous league of MAPPO and MADDPG members rated by ``selfplay-eval``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

import games
from games import ActionSpace, AgentSpec, Game, GameSpec, Transition, VectorGame
from marl import registry
from marl.actor_critic import (
    LOG_STD_INIT,
    Actor,
    NetConfig,
    SeatGroup,
    gaussian_entropy,
    gaussian_log_prob,
)
from marl.core import PolicyLoadError, load_policy
from marl.mappo import MAPPO, MAPPOConfig
from tests.marl.exits_game import EXIT, Exits
from tests.populations.user_modules import train_here

IDS = ("agent_0", "agent_1")
LOW, HIGH, STEPS = 0.0, 4.0, 4  # Reach's box [0, 4]² and episode length


class Reach(Game):
    """Each agent sees a target point of the box ``[0, 4]²`` (in unit coordinates, ``[-1, 1]``)
    and is paid minus its action's distance to it (halved: unit coordinates again); a fresh
    target every step, 4 steps an episode. A policy must map the observation onto the box:
    an exact one scores 0, uniform play about -0.95."""

    def __init__(self) -> None:
        self.spec = GameSpec(
            name="test/reach", agents=tuple(AgentSpec(a, "reacher", "team") for a in IDS),
            obs_shapes={a: (2,) for a in IDS},
            action_spaces={a: ActionSpace("continuous", shape=(2,), low=LOW, high=HIGH)
                           for a in IDS},
            max_steps=STEPS, simultaneous=True)
        self.rng = np.random.default_rng(0)
        self.t = 0
        self.target = np.zeros((2, 2))

    def _reset(self, seed: int | None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.target = self.rng.uniform(0.4, 3.6, size=(2, 2))

    def _step(self, actions: dict) -> Transition:
        self.t += 1
        rewards = {a: -float(np.linalg.norm(np.asarray(actions[a]) - self.target[i])) / 2
                   for i, a in enumerate(IDS)}
        self.target = self.rng.uniform(0.4, 3.6, size=(2, 2))
        end = self.t >= STEPS
        return Transition(rewards, {a: False for a in IDS}, {a: end for a in IDS})

    def acting_agents(self) -> tuple[str, ...]:
        return () if self.t >= STEPS else IDS

    def observe(self, agent: str) -> np.ndarray:
        return ((self.target[IDS.index(agent)] - 2.0) / 2.0).astype(np.float32)

    def legal_actions(self, agent: str) -> list[int]:
        return []

    def text_observation(self, agent: str) -> str:
        return f"target {self.target[IDS.index(agent)]}"


def _play(learner: MAPPO, vg: VectorGame, updates: int) -> list[dict[str, float]]:
    vs, out = vg.reset(), []
    for _ in range(updates):
        while not learner.ready():
            vs = vg.step(learner.act(vs))
            learner.observe(vs)
        out.append(learner.update())
    return out


def _score(act, vg: VectorGame, steps: int = 40) -> float:
    """Mean reward per agent step of ``act(vs) -> actions`` over ``steps`` steps of ``vg``."""
    vs, total, n = vg.reset(), 0.0, 0
    for _ in range(steps):
        actions = act(vs)
        vs = vg.step(actions)
        for a in actions:
            total += float(vs.rewards[a].sum())
            n += len(vs.rewards[a])
    return total / n


# ------------------------------------------------------------------ known values
def test_log_prob_and_entropy_match_torch_distributions():
    gen = torch.Generator().manual_seed(0)
    mean = torch.randn(64, 3, generator=gen)
    log_std = torch.randn(3, generator=gen).requires_grad_()
    action = torch.randn(64, 3, generator=gen) * 2
    ref = torch.distributions.Normal(mean, log_std.exp())
    got = gaussian_log_prob(mean, log_std, action)
    torch.testing.assert_close(got, ref.log_prob(action).sum(-1))
    torch.testing.assert_close(gaussian_entropy(log_std, 64), ref.entropy().sum(-1))
    # the gradient reaches log_std as torch's does
    g_got, = torch.autograd.grad(got.sum() + gaussian_entropy(log_std, 64).sum(), log_std)
    g_ref, = torch.autograd.grad(ref.log_prob(action).sum() + ref.entropy().sum(), log_std)
    torch.testing.assert_close(g_got, g_ref)
    # the actor's own terms: its head's mean and its log_std
    group = SeatGroup("all", IDS, (0, 1), 4, 3, continuous=True, low=-2.0, high=3.0)
    actor = Actor(NetConfig(), group, 9)
    assert torch.allclose(actor.log_std, torch.full((3,), math.log(0.5)))
    out = actor({"obs": torch.randn(64, 4, generator=gen), "seat": torch.zeros(64).long()})
    logp, ent = actor.log_prob_entropy(out, action)
    ref = torch.distributions.Normal(out, actor.log_std.exp())
    torch.testing.assert_close(logp, ref.log_prob(action).sum(-1))
    torch.testing.assert_close(ent, ref.entropy().sum(-1))
    # greedy: the mean, clipped and mapped onto the box [-2, 3]
    unit = torch.tensor([[-3.0, 0.0, 0.5]])
    assert actor.to_game(actor.sample(unit, gen, greedy=True)).tolist() == [[-2.0, 0.5, 1.75]]


def test_a_discrete_actor_has_no_gaussian_parts():
    actor = Actor(NetConfig(), SeatGroup("all", IDS, (0, 1), 4, 3), 9)
    assert not hasattr(actor, "log_std") and not actor.continuous
    spec = games.make("openspiel/kuhn_poker").spec
    payload = MAPPO(spec).policy().payload()
    assert all("continuous" not in g for g in payload["groups"])  # saved as before


# ------------------------------------------------------------------ the box
def test_actions_stay_inside_the_box_and_the_buffer_keeps_the_samples():
    """Exits(continuous): boxes [-2, 3] of widths 2 and 1 (one network per agent), with a
    very wide policy (std e²) so that most samples fall outside the box."""
    spec = Exits(continuous=True).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=6, net=NetConfig(share="agent")), seed=0)
    with torch.no_grad():
        for actor in learner.actors:
            actor.log_std.fill_(2.0)
    vg = VectorGame(lambda: Exits(continuous=True), 8, seed=0, with_state=True)
    vs, seen = vg.reset(), []
    for _ in range(6):
        actions = learner.act(vs)
        for i, a in enumerate(IDS):
            x = actions[a]
            assert x.dtype == np.float32 and x.shape == (8, 2 - i)
            assert (x >= -2.0).all() and (x <= 3.0).all()
            seen.append(x.ravel())
        vs = vg.step(actions)
        learner.observe(vs)
    seen = np.concatenate(seen)
    assert (seen == -2.0).any() and (seen == 3.0).any()  # the clip did act
    buf = learner.buf
    stored = buf.action[1:buf.row]  # [T, B, A, D]: the samples as drawn, in unit coordinates
    assert stored.abs().max() > 1.0 and (stored[..., 1, 1] == 0).all()  # agent_1's pad
    # the stored log-probabilities are the Gaussian's of the stored (unclipped) samples
    acting = buf.acting[1:buf.row]
    for i, actor in enumerate(learner.actors):
        x = learner._group_batch({"obs": buf.obs[1:buf.row].reshape(-1, len(IDS), 4)}, i)
        with torch.no_grad():
            logp, _ = actor.log_prob_entropy(actor(x), stored[:, :, i, :2 - i].reshape(-1, 2 - i))
        mask = acting[..., i].reshape(-1)
        torch.testing.assert_close(logp[mask], buf.logp[1:buf.row][..., i].reshape(-1)[mask])
    metrics = learner.update()
    assert all(math.isfinite(v) for v in metrics.values())
    policy = learner.policy()
    for greedy in (False, True):
        for i, a in enumerate(IDS):
            x = policy.act(a, vs, greedy=greedy)
            assert x.shape == (8, 2 - i) and (x >= -2.0).all() and (x <= 3.0).all()
    with pytest.raises(NotImplementedError, match="continuous actions of 'agent_0'"):
        policy.action_probs("agent_0", vs)


def test_given_actions_of_rollout_workers_are_refused_for_continuous_learners():
    spec = Reach().spec
    learner = MAPPO(spec, seed=0)
    vs = VectorGame(Reach, 2, seed=0).reset()
    with pytest.raises(ValueError, match="rollout_workers=0"):
        learner.act(vs, actions={a: np.zeros((2, 2), np.float32) for a in IDS})


# ------------------------------------------------------------------ learning
def _learn(seed: int, updates: int = 12) -> tuple[float, float, float, float]:
    """Uniform play, the untrained policy, and after ``updates`` updates (16 copies × 8 steps
    each) its sampled and greedy play, scored on the same 64 fresh copies."""
    learner = MAPPO(Reach().spec, MAPPOConfig(rollout_steps=8), seed=seed)
    ev = VectorGame(Reach, 64, seed=1000 + seed)
    rng = np.random.default_rng(seed)
    uniform = _score(lambda vs: {a: rng.uniform(LOW, HIGH, (64, 2)).astype(np.float32)
                                 for a in IDS}, ev)
    before = learner.policy()
    untrained = _score(lambda vs: {a: before.act(a, vs) for a in IDS}, ev)
    _play(learner, VectorGame(Reach, 16, seed=seed), updates)
    p = learner.policy()
    sampled = _score(lambda vs: {a: p.act(a, vs) for a in IDS}, ev)
    greedy = _score(lambda vs: {a: p.act(a, vs, greedy=True) for a in IDS}, ev)
    return uniform, untrained, sampled, greedy


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.benchmark)])
def test_mappo_learns_to_reach_a_continuous_target(seed):
    """Measured (12 updates, seeds 0-2): uniform -0.95..-0.96, untrained -0.84..-0.85,
    sampled -0.39..-0.40, greedy -0.07 (0 is perfect). With no gradient reaching the mean
    (a broken log-probability), seed 0: sampled -0.77, greedy -0.61, failing both margins."""
    uniform, untrained, sampled, greedy = _learn(seed)
    assert untrained > uniform  # a mean near the centre with std 0.5 beats uniform play
    assert sampled > untrained + 0.2
    assert greedy > uniform + 0.5 and greedy > sampled


# ------------------------------------------------------------------ capabilities
def test_mappo_and_ippo_declare_and_play_continuous_actions():
    spec = Reach().spec
    for algo in ("mappo", "ippo"):
        assert registry.get(algo).capabilities.continuous
        registry.check_compatible(algo, spec)
    with pytest.raises(registry.IncompatibleError) as err:
        registry.check_compatible("vdn", spec)
    hint = str(err.value).split("algos that play it")[1]
    assert "'mappo'" in hint and "'ippo'" in hint and "'maddpg'" in hint


def test_a_box_of_more_than_one_dimension_is_refused_in_one_line():
    spec = GameSpec(name="test/grid_box", agents=(AgentSpec("a", "r", "t"),),
                    obs_shapes={"a": (2,)},
                    action_spaces={"a": ActionSpace("continuous", shape=(2, 2), low=-1, high=1)},
                    max_steps=2, simultaneous=True)
    with pytest.raises(registry.IncompatibleError, match=r"1-D and a's has shape \(2, 2\)"):
        registry.check_compatible("mappo", spec)


# ------------------------------------------------------------------ snapshots
@pytest.mark.parametrize("net", [NetConfig(), NetConfig(recurrent=True)], ids=["mlp", "gru"])
def test_a_snapshot_reloads_to_the_same_actions(tmp_path, net):
    learner = MAPPO(Reach().spec, MAPPOConfig(rollout_steps=4, net=net), seed=0)
    _play(learner, VectorGame(Reach, 4, seed=0), 2)
    policy = learner.policy()
    path = policy.save(tmp_path / "p.pt")  # loaded back by torch.load(weights_only=True)
    loaded = load_policy(path)
    assert loaded.groups[0].continuous and (loaded.groups[0].low, loaded.groups[0].high) == (
        LOW, HIGH)
    torch.testing.assert_close(loaded.actors[0].log_std, learner.actors[0].log_std)
    vg = VectorGame(Reach, 8, seed=3)
    for greedy in (True, False):
        policy.reset_state(), loaded.reset_state()
        policy.reseed(5), loaded.reseed(5)
        vs = vg.reset()
        for _ in range(5):
            a = {s: policy.act(s, vs, greedy=greedy) for s in IDS}
            b = {s: loaded.act(s, vs, greedy=greedy) for s in IDS}
            assert all(np.array_equal(a[s], b[s]) for s in IDS)
            vs = vg.step(a)


# ------------------------------------------------------------------ command lines
def _cli(main, argv: list[str], monkeypatch, cwd: Path) -> int:
    """A console script in this process: its exit code (Hydra's log handlers taken off)."""
    try:
        code = train_here(argv, monkeypatch, cwd, main=main, prog=main.__name__)
    except SystemExit as stop:
        code = stop.code
    return int(code or 0)


VMAS_TINY = ["game=vmas_spread", "game.kwargs.continuous_actions=true", "game.kwargs.n_agents=2",
             "game.kwargs.max_steps=5", "frames=40", "num_envs=4", "mappo.rollout_steps=5",
             "mappo.epochs=1", "eval_episodes=1", "progress=false", "logger=none"]


@pytest.mark.parametrize("extra", [
    ["algo=mappo"],
    ["algo=ippo", "mappo.net.recurrent=true"],
    ["algo=mappo", "mappo.net.encoder=gnn", "mappo.net.critic=gnn"],
], ids=["mlp", "ippo-gru", "gnn"])
def test_selfplay_train_runs_mappo_on_continuous_vmas(tmp_path, monkeypatch, capsys, extra):
    from populations.cli import train_main

    code = _cli(train_main, [*VMAS_TINY, *extra, f"hydra.run.dir={tmp_path / 'run'}"],
                monkeypatch, tmp_path)
    assert code == 0, capsys.readouterr().err
    saved = torch.load(next((tmp_path / "run").rglob("*.pt")), weights_only=False)
    assert isinstance(saved, dict)


def test_a_continuous_league_of_mappo_and_maddpg_is_rated_by_selfplay_eval(
        tmp_path, monkeypatch, capsys):
    """vmas_tag with continuous actions: a MAPPO and a MADDPG member train a generation,
    then selfplay-eval plays their snapshots against each other."""
    from populations.cli import train_main
    from populations.eval_cli import eval_main

    run = tmp_path / "league"
    code = _cli(train_main, [
        "game=vmas_tag", "game.kwargs.continuous_actions=true", "game.kwargs.max_steps=5",
        "population=self_play", "population.members=[mappo,maddpg]",
        "population.generations=1", "population.frames_per_generation=16", "num_envs=4",
        "eval_episodes=1", "mappo.rollout_steps=4", "progress=false", "logger=none",
        f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert code == 0, capsys.readouterr().err
    snaps = sorted((run / "snapshots").rglob("v0001.pt"))
    assert [p.parent.name for p in snaps] == ["maddpg", "mappo"]
    assert load_policy(snaps[1]).groups[0].continuous
    capsys.readouterr()
    code = _cli(eval_main, [*map(str, snaps), "--db", str(tmp_path / "e.db"), "--episodes", "1"],
                monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "mappo_v0001" in out and "maddpg_v0001" in out, out


def test_exits_continuous_trains_with_boxes_of_two_widths():
    """One network per agent (widths 2 and 1), a first entry above EXIT leaves the game:
    every kind of ending goes through GAE and the update with float actions."""
    assert EXIT < 3.0
    learner = MAPPO(Exits(continuous=True).spec,
                    MAPPOConfig(rollout_steps=5, epochs=2, net=NetConfig(share="agent")), seed=1)
    vg = VectorGame(lambda: Exits(continuous=True), 4, seed=1, with_state=True)
    metrics = _play(learner, vg, 3)
    assert all(math.isfinite(v) for m in metrics for v in m.values())
    assert [a.log_std.shape[0] for a in learner.actors] == [2, 1]
    assert not torch.equal(learner.actors[0].log_std.detach(), torch.full((2,), LOG_STD_INIT))


def test_a_natively_batched_game_gets_tensor_actions_inside_its_box():
    """VMAS with ``tensors=True``: actions stay tensors (float ``[B, D]``) on the game's
    device from the sample to the step, and the update reads them back."""
    vg = VectorGame("vmas/simple_spread", 4, seed=1, with_state=True, tensors=True, n_agents=2,
                    max_steps=5, continuous_actions=True)
    learner = MAPPO(vg.spec, MAPPOConfig(rollout_steps=5, epochs=1), seed=0)
    with torch.no_grad():
        learner.actors[0].log_std.fill_(1.0)  # wide: samples leave the box [-1, 1]
    vs = vg.reset()
    while not learner.ready():
        actions = learner.act(vs)
        for a in vg.spec.agent_ids:
            x = actions[a]
            assert isinstance(x, torch.Tensor) and x.dtype == torch.float32
            assert x.shape == (4, 2) and x.abs().max() <= 1.0
        vs = vg.step(actions)
        learner.observe(vs)
    assert learner.buf.action.abs().max() > 1.0  # stored as sampled
    assert math.isfinite(learner.update()["losses/entropy"])


# ------------------------------------------------------------------ untrusted snapshots
def _set_groups(data: dict, **fields) -> None:
    for g in data["payload"]["groups"]:
        g.update(fields)


def _set_meta(data: dict, **fields) -> None:
    for sp in data["meta"]["action_spaces"].values():
        sp.update(fields)


@pytest.mark.parametrize("change, message", [
    (lambda d: _set_groups(d, low=float("nan")), r"'low' is nan; accepted: a finite number"),
    (lambda d: _set_groups(d, high=float("inf")), r"'high' is inf; accepted: a finite number"),
    (lambda d: _set_groups(d, low="abc"), r"'low' is 'abc'; accepted: a finite number"),
    (lambda d: _set_groups(d, high=True), r"'high' is True; accepted: a finite number"),
    (lambda d: d["payload"]["groups"][0].pop("high"), r"'high' is missing"),
    (lambda d: _set_groups(d, low=10.0), r"low=10.0, high=4.0; accepted: low < high"),
    (lambda d: (_set_groups(d, low=10.0), _set_meta(d, low=10.0)), r"accepted: low < high"),
    (lambda d: (_set_groups(d, low=float("nan")), _set_meta(d, low=float("nan"))), r"'low' is nan"),
    (lambda d: _set_groups(d, continuous="no"), r"'continuous' is 'no'; accepted: true or false"),
    (lambda d: _set_groups(d, continuous=1), r"'continuous' is 1; accepted: true or false"),
    (lambda d: _set_groups(d, low=1.0),
     r"'low' is 1.0 but the metadata's action space of 'agent_0' has low=0.0"),
    (lambda d: _set_groups(d, high=3.0),
     r"'high' is 3.0 but the metadata's action space of 'agent_0' has high=4.0"),
    (lambda d: _set_meta(d, low=-4.0),
     r"'low' is 0.0 but the metadata's action space of 'agent_0' has low=-4.0"),
    (lambda d: _set_meta(d, shape=[3]), r"width 2 but the metadata's action space of 'agent_0'"),
    (lambda d: _set_meta(d, kind="discrete", n=2),
     r"'continuous' is True but the metadata's action space of 'agent_0' is discrete"),
    (lambda d: d["payload"]["groups"][0].update(agents=["agent_9"]),
     r"agent 'agent_9' is not one of the policy's seats"),
])
def test_a_tampered_box_is_refused_in_one_line_naming_the_file(tmp_path, change, message):
    """Every loaded field is untrusted: a continuous group's kind and box must be well formed
    and equal the policy metadata's action space (which selfplay-eval checks against the
    game). Before, nan/inf boxes and low > high loaded and played nan, inf or a point outside
    the box, and ``continuous='no'`` loaded as continuous."""
    learner = MAPPO(Reach().spec, MAPPOConfig(rollout_steps=4), seed=0)
    data = torch.load(learner.policy().save(tmp_path / "p.pt"), weights_only=True)
    change(data)
    path = tmp_path / "tampered.pt"
    torch.save(data, path)
    with pytest.raises(PolicyLoadError, match=message) as err:
        load_policy(path)
    text = str(err.value)
    assert text.startswith(f"{path}: ") and "\n" not in text and len(text) < 400, text


def test_a_discrete_group_claiming_a_box_is_refused(tmp_path):
    """``continuous: true`` (with a ``log_std`` to match) on seats the metadata says are
    discrete: refused by the metadata, not built as a Gaussian actor."""
    spec = games.make("pettingzoo/mpe2.simple_spread_v3", N=2).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=4), seed=0)
    data = torch.load(learner.policy().save(tmp_path / "p.pt"), weights_only=True)
    n = data["payload"]["groups"][0]["num_actions"]
    _set_groups(data, continuous=True, low=0.0, high=1.0)
    data["payload"]["actors"]["0.log_std"] = torch.zeros(n)
    torch.save(data, tmp_path / "t.pt")
    with pytest.raises(PolicyLoadError, match=r"'continuous' is True but .* is discrete"):
        load_policy(tmp_path / "t.pt")
    load_policy(tmp_path / "p.pt")  # the untouched discrete file loads


# ------------------------------------------------------------------ mixed seats
def _mixed_spec(role1: str = "r") -> GameSpec:
    return GameSpec(
        name="test/mixed",
        agents=(AgentSpec("agent_0", "r", "t"), AgentSpec("agent_1", role1, "t")),
        obs_shapes={a: (2,) for a in IDS},
        action_spaces={"agent_0": ActionSpace("continuous", shape=(2,), low=LOW, high=HIGH),
                       "agent_1": ActionSpace("discrete", n=3)},
        max_steps=2, simultaneous=True)


@pytest.mark.parametrize("share", ["auto", "all", "role", "agent"])
@pytest.mark.parametrize("role1", ["r", "s"])
def test_seats_mixing_discrete_and_continuous_are_refused_at_construction(share, role1):
    """Before, share='agent' built and the first act failed in torch's reshape (the
    learner took its first group's kind for all), and share='role' said to use
    share='role'."""
    with pytest.raises(ValueError) as err:
        MAPPO(_mixed_spec(role1), MAPPOConfig(net=NetConfig(share=share)))
    text = str(err.value)
    assert text == ("MAPPO cannot play test/mixed: agents ['agent_1'] take discrete actions "
                    "and ['agent_0'] continuous ones; give each kind its own learner "
                    "(agents=...)"), text
    MAPPO(_mixed_spec(role1), MAPPOConfig(net=NetConfig(share=share)), agents=("agent_0",))


@pytest.mark.parametrize("share, offered", [("role", "use share='agent'"),
                                            ("all", "use share='role' or share='agent'")])
def test_the_share_refusal_offers_only_other_share_values(share, offered):
    spec = GameSpec(
        name="test/two_sizes", agents=tuple(AgentSpec(a, "r", "t") for a in IDS),
        obs_shapes={a: (2,) for a in IDS},
        action_spaces={"agent_0": ActionSpace("discrete", n=3),
                       "agent_1": ActionSpace("discrete", n=4)},
        max_steps=2, simultaneous=True)
    with pytest.raises(ValueError) as err:
        MAPPO(spec, MAPPOConfig(net=NetConfig(share=share)))
    text = str(err.value)
    assert text.endswith(offered) and f"share={share!r} puts" in text, text
    assert text.count(f"share={share!r}") == 1, text
