"""MAPPO / IPPO: per-agent GAE against a reference loop, learning margins over random,
GNN generalization to more agents, turn-based credit, save/load, errors."""

import numpy as np
import pytest
import torch

import games
from marl.actor_critic import NetConfig
from marl.advantages import agent_gae
from marl.core import CheckpointError, load_policy
from marl.mappo import MAPPO, MAPPOConfig, ippo_config
from marl.train import RandomPolicy, evaluate, evaluate_learner, train, without_clock

SPREAD = "pettingzoo/mpe2.simple_spread_v3"


# ------------------------------------------------------------------ per-agent GAE
def _reference_agent_gae(r, v, acting, end, term, fv, gamma, lam):
    """Obvious loop: per (copy, agent) column, walk its own acting steps backwards."""
    T, B, A = r.shape
    adv = np.zeros((T, B, A))
    complete = np.zeros((T, B, A), bool)
    for b in range(B):
        for a in range(A):
            steps = [t for t in range(T) if acting[t, b, a]]
            nxt_v, nxt_adv, have = 0.0, 0.0, False
            for t in reversed(steps):
                if end[t, b, a]:
                    boot = 0.0 if term[t, b, a] else fv[t, b, a]
                    delta = r[t, b, a] + gamma * boot - v[t, b, a]
                    adv[t, b, a] = delta
                    complete[t, b, a] = True
                elif have:
                    delta = r[t, b, a] + gamma * nxt_v - v[t, b, a]
                    adv[t, b, a] = delta + gamma * lam * nxt_adv
                    complete[t, b, a] = True
                # else: outcome not known yet; earlier steps bootstrap from v[t] alone
                nxt_v, nxt_adv, have = v[t, b, a], adv[t, b, a], True
    return adv, complete


@pytest.mark.parametrize("seed", range(5))
def test_agent_gae_matches_reference(seed):
    rng = np.random.default_rng(seed)
    T, B, A = 9, 4, 3
    acting = rng.random((T, B, A)) < 0.6
    end = acting & (rng.random((T, B, A)) < 0.25)
    term = end & (rng.random((T, B, A)) < 0.5)
    r, v, fv = (rng.normal(size=(T, B, A)) for _ in range(3))
    got_adv, got_c = agent_gae(
        *(torch.tensor(x) for x in (r, v, acting, end, term, fv)), gamma=0.9, lam=0.8
    )
    ref_adv, ref_c = _reference_agent_gae(r, v, acting, end, term, fv, 0.9, 0.8)
    np.testing.assert_array_equal(got_c.numpy(), ref_c)
    np.testing.assert_allclose(got_adv.numpy()[ref_c], ref_adv[ref_c], rtol=1e-6, atol=1e-9)


def test_agent_gae_equals_standard_gae_when_everyone_acts():
    from marl.advantages import gae, next_values_from

    rng = np.random.default_rng(0)
    T, B, A = 12, 3, 2
    r = torch.tensor(rng.normal(size=(T, B, A)))
    v = torch.tensor(rng.normal(size=(T, B, A)))
    fv = torch.tensor(rng.normal(size=(T, B, A)))
    done = torch.tensor(rng.random((T, B)) < 0.2)
    done[-1] = True  # so every step is complete
    term = done & torch.tensor(rng.random((T, B)) < 0.5)
    trunc = done & ~term
    end = done[:, :, None].expand(T, B, A)
    ours, complete = agent_gae(
        r,
        v,
        torch.ones(T, B, A, dtype=torch.bool),
        end,
        term[:, :, None].expand(T, B, A),
        fv,
        gamma=0.95,
        lam=0.9,
    )
    nxt = next_values_from(v, torch.zeros(B, A), fv, trunc)
    ref = gae(r, v, nxt, term, trunc, gamma=0.95, lam=0.9).advantages
    assert complete.all()
    torch.testing.assert_close(ours, ref)


# ------------------------------------------------------------------ learning
def _spread(n, seed, learner, num_envs=16):
    return games.VectorGame(
        SPREAD, num_envs, seed=seed, N=n, max_cycles=25, **learner.vector_game_kwargs
    )


def _random_return(n, learner, episodes=64):
    vg = _spread(n, 1234, learner)
    rnd = RandomPolicy(vg.spec, seed=0)
    return evaluate(vg, {a: rnd for a in vg.spec.agent_ids}, episodes).per_team["team"]


FAST = dict(rollout_steps=25, epochs=10, minibatches=4)


def test_mappo_mlp_beats_random_on_spread():
    """Learned and random each play 256 episodes. On 64 the random baseline read -25.55
    (-26.72 on 256) and learned - random over seeds 0-4 (learner, torch, training game; AMD
    EPYC, 4 Dec) was 4.62 4.65 4.45 4.92 3.96 against the bar of 3 (seed 4 within one
    standard error, ~1.0, of it); on 256 it is 5.13 5.85 5.72 5.87 5.05 (standard error
    ~0.56). Same training (60k frames), same bar; the evaluations cost ~2 s more. At 50k
    frames (suite time, 4b94304): 5.37 5.49 5.38 5.75 4.40 over seeds 0-4, the lowest 1.4
    (~2.5 standard errors) above the bar; 56 -> 40 s of CPU for a pytest process running it
    alone. At 45k seed 4 read 3.89 (0.89 above: not taken), seeds 0-3 4.91 5.02 4.92 5.60."""
    torch.manual_seed(0)
    spec = games.make(SPREAD, N=3, max_cycles=25).spec
    learner = MAPPO(spec, MAPPOConfig(**FAST), seed=0)
    train(learner, _spread(3, 0, learner, 32), frames=50_000, progress=False)
    learned = evaluate_learner(learner, _spread(3, 1234, learner), episodes=256).per_team["team"]
    baseline = _random_return(3, learner, episodes=256)
    assert learned > baseline + 3.0, (learned, baseline)


@pytest.mark.benchmark  # 124-316 s of CPU (50k frames): `make bench-tests`; GNN MAPPO
# still trains in the suite (test_member_settings' MLP + GNN league, the GNN unit tests)
def test_mappo_gnn_beats_random_and_runs_at_more_agents():
    torch.manual_seed(0)
    spec = games.make(SPREAD, N=3, max_cycles=25).spec
    net = NetConfig(encoder="gnn", critic="gnn", gnn_hidden=32)
    # default lr 1e-3: margins 3.6-6.7 (N=3) and 3.8-6.9 (N=5) over seeds 0-5 at 30k frames on
    # an Intel CPU; lr 3e-3 failed seeds 0 and 3. On an AMD EPYC (other kernels, other
    # trajectory) seed 0 at 30k frames transferred to N=5 by only 1.5 (seeds 1, 2: 5.7, 4.9);
    # at 40k frames 4.7 (N=3) and 5.4 (N=5). Later (3dc767d, AMD EPYC): seed 0 at 40k 2.64
    # (N=3) and 2.76 (N=5), close to the bar: a GATv2 change equal to float rounding moved
    # N=5 to 1.96 (not kept); 5 epochs instead of 10 (73 vs 116 s CPU, other loads): seed 0
    # 1.90 / 1.66 (fails), seed 1 3.56 / 3.09. Seeds 0-4 (learner, torch and training game;
    # AMD EPYC, 55f8a99), N=3 / N=5 margins at 40k: 2.64/2.76, 5.76/4.47, 3.52/2.44, 5.40/5.46,
    # 3.24/4.02: the N=5 margin still rising steeply there, and 64 episodes at N=5 on other
    # game seeds moved it by up to 2.4; at 50k: 3.76/3.97, 7.86/7.69, 5.73/5.02, 6.66/6.75,
    # 5.26/4.91 (+27 % CPU: 124 -> 157 s at seed 0). Not evaluation noise alone: at 40k with
    # learned and random on 256 episodes each, N=5 still 2.48 (seed 0) and 2.38 (seed 2)
    learner = MAPPO(spec, MAPPOConfig(net=net, **FAST), seed=0)
    train(learner, _spread(3, 0, learner, 32), frames=50_000, progress=False)
    learned = evaluate_learner(learner, _spread(3, 1234, learner), episodes=64).per_team["team"]
    assert learned > _random_return(3, learner) + 2.0
    # the same policy, unchanged, in a game with five agents
    policy = learner.policy()
    vg5 = _spread(5, 1234, learner)
    at5 = evaluate(vg5, {a: policy for a in vg5.spec.agent_ids}, episodes=64).per_team["team"]
    assert at5 > _random_return(5, learner) + 2.0


VMAS_SPREAD = {"n_agents": 2, "max_steps": 25}


def test_ippo_learns_on_vmas_spread():
    """64 VMAS copies stepped as tensors, 20 updates (32k frames); learned and random each
    play 256 episodes from the same starts (random: -78.67). Learned - random over seeds
    0-4 (learner, torch, training game; AMD EPYC, 6 Dec): 16.39 12.70 15.30 14.29 15.70
    against the bar of 10; the standard error of that difference on 256 paired episodes is
    ~0.8, so the lowest is ~3 above it (at 24k: 12.47 5.65 8.57 7.22 11.44, too spread).
    Untrained (0 frames): -0.20; trained with negated advantages: -14.86. It replaced mpe2
    simple_spread N=2 at 32 copies x 30k frames (margins 4.73-7.27 over a bar of 2):
    21 -> 13 s of CPU for a pytest process running it alone (~5 s of which is pytest's
    start), as VMAS steps all copies in one call."""
    torch.manual_seed(0)
    spec = games.make("vmas/simple_spread", **VMAS_SPREAD).spec
    learner = MAPPO(spec, ippo_config(**FAST), seed=0)
    assert learner.cfg.net.critic == "local"
    vg = games.VectorGame("vmas/simple_spread", 64, seed=0, tensors=True,
                          **learner.vector_game_kwargs, **VMAS_SPREAD)
    train(learner, vg, frames=32_000, progress=False)

    def ev():
        return games.VectorGame("vmas/simple_spread", 256, seed=1234, **VMAS_SPREAD)

    learned = evaluate_learner(learner, ev(), episodes=256).per_team["team"]
    rnd = RandomPolicy(spec, seed=0)
    baseline = evaluate(ev(), dict.fromkeys(spec.agent_ids, rnd), 256).per_team["team"]
    assert learned > baseline + 10.0, (learned, baseline)


def test_role_normalization_on_two_role_game():
    """simple_adversary: adversary and good agents get separately normalized advantages."""
    spec = games.make("pettingzoo/mpe2.simple_adversary_v3", max_cycles=25).spec
    cfg = MAPPOConfig(
        adv_norm="role", rollout_steps=25, epochs=1, minibatches=1, net=NetConfig(share="role")
    )
    learner = MAPPO(spec, cfg, seed=0)
    assert [g.name for g in learner.groups] == ["adversary", "agent"]
    vg = games.VectorGame(
        "pettingzoo/mpe2.simple_adversary_v3",
        8,
        seed=0,
        max_cycles=25,
        **learner.vector_game_kwargs,
    )
    res = train(learner, vg, frames=8 * 25 * 3, progress=False)
    m = res.metrics[-1]
    for role in ("adversary", "agent"):  # the diagnostics name the roles
        assert abs(m[f"adv/role_{role}/adv_mean"]) < 1e-4
        assert m[f"adv/role_{role}/adv_std"] == pytest.approx(1.0, abs=1e-3)
    # raw advantages differ in scale between roles, which is why role statistics matter
    assert m["adv/role_adversary/raw_mean"] != pytest.approx(m["adv/role_agent/raw_mean"],
                                                             abs=0.1)


def test_turn_based_learning_against_random_opponent():
    """Tic-tac-toe: player_0 learns to beat a random player_1 (rewards on the other's turn).

    Learned and random player_0 each play 1000 episodes on fresh games against a fresh
    random player_1. Before, 200 episodes each, the baseline continuing the learned run's
    game and opponent streams: a standard error of ~0.065 per mean; over seeds 0-4 the
    random baseline read 0.28-0.40 (0.30 over 1000) and learned - random - 0.3 was 0.055,
    -0.055 (fails), 0.030, 0.115, 0.145. Now (same training, AMD EPYC) random reads 0.303
    and learned - random - 0.3 over seeds 0-9 is 0.11-0.15 (0.146 at seed 0)."""
    torch.manual_seed(0)
    name = "openspiel/tic_tac_toe"
    spec = games.make(name).spec
    cfg = MAPPOConfig(
        rollout_steps=32, epochs=4, minibatches=2, gamma=1.0, net=NetConfig(critic="local")
    )
    learner = MAPPO(spec, cfg, agents=("player_0",), seed=0)
    vg = games.VectorGame(name, 32, seed=0)
    train(learner, vg, frames=25_000, opponents={"player_1": RandomPolicy(spec, seed=3)},
          progress=False)

    def play(policy):
        seats = {"player_0": policy, "player_1": RandomPolicy(spec, seed=3)}
        return evaluate(games.VectorGame(name, 32, seed=99), seats, 1000).per_agent["player_0"]

    learned, baseline = play(learner.policy()), play(RandomPolicy(spec, 5))
    assert learned > baseline + 0.3, (learned, baseline)


# ------------------------------------------------------------------ state and snapshots
def _short_run(learner, seed=0):
    vg = _spread(2, seed, learner, 4)
    train(learner, vg, frames=4 * 25 * 2, progress=False)
    return vg


def test_policy_snapshot_acts_like_learner_and_survives_save(tmp_path):
    spec = games.make(SPREAD, N=2, max_cycles=25).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=25, epochs=1), seed=0)
    vg = _short_run(learner)
    vs = vg.reset()
    pol = learner.policy()
    path = pol.save(tmp_path / "p.pt")
    loaded = load_policy(path)
    assert loaded.meta == pol.meta and loaded.meta.step == learner.steps
    with torch.no_grad():
        x = learner._inputs(vs)
        probs_BAN = torch.softmax(learner.actors[0](learner._group_batch(x, 0)), -1).reshape(
            4, 2, -1
        )
    for i, a in enumerate(spec.agent_ids):
        np.testing.assert_allclose(pol.action_probs(a, vs), probs_BAN[:, i].numpy(), rtol=1e-5)
        np.testing.assert_array_equal(loaded.act(a, vs, greedy=True), pol.act(a, vs, greedy=True))
        np.testing.assert_allclose(loaded.action_probs(a, vs), pol.action_probs(a, vs))
    # a snapshot is frozen: later training does not change it
    before = pol.action_probs("agent_0", vs)
    train(learner, vg, frames=4 * 25 * 2, progress=False)
    np.testing.assert_array_equal(pol.action_probs("agent_0", vs), before)


def test_learner_checkpoint_resumes_identically(tmp_path):
    spec = games.make(SPREAD, N=2, max_cycles=25).spec
    cfg = MAPPOConfig(rollout_steps=25, epochs=2)
    a = MAPPO(spec, cfg, seed=0)
    _short_run(a)
    a.save(tmp_path / "learner.pt")
    out_a = train(a, _spread(2, 7, a, 4), frames=4 * 25, progress=False).metrics
    b = MAPPO(spec, cfg, seed=123)
    b.load(tmp_path / "learner.pt")
    out_b = train(b, _spread(2, 7, b, 4), frames=4 * 25, progress=False).metrics
    # charts/frames_per_second: wall time, the one metric a resume does not repeat
    assert without_clock(out_a) == without_clock(out_b)


def test_corrupt_and_missing_checkpoints_name_the_file(tmp_path):
    spec = games.make(SPREAD, N=2).spec
    learner = MAPPO(spec, seed=0)
    with pytest.raises(CheckpointError, match="not found: .*nope.pt"):
        learner.load(tmp_path / "nope.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a torch file")
    with pytest.raises(CheckpointError, match="cannot read .*bad.pt"):
        load_policy(bad)


def test_config_errors_are_one_line_and_list_choices():
    with pytest.raises(
        ValueError, match=r"adv_norm='agentwise' unknown; choose one of \[.*'agent'"
    ):
        MAPPOConfig(adv_norm="agentwise")
    with pytest.raises(ValueError, match=r"encoder='cnn' unknown; choose one of \['mlp', 'gnn'\]"):
        NetConfig(encoder="cnn")
    with pytest.raises(ValueError, match="critic='state' needs a global state.*critic=auto"):
        MAPPO(games.make("openspiel/kuhn_poker").spec, MAPPOConfig(net=NetConfig(critic="state")))
    with pytest.raises(ValueError, match="needs entity graphs"):
        MAPPO(games.make("openspiel/kuhn_poker").spec, MAPPOConfig(net=NetConfig(encoder="gnn")))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
def test_mappo_runs_on_cuda():
    spec = games.make(SPREAD, N=2, max_cycles=25).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=25, epochs=1), device="cuda", seed=0)
    _short_run(learner)
    assert next(learner.actors.parameters()).is_cuda and learner.updates >= 1


def gather_reference(L, g, t, b, a):
    """The obvious reading of group ``g``'s network inputs at rollout steps ``(t, b, a)``,
    against which the update's flat, once-per-update gathering is checked."""
    buf, grp = L.buf, L.groups[g]
    seat_of = torch.full((len(L.agents),), -1, dtype=torch.long)
    seat_of[list(grp.cols)] = torch.arange(len(grp.cols))
    x = {
        "obs": buf.obs[t, b, a, : grp.obs_dim],
        "legal": buf.legal[t, b, a, : grp.num_actions],
        "seat": seat_of[a],
    }
    if buf.critic is not None:
        x["critic"] = buf.critic[t, b, a]
    if buf.graph is not None:
        x["graph"] = buf.graph[t, b]
        x["ego"] = torch.tensor([L._node[ag] for ag in L.agents])[a]
    return x


@pytest.mark.parametrize("game,kw,net", [
    (SPREAD, {"N": 2}, NetConfig(encoder="gnn", critic="gnn", gnn_hidden=8)),
    ("pettingzoo/mpe2.simple_adversary_v3", {}, NetConfig(share="role")),  # obs widths 8, 10
])
def test_minibatches_read_the_rollout_steps_they_name(game, kw, net):
    """The update gathers a group's samples once (flat positions, padding cut off, graphs
    per copy); each minibatch's forward pass equals the one on the rollout steps it names."""
    from marl.mappo_update import _minibatch_source

    spec = games.make(game, max_cycles=25, **kw).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=6, net=net), seed=0)
    vg = games.VectorGame(game, 3, seed=0, max_cycles=25, **kw, **learner.vector_game_kwargs)
    vs = vg.reset()
    while not learner.ready():
        vs = vg.step(learner.act(vs))
        learner.observe(vs)
    buf = learner.buf
    T, B, A = buf.row, *buf.action.shape[1:]
    steps = buf.acting[:T].clone()
    steps[2] = False  # some steps left out
    sizes, forward = _minibatch_source(learner, steps)
    for g, grp in enumerate(learner.groups):
        in_group = torch.zeros(A, dtype=torch.bool)
        in_group[list(grp.cols)] = True
        units = torch.stack((steps & in_group).nonzero(as_tuple=True), 1)  # [U, 3]
        assert sizes[g] == len(units) > 0
        idx = torch.randperm(sizes[g], generator=torch.Generator().manual_seed(g))[:7]
        logits, values, at = forward(g, idx)
        tba = torch.stack((at // (B * A), at // A % B, at % A), 1)
        assert torch.equal(tba, units[idx])
        x = gather_reference(learner, g, *tba.T)
        assert torch.equal(logits, learner.actors[g](x))
        assert torch.equal(values, learner.critics[g](x))


